"""The measured-time predicate: is a candidate's kernel as fast as the good endpoint, or as slow as the bad?

Why it is built this way (see docs/bisect_timing.md):

* *Against the measured endpoints, never a fixed number.* Every ``test`` measures the candidates
  together with BOTH endpoints, interleaved in the same process (``measure`` is one GPU session):
  clock, thermal and neighbour drift then hit the candidates and the references alike, and a
  candidate measured an hour after the preflight is still compared with same-hour endpoints.
* *Three-way, never forced.* The decision reuses ``ktriage.stats.verdict.compare_samples`` (the
  verdict of ``ktriage compare``: Hodges-Lehmann ratio, Moses interval, U test, magnitude gate,
  bimodality check) twice per candidate: vs good and vs bad. A candidate is ``bad`` when it differs
  from good in the direction of bad and cannot be told apart from bad (or goes beyond it); ``good``
  is the mirror image. Anything else is resampled while more samples can help (Pinpoint's "collect
  more data"), then ``unsure`` - which the search treats like a skip, so an undecidable candidate
  widens the reported range instead of naming a wrong culprit.
* *Adaptive.* A clear candidate is decided after the first round (10 samples a variant); only the
  ambiguous ones are measured again, up to ``max_samples``.
* *Gate relative to the regression.* The preflight measures how far apart the endpoints are; the
  candidates are then judged with a gate of a third of that distance (in log space, never below the
  configured threshold): a candidate must be within a third of the way from one endpoint and at
  least two thirds from the other. That keeps a 50% regression at 10% noise cheap to bisect (a 5%
  gate would need hundreds of samples to call a candidate "same") and lets a small unrelated change
  inside the range fall to the nearer side instead of stalling the search.

The decision rule is ``ktriage.bisect.decide``. The GPU adapter is ``ktriage.bisect.gpu_measure``
(:func:`~ktriage.bisect.gpu_measure.bench_measure`): one artifact replay per candidate toolchain from a
compile-here bundle, timed with ``measure_interleaved``; GPU host only. The CPU tests and
``benchmarks/bisect/noisy_bisect.py`` drive the predicate with
:class:`ktriage.testing.FakeNoisyTimings`, a synthetic measurement with a known culprit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ktriage.bisect.candidate import Candidate, Observation, Outcome
from ktriage.bisect.decide import Decision, Direction, MeasureFn, Variant, classify, variant_key
from ktriage.errors import FormatError, KtriageError, MeasureError, worded
from ktriage.schema.jsontypes import JSONObject
from ktriage.stats.verdict import (
    DEFAULT_CONFIG,
    Verdict,
    VerdictConfig,
    compare_samples,
    hodges_lehmann_ratio,
)

#: The preflight keeps sampling (within max_samples) until the near end of the endpoints' interval
#: is at least this share of their estimated log distance, so the relative gate is sized from a
#: distance known to about 25%. Why: 10 samples often decide a 30% regression at 10% noise with an
#: interval reaching down to +10%; a gate sized from that is the 5% floor, and calling candidates
#: "same" within +-5% at 10% noise takes ~200 samples each (measured: 3-9% of such bisects ended
#: with a range instead of the culprit before this rule).
PREFLIGHT_PRECISION = 0.75


def _near_distance(direction: Direction, ci_low: float, ci_high: float) -> float:
    """|log| of the endpoints' interval end nearest to 1 (a conservative distance); 0 when the
    interval reaches 1 or beyond (no distance to size a gate from)."""
    near = ci_low if direction == "regression" else ci_high
    if not (math.isfinite(near) and near > 0) or (near > 1.0) != (direction == "regression"):
        return 0.0
    return abs(math.log(near))


@dataclass
class _Endpoints:
    good: Candidate
    bad: Candidate
    direction: Direction
    verdict: Verdict  # bad vs good at preflight
    config: VerdictConfig  # the candidates' verdict config (gate relative to the endpoints)


def _gpu(measure: MeasureFn, position: int | None) -> JSONObject:
    """The GPU an observation was timed on: with several GPUs its measure's ``gpu`` (else the
    measure's position), and where the measure says it runs (a cluster's pinned worker: host,
    node, GPU ids); nothing for a one-GPU bisect on this host."""
    index = getattr(measure, "gpu", None)
    out: JSONObject = {} if position is None else {"gpu": position if index is None else index}
    where = getattr(measure, "where", None)
    if isinstance(where, Mapping):
        out.update(where)
    return out


def _summary(samples: Sequence[float]) -> JSONObject:
    arr = np.asarray(samples, dtype=float)
    if arr.size == 0:
        return {"n": 0}
    return {
        "n": int(arr.size),
        "median_ms": float(np.median(arr)),
        "min_ms": float(arr.min()),
        "p95_ms": float(np.quantile(arr, 0.95)),
    }


class TimePredicate:
    """Measured-time predicate (see the module docstring).

    ``measure``: see :data:`MeasureFn`. ``config``: the verdict knobs (its threshold is the preflight
    gate and the floor of the candidates' gate). ``samples_per_round``: samples per variant added per
    round (the first round takes at least ``config.min_samples``). ``max_samples``: cap per variant
    per ``test``/``preflight`` call. ``max_rounds``: cap on measure calls per ``test``.
    ``relative_gate``: the candidates' gate as a share of the endpoints' log distance (None: use
    ``config.threshold`` as is). ``keep_samples``: put the candidate's raw samples in the
    observation (for reports and the state file).
    """

    name = "time"

    def __init__(
        self,
        measure: MeasureFn,
        *,
        config: VerdictConfig = DEFAULT_CONFIG,
        max_rounds: int = 20,
        samples_per_round: int = 10,
        max_samples: int = 200,
        relative_gate: float | None = 1 / 3,
        keep_samples: bool = True,
        metric: str = "latency_ms",
        more_gpus: Sequence[MeasureFn] = (),
    ) -> None:
        if samples_per_round < 1 or max_rounds < 1:
            raise KtriageError(  # no option sets these: only a caller of TimePredicate itself meets it
                f"TimePredicate: samples_per_round {samples_per_round} and max_rounds {max_rounds} must be >= 1",
                "pass samples_per_round and max_rounds of 1 or more",
            )
        if max_samples < config.min_samples:  # kt.bisect refuses it first (api._args.MAX_SAMPLES)
            raise KtriageError(
                worded(
                    lambda o: (
                        f"{o('max_samples', '--max-samples', max_samples)} is below the verdict's minimum of "
                        f"{config.min_samples}"
                    )
                ),
                worded(lambda o: f"pass {o('max_samples', '--max-samples', config.min_samples)} or more"),
            )
        if relative_gate is not None and not 0 < relative_gate < 0.5:
            raise KtriageError(
                f"relative gate {relative_gate} must be in (0, 0.5)",
                "a gate of half the distance or more cannot tell the endpoints apart; 1/3 is the default",
            )
        # the first GPU's measure (the preflight's), then one per further GPU (``--gpus``): a round's
        # candidates are split over all of them, each group timed with both endpoints on its own GPU
        self.measures: list[MeasureFn] = [measure, *more_gpus]
        self.config = config
        self.max_rounds = max_rounds
        self.samples_per_round = samples_per_round
        self.max_samples = max_samples
        self.relative_gate = relative_gate
        self.keep_samples = keep_samples
        self.metric = metric
        self.endpoints: _Endpoints | None = None

    @property
    def measure(self) -> MeasureFn:
        """The first GPU's measure: the preflight's, and a round's when it runs on one GPU."""
        return self.measures[0]

    # ------------------------------------------------------------------------------ sampling
    def _first_n(self) -> int:
        return min(self.max_samples, max(self.samples_per_round, self.config.min_samples))

    def _errors(self, measure: MeasureFn | None = None) -> Mapping[str, str]:
        errors = getattr(measure or self.measure, "errors", None)
        return errors if isinstance(errors, Mapping) else {}

    def _take(self, variants: list[Variant], n: int, measure: MeasureFn | None = None) -> dict[str, list[float]]:
        got = (measure or self.measure)(variants, n)
        return {variant_key(v): [float(x) for x in got.get(variant_key(v), [])] for v in variants}

    def _endpoint_failed(self, which: str, c: Candidate, measure: MeasureFn | None = None) -> MeasureError:
        why = self._errors(measure).get(c.id, "no samples returned")
        return MeasureError(
            f"the {which} endpoint {c.label} could not be measured: {why}",
            f"check that {c.label} builds and runs on its own; the bisect needs both endpoints",
        )

    # ------------------------------------------------------------------------------ preflight
    def preflight(self, good: Candidate, bad: Candidate) -> list[Observation]:
        """Measure both endpoints (adaptively) and fix the direction and the candidates' gate.

        Phase 1 samples until the verdict of bad vs good is decided or cannot be; anything but a
        regression or an improvement raises KtriageError (a bisection between two equal endpoints
        could only return noise). Phase 2 (relative gate only) keeps sampling until the distance is
        known well enough to size the gate from (see :data:`PREFLIGHT_PRECISION`); it only refines
        the distance: the decision is phase 1's, so a late spurious flag (a bimodality false alarm
        at 30 samples) cannot undo it.
        """
        samples: dict[str, list[float]] = {good.id: [], bad.id: []}
        rounds = 0

        def more(n: int) -> int:
            nonlocal rounds
            got = self._take([good, bad], n)
            rounds += 1
            for which, c in (("good", good), ("bad", bad)):
                if not got[c.id]:
                    raise self._endpoint_failed(which, c)
                samples[c.id] += got[c.id]
            return min(len(samples[good.id]), len(samples[bad.id]))

        def room(size: int) -> bool:
            return size < self.max_samples and rounds < self.max_rounds

        size = more(self._first_n())
        verdict = compare_samples(samples[good.id], samples[bad.id], self.config)
        while verdict.resolvable and room(size):
            size = more(min(self.samples_per_round, self.max_samples - size))
            verdict = compare_samples(samples[good.id], samples[bad.id], self.config)
        if verdict.verdict not in ("regression", "improvement"):
            raise KtriageError(
                f"the endpoints do not differ by more than the noise: {bad.label} vs {good.label}: {verdict.verdict}, "
                f"{verdict.reason} (after {verdict.n_ref} + {verdict.n_new} samples)",
                worded(
                    lambda o: (
                        f"check that {good.label} is good and {bad.label} is bad for this op/input; for a smaller change "
                        f"lower the gate ({o('threshold', '--threshold')}, now {self.config.threshold:g}) or allow more "
                        f"samples ({o('max_samples', '--max-samples')}, now {self.max_samples})"
                    )
                ),
            )
        direction: Direction = verdict.verdict
        ratio, lo, hi = verdict.ratio, verdict.ci_low, verdict.ci_high
        cand_config = self.config
        if self.relative_gate is not None:
            while _near_distance(direction, lo, hi) < PREFLIGHT_PRECISION * abs(math.log(ratio)) and room(size):
                size = more(min(self.samples_per_round, self.max_samples - size))
                ratio, lo, hi = hodges_lehmann_ratio(samples[good.id], samples[bad.id], self.config.confidence)
            gate = math.expm1(self.relative_gate * _near_distance(direction, lo, hi))
            cand_config = replace(self.config, threshold=max(self.config.threshold, gate))
        self.endpoints = _Endpoints(good, bad, direction, verdict, cand_config)
        common: JSONObject = {
            "metric": self.metric,
            "direction": direction,
            "endpoints": verdict.to_json(),
            "distance": {"ratio": ratio, "ci_low": lo, "ci_high": hi},
            "candidate_threshold": cand_config.threshold,
            "rounds": rounds,
        }
        out = []
        for c, outcome in ((good, "good"), (bad, "bad")):
            meas: JSONObject = {**common, **_summary(samples[c.id])}
            if self.keep_samples:
                meas["samples_ms"] = samples[c.id]
            n_c = len(samples[c.id])
            out.append(
                Observation(
                    c,
                    outcome,  # type: ignore[arg-type]
                    f"endpoint: bad vs good {verdict.reason}",
                    meas,
                    {"compiles": 0, "gpu_s": sum(samples[c.id]) / 1e3, "samples": n_c},
                    confidence=1.0 - verdict.p_value,
                )
            )
        return out

    def restore(self, good: Observation, bad: Observation) -> None:
        """Re-arm after ``--resume`` from the two stored preflight observations (no re-measuring)."""
        m = good.measurements
        endpoints, direction, threshold = m.get("endpoints"), m.get("direction"), m.get("candidate_threshold")
        if (
            not isinstance(endpoints, Mapping)
            or direction not in ("regression", "improvement")
            or not isinstance(threshold, (int, float))
        ):
            raise FormatError(
                f"the bisect state's good endpoint {good.candidate.label} has no timing verdict to resume from "
                "(endpoints, direction, candidate_threshold)",
                "delete the state file (or give another --state path) and start again without --resume",
            )
        self.endpoints = _Endpoints(
            good.candidate,
            bad.candidate,
            "regression" if direction == "regression" else "improvement",
            Verdict.from_json(endpoints),
            replace(self.config, threshold=float(threshold)),
        )

    # ------------------------------------------------------------------------------ test
    def test(self, candidates: Sequence[Candidate]) -> list[Observation]:
        """Measure the candidates with both endpoints, interleaved, until each is decided or capped.

        With several GPUs (``more_gpus``) the round's candidates are split into one group per GPU, and
        the groups are measured at the same time, each with both endpoints on its own GPU: a
        candidate is only ever compared with endpoint samples of the GPU it was timed on."""
        ep = self.endpoints
        if ep is None:
            raise KtriageError(
                "the time predicate was asked to test candidates before its preflight",
                "call preflight(good, bad) first (or restore() from the stored endpoint observations)",
            )
        good, bad = ep.good, ep.bad
        results: dict[int, Observation] = {}
        todo: list[Candidate] = []
        for pos, c in enumerate(candidates):
            if c.id in (good.id, bad.id):  # an endpoint is already decided
                results[pos] = Observation(
                    c,
                    "good" if c.id == good.id else "bad",
                    "endpoint",
                    {"metric": self.metric},
                    {"compiles": 0, "gpu_s": 0.0, "samples": 0},
                    1.0,
                )
            else:
                todo.append(c)
        pos_of = {c.id: pos for pos, c in enumerate(candidates)}
        if len(self.measures) > 1 and len(todo) > 1:
            from concurrent.futures import ThreadPoolExecutor

            from ktriage.measure.gpus import split_round

            groups = split_round(todo, list(range(len(self.measures))))
            with ThreadPoolExecutor(max_workers=len(groups), thread_name_prefix="ktriage-bisect-gpu") as pool:
                done = list(pool.map(lambda g: self._test_group(self.measures[g[0]], g[1], g[0]), groups))
            observed = {cid: o for part in done for cid, o in part.items()}
        else:
            observed = self._test_group(self.measure, todo, None)
        for cid, o in observed.items():
            results[pos_of[cid]] = o
        return [results[i] for i in range(len(candidates))]

    def _test_group(self, measure: MeasureFn, todo: list[Candidate], position: int | None) -> dict[str, Observation]:
        """One group of a round's candidates, with both endpoints, on one measure (one GPU): the
        measure at ``position`` of a multi-GPU predicate (None: the only one)."""
        ep = self.endpoints
        assert ep is not None
        good, bad = ep.good, ep.bad
        results: dict[str, Observation] = {}
        samples: dict[str, list[float]] = {good.id: [], bad.id: [], **{c.id: [] for c in todo}}
        cost: dict[str, dict[str, float]] = {c.id: {"compiles": 0, "gpu_s": 0.0, "samples": 0} for c in todo}
        rounds: dict[str, int] = {c.id: 0 for c in todo}
        last: dict[str, tuple[Verdict, Verdict, Decision]] = {}
        pending = list(todo)
        n, r = self._first_n(), 0
        while pending and r < self.max_rounds:
            got = self._take([good, bad, *pending], n, measure)
            r += 1
            for which, c in (("good", good), ("bad", bad)):
                if not got[c.id]:
                    raise self._endpoint_failed(which, c, measure)
                samples[c.id] += got[c.id]
            # Endpoint samples of this round are charged to the candidates that needed them.
            share, extra = divmod(len(got[good.id]) + len(got[bad.id]), len(pending))
            share_ms = (sum(got[good.id]) + sum(got[bad.id])) / len(pending)
            still: list[Candidate] = []
            for i, c in enumerate(pending):
                cost[c.id]["samples"] += len(got[c.id]) + share + (1 if i < extra else 0)
                cost[c.id]["gpu_s"] += (sum(got[c.id]) + share_ms) / 1e3
                rounds[c.id] = r
                if not got[c.id]:
                    why = self._errors(measure).get(c.id, "no samples returned")
                    results[c.id] = Observation(
                        c,
                        "skip",
                        f"could not be measured: {why}",
                        {"metric": self.metric, "error": why, **_gpu(measure, position)},
                        cost[c.id],
                    )
                    continue
                samples[c.id] += got[c.id]
                vg = compare_samples(samples[good.id], samples[c.id], ep.config)
                vb = compare_samples(samples[bad.id], samples[c.id], ep.config)
                d = classify(vg, vb, ep.direction)
                last[c.id] = (vg, vb, d)
                if d.outcome is None and len(samples[c.id]) < self.max_samples:
                    still.append(c)
                else:
                    results[c.id] = self._observation(
                        c, samples, vg, vb, d, cost[c.id], rounds[c.id], _gpu(measure, position)
                    )
            pending = still
            if pending:
                n = min(self.samples_per_round, self.max_samples - max(len(samples[c.id]) for c in pending))
        for c in pending:  # out of rounds
            vg, vb, d = last[c.id]
            results[c.id] = self._observation(c, samples, vg, vb, d, cost[c.id], rounds[c.id], _gpu(measure, position))
        return results

    def _observation(
        self,
        c: Candidate,
        samples: dict[str, list[float]],
        vg: Verdict,
        vb: Verdict,
        d: Decision,
        cost: dict[str, float],
        rounds: int,
        gpu: Mapping[str, Any] | None = None,
    ) -> Observation:
        ep = self.endpoints
        assert ep is not None
        outcome: Outcome = d.outcome or "unsure"
        reason = (
            d.reason
            if d.outcome
            else f"undecided after {len(samples[c.id])} samples (cap {self.max_samples}): {d.reason}"
        )
        meas: JSONObject = {
            "metric": self.metric,
            "direction": ep.direction,
            "threshold": ep.config.threshold,
            "vs_good": vg.to_json(),
            "vs_bad": vb.to_json(),
            "good": _summary(samples[ep.good.id]),
            "bad": _summary(samples[ep.bad.id]),
            "rounds": rounds,
            **_summary(samples[c.id]),
            **(gpu or {}),
        }
        if self.keep_samples:
            meas["samples_ms"] = samples[c.id]
        # Confidence: 1 - p of the difference the decision rests on (from good for bad, from bad for good).
        confidence = None
        if outcome == "bad" and math.isfinite(vg.p_value):
            confidence = 1.0 - vg.p_value
        elif outcome == "good" and math.isfinite(vb.p_value):
            confidence = 1.0 - vb.p_value
        return Observation(c, outcome, reason, meas, cost, confidence)
