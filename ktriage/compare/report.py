"""``CompareReport``: what one compare found, and the one place its JSON is made.

One compare is one ``Comparison`` (two result sets), or one per toolchain after the first when the
toolchains of one run are compared. Every renderer (``ktriage.report``: table, markdown, CSV,
HTML) reads this object; the JSON document (``compare --format json``, ``-o X.json``, a library
caller's ``to_json()``) is built here only, with the Nsight Compute counters quoted next to each
profiled pair's verdict (``ktriage.compare.quote``) and the runs' profile notes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

from ktriage.brief import brief
from ktriage.compare.pairing import Comparison
from ktriage.compare.quote import comparison_quotes
from ktriage.exit_status import ExitStatus, outcome
from ktriage.schema.jsontypes import JSONObject


@dataclass
class CompareReport:
    """The comparisons of one compare, in order (reference side first)."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)
    BRIEF_FACTS: ClassVar[tuple[str, ...]] = ("has_regressions", "regression_count", "complete")

    comparisons: list[Comparison]

    @property
    def regression_count(self) -> int:
        """Regressions over all comparisons (the baseline backend's own moves are not counted)."""
        return sum(len(c.regressions()) for c in self.comparisons)

    @property
    def has_regressions(self) -> bool:
        """What CI gates on: any regression in any comparison."""
        return any(c.has_regressions for c in self.comparisons)

    @property
    def not_compared_count(self) -> int:
        """Cells no verdict covers, over all comparisons (the baseline backend's included, as listed)."""
        return sum(len(c.problems()) for c in self.comparisons)

    @property
    def complete(self) -> bool:
        """Every cell was compared. A cell one side lacks, or that failed, was timed out or is no latency,
        has no verdict: "0 regressions" would then pass a CI job on cells nobody compared, so the
        result is partial, as ``ktriage triage`` and ``explain`` call one whose cells failed."""
        return self.not_compared_count == 0

    def exit_code(self, allow_failures: bool = False) -> ExitStatus:
        """INCOMPLETE (4) when a cell was not compared, whatever else was found (unless
        ``allow_failures``), else FINDING (1) when a regression was found, else OK (0): the status
        ``ktriage compare`` exits with (``ktriage.exit_status``)."""
        return outcome(finding=self.has_regressions, complete=self.complete, allow_failures=allow_failures)

    @property
    def exit_status(self) -> ExitStatus:
        """``exit_code()`` with failures not allowed: what ``ktriage compare`` exits with by default."""
        return self.exit_code()

    def to_json(self) -> JSONObject:
        """The JSON document: per comparison its pairs, baseline check, cliffs, counters and notes."""
        return {
            "comparisons": [
                {
                    **c.to_json(),
                    "counters": [q.to_json() for q in comparison_quotes(c)],
                    "profile_notes": c.profile_notes(),
                }
                for c in self.comparisons
            ],
            "regressions": self.regression_count,
            "not_compared_count": self.not_compared_count,
            "complete": self.complete,
        }

    def json_text(self) -> str:
        """``to_json()`` as text, as ``compare --format json`` prints it (one space per level)."""
        return json.dumps(self.to_json(), indent=1)
