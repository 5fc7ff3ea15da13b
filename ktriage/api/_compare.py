"""``ktriage.api.compare(old=..., new=...) -> CompareReport``: two runs (or the toolchains of one),
per input and backend a ratio with its confidence interval and a verdict (docs/compare.md).

Compare's one home is ``ktriage.compare`` (loading the sides, the statistics, the report); this is
its entry point in the API's shape: keyword-only, like every verb here.
"""

from __future__ import annotations

from ktriage.compare.report import CompareReport
from ktriage.compare.sides import Side

__all__ = ["CompareReport", "compare"]


def compare(
    *,
    old: Side,
    new: Side | None = None,
    toolchains: bool = False,
    baseline: str | None = None,
    threshold: float = 0.05,
    confidence: float = 0.99,
    db: str | None = None,
    op: str | None = None,
    mode: str | None = None,
) -> CompareReport:
    """``old`` against ``new``: results files (ktriage's JSON, TritonBench's CSV or JSON), run ids
    of the store ``db``, or loaded sides; with ``toolchains=True`` the toolchains of the one run
    ``old``. ``threshold``: changes smaller than this fraction are "same"; ``confidence``: of the
    intervals and the U test; ``baseline``: the baseline backend (default: the run's, else the
    operator's). Raises :class:`~ktriage.errors.KtriageError` for bad input, naming the fix."""
    from ktriage.compare.run import compare as run_compare

    return run_compare(
        old,
        new,
        toolchains=toolchains,
        baseline=baseline,
        threshold=threshold,
        confidence=confidence,
        db=db,
        op=op,
        mode=mode,
    )
