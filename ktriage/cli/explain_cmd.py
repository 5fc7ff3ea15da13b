"""`ktriage explain`: why did a kernel get slower between toolchains? No GPU needed."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from ktriage.cli import exit_codes
from ktriage.cli.console import make_console, make_progress
from ktriage.cli.options import (
    DEFAULT_COMPILE_TIMEOUT_S,
    Bwd,
    Cluster,
    CompileTimeout,
    Format,
    Fwd,
    InputId,
    Inputs,
    ModeOpt,
    NumInputs,
    Precision,
    SpecArch,
    check_format,
    check_outputs,
    format_option,
    jobs_option,
    merge_outputs,
    output_option,
    pick_mode,
    select_input_range,
    spec_input_id,
    toolchain_option,
    write_outputs,
)
from ktriage.cli.resolve import resolve_specs, resolve_toolchains
from ktriage.compile.compiler import Compiler
from ktriage.errors import KtriageError
from ktriage.execute.select import remote_executor
from ktriage.explain.engine import Explainer, ExplainResult
from ktriage.explain.findings import Finding, collect_failure_findings, collect_findings, group_findings
from ktriage.explain.fixes import suggest_fixes
from ktriage.explain.predicted import fail_on_hit
from ktriage.predict.model import DEFAULT_THRESHOLD, load_params
from ktriage.report.explain import fixes_markdown, print_table, report_title, to_json, to_markdown
from ktriage.spec.model import input_label

FORMATS = ("table", "markdown", "json")
FAIL_ON = ("regression", "any")
WRITERS = (".md", ".json", ".html")


def explain(
    target: Annotated[
        str,
        typer.Argument(
            help="A catalog op (see `ktriage catalog list`), e.g. liger.layer_norm, a spec .toml file, or a workload .json recorded by `ktriage record`."
        ),
    ],
    toolchain: Annotated[list[str], toolchain_option("The first is the reference.")],
    mode: ModeOpt = None,
    bwd: Bwd = False,
    fwd: Fwd = False,
    input: Inputs = None,
    input_id: InputId = None,
    num_inputs: NumInputs = None,
    arch: SpecArch = None,
    precision: Precision = None,
    sm_count: Annotated[
        int | None,
        typer.Option(
            "--sm-count",
            help="SM count used to compute grids as the library would (default: the arch's usual datacenter GPU).",
        ),
    ] = None,
    fmt: Annotated[Format, format_option(FORMATS)] = Format.table,
    output: Annotated[list[Path] | None, output_option(WRITERS, "Nothing is written unless asked.")] = None,
    report: Annotated[
        Path | None,
        typer.Option(
            "--report", help="Older spelling: -o PATH -o PATH.json (the markdown report here, the JSON next to it)."
        ),
    ] = None,
    no_report: Annotated[
        bool,
        typer.Option("--no-report", hidden=True, help="Accepted for old scripts; no report is written unless asked."),
    ] = False,
    ptx_diff: Annotated[
        bool, typer.Option("--ptx-diff", help="Show an aligned PTX diff (reference vs each toolchain) for one kernel.")
    ] = False,
    sass_diff: Annotated[
        bool,
        typer.Option("--sass-diff", help="Show an aligned SASS diff (reference vs each toolchain) for one kernel."),
    ] = False,
    lines: Annotated[
        list[str] | None,
        typer.Option(
            "--lines",
            metavar="FILE:LINE[-LINE]",
            help="Restrict the SASS and PTX diffs to the instructions of these source lines (repeatable; implies --sass-diff --ptx-diff when neither is given): a reproducer-sized excerpt for a compiler bug report.",
        ),
    ] = None,
    jobs: Annotated[int | None, jobs_option("Parallel compiles (default: CPU count).")] = None,
    compile_timeout: CompileTimeout = DEFAULT_COMPILE_TIMEOUT_S,
    fixes: Annotated[
        bool,
        typer.Option(
            "--fixes", help="Propose fixes for the regressions and verify each by compiling it (docs/explain.md#fixes)."
        ),
    ] = False,
    fix_toolchain: Annotated[
        list[str] | None,
        typer.Option("--fix-toolchain", help="With --fixes: a neighbouring toolchain to try as a fix, repeatable."),
    ] = None,
    allow_failures: Annotated[
        bool,
        typer.Option(
            "--allow-failures",
            help="Exit 0 even when some cells failed to compile, assemble or analyze (default: exit 4, 'incomplete').",
        ),
    ] = False,
    cluster: Cluster = None,
    threshold: Annotated[
        float,
        typer.Option(
            "--threshold",
            help="The gate: a change is a regression (improvement) only where its predicted ratio's whole interval lies above 1+T (below 1/(1+T)); default 0.05.",
        ),
    ] = DEFAULT_THRESHOLD,
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            help="CI gate, compile-only: exit 1 when a finding is a predicted regression (regression) or when there is any finding at all (any).",
        ),
    ] = None,
    model: Annotated[
        Path | None,
        typer.Option(
            "--model",
            help="Cost-model parameters written by `ktriage calibrate -o FILE` (default: $KTRIAGE_MODEL, else the fit shipped with ktriage; docs/model.md).",
        ),
    ] = None,
) -> None:
    """Compile a kernel with several toolchains and explain what changed: registers, spills, stack,
    occupancy and SASS opcodes, each change attributed to the frontend (PTX) or to ptxas.

    Each finding carries the cost model's predicted time ratio with its interval (docs/model.md); a
    finding is a regression or an improvement only where that interval lies beyond the gate.

    Exit codes: 0 done, 1 with --fail-on when its condition holds, 2 usage or user error, 4 incomplete
    (some cells failed; --allow-failures gives the code of the complete part then)."""
    check_format(fmt, FORMATS)
    if fail_on is not None and fail_on not in FAIL_ON:
        raise KtriageError(
            f"--fail-on {fail_on!r} is not one of {', '.join(FAIL_ON)}",
            "pass --fail-on regression (predicted regressions) or --fail-on any (any compile-side change)",
        )
    if not 0 <= threshold < 10:
        raise KtriageError(f"--threshold {threshold} is not a relative gate", "pass e.g. --threshold 0.05 for +-5 %")
    params = load_params(model)
    outputs = merge_outputs(output, [report, report.with_suffix(".json")] if report is not None else None)
    check_outputs(outputs, WRITERS)
    # Reports printed into CI logs are not terminals: give them room instead of 80 wrapped columns.
    console = make_console(stderr=fmt != Format.table)
    if len(toolchain) < 1:
        raise KtriageError("no --toolchain given", "pass two or more, e.g. -t triton==3.3.1 -t triton==3.4.0")
    pass_ = pick_mode(mode, fwd=fwd, bwd=bwd)
    specs = resolve_specs(target, mode=pass_, inputs=input, target_arch=arch, dtype=precision, sm_count=sm_count)
    specs = select_input_range(specs, input_id, num_inputs, spec_input_id)
    line_ranges = _line_ranges(lines)
    if line_ranges and not (ptx_diff or sass_diff):
        ptx_diff = sass_diff = True
    if (ptx_diff or sass_diff) and len(specs) != 1:
        raise KtriageError(
            f"--ptx-diff/--sass-diff show one kernel, but {len(specs)} were selected",
            f"select one input, e.g. --input {input_label(specs[0].meta, specs[0].name)}",
        )
    with make_progress(console) as progress:
        tcs = resolve_toolchains(toolchain, progress)
        task = progress.add_task("compiling", total=len(specs) * len(tcs))
        explain_task = progress.add_task("analyzing", total=len(specs))
        executor = remote_executor(cluster)
        with Compiler(jobs=jobs, timeout_s=compile_timeout, executor=executor) as compiler:
            result = Explainer(compiler, params=params, threshold=threshold).run(
                specs,
                tcs,
                on_compiled=lambda _o: progress.advance(task),
                on_explained=lambda _s: progress.advance(explain_task),
            )
            diff_text = _diffs(result, ptx_diff, sass_diff, line_ranges)
            findings = collect_findings(result)
            fix_list = (
                suggest_fixes(result, findings, compiler, neighbours=resolve_toolchains(fix_toolchain or [], progress))
                if fixes
                else None
            )
        if executor is not None:
            executor.close()
    fix_json = {"fixes": [f.to_json() for f in fix_list]} if fix_list is not None else {}
    fix_md = "\n" + fixes_markdown(fix_list) if fix_list is not None else ""
    if fmt == Format.json:
        typer.echo(json.dumps({**to_json(result, findings), **fix_json}, indent=1))
    elif fmt == Format.markdown:
        typer.echo(to_markdown(result, findings, title=report_title(target, specs)) + fix_md)
    else:
        print_table(result, console, findings)
        if fix_list is not None:
            console.print(escape(fixes_markdown(fix_list)))
    if diff_text:
        typer.echo(diff_text)
    title = report_title(target, specs)
    write_outputs(
        outputs,
        {
            ".md": lambda: to_markdown(result, findings, title=title) + fix_md,
            ".json": lambda: json.dumps({**to_json(result, findings), **fix_json}, indent=1),
            ".html": lambda: _html(result, findings, title),
        },
    )
    if outputs:
        console.print("report: " + " and ".join(escape(str(p)) for p in outputs))
    _report_failures(result, console, listed=fmt == Format.table, allow_failures=allow_failures)
    kinds = [g.kind for g in group_findings(findings)]
    gate = fail_on_hit(kinds, fail_on)
    if fail_on is not None:
        console.print(
            f"--fail-on {fail_on}: "
            + (
                f"exit code 1 ({kinds.count('regression')} predicted regression(s), {len(kinds)} finding(s))"
                if gate
                else "passed"
            )
        )
    code = exit_codes.with_failures(exit_codes.FINDING if gate else exit_codes.OK, result.complete, allow_failures)
    if code != exit_codes.OK:
        raise typer.Exit(code)


def _report_failures(result: ExplainResult, console: Console, *, listed: bool, allow_failures: bool) -> None:
    """The last word on the console (stderr for json/markdown): the result is incomplete, which
    failures (grouped; unless the table just listed them) and what the exit code will be."""
    if result.complete:
        return
    if not listed:
        for finding in collect_failure_findings(result):
            console.print(f"[red]failed[/] {escape(finding.summary())}")
    cells = len(result.specs) * len(result.toolchains)
    then = (
        "exit code 0 (--allow-failures)"
        if allow_failures
        else f"exit code {exit_codes.INCOMPLETE} (pass --allow-failures for 0)"
    )
    console.print(
        f"[red]incomplete:[/] {len(result.failures)} of {cells} cells failed; the other results are complete; {then}."
    )


def _html(result: ExplainResult, findings: list[Finding], title: str) -> str:
    """The self-contained HTML report: ranked findings linked to the lines of the side-by-side PTX and
    SASS diffs (computed in ktriage.explain.html_view, rendered in ktriage.report.explain_html)."""
    from ktriage.explain.html_view import build_view
    from ktriage.report.explain_html import to_html

    return to_html(build_view(result, findings, title=title))


def _line_ranges(specs: Sequence[str] | None) -> list[tuple[str, int, int]]:
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
    from ktriage.analyze.diff import aligned_diff, diff_summary
    from ktriage.analyze.lines import cubin_line_map, known_files, matches_file, ptx_excerpt, sass_excerpt

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
        maps = [
            cubin_line_map(
                r.artifact.cubin.cubin_path,
                r.artifact.kernel_name,
                cuobjdump=r.toolchain.cuobjdump,
                nvdisasm=r.toolchain.nvdisasm,
            )
            for r in (a, b)
        ]
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


def _diffs(result: ExplainResult, ptx: bool, sass: bool, ranges: list[tuple[str, int, int]] | None = None) -> str:
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
