"""What each toolchain of an explain run resolved to, in words: ``triton==3.4.0: Triton 3.4.0, ptxas 12.8.93
(triton-3.4.0.ptxas-12.8.93.da4345e0)``, the line every explain report lists under its toolchains' heading.

Why here, in the explain layer: the terminal and the markdown (``report.explain``) and the HTML view
(``explain.html_view``, which the report layer may import but not the other way round) say the same sentence,
and a sentence with two homes drifts; the HTML named the specs alone while the others said which ptxas.
"""

from __future__ import annotations

from collections.abc import Callable

from ktriage.arch import parse_arch
from ktriage.errors import KtriageError
from ktriage.explain.engine import ExplainResult
from ktriage.toolchain.manager import Toolchain

TOOLCHAINS_HEAD = "Toolchains (the first is the reference)"


def assembler_label(toolchain: Toolchain, result: ExplainResult) -> str:
    """The ptxas that made this toolchain's cubins for the explained arch, with the options beyond
    ``-lineinfo -v`` (Triton's own and the toolchain's): e.g. "ptxas 13.4.59 (ptxas-blackwell)
    --regAllocOptLevel=2" for Triton 3.9 on sm_90."""
    target = result.specs[0].spec.target if result.specs else "sm_90"
    try:
        return toolchain.assembler(parse_arch(target).cc).label()
    except KtriageError:
        return f"ptxas {toolchain.ptxas_version}" + (
            f" {' '.join(toolchain.ptxas_options)}" if toolchain.ptxas_options else ""
        )


def toolchain_line(
    toolchain: Toolchain, result: ExplainResult, code: Callable[[str], str] = str, text: Callable[[str], str] = str
) -> str:
    """``triton==3.4.0: Triton 3.4.0, ptxas 12.8.93 (triton-3.4.0.ptxas-12.8.93.da4345e0)``: what a
    toolchain spec resolved to, every report's line (the terminal's columns name the spec alone, and
    "ptxas is responsible" needs the ptxas each side assembled with, and its options). ``code``/``text``
    mark a name and the rest up for the report's format (markdown: md_code, md_text; HTML: escaped)."""
    return (
        f"{code(str(toolchain.spec))}: Triton {text(toolchain.triton_version)}, "
        f"{text(assembler_label(toolchain, result))} ({code(toolchain.id)})"
    )
