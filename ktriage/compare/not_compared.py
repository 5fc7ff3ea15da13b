"""The cells of a comparison that no verdict covers, grouped by reason: the one grouping that compare's
and triage's terminal table, markdown summary and HTML report all show.

Why grouped: a side without a whole operator, or a toolchain that fails every kernel, leaves hundreds
of cells not compared for one or two reasons. One line each buried the verdicts (and a CI summary cut
the list at 200); a count per reason with its first few cells says the same in a few lines. Nothing is
dropped: every cell keeps its reason in ``every`` (the HTML's folded full list), and the JSON lists
them all, compare's and triage's alike (:func:`not_compared_json`: ``not_compared`` and ``not_compared_cells``).

Why a cell is a (label, reason) pair rather than one "<cell>: <why>" line: grouping by reason needs the
reason apart, and a line cannot be split back (a reason holds ": " too, as labels may).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from ktriage.schema.jsontypes import JSONObject

# Cells of one reason named before "and N more", and reasons shown before "N other reasons": enough to
# say which cells (a pattern of inputs or backends shows in five), few enough to keep the verdicts in view.
MAX_LABELS_PER_REASON = 5
MAX_REASONS_SHOWN = 20


class NotComparedCell(NamedTuple):
    """One cell no verdict covers: its label (``PairResult.label()``), why it got none, and the side at fault
    (``"ref"``/``"new"``: the side the cell is missing from or failed on; ``"both"``: failed on both; None: no
    one side's, as two sides measured on two GPUs). Why the side apart: triage's JSON lists no pairs, so a CI
    script could tell "the new toolchain cannot compile it" from "the old run lacks that input" only by
    parsing the reason."""

    label: str
    reason: str
    side: str | None = None

    @property
    def text(self) -> str:
        """The cell as one line, ``<cell>: <why>``: the JSON's ``not_compared`` entries."""
        return f"{self.label}: {self.reason}"

    def to_json(self) -> JSONObject:
        """The cell as the JSON's ``not_compared_cells`` entry: label, reason and side apart."""
        return {"cell": self.label, "reason": self.reason, "side": self.side}


def not_compared_json(cells: Sequence[NotComparedCell]) -> JSONObject:
    """The cells not compared as compare's JSON (per comparison) and triage's JSON carry them:
    ``not_compared``, one ``"<cell>: <why>"`` line each (what the JSON always had, kept for readers of
    it), and ``not_compared_cells``, the same cells as ``{"cell", "reason", "side"}`` objects (a line cannot be
    split back: a label holds ": " too). Why one function: triage had the structured list and compare
    had not; two encoders of one list drift apart."""
    return {"not_compared": [x.text for x in cells], "not_compared_cells": [x.to_json() for x in cells]}


@dataclass(frozen=True)
class ReasonGroup:
    """The cells not compared for one reason: how many, and the first few of them."""

    reason: str
    count: int
    labels: tuple[str, ...]

    @property
    def more(self) -> int:
        """The cells of this reason not named in ``labels``."""
        return self.count - len(self.labels)


@dataclass(frozen=True)
class NotComparedGroups:
    """Every cell not compared, as a count per reason (most cells first, the first
    ``MAX_REASONS_SHOWN``), and in full (``every``: label, reason)."""

    reasons: tuple[ReasonGroup, ...]
    other_reasons: int  # reasons past the ones shown
    other_cells: int  # the cells of those reasons
    every: tuple[NotComparedCell, ...]

    @property
    def count(self) -> int:
        return len(self.every)


def group_not_compared(
    cells: Sequence[NotComparedCell], max_labels: int = MAX_LABELS_PER_REASON, max_reasons: int = MAX_REASONS_SHOWN
) -> NotComparedGroups:
    """``cells`` (a comparison's ``Comparison.not_compared_cells()``, the baseline backend's included, or
    a triage's ``TriageReport.not_compared``) grouped by reason; ties between reasons keep the order the
    cells come in."""
    every = tuple(cells)
    groups: dict[str, list[str]] = {}
    for cell in every:
        groups.setdefault(cell.reason, []).append(cell.label)
    ranked = sorted(groups.items(), key=lambda g: -len(g[1]))  # stable sort
    shown, rest = ranked[:max_reasons], ranked[max_reasons:]
    return NotComparedGroups(
        reasons=tuple(ReasonGroup(why, len(labels), tuple(labels[:max_labels])) for why, labels in shown),
        other_reasons=len(rest),
        other_cells=sum(len(labels) for _, labels in rest),
        every=every,
    )
