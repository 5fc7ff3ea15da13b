"""`ktriage triage --run CMD --old-toolchain A --new-toolchain B`: the CLI half of ``ktriage.triage.program``.

Options checked, progress shown, the report printed and written (report.md and report.json in the
work folder, plus any -o); called by ``ktriage.cli.triage_cmd`` when --run is given.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from ktriage.atomic import write_atomic
from ktriage.cli import exit_codes
from ktriage.cli.console import make_console, make_progress
from ktriage.cli.options import Format, append_step_summary, emit, write_outputs
from ktriage.errors import KtriageError


def triage_run(
    command: str,
    old_toolchain: str | None,
    new_toolchain: str | None,
    *,
    workdir: Path | None,
    given: Mapping[str, Any],
    threshold: float,
    jobs: int | None,
    no_bisect: bool,
    no_fixes: bool,
    max_time: float,
    db: str | None,
    fmt: Format,
    output: list[Path],
    allow_failures: bool,
    summary: str | None,
) -> None:
    from ktriage.report.triage_run import print_table, to_json, to_markdown
    from ktriage.triage.program import ProgramOptions, ProgramReport, run_program

    used = [name for name, value in given.items() if value not in (None, False, [], "")]
    if used:
        raise KtriageError(
            f"{', '.join(used)} do(es) not apply to --run: it records the program and benches what it launched",
            "drop them; --run takes --old-toolchain, --new-toolchain, --workdir, --threshold, --no-bisect, "
            "--no-fixes, --max-time, --jobs, --db, -o",
        )
    if any(p.suffix.lower() == ".html" for p in output):
        raise KtriageError("--run writes markdown and JSON reports, not HTML", "give -o report.md or -o report.json")
    if not old_toolchain or not new_toolchain:
        raise KtriageError(
            "--run needs --old-toolchain and --new-toolchain",
            "e.g. --old-toolchain triton==3.5.1 --new-toolchain triton==3.6.0 (on a host without network: "
            "--old-toolchain triton=host,ptxas=/usr/local/cuda/bin/ptxas --new-toolchain triton=host)",
        )
    folder = workdir or Path(f"ktriage-run-{_dt.datetime.now().strftime('%Y%m%d-%H%M%S')}")
    options = ProgramOptions(
        command=command,
        old_toolchain=old_toolchain,
        new_toolchain=new_toolchain,
        workdir=folder,
        threshold=threshold / 100.0,
        jobs=jobs,
        bisect=not no_bisect,
        fixes=not no_fixes,
        max_time_s=max_time,
        db=db,
    )
    console = make_console(stderr=True)
    own = [folder / "report.md", folder / "report.json"]

    def so_far(report: ProgramReport) -> None:  # after each step: a run killed later keeps the steps it finished
        for path, text in ((own[0], to_markdown(report)), (own[1], to_json(report) + "\n")):
            write_atomic(path, text)

    with make_progress(console):
        report = run_program(options, say=lambda m: console.print(f"[dim]{escape(m)}[/]"), on_step=so_far)
    writers = {".md": lambda: to_markdown(report), ".json": lambda: to_json(report) + "\n"}
    write_outputs(own, writers, console)
    emit(fmt, writers, lambda: print_table(report, make_console()), output, console)
    append_step_summary(summary, to_markdown(report))
    code = report.exit_code(allow_failures)
    if code != exit_codes.OK:
        raise typer.Exit(code)
