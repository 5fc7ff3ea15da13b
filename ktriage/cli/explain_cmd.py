"""`ktriage explain`: why did a kernel get slower between toolchains? No GPU needed.

Parses the flags, calls :func:`ktriage.api.explain` (which checks them and runs the verb)
and renders its report; the flags' declarations are in ``explain_options``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from ktriage.api import DEFAULT_COMPILE_TIMEOUT_S, DEFAULT_THRESHOLD, ExplainReport
from ktriage.api import explain as explain_api
from ktriage.cli import exit_codes
from ktriage.cli import explain_options as o
from ktriage.cli import options as opt
from ktriage.cli.console import make_console, make_progress, say_compiles_kept
from ktriage.cli.options import Format
from ktriage.wording import plural


def explain(
    target: o.Target,
    toolchain: Annotated[list[str], opt.toolchain_option("The first is the reference.")],
    mode: opt.ModeOpt = None,
    bwd: opt.Bwd = False,
    fwd: opt.Fwd = False,
    input: opt.Inputs = None,
    input_id: opt.InputId = None,
    num_inputs: opt.NumInputs = None,
    arch: opt.SpecArch = None,
    precision: opt.Precision = None,
    sm_count: o.SmCount = None,
    fmt: Annotated[Format, opt.format_option(o.FORMATS)] = Format.table,
    output: Annotated[list[Path] | None, opt.output_option(o.WRITERS, "Nothing is written unless asked.")] = None,
    report: o.Report = None,
    no_report: o.NoReport = False,
    ptx_diff: o.PtxDiff = False,
    sass_diff: o.SassDiff = False,
    lines: o.Lines = None,
    jobs: Annotated[int | None, opt.jobs_option("Parallel compiles (default: CPU count).")] = None,
    compile_timeout: opt.CompileTimeout = DEFAULT_COMPILE_TIMEOUT_S,
    fixes: o.Fixes = False,
    fix_toolchain: o.FixToolchain = None,
    allow_failures: opt.AllowFailures = False,
    cluster: opt.Cluster = None,
    threshold: o.Threshold = DEFAULT_THRESHOLD,
    fail_on: o.FailOn = None,
    model: opt.Model = None,
) -> None:
    """Compile a kernel with several toolchains and explain what changed: registers, spills, stack,
    occupancy and SASS opcodes, each change attributed to the frontend (PTX) or to ptxas.

    Each finding carries the cost model's predicted time ratio with its interval (docs/model.md); a
    finding is a regression or an improvement only where that interval lies beyond the gate.

    Exit codes: 0 done, 1 with --fail-on when its condition holds, 2 usage or user error, 4 incomplete
    (some cells failed; --allow-failures gives the code of the complete part then)."""
    opt.check_format(fmt, o.FORMATS)
    # --report PATH is the markdown report at PATH (a name without a suffix included: it was refused as
    # "--output r: no writer"), the JSON next to it (not named by the user: it replaces only an earlier one).
    legacy = (
        [
            opt.as_format(report, ".md") if not report.suffix else report,
            opt.beside(
                f"--report {report}", report, ".json", marker=ExplainReport.JSON_MARKER, what="an explain JSON report"
            ),
        ]
        if report
        else None
    )
    outputs = opt.merge_outputs(output, legacy)
    opt.check_outputs(outputs, o.WRITERS, inputs=[target])
    existed = [p for p in outputs if p.is_file()]  # before the compiles: "overwrote PATH" for these
    # Reports printed into CI logs are not terminals: give them room instead of 80 wrapped columns.
    console = make_console(stderr=fmt != Format.table)
    with say_compiles_kept(), make_progress(console):
        result = explain_api(
            target=target,
            toolchains=toolchain,
            mode=opt.pick_mode(mode, fwd=fwd, bwd=bwd),
            inputs=input,
            input_id=input_id,
            num_inputs=num_inputs,
            arch=arch,
            precision=precision,
            sm_count=sm_count,
            jobs=jobs,
            compile_timeout=compile_timeout,
            fixes=fixes,
            fix_toolchains=fix_toolchain or (),
            cluster=cluster,
            threshold=threshold,
            fail_on=fail_on,
            model=model,
            ptx_diff=ptx_diff,
            sass_diff=sass_diff,
            lines=lines or (),
        )
    writers = {".md": result.to_markdown, ".json": result.json_text, ".html": result.to_html}
    # each -o file is said as every verb says it (wrote/overwrote PATH), on the console that said "report: PATH"
    opt.emit(fmt, writers, lambda: result.print_table(console), outputs, console, existed=existed)
    if result.diffs:
        typer.echo(result.diffs)
    _report_failures(result, console, listed=fmt == Format.table, allow_failures=allow_failures)
    code = result.exit_code(allow_failures)
    if code != exit_codes.OK:
        raise typer.Exit(code)


def _report_failures(result: ExplainReport, console: Console, *, listed: bool, allow_failures: bool) -> None:
    """The last words on the console (stderr for json/markdown): whether the result is incomplete,
    which failures (unless the table just listed them) and the exit code; then the --fail-on verdict."""
    if not result.complete:
        for finding in result.failures if not listed else []:
            console.print(f"[red]failed[/] {escape(finding.summary())}")
        cells = len(result.result.specs) * len(result.result.toolchains)
        code = f"exit code {exit_codes.INCOMPLETE} (pass --allow-failures for 0)"
        then = "exit code 0 (--allow-failures)" if allow_failures else code
        failed = f"{len(result.result.failures)} of {cells} cells failed"
        console.print(f"[red]incomplete:[/] {failed}; the other results are complete; {then}.")
    if result.fail_on is not None:
        kinds = [g.kind for g in result.groups]
        n = f"{plural(kinds.count('regression'), 'predicted regression')}, {plural(len(kinds), 'finding')}"
        console.print(f"--fail-on {result.fail_on}: " + (f"exit code 1 ({n})" if result.gate_hit else "passed"))
