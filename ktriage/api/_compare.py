"""``ktriage.api.compare(old=..., new=...) -> CompareReport``: two runs (or the toolchains of one),
per input and backend a ratio with its confidence interval and a verdict (docs/compare.md).

Compare's one home is ``ktriage.compare`` (loading the sides, the statistics, the report); this is
its entry point in the API's shape: keyword-only, like every verb here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ktriage.api import _args as args
from ktriage.brief import brief
from ktriage.compare.report import CompareReport
from ktriage.compare.sides import Side
from ktriage.errors import KtriageError, joined, option
from ktriage.mdsafe import markdown_writer

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["CompareReport", "CompareView", "compare"]


@dataclass(frozen=True)
class CompareView:
    """The renderers of a :class:`CompareReport`, the ones ``ktriage compare`` writes with. Apart
    from the report because the report lives in ``ktriage.compare``, below the rendering layer
    (``ktriage.report``), where triage and the cost model's dataset read it too."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    report: CompareReport

    @markdown_writer
    def to_markdown(self) -> str:
        from ktriage.report.markdown import to_markdown

        return to_markdown(self.report)

    def json_text(self) -> str:
        return self.report.json_text() + "\n"

    def to_csv(self) -> str:
        from ktriage.report.tabular import to_csv

        return to_csv(self.report)

    def to_html(self) -> str:
        """Self-contained, with plots."""
        from ktriage.report.html import to_html

        return to_html(self.report)

    def print_table(self, console: Console, *, show_same: bool = False) -> None:
        """The pairs table (``show_same``: the 'same' pairs too) and the verdict counters."""
        from ktriage.report.tabular import print_counters, print_table

        print_table(console, self.report, show_same=show_same)
        print_counters(console, self.report)


@args.entry_point
def compare(
    *,
    old: Side,
    new: Side | None = None,
    toolchains: bool = False,
    reference: str | None = None,
    baseline: str | None = None,
    threshold: float = 0.05,
    confidence: float = 0.99,
    db: str | None = None,
    op: str | None = None,
    mode: str | None = None,
    allow_precision_mismatch: bool = False,
) -> CompareReport:
    """``old`` against ``new``: results files (ktriage's JSON, TritonBench's CSV or JSON), run ids
    of the store ``db``, or loaded sides; with ``toolchains=True`` the toolchains of the one run
    ``old``, each against the first or against ``reference`` (a toolchain id of the run, or a unique
    part of one: ``"triton==3.4.0"``). ``threshold``: changes smaller than this fraction are "same"; ``confidence``: of the
    intervals and the U test; ``baseline``: the baseline backend (default: the run's, else the
    operator's); ``allow_precision_mismatch``: compare runs of two dtypes (bf16 against fp16) on
    purpose, refused otherwise; each comparison's ``warnings`` then says so. Raises
    :class:`~ktriage.errors.KtriageError` for bad input, naming the fix."""
    from ktriage.compare.run import compare as run_compare

    if not isinstance(toolchains, bool) and isinstance(toolchains, str | list | tuple):
        # every other verb's toolchains= is a list of specs: here it is a switch, and ["triton==3.3.1",
        # "triton==3.4.0"] was read as True (the run's first toolchain against each other, whichever were named)
        raise KtriageError(
            joined(
                option("toolchains", "--toolchains"),
                f" is {'a str' if isinstance(toolchains, str) else 'a list'} ({toolchains!r}): "
                "in compare it is a switch, True to compare the toolchains of the one run old",
            ),
            "pass toolchains=True, and reference='triton==3.3.1' (a toolchain of the run) to choose the one the "
            "others are compared against",
        )
    return run_compare(
        _side(old, "old", "A"),
        _side(new, "new", "B") if new is not None else None,
        toolchains=args.switch(toolchains, "toolchains", "--toolchains"),
        reference=args.optional_text(reference, "reference", "--reference", example="triton==3.4.0"),
        baseline=args.optional_text(baseline, "baseline", "--baseline", example="torch_layer_norm"),
        threshold=args.THRESHOLD(threshold),
        confidence=args.CONFIDENCE(confidence),
        db=args.db(db),
        op=args.optional_text(op, "op", "--op", example="layer_norm"),
        mode=args.optional_text(mode, "mode", "--mode", example="bwd"),
        allow_precision_mismatch=args.switch(
            allow_precision_mismatch, "allow_precision_mismatch", "--allow-precision-mismatch"
        ),
    )


def _side(value: object, name: str, metavar: str) -> Side:
    """One side as given: a results file (str or Path), a run id, or a side already loaded; a list or
    None is refused naming the argument (compare takes ONE run per side)."""
    from ktriage.compare.sides import LoadedSide

    if isinstance(value, LoadedSide | Path | str):
        return value
    raise KtriageError(
        f"{name} ({metavar}) is {'None' if value is None else 'a ' + type(value).__name__}: "
        "compare takes one results file or run id per side",
        f"pass {name} as a path or a run id, e.g. compare(old='old.json', new='new.json')",
    )
