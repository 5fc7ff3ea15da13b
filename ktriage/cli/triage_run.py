"""`ktriage triage --run CMD --old-toolchain A --new-toolchain B`: the CLI half of ``ktriage.api.triage_run``.

Options checked, progress shown, the report printed and written (report.md and report.json in the
work folder, plus any -o); called by ``ktriage.cli.triage_cmd`` when --run is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from ktriage.cli import exit_codes
from ktriage.cli.console import make_console, make_progress
from ktriage.cli.options import Format, append_step_summary, emit, refuse_inapplicable, write_outputs
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
    max_time: float | None,
    db: str | None,
    model: Path | None,
    sm_count: int | None,
    fmt: Format,
    output: list[Path],
    allow_failures: bool,
    summary: str | None,
) -> None:
    from ktriage.api import check_percent_gate
    from ktriage.api import triage_run as run_api  # the program's triage (compiler, bench) only when it runs

    refuse_inapplicable(
        given,
        "--run: it records the program and benches what it launched",
        "drop them; --run takes --old-toolchain, --new-toolchain, --workdir, --threshold, --no-bisect, "
        "--no-fixes, --max-time, --jobs, --db, --model, --sm-count, -o",
    )
    if any(p.suffix.lower() == ".html" for p in output):
        raise KtriageError("--run writes markdown and JSON reports, not HTML", "give -o report.md or -o report.json")
    console = make_console(stderr=True)
    with make_progress(console):
        report = run_api(
            command=command,
            old_toolchain=old_toolchain,
            new_toolchain=new_toolchain,
            workdir=workdir,
            threshold=check_percent_gate(threshold),
            jobs=jobs,
            bisect=not no_bisect,
            fixes=not no_fixes,
            max_time=max_time,
            db=db,
            model=model,
            sm_count=sm_count,
            say=lambda m: console.print(f"[dim]{escape(m)}[/]"),
        )
    writers = {".md": report.to_markdown, ".json": lambda: report.json_text() + "\n"}
    write_outputs(list(report.reports), writers, console)
    emit(fmt, writers, lambda: report.print_table(make_console()), output, console)
    append_step_summary(summary, report.to_markdown())
    code = report.exit_code(allow_failures)
    if code != exit_codes.OK:
        raise typer.Exit(code)
