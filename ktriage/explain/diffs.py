"""Aligned PTX and SASS diffs of one explained kernel (``explain --ptx-diff/--sass-diff/--lines``).

Why here and not in the CLI: the diffs read the explained artifacts (the PTX text, the cubins'
SASS and line tables) and refuse a ``--lines`` range that no instruction comes from, naming the
kernel's real source files; that is explain's knowledge, and the library entry point
(``ktriage.explain(..., ptx_diff=True)``) returns the same text the command prints.
"""

from __future__ import annotations

from collections.abc import Sequence

from ktriage.errors import KtriageError
from ktriage.explain.engine import ExplainResult


def parse_line_ranges(specs: Sequence[str] | None) -> list[tuple[str, int, int]]:
    """``--lines`` values as (file, first, last); a malformed one is a usage error with the fix."""
    from ktriage.analyze.lines import parse_line_spec

    out = []
    for spec in specs or []:
        try:
            out.append(parse_line_spec(spec))
        except ValueError as exc:
            raise KtriageError(
                f"--lines {exc}",
                "write --lines FILE:LINE or FILE:FIRST-LAST, e.g. "
                "--lines layer_norm.py:122-126 (FILE: the path or its last parts)",
            ) from exc
    return out


def _line_diffs(result: ExplainResult, ptx: bool, sass: bool, ranges: list[tuple[str, int, int]]) -> str:
    """The diffs restricted to the instructions of ``ranges`` (``--lines``)."""
    from ktriage.analyze.artifact import cached_line_map
    from ktriage.analyze.diff import aligned_diff, diff_summary
    from ktriage.analyze.lines import known_files, matches_file, ptx_excerpt, sass_excerpt

    item = result.specs[0]
    if not item.comparisons:
        return ""
    stats = [s for c in item.comparisons for r in (c.ref, c.new) for s in r.resources.source_lines]
    for file, first, last in ranges:
        where = f"{file}:{first}" + (f"-{last}" if last != first else "")
        if not any(matches_file(file, s.file, s.path) for s in stats):
            have = ", ".join(known_files(stats)) or "none (the SASS listing had no line table)"
            raise KtriageError(
                f"--lines {where}: no instruction of this kernel comes from {file!r}",
                f"name one of the kernel's source files: {have}",
            )
        if not any(matches_file(file, s.file, s.path) and first <= s.line <= last for s in stats):
            lines = sorted({s.line for s in stats if matches_file(file, s.file, s.path)})
            from ktriage.analyze.lines import compress_ranges

            raise KtriageError(
                f"--lines {where}: no instruction comes from those lines",
                f"pick lines that have instructions: {compress_ranges(lines)}",
            )
    parts: list[str] = []
    for comparison in item.comparisons:
        a, b = comparison.ref, comparison.new
        title = f"{a.toolchain.spec} -> {b.toolchain.spec}"
        maps = [cached_line_map(r.artifact.cubin, r.toolchain, r.artifact.kernel_name) for r in (a, b)]
        for file, first, last in ranges:
            where = f"{file}:{first}" + (f"-{last}" if last != first else "")
            if sass:
                sa, sb = (sass_excerpt(m, file, first, last) for m in maps)
                parts.append(f"=== SASS diff {title}, {where} ===")
                parts.append(str(diff_summary(sa, sb, kind="sass")))
                parts.append(
                    aligned_diff(sa, sb, kind="sass", a_label=str(a.toolchain.spec), b_label=str(b.toolchain.spec))
                )
            if ptx:
                pa, pb = (ptx_excerpt(r.artifact.frontend.text("ptx"), file, first, last) for r in (a, b))
                parts.append(f"=== PTX diff {title}, {where} ===")
                parts.append(str(diff_summary(pa, pb, kind="ptx")))
                parts.append(
                    aligned_diff(pa, pb, kind="ptx", a_label=str(a.toolchain.spec), b_label=str(b.toolchain.spec))
                )
    return "\n".join(parts)


def kernel_diffs(result: ExplainResult, ptx: bool, sass: bool, ranges: list[tuple[str, int, int]] | None = None) -> str:
    """The aligned PTX and/or SASS diffs (reference vs each toolchain) of the one explained kernel,
    each with its summary line; restricted to the instructions of ``ranges`` when given. Empty when
    neither diff is asked for."""
    if not (ptx or sass):
        return ""
    if ranges:
        return _line_diffs(result, ptx, sass, ranges)
    from ktriage.analyze.cuobjdump import run_cuobjdump
    from ktriage.analyze.diff import aligned_diff, diff_summary

    parts: list[str] = []
    item = result.specs[0]
    for comparison in item.comparisons:
        a, b = comparison.ref.artifact, comparison.new.artifact
        title = f"{a.toolchain.spec} -> {b.toolchain.spec}"
        if ptx:
            parts.append(f"=== PTX diff {title} ===")
            pa, pb = a.frontend.text("ptx"), b.frontend.text("ptx")
            parts.append(str(diff_summary(pa, pb, kind="ptx")))
            parts.append(aligned_diff(pa, pb, kind="ptx", a_label=str(a.toolchain.spec), b_label=str(b.toolchain.spec)))
        if sass:
            parts.append(f"=== SASS diff {title} ===")
            sass_a = run_cuobjdump(a.toolchain.cuobjdump, a.cubin.cubin_path, "-sass")
            sass_b = run_cuobjdump(b.toolchain.cuobjdump, b.cubin.cubin_path, "-sass")
            parts.append(str(diff_summary(sass_a, sass_b, kind="sass")))
            parts.append(
                aligned_diff(sass_a, sass_b, kind="sass", a_label=str(a.toolchain.spec), b_label=str(b.toolchain.spec))
            )
    return "\n".join(parts)
