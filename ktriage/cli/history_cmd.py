"""`ktriage history`: a cell's latency across stored runs, with its change points (Apache Otava).

Thin: parses, calls ``ktriage.api.history`` and renders its report. Exit 1
(FINDING) when ``--fail-on-recent N`` is given and a change point lies in a series' latest N runs,
so that a nightly can gate on it; 0 otherwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ktriage.cli import exit_codes
from ktriage.cli.console import make_console
from ktriage.cli.options import (
    SUFFIX,
    Db,
    Format,
    Mode,
    format_option,
    input_option,
    mode_option,
    output_option,
    write_outputs,
)

FORMATS = ("table", "markdown", "json")
WRITERS = (".md", ".json", ".html")


def history(
    op: Annotated[str, typer.Option("--op", help="The op as stored by `ktriage bench` (e.g. layer_norm).")],
    backend: Annotated[
        str,
        typer.Option(
            "--backend", help="The backend as stored (e.g. liger_layer_norm; `ktriage runs show RUN` lists them)."
        ),
    ],
    input: Annotated[
        list[str] | None, input_option("Default: every stored input, one series each.", catalog_only=True)
    ] = None,
    mode: Annotated[Mode | None, mode_option("Default: every stored pass, one series each.")] = None,
    toolchain: Annotated[
        str | None,
        typer.Option(
            "--toolchain",
            help="Only cells of this toolchain: a Triton version or its prefix (3.4: not ptxas 13.4), a spec (triton==3.4.0), an id, whole or cut at a dot, or 'host' for a native backend (docs/store.md); needed when a run measured the backend with several toolchains.",
        ),
    ] = None,
    gpu: Annotated[str | None, typer.Option("--gpu", help="Only runs on a GPU whose name contains this.")] = None,
    db: Db = None,
    fail_on_recent: Annotated[
        int | None,
        typer.Option(
            "--fail-on-recent",
            min=1,
            help="Exit 1 when a change point's first run at the new level is among a series' latest N runs (a nightly's gate; N below the series' number of runs). Default: off, exit 0.",
        ),
    ] = None,
    max_pvalue: Annotated[
        float, typer.Option("--max-pvalue", help="Significance a change point needs (Otava's t-test).")
    ] = 0.001,
    min_step: Annotated[
        float, typer.Option("--min-step", help="Smallest step counted, in percent of the level before.")
    ] = 0.0,
    min_segment: Annotated[
        int,
        typer.Option(
            "--min-segment",
            min=1,
            help="Fewest runs a level must hold on each side of a change (1 lets a single outlying run count).",
        ),
    ] = 2,
    fmt: Annotated[Format, format_option(FORMATS)] = Format.table,
    output: Annotated[
        list[Path] | None,
        output_option(WRITERS, ".html: the series plotted with the change points marked (self-contained)."),
    ] = None,
) -> None:
    """A cell's latency over the stored runs (oldest first) with the change points Apache Otava finds
    (E-divisive, t-test significance); each names the runs before and after it, the step and the
    ktriage bisect between their toolchains. Exit 1 with --fail-on-recent N when a change point is in
    the latest N runs."""
    from ktriage.api import history as run_history  # the analysis (scipy, SQLAlchemy) only when it runs

    report = run_history(
        op=op,
        backend=backend,
        inputs=tuple(input or ()),
        mode=mode.value if mode else None,
        toolchain=toolchain,
        gpu=gpu,
        db=db,
        fail_on_recent=fail_on_recent,
        max_pvalue=max_pvalue,
        min_step=min_step,
        min_segment=min_segment,
    )
    writers = {".md": report.to_markdown, ".json": report.json_text, ".html": report.to_html}
    if fmt is Format.table:
        report.print_table(make_console())
    else:
        typer.echo(writers[SUFFIX[fmt]](), nl=False)
    write_outputs(output or [], writers, make_console(stderr=True))
    raise typer.Exit(exit_codes.FINDING if report.recent_changes else exit_codes.OK)
