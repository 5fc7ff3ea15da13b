"""The bisect data model shared by candidate sources, predicates and the search.

Why a separate module: the search (``search.py``), the compile-only and command predicates
(``predicates.py``) and the noise-robust timing predicate (``time_predicate.py``)
must agree on these few types and nothing else. A predicate never sees the search; the search
never sees how a predicate measures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from ktriage.schema.jsontypes import JSONObject, JSONValue

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
    meta: JSONObject = field(default_factory=dict, compare=False, hash=False)

    def to_json(self) -> JSONObject:
        return {"index": self.index, "id": self.id, "label": self.label, "meta": dict(self.meta)}

    @classmethod
    def from_json(cls, data: Mapping[str, JSONValue]) -> Candidate:
        """A candidate as the state file keeps it (``to_json``)."""
        index, meta = data["index"], data.get("meta")
        if not isinstance(index, (int, str)):
            raise ValueError(f"candidate index {index!r} is not a number")
        return cls(int(index), str(data["id"]), str(data["label"]), dict(meta) if isinstance(meta, Mapping) else {})


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
    measurements: JSONObject = field(default_factory=dict)
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
    def from_json(cls, data: Mapping[str, JSONValue]) -> Observation:
        """An observation as the state file keeps it (``to_json``); the numbers as they were written."""
        outcome = next((o for o in OUTCOMES if o == data["outcome"]), None)
        if outcome is None:
            raise ValueError(f"unknown outcome {data['outcome']!r}")
        candidate, measurements = data["candidate"], data.get("measurements")
        if not isinstance(candidate, Mapping):
            raise ValueError(f"observation's candidate {candidate!r} is not an object")
        cost, confidence = data.get("cost"), data.get("confidence")
        return cls(
            candidate=Candidate.from_json(candidate),
            outcome=outcome,
            reason=str(data.get("reason", "")),
            measurements=dict(measurements) if isinstance(measurements, Mapping) else {},
            cost={k: v for k, v in cost.items() if isinstance(v, (int, float))}
            if isinstance(cost, Mapping) and cost
            else empty_cost(),
            confidence=confidence if isinstance(confidence, (int, float)) else None,
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
