"""The ``ktriage`` command: registers every command group and turns KtriageError into a clean message."""

from __future__ import annotations

import sys

import typer
from rich.markup import escape

from ktriage.cli.console import make_console
from ktriage.errors import KtriageError

app = typer.Typer(
    name="ktriage",
    help="Find, bisect, explain and fix performance regressions of Triton GPU kernels across compiler versions.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

err_console = make_console(stderr=True)


def _register() -> None:
    """Attach the command groups. Each lives in its own module under ktriage.cli."""
    from ktriage.cli import (
        bench_cmd,
        bisect_cmd,
        catalog_cmd,
        compare_cmd,
        explain_cmd,
        fidelity_cmd,
        occupancy_cmd,
        runs_cmd,
        toolchain_cmd,
        tune_cmd,
    )

    app.command("explain")(explain_cmd.explain)
    app.command("bench")(bench_cmd.bench)
    app.command("compare")(compare_cmd.compare)
    app.command("bisect")(bisect_cmd.bisect)
    app.command("bisect-step")(bisect_cmd.bisect_step)
    app.command("tune")(tune_cmd.tune)
    app.command("fidelity")(fidelity_cmd.fidelity)
    app.add_typer(toolchain_cmd.app, name="toolchain")
    app.add_typer(catalog_cmd.app, name="catalog")
    app.command("occupancy")(occupancy_cmd.occupancy)
    app.add_typer(runs_cmd.app, name="runs")


_register()


def main() -> None:
    """Entry point: run the app, print user errors as one red line plus the fix, exit 2."""
    try:
        app()
    except KtriageError as exc:
        # escape: problems quote user text such as "[kernel]" that rich would take for markup
        err_console.print(f"[bold red]error:[/] {escape(exc.problem)}")
        if exc.fix:
            err_console.print(f"[yellow]fix:[/] {escape(exc.fix)}")
        sys.exit(2)
