"""``ktriage.api.history(op=..., backend=..., ...) -> HistoryReport``: a cell's latency across the
stored runs, oldest first, with the change points Apache Otava finds (docs/history.md).

Why an entry point: ``ktriage history`` checked the detector's settings, opened the store, queried
and analysed the series itself, so a nightly's gate written in Python (or a dashboard) had only the
command line. The report is the analysis' own (``ktriage.history.analysis.HistoryReport``, its
series and change points) with the renderers ``ktriage history`` writes with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import TYPE_CHECKING

from ktriage.api import _args as args
from ktriage.brief import brief
from ktriage.history.analysis import HistoryReport as _Analysed
from ktriage.mdsafe import markdown_writer

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["HistoryReport", "history"]


class HistoryReport(_Analysed):
    """Every series the query selected, with its change points (``series``), and ``recent_changes``:
    the change points among a series' latest ``fail_on_recent`` runs (a nightly's gate)."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    def json_text(self) -> str:
        from ktriage.report.history import to_json

        return to_json(self)

    @markdown_writer
    def to_markdown(self) -> str:
        from ktriage.report.history import to_markdown

        return to_markdown(self)

    def to_html(self) -> str:
        """The series plotted with the change points marked (one self-contained page)."""
        from ktriage.report.history import to_html

        return to_html(self)

    def print_table(self, console: Console) -> None:
        from ktriage.report.history import print_report

        print_report(self, console)


@args.entry_point
def history(
    *,
    op: str,
    backend: str,
    inputs: int | Sequence[str | int] = (),
    mode: str | None = None,
    toolchain: str | None = None,
    gpu: str | None = None,
    db: str | None = None,
    fail_on_recent: int | None = None,
    max_pvalue: float = 0.001,
    min_step: float = 0.0,
    min_segment: int = 2,
) -> HistoryReport:
    """The series of ``op``/``backend`` in the store ``db`` (None: the home's SQLite file, or
    ``$KTRIAGE_DB``), one per input and pass unless ``inputs`` (ids or shape facts) and ``mode`` pick;
    ``toolchain``: the cells' toolchain by its parts (``ktriage.toolchain.select``: ``3.4``, ``triton==3.4.0``,
    an id, ``host`` for a native backend); ``gpu``: a substring the runs' GPU must contain. A change
    point needs p <= ``max_pvalue``, a step of at least ``min_step`` percent and ``min_segment`` runs
    on each side; with ``fail_on_recent`` N, those in a series' latest N runs are ``recent_changes``.
    Raises KtriageError for bad settings and for a query the store holds no cell of. A lone str is
    one input (``inputs="12"``)."""
    from ktriage.history.analysis import Detection, analyze_history
    from ktriage.store import open_store
    from ktriage.store.history import HistoryQuery

    op, backend = args.text(op, "op", "--op", example="layer_norm"), args.text(backend, "backend", "--backend")
    inputs = args.texts(inputs, "inputs", "--input", numbers=True)
    # toolchain=[...] was AttributeError: 'list' object has no attribute 'strip' from the selector
    mode = args.optional_text(mode, "mode", "--mode", example="bwd")
    toolchain = args.optional_text(toolchain, "toolchain", "--toolchain", example="triton==3.4.0")
    gpu = args.optional_text(gpu, "gpu", "--gpu", example="H100")
    max_pvalue, min_step = args.MAX_PVALUE(max_pvalue), args.MIN_STEP(min_step)
    min_segment, fail_on_recent = args.MIN_SEGMENT(min_segment), args.FAIL_ON_RECENT.optional(fail_on_recent)
    if toolchain is not None:  # a selector that names no part of a toolchain would match no cell
        from ktriage.toolchain.select import check_selector

        check_selector(toolchain)
    query = HistoryQuery(op=op, backend=backend, inputs=tuple(inputs), mode=mode, toolchain=toolchain, gpu=gpu)
    detection = Detection(max_pvalue=max_pvalue, min_step_pct=min_step, min_segment=min_segment)
    with open_store(db, must_exist=True) as store:
        analysed = analyze_history(store, query, detection, fail_on_recent=fail_on_recent)
    return HistoryReport(**{f.name: getattr(analysed, f.name) for f in fields(analysed)})
