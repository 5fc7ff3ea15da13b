"""``ktriage.api.triage_run(command=..., old_toolchain=..., new_toolchain=...) -> TriageRunReport``:
from a program to a triage report on a GPU host: record what the program launches, compile, bench
both toolchains side by side, explain, compare, fix and bisect (docs/triage.md, ``--run``).

Why an entry point: ``ktriage triage --run`` built the program's options, chose the work folder and
kept its report.md and report.json up to date itself, so a GPU job script had only the command line.
The work folder's report.md and report.json are rewritten after each step here: a run killed later
keeps the steps it finished, whoever called it.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING

from ktriage.api._args import entry_point
from ktriage.atomic import write_atomic
from ktriage.brief import brief
from ktriage.errors import KtriageError, worded
from ktriage.mdsafe import markdown_writer
from ktriage.triage.program import REPORTS, ProgramReport

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["TriageRunReport", "triage_run"]


@dataclass
class TriageRunReport(ProgramReport):
    """The whole run (``ktriage.triage.program.ProgramReport``: steps with wall times, one row per
    benched cell, the triage of the two sides) with its renderers; ``reports``: the work folder's
    report.md and report.json, as the folder was given."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    reports: tuple[Path, ...] = ()

    def json_text(self) -> str:
        """The report as JSON (the command adds a final newline)."""
        from ktriage.report.triage_run import to_json

        return to_json(self)

    @markdown_writer
    def to_markdown(self) -> str:
        from ktriage.report.triage_run import to_markdown

        return to_markdown(self)

    def print_table(self, console: Console) -> None:
        from ktriage.report.triage_run import print_table

        print_table(self, console)


@entry_point
def triage_run(
    *,
    command: str,
    old_toolchain: str | None,
    new_toolchain: str | None,
    workdir: str | Path | None = None,
    threshold: float = 0.10,
    jobs: int | None = None,
    bisect: bool = True,
    fixes: bool = True,
    max_time: float | None = None,
    db: str | None = None,
    model: str | Path | None = None,
    sm_count: int | None = None,
    say: Callable[[str], None] | None = None,
) -> TriageRunReport:
    """Run ``command`` (a shell command line) under the recorder, then triage what it launched between
    ``old_toolchain`` and ``new_toolchain`` (both needed). ``workdir``: where W.json, the bundle, the
    results and report.md/report.json go (default: ``ktriage-run-<time>`` here). ``threshold``: the
    gate as a fraction (0.10: cells that moved less than 10 % are not flagged); ``max_time``: the
    bench's seconds of sampling per input (None: 5); ``model``: the cost model's file that prices the
    predictions (``--model``; None: $KTRIAGE_MODEL, else the shipped fit); ``sm_count``: the SMs the
    predictions are priced for (None: this GPU's, as recorded). Raises KtriageError (before anything runs) for
    bad input or a host without a GPU; a step that fails later ends the run with a report that says
    which step and why."""
    from ktriage.api import _args as args
    from ktriage.report.triage_run import to_json, to_markdown
    from ktriage.triage.program import ProgramOptions, run_program

    say = args.callback(say, "say")
    bisect, fixes = args.switch(bisect, "bisect", "--no-bisect"), args.switch(fixes, "fixes", "--no-fixes")
    command = args.text(command, "command", "--run", example="python train.py --steps 3")  # None: not "empty"
    old_toolchain = args.optional_text(old_toolchain, "old_toolchain", "--old-toolchain", example="triton==3.5.1")
    new_toolchain = args.optional_text(new_toolchain, "new_toolchain", "--new-toolchain", example="triton==3.6.0")
    workdir = args.path_or_name(workdir, "workdir", "--workdir", example="run1") if workdir is not None else None
    # as triage and bench check theirs: threshold="0.05" was a TypeError from inside the preflight, jobs=0
    # was not looked at until the compile step (after the recording), db=1 not until the store
    threshold = args.THRESHOLD(threshold)  # its range: the preflight's check_gate (ktriage.stats.gate)
    jobs, max_time = args.JOBS.optional(jobs), args.MAX_TIME.optional(max_time)
    db = args.db(db)
    model = args.model(model)  # a file that is no model is refused before the program runs
    sm_count = args.SM_COUNT.optional(sm_count)  # explain's check: the same message

    if not old_toolchain or not new_toolchain:
        raise KtriageError(
            worded(
                lambda o: (
                    f"{o('command', '--run')} needs {o('old_toolchain', '--old-toolchain')} and "
                    f"{o('new_toolchain', '--new-toolchain')}"
                )
            ),
            worded(
                lambda o: (
                    f"e.g. {o('old_toolchain', '--old-toolchain', 'triton==3.5.1')} and "
                    f"{o('new_toolchain', '--new-toolchain', 'triton==3.6.0')}; on a host without network: "
                    f"{o('old_toolchain', '--old-toolchain', 'triton=host,ptxas=/usr/local/cuda/bin/ptxas')} and "
                    f"{o('new_toolchain', '--new-toolchain', 'triton=host')}"
                )
            ),
        )
    folder = Path(workdir) if workdir is not None else Path(f"ktriage-run-{_dt.datetime.now():%Y%m%d-%H%M%S}")
    options = ProgramOptions(
        command=command,
        old_toolchain=old_toolchain,
        new_toolchain=new_toolchain,
        workdir=folder,
        threshold=threshold,
        jobs=jobs,
        bisect=bisect,
        fixes=fixes,
        max_time_s=ProgramOptions.max_time_s if max_time is None else max_time,
        db=db,
        model=model,
        sm_count=sm_count,
    )
    files = (folder / REPORTS[0], folder / REPORTS[1])

    def so_far(report: ProgramReport) -> None:  # after each step: a run killed later keeps the steps it finished
        for path, text in ((files[0], to_markdown(report)), (files[1], to_json(report) + "\n")):
            write_atomic(path, text)

    report = run_program(options, say=say, on_step=so_far)
    return TriageRunReport(**{f.name: getattr(report, f.name) for f in fields(report)}, reports=files)
