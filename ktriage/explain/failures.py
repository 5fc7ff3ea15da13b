"""Failed cells, said in one line: the error a person needs, and the fix where ktriage knows one.

Why a module of its own: a table cell, a finding and a CI log line need the one line that says what
went wrong (``compile.messages.one_line``, re-exported here) and the fix where ktriage knows one. The
compile stage keeps every detail in its messages (the JSON ``results``); the shortening happens on
the reporting side, so it also applies to messages of workers written later. The engine uses it to
say why the reference fell back, the report for cells and findings.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ktriage.compile.compiler import CompileFailure
from ktriage.compile.messages import MAX_LINE, ROOT_CAUSE, one_line, squash
from ktriage.toolchain.manager import Toolchain

__all__ = ["MAX_LINE", "NOT_LOADED", "ROOT_CAUSE", "describe", "fallback_reason", "fix_for", "not_loaded", "one_line"]

NOT_LOADED = "spec"
"""The stage (and kind) of the cells of a spec file's kernel that did not load (engine.unloaded_explain).
Its error is the file's, the same for every toolchain: the Failures say it once per kernel
(:func:`not_loaded`), not once per toolchain as a compile failure is said."""

_NO_MODULE = re.compile(r"No module named '([^']+)'")
_IMPORTING = re.compile(r"importing (\S+) failed: (.*)")
# the worker's second attempt (insitu/worker._load): the statement of the kernel's own source that failed
_OWN_SOURCE = re.compile(r"from its own source failed too: (line \d+ `[^`\n]{0,160}`?)")
_INDUCTOR_RUNTIME_IMPORT = re.compile(r"`(?:from|import) torch\._inductor\.runtime\b")
# what Python says when a module reaches for a Triton API the installed Triton does not have
_TRITON_LACKS = re.compile(r"module '(triton(?:\.\w+)*)' has no attribute '(\w+)'")


def fix_for(failure: CompileFailure) -> str | None:
    """How to get past this failure, or None where ktriage knows nothing better than the message.

    A ``fix:`` line in the message (KtriageError's convention) wins. Import failures get ours: a kernel
    library is installed without its dependencies and compiled in a worker with no GPU; the worker
    stands in for missing modules and falls back to the kernel's own source, so what still fails is
    what the kernel itself needs."""
    for line in failure.message.splitlines():
        if line.strip().startswith("fix:"):
            return squash(line.strip()[len("fix:") :].strip())
    if failure.kind != "import":
        return None
    imported = _IMPORTING.search(failure.message)
    module = imported.group(1) if imported else "the kernel's module"
    missing = _NO_MODULE.search(failure.message)
    # The worker already stood in for missing modules and compiled the kernel from its own source when
    # the module would not import (docs/record.md): an import failure left means the kernel needs it.
    if missing:
        dep = missing.group(1).split(".")[0]
        return (
            f"the kernel itself needs '{dep}' (the statements of {module} it reads import it), and ktriage "
            f"installs kernel packages without their dependencies: give the spec a `package` that provides "
            f"'{dep}', or pass the value the kernel reads from it as a tl.constexpr"
        )
    if imported and _INDUCTOR_RUNTIME_IMPORT.search(failure.message):
        # inductor's host-side runtime (triton_heuristics, hints) imports torch for real; a recording by
        # a ktriage from before it wrote inert stubs for them carried their source instead
        return (
            f"{module} imports inductor's host-side runtime (torch._inductor.runtime: triton_heuristics, "
            f"hints), which does not import without torch; a workload recorded by an older ktriage carries "
            f"those modules, and `ktriage record` now replaces them by inert stubs: record the program again"
        )
    lacks = _TRITON_LACKS.search(failure.message)
    if lacks:
        # fla-core 0.6.0 under Triton 3.3.1: `tl.make_tensor_descriptor` came later. No GPU, no stand-in,
        # no spec change makes this toolchain compile it: the library needs a newer Triton.
        where = lacks.group(1).replace("triton.language.core", "triton.language")
        version = f"{failure.toolchain.spec} " if failure.toolchain is not None else "this toolchain "
        return (
            f"{module} uses {where}.{lacks.group(2)}, which {version}does not have (a later Triton added it): "
            f"this toolchain cannot compile the kernel; compare toolchains whose Triton has it, or an older "
            f"release of the kernel's library written for this Triton"
        )
    if imported:
        # the statement of the kernel's own source that failed too: the one line cuts the message before
        # it (MAX_LINE), so the fix quotes it, or a user is pointed at text no report shows (vllm's
        # `from vllm.triton_utils import tl, triton`, which imports all of vllm)
        own = _OWN_SOURCE.search(failure.message)
        needs = "so do the statements of it the kernel needs"
        if own is not None:
            statement = own.group(1) if own.group(1).endswith("`") else own.group(1) + "…`"
            needs = f"so does {statement}, which the kernel needs"
        return (
            f"{module} fails to import in a compile worker (no GPU, torch is a stand-in), and {needs}: make "
            f"{'it' if own else 'them'} run without a GPU (a name the kernel reads only from Triton, such as "
            f"`triton` or `tl` re-exported by a library, can be imported from triton itself), or copy the "
            f"@triton.jit function and what it reads into a .py file of its own and point the spec's `source` at it"
        )
    return None


def describe(failure: CompileFailure, *, fix: bool = True) -> str:
    """``stage: one-line error`` plus `` — fix: ...`` where one is known: how a failed cell is listed."""
    text = f"{failure.stage}: {one_line(failure.message, failure.kind)}"
    hint = fix_for(failure) if fix else None
    return f"{text} — fix: {hint}" if hint else text


def not_loaded(failure: CompileFailure) -> bool:
    """The cell is of a kernel that did not load from its spec file (:data:`NOT_LOADED`): no toolchain
    was asked, so no toolchain is to blame."""
    return failure.stage == NOT_LOADED


def fallback_reason(failed: Sequence[CompileFailure], reference: Toolchain | None) -> str:
    """Why the comparison of one kernel is not against the first toolchain: each toolchain before the
    one that served as reference, with its one-line error, then which one was used instead."""
    parts = [f"{f.toolchain.spec} could not compile this kernel: {describe(f, fix=False)}" for f in failed]
    tail = (
        f"compared against {reference.spec} instead"
        if reference is not None
        else "no toolchain compiled it, nothing is compared"
    )
    return "; ".join(parts + [tail])
