"""The options only ``ktriage explain`` has, declared once (their help is the user documentation:
docs/cli.md is generated from it). Kept apart so the command module stays what it does: parse, call
``ktriage.api.explain``, render."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

FORMATS = ("table", "markdown", "json")
WRITERS = (".md", ".json", ".html")

Target = Annotated[
    str,
    typer.Argument(
        help="A catalog op (see `ktriage catalog list`), e.g. liger.layer_norm, a spec .toml file, or a workload .json recorded by `ktriage record`."
    ),
]
SmCount = Annotated[
    int | None,
    typer.Option(
        "--sm-count",
        help="SMs to price for, and to size a catalog op's grids (default: a workload's recording GPU, else the arch's).",
    ),
]
Report = Annotated[
    Path | None,
    typer.Option(
        "--report",
        help=(
            "Older spelling of two -o: the report at PATH (written as -o writes it; markdown for a PATH without a"
            " suffix) and the JSON next to it, PATH with its suffix replaced by .json (r.md: r.md and r.json);"
            " an r.json that is not an earlier explain report is refused unless named with -o."
        ),
    ),
]
NoReport = Annotated[
    bool, typer.Option("--no-report", hidden=True, help="Accepted for old scripts; no report is written unless asked.")
]
PtxDiff = Annotated[
    bool, typer.Option("--ptx-diff", help="Show an aligned PTX diff (reference vs each toolchain) for one kernel.")
]
SassDiff = Annotated[
    bool, typer.Option("--sass-diff", help="Show an aligned SASS diff (reference vs each toolchain) for one kernel.")
]
Lines = Annotated[
    list[str] | None,
    typer.Option(
        "--lines",
        metavar="FILE:LINE[-LINE]",
        help="Restrict the SASS and PTX diffs to the instructions of these source lines (repeatable; implies --sass-diff --ptx-diff when neither is given): a reproducer-sized excerpt for a compiler bug report.",
    ),
]
Fixes = Annotated[
    bool,
    typer.Option(
        "--fixes", help="Propose fixes for the regressions and verify each by compiling it (docs/explain.md#fixes)."
    ),
]
FixToolchain = Annotated[
    list[str] | None,
    typer.Option("--fix-toolchain", help="With --fixes: a neighbouring toolchain to try as a fix, repeatable."),
]
Threshold = Annotated[
    float,
    typer.Option(
        "--threshold",
        help="The gate: a change is a regression (improvement) only where its predicted ratio's whole interval lies above 1+T (below 1/(1+T)); a fraction, default 0.05 (5%).",
    ),
]
FailOn = Annotated[
    str | None,
    typer.Option(
        "--fail-on",
        help="CI gate, compile-only: exit 1 when a finding is a predicted regression (regression) or when there is any finding at all (any).",
    ),
]
