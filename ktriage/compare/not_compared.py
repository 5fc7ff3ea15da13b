"""The cells of a comparison that no verdict covers, grouped by reason: the one grouping that the
terminal table, the markdown summary and the HTML report all show.

Why grouped: a side without a whole operator, or a toolchain that fails every kernel, leaves hundreds
of cells not compared for one or two reasons. One line each buried the verdicts (and a CI summary cut
the list at 200); a count per reason with its first few cells says the same in a few lines. Nothing is
dropped: every cell keeps its reason in ``every`` (the HTML's folded full list), and the JSON lists
them all (``Comparison.not_compared``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ktriage.compare.pairing import Comparison

# Cells of one reason named before "and N more", and reasons shown before "N other reasons": enough to
# say which cells (a pattern of inputs or backends shows in five), few enough to keep the verdicts in view.
MAX_LABELS_PER_REASON = 5
MAX_REASONS_SHOWN = 20


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
    every: tuple[tuple[str, str], ...]

    @property
    def count(self) -> int:
        return len(self.every)


def group_not_compared(
    c: Comparison, max_labels: int = MAX_LABELS_PER_REASON, max_reasons: int = MAX_REASONS_SHOWN
) -> NotComparedGroups:
    """The cells of ``c`` no verdict covers (the baseline backend's included, as ``not_compared`` lists
    them), grouped by reason; ties between reasons keep the order the cells come in."""
    every = tuple((p.label(), p.problem or p.status) for p in c.problems())
    groups: dict[str, list[str]] = {}
    for label, why in every:
        groups.setdefault(why, []).append(label)
    ranked = sorted(groups.items(), key=lambda g: -len(g[1]))  # stable sort
    shown, rest = ranked[:max_reasons], ranked[max_reasons:]
    return NotComparedGroups(
        reasons=tuple(ReasonGroup(why, len(labels), tuple(labels[:max_labels])) for why, labels in shown),
        other_reasons=len(rest),
        other_cells=sum(len(labels) for _, labels in rest),
        every=every,
    )
