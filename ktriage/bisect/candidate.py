"""The bisect data model shared by candidate sources, predicates and the search.

Why a separate module: the search (``search.py``), the compile-only and command predicates
(``predicates.py``) and the noise-robust timing predicate (``time_predicate.py``)
must agree on these few types and nothing else. A predicate never sees the search; the search
never sees how a predicate measures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from ktriage.schema.jsontypes import JSONObject

Outcome = Literal["good", "bad", "skip", "unsure"]
"""One candidate's verdict.

``skip``: the candidate could not be tested (build/compile failure, timeout, exit 125); the search
routes around it. ``unsure``: it was tested but the data cannot tell (noisy predicate, after its own
resampling); the search treats it like ``skip`` and never names a culprit that rests on it.
"""

OUTCOMES: tuple[Outcome, ...] = ("good", "bad", "skip", "unsure")


@dataclass(frozen=True)
class Candidate:
    """One point of the ordered range first-known-good .. last-known-bad.

    ``index`` is the position in that range (0 = good endpoint). ``id`` is what identifies the
    candidate to its source: a package version, a commit sha, a ptxas version. ``label`` is for
    humans (``triton==3.4.0``, ``3f2a1c9 raise BLOCK``). ``meta`` carries what the predicate needs
    to test it (``toolchain`` spec, ``repo``/``commit``, ``pin_change``...); kept JSON-friendly
    so the state file can store it.
    """

    index: int
    id: str
    label: str
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def to_json(self) -> JSONObject:
        return {"index": self.index, "id": self.id, "label": self.label, "meta": dict(self.meta)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Candidate:
        return cls(int(data["index"]), str(data["id"]), str(data["label"]), dict(data.get("meta") or {}))


def empty_cost() -> dict[str, float]:
    """Cost counters every observation carries, so the report can sum them."""
    return {"compiles": 0, "gpu_s": 0.0, "samples": 0}


@dataclass
class Observation:
    """What a predicate concluded about one candidate, with the evidence.

    ``measurements``: the numbers behind the decision (metric values per kernel, ratio and CI for
    timing, exit status for a command), JSON-friendly. ``cost``: ``{"compiles": n, "gpu_s": x,
    "samples": n}`` — the compiles actually run (cache hits are free), GPU seconds, time samples.
    ``confidence``: in [0, 1] when the predicate can say (1.0 for deterministic compile metrics).
    """

    candidate: Candidate
    outcome: Outcome
    reason: str
    measurements: dict[str, Any] = field(default_factory=dict)
    cost: dict[str, float] = field(default_factory=empty_cost)
    confidence: float | None = None

    def to_json(self) -> JSONObject:
        return {
            "candidate": self.candidate.to_json(),
            "outcome": self.outcome,
            "reason": self.reason,
            "measurements": self.measurements,
            "cost": dict(self.cost),
            "confidence": self.confidence,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Observation:
        outcome = data["outcome"]
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {outcome!r}")
        return cls(
            candidate=Candidate.from_json(data["candidate"]),
            outcome=outcome,
            reason=str(data.get("reason", "")),
            measurements=dict(data.get("measurements") or {}),
            cost=dict(data.get("cost") or empty_cost()),
            confidence=data.get("confidence"),
        )


@runtime_checkable
class Predicate(Protocol):
    """Decides good/bad for candidates by comparison against the measured endpoints.

    ``preflight`` measures both endpoints first (observations for good and bad, in that order) and
    raises ``KtriageError("endpoints do not differ ...", fix)`` when they do not: a bisection between
    two equal endpoints can only return noise. ``test`` takes several candidates at once so that a
    k-ary round can compile/measure them together (in parallel, or interleaved in one GPU process);
    it returns one observation per candidate, in the same order, each judged against the endpoints
    measured by ``preflight``. A failure to build/compile/run one candidate is an observation with
    outcome ``skip``, never an exception; exceptions are for aborting the whole bisect.
    """

    name: str

    def preflight(self, good: Candidate, bad: Candidate) -> list[Observation]: ...

    def test(self, candidates: Sequence[Candidate]) -> list[Observation]: ...
