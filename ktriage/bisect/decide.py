"""How a bisect candidate is classified from its measured times: the decision rule of the time predicate.

A candidate is compared twice with ``ktriage.stats.verdict.compare_samples`` (the verdict of
``ktriage compare``), once against the good endpoint and once against the bad one, and
:func:`classify` turns the two verdicts into bad / good / unsure / undecided (measure more). The
predicate that samples and calls it is ``ktriage.bisect.time_predicate`` (docs/bisect_timing.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from ktriage.bisect.candidate import Candidate, Outcome
from ktriage.stats.verdict import Verdict

Variant = Candidate | str
MeasureFn = Callable[[list[Variant], int], dict[str, list[float]]]
"""``measure(variants, n)``: ``n`` more raw latency samples (ms) of each variant, all measured
interleaved in one process. Keys are :func:`variant_key`. A variant that could not be measured is
absent (or empty); the callable may expose an ``errors: dict[str, str]`` attribute saying why."""

Direction = Literal["regression", "improvement"]


def variant_key(v: Variant) -> str:
    """The name a variant's samples are returned under: a candidate's id, or the string itself."""
    return v.id if isinstance(v, Candidate) else v


def _opposite(d: Direction) -> Direction:
    return "improvement" if d == "regression" else "regression"


def _settled_unsure(v: Verdict) -> bool:
    """Unsure for good: bimodal or too noisy on enough samples, i.e. the two sets cannot be told apart."""
    return v.verdict == "unsure" and not v.resolvable


@dataclass(frozen=True)
class Decision:
    """One candidate's classification from its two verdicts. ``outcome`` None: measure more."""

    outcome: Outcome | None
    reason: str
    final: bool  # True when more samples cannot change an "unsure"


def classify(vs_good: Verdict, vs_bad: Verdict, direction: Direction) -> Decision:
    """Bad / good / unsure / undecided from ``candidate vs good`` and ``candidate vs bad``.

    ``direction`` is the preflight verdict of bad vs good ("regression": bad is slower). The rule is
    symmetric: a candidate sides with the endpoint it cannot be told apart from (verdict "same", or
    bimodal/noisy for good) PROVIDED it differs from the other endpoint in the expected direction;
    going beyond an endpoint (slower than bad for a regression) counts as that endpoint's side.
    """
    away = _opposite(direction)  # candidate vs bad, when the candidate is on good's side
    g, b = vs_good.verdict, vs_bad.verdict
    if g == direction and (b in ("same", direction) or _settled_unsure(vs_bad)):
        how = "beyond bad" if b == direction else ("same as bad" if b == "same" else "not distinguishable from bad")
        return Decision("bad", f"differs from good ({vs_good.reason}); {how} ({vs_bad.reason})", True)
    if b == away and (g in ("same", away) or _settled_unsure(vs_good)):
        how = "beyond good" if g == away else ("same as good" if g == "same" else "not distinguishable from good")
        return Decision("good", f"differs from bad ({vs_bad.reason}); {how} ({vs_good.reason})", True)
    if g == direction and b == away:
        return Decision(
            "unsure",
            f"between the endpoints: differs from good ({vs_good.reason}) and from bad "
            f"({vs_bad.reason}); the range holds more than one change, or a partial one",
            True,
        )
    if g == "same" and b == "same":
        return Decision(
            "unsure",
            f"same as both endpoints within the gate (vs good {vs_good.reason}; vs bad "
            f"{vs_bad.reason}); the endpoints are too close for this gate",
            True,
        )
    if vs_good.resolvable or vs_bad.resolvable:
        return Decision(None, f"undecided: vs good {vs_good.reason}; vs bad {vs_bad.reason}", False)
    return Decision("unsure", f"cannot tell: vs good {vs_good.reason}; vs bad {vs_bad.reason}", True)
