"""The options of ``ktriage tune``, declared once (their help is the user documentation: docs/cli.md
is generated from it), and the parsing of the list-valued ones (``--warps 4,8``, ``--block
BLOCK_SIZE=8192``) into what :func:`ktriage.api.tune` takes. Kept apart so the command module stays
what it does: parse, call the entry point, render."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ktriage.cli.options import input_option, toolchain_option
from ktriage.errors import KtriageError

FORMATS = ("table", "markdown", "json")
WRITERS = (".md", ".json")

Target = Annotated[
    str,
    typer.Argument(
        help="A catalog op (e.g. liger.layer_norm), a spec .toml file, or a workload .json recorded by `ktriage record`."
    ),
]
Toolchains = Annotated[
    list[str],
    toolchain_option(
        "The first is the toolchain tuned for; the others are timed with the library's own config on the GPU (e.g. the release before a regression)."
    ),
]
Inputs = Annotated[list[str] | None, input_option("Each input is tuned on its own, all are timed in one GPU run.")]
SmCount = Annotated[
    int | None,
    typer.Option(
        "--sm-count",
        help="SM count for grids and waves (default: the spec's own, e.g. a recording GPU's, else the arch's usual GPU).",
    ),
]
CompileOnly = Annotated[bool, typer.Option("--compile-only", help="Stop after compile-only screening (no GPU needed).")]
TopK = Annotated[int, typer.Option("--top-k", help="Candidates kept after screening (and timed on the GPU).")]
MaxSpillBytes = Annotated[
    int,
    typer.Option(
        "--max-spill-bytes",
        help="Drop configs whose ptxas spill store bytes exceed this (stack size is not spills).",
    ),
]
Budget = Annotated[float, typer.Option("--budget", help="GPU seconds for timing the kept candidates (all together).")]
Warps = Annotated[str | None, typer.Option("--warps", help="Only these num_warps, e.g. 4,8,16.")]
Stages = Annotated[str | None, typer.Option("--stages", help="Only these num_stages, e.g. 1,3.")]
Block = Annotated[
    list[str] | None,
    typer.Option(
        "--block",
        help="Only these values of a block knob, e.g. BLOCK_SIZE=8192,16384. Repeatable (another knob, or more values of the same one).",
    ),
]
BundleDir = Annotated[
    Path | None,
    typer.Option("--bundle", help="Where to write the timing bundle (default: under the ktriage home)."),
]
CompareWith = Annotated[
    list[str] | None, typer.Option("--compare-with", help="Older spelling of a second, third... -t.")
]
ResultsFile = Annotated[
    Path | None,
    typer.Option(
        "--results",
        help="A `ktriage bench --output-json` file of this tune bundle: report the winner (per input) from it.",
    ),
]
AllRows = Annotated[
    bool,
    typer.Option(
        "--all",
        help="Show every candidate in the table, not only the kept ones: the ranked by rank, then the others by estimate.",
    ),
]


def ints(text: str | None, what: str, example: str = "4,8,16") -> list[int] | None:
    """``"4,8,16"`` -> ``[4, 8, 16]`` (None when not given). A list without a number (``--warps ,``)
    is refused: it searched the whole space as if the flag had not been given."""
    if text is None:
        return None
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        values = None
    if not values:
        raise KtriageError(f"{what} {text!r} is not a comma-separated list of integers", f"write e.g. {what} {example}")
    return values


def blocks(items: list[str] | None) -> dict[str, list[int]] | None:
    """``["BLOCK_SIZE=8192,16384"]`` -> ``{"BLOCK_SIZE": [8192, 16384]}`` (None when not given).
    A knob repeated adds its values (``--block BLOCK_SIZE=8192 --block BLOCK_SIZE=16384`` is both:
    the second replaced the first, and tune searched 16384 alone)."""
    if not items:
        return None
    out: dict[str, list[int]] = {}
    for item in items:
        name, sep, vals = item.partition("=")
        if not sep or not name.strip():
            raise KtriageError(
                f"--block {item!r} names no knob and its values", "write e.g. --block BLOCK_SIZE=8192,16384"
            )
        try:
            values = ints(vals, "--block") or []
        except KtriageError:
            raise KtriageError(
                f"--block {item!r} is not a knob and comma-separated integers",
                f"write e.g. --block {name.strip()}=8192,16384",
            ) from None
        known = out.setdefault(name.strip(), [])
        known += [v for v in values if v not in known]
    return out
