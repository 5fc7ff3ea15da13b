"""A compile-only candidate whose value lies outside its endpoints' range: the metric is not monotonic.

The compile-only rule (``ktriage.bisect.predicates``) judges a candidate by the endpoint its value
is closer to, so a value beyond both (``spill_store_bytes`` 2192 B good, 2140 B bad, 1436 B at the
candidate) is named "bad" and may become the first bad: a release that is no step from the good
value to the bad one, whose explain then shows a change the user never saw between the endpoints.
The rule is kept (docs/bisect.md); this module is the one home of telling such a value apart, so that
the decision's reason (bisect and bisect-step) and bisect's report (table, markdown, JSON) say so.
Pure logic on the values an observation saved (``measurements.values``), so a resumed state is read
the same way.
"""

from __future__ import annotations

from collections.abc import Mapping

from ktriage.bisect.candidate import Observation


def saved_values(obs: Observation) -> dict[str, float]:
    """The metric values per kernel a stored observation measured (its ``values``; a state file's
    numbers are checked by its schema, so anything else there is not a value). Empty for an
    observation of another predicate (timing, a command): they save no ``values``."""
    values = obs.measurements.get("values")
    if not isinstance(values, Mapping):
        return {}
    return {k: float(v) for k, v in values.items() if isinstance(v, (int, float))}


def outside_endpoints(
    values: Mapping[str, float], good: Mapping[str, float], bad: Mapping[str, float]
) -> dict[str, float]:
    """The kernels whose value lies strictly outside the range from their good to their bad value,
    with that value; only kernels that differ between the endpoints (the others carry no signal and
    are not judged)."""
    out: dict[str, float] = {}
    for kernel, g in good.items():
        b, v = bad.get(kernel), values.get(kernel)
        if b is None or v is None or b == g:
            continue
        if not min(g, b) <= v <= max(g, b):
            out[kernel] = v
    return out


def outside_text(outside: Mapping[str, float], good: Mapping[str, float], bad: Mapping[str, float]) -> str:
    """How a decision's reason says it: each kernel's value against its endpoints, and what it means."""
    each = ", ".join(f"{k} {_num(v)} (good {_num(good[k])}, bad {_num(bad[k])})" for k, v in outside.items())
    return f"outside the endpoints' range: {each}; not monotonic, so no step between good and bad"


def _num(v: float) -> str:
    return f"{v:g}"
