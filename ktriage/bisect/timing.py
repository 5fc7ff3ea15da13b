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

The GPU adapter (:func:`bench_measure`) is thin: it builds one artifact replay per candidate
toolchain from a compile-here bundle and times them with ``measure_interleaved``. It runs on the GPU
host only; its CPU tests use named fakes. :class:`FakeNoisyTimings` is a synthetic measurement
with a known culprit, for tests and ``benchmarks/bisect/noisy_bisect.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ktriage.bisect.model import Candidate, Observation, Outcome
from ktriage.errors import KtriageError
from ktriage.stats.verdict import (
    DEFAULT_CONFIG,
    Verdict,
    VerdictConfig,
    compare_samples,
    hodges_lehmann_ratio,
)

if TYPE_CHECKING:
    from ktriage.measure.timing import SamplerFactory, TimingOptions
    from ktriage.workload.bundle import Bundle

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
        return Decision("unsure", f"between the endpoints: differs from good ({vs_good.reason}) and from bad "
                        f"({vs_bad.reason}); the range holds more than one change, or a partial one", True)  # fmt: skip
    if g == "same" and b == "same":
        return Decision("unsure", f"same as both endpoints within the gate (vs good {vs_good.reason}; vs bad "
                        f"{vs_bad.reason}); the endpoints are too close for this gate", True)  # fmt: skip
    if vs_good.resolvable or vs_bad.resolvable:
        return Decision(None, f"undecided: vs good {vs_good.reason}; vs bad {vs_bad.reason}", False)
    return Decision("unsure", f"cannot tell: vs good {vs_good.reason}; vs bad {vs_bad.reason}", True)


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


def _summary(samples: Sequence[float]) -> dict[str, Any]:
    arr = np.asarray(samples, dtype=float)
    if arr.size == 0:
        return {"n": 0}
    return {"n": int(arr.size), "median_ms": float(np.median(arr)), "min_ms": float(arr.min()),
            "p95_ms": float(np.quantile(arr, 0.95))}  # fmt: skip


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
    ) -> None:
        if samples_per_round < 1 or max_rounds < 1:
            raise KtriageError("samples per round and rounds must be >= 1", "pass positive --samples-per-round / --max-rounds")
        if max_samples < config.min_samples:
            raise KtriageError(f"max_samples {max_samples} is below the verdict's minimum of {config.min_samples}",
                               f"pass --max-samples >= {config.min_samples}")  # fmt: skip
        if relative_gate is not None and not 0 < relative_gate < 0.5:
            raise KtriageError(f"relative gate {relative_gate} must be in (0, 0.5)",
                               "a gate of half the distance or more cannot tell the endpoints apart; 1/3 is the default")  # fmt: skip
        self.measure = measure
        self.config = config
        self.max_rounds = max_rounds
        self.samples_per_round = samples_per_round
        self.max_samples = max_samples
        self.relative_gate = relative_gate
        self.keep_samples = keep_samples
        self.metric = metric
        self.endpoints: _Endpoints | None = None

    # ------------------------------------------------------------------------------ sampling
    def _first_n(self) -> int:
        return min(self.max_samples, max(self.samples_per_round, self.config.min_samples))

    def _errors(self) -> Mapping[str, str]:
        errors = getattr(self.measure, "errors", None)
        return errors if isinstance(errors, Mapping) else {}

    def _take(self, variants: list[Variant], n: int) -> dict[str, list[float]]:
        got = self.measure(variants, n)
        return {variant_key(v): [float(x) for x in got.get(variant_key(v), [])] for v in variants}

    def _endpoint_failed(self, which: str, c: Candidate) -> KtriageError:
        why = self._errors().get(c.id, "no samples returned")
        return KtriageError(f"the {which} endpoint {c.label} could not be measured: {why}",
                            f"check that {c.label} builds and runs on its own; the bisect needs both endpoints")  # fmt: skip

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
                f"check that {good.label} is good and {bad.label} is bad for this op/input; for a smaller change "
                f"lower the gate (--threshold, now {self.config.threshold:.0%}) or allow more samples (--max-samples, now {self.max_samples})",
            )  # fmt: skip
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
        common = {"metric": self.metric, "direction": direction, "endpoints": verdict.to_json(),
                  "distance": {"ratio": ratio, "ci_low": lo, "ci_high": hi},
                  "candidate_threshold": cand_config.threshold, "rounds": rounds}  # fmt: skip
        out = []
        for c, outcome in ((good, "good"), (bad, "bad")):
            meas = {**common, **_summary(samples[c.id])}
            if self.keep_samples:
                meas["samples_ms"] = samples[c.id]
            n_c = len(samples[c.id])
            out.append(Observation(c, outcome, f"endpoint: bad vs good {verdict.reason}", meas,  # type: ignore[arg-type]
                                   {"compiles": 0, "gpu_s": sum(samples[c.id]) / 1e3, "samples": n_c},
                                   confidence=1.0 - verdict.p_value))  # fmt: skip
        return out

    def restore(self, good: Observation, bad: Observation) -> None:
        """Re-arm after ``--resume`` from the two stored preflight observations (no re-measuring)."""
        m = good.measurements
        verdict = Verdict.from_json(m["endpoints"])
        self.endpoints = _Endpoints(good.candidate, bad.candidate, m["direction"], verdict,
                                    replace(self.config, threshold=float(m["candidate_threshold"])))  # fmt: skip

    # ------------------------------------------------------------------------------ test
    def test(self, candidates: Sequence[Candidate]) -> list[Observation]:
        """Measure the candidates with both endpoints, interleaved, until each is decided or capped."""
        ep = self.endpoints
        if ep is None:
            raise KtriageError("the time predicate was asked to test candidates before its preflight",
                               "call preflight(good, bad) first (or restore() from the stored endpoint observations)")  # fmt: skip
        good, bad = ep.good, ep.bad
        results: dict[int, Observation] = {}
        todo: list[Candidate] = []
        for pos, c in enumerate(candidates):
            if c.id in (good.id, bad.id):  # an endpoint is already decided
                results[pos] = Observation(c, "good" if c.id == good.id else "bad", "endpoint", {"metric": self.metric},
                                           {"compiles": 0, "gpu_s": 0.0, "samples": 0}, 1.0)  # fmt: skip
            else:
                todo.append(c)
        pos_of = {c.id: pos for pos, c in enumerate(candidates)}
        samples: dict[str, list[float]] = {good.id: [], bad.id: [], **{c.id: [] for c in todo}}
        cost: dict[str, dict[str, float]] = {c.id: {"compiles": 0, "gpu_s": 0.0, "samples": 0} for c in todo}
        rounds: dict[str, int] = {c.id: 0 for c in todo}
        last: dict[str, tuple[Verdict, Verdict, Decision]] = {}
        pending = list(todo)
        n, r = self._first_n(), 0
        while pending and r < self.max_rounds:
            got = self._take([good, bad, *pending], n)
            r += 1
            for which, c in (("good", good), ("bad", bad)):
                if not got[c.id]:
                    raise self._endpoint_failed(which, c)
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
                    why = self._errors().get(c.id, "no samples returned")
                    results[pos_of[c.id]] = Observation(c, "skip", f"could not be measured: {why}",
                                                        {"metric": self.metric, "error": why}, cost[c.id])  # fmt: skip
                    continue
                samples[c.id] += got[c.id]
                vg = compare_samples(samples[good.id], samples[c.id], ep.config)
                vb = compare_samples(samples[bad.id], samples[c.id], ep.config)
                d = classify(vg, vb, ep.direction)
                last[c.id] = (vg, vb, d)
                if d.outcome is None and len(samples[c.id]) < self.max_samples:
                    still.append(c)
                else:
                    results[pos_of[c.id]] = self._observation(c, samples, vg, vb, d, cost[c.id], rounds[c.id])
            pending = still
            if pending:
                n = min(self.samples_per_round, self.max_samples - max(len(samples[c.id]) for c in pending))
        for c in pending:  # out of rounds
            vg, vb, d = last[c.id]
            results[pos_of[c.id]] = self._observation(c, samples, vg, vb, d, cost[c.id], rounds[c.id])
        return [results[i] for i in range(len(candidates))]

    def _observation(self, c: Candidate, samples: dict[str, list[float]], vg: Verdict, vb: Verdict, d: Decision,
                     cost: dict[str, float], rounds: int) -> Observation:  # fmt: skip
        ep = self.endpoints
        assert ep is not None
        outcome: Outcome = d.outcome or "unsure"
        reason = d.reason if d.outcome else f"undecided after {len(samples[c.id])} samples (cap {self.max_samples}): {d.reason}"
        meas: dict[str, Any] = {
            "metric": self.metric,
            "direction": ep.direction,
            "threshold": ep.config.threshold,
            "vs_good": vg.to_json(),
            "vs_bad": vb.to_json(),
            "good": _summary(samples[ep.good.id]),
            "bad": _summary(samples[ep.bad.id]),
            "rounds": rounds,
            **_summary(samples[c.id]),
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


# ----------------------------------------------------------------------------------- GPU adapter
PrepareFn = Callable[[Variant], Callable[[], None]]


@dataclass
class BundleMeasure:
    """A :data:`MeasureFn` over prepared variants, timed by ``measure_interleaved`` in this process.

    ``prepare(variant)`` returns the timed callable of a variant (built once, on first use, and kept:
    later rounds reuse it). A variant whose preparation or timing raises is left out of the result
    and its error kept in ``errors`` (the predicate turns it into a ``skip``). GPU host only, except
    with a fake ``prepare`` and ``sampler_factory`` (the CPU tests).
    """

    prepare: PrepareFn
    options: TimingOptions | None = None
    sampler_factory: SamplerFactory | None = None
    seed: int = 0
    max_time_s: float = 120.0
    errors: dict[str, str] = field(default_factory=dict)
    calls: int = 0
    _ready: dict[str, Callable[[], None]] = field(default_factory=dict)

    def __call__(self, variants: list[Variant], n: int) -> dict[str, list[float]]:
        from ktriage.measure.timing import TimingOptions, measure_interleaved

        calls: dict[str, Callable[[], None]] = {}
        for v in variants:
            key = variant_key(v)
            if key in self.errors:
                continue
            if key not in self._ready:
                try:
                    self._ready[key] = self.prepare(v)
                except Exception as exc:
                    if getattr(exc, "sticky", False):
                        raise
                    self.errors[key] = exc.problem if isinstance(exc, KtriageError) else f"{type(exc).__name__}: {exc}"
                    continue
            calls[key] = self._ready[key]
        if not calls:
            return {}
        options = self.options or TimingOptions()
        rounds = max(1, math.ceil(n / options.calls_per_round))
        self.calls += 1
        res = measure_interleaved(calls, rounds=rounds, min_samples=n, max_time_s=self.max_time_s,
                                  stop=lambda s: True, seed=self.seed + self.calls, options=options,
                                  sampler_factory=self.sampler_factory)  # fmt: skip
        for key, err in res.errors.items():
            self.errors[key] = err
        return {k: v for k, v in res.samples.items() if k not in res.errors and v}


def bench_measure(
    bundle: Bundle | str,
    *,
    backend: str,
    input_id: int,
    mode: str | None = None,
    toolchain_of: Callable[[Candidate], str] | None = None,
    options: TimingOptions | None = None,
    artifact_timing: str = "tritonbench",
    check_outputs: bool = True,
    seed: int = 0,
) -> BundleMeasure:
    """The GPU measurement of a time bisect: each candidate is ``backend``'s artifact replay with the
    candidate's toolchain from a compile-here ``bundle`` (ktriage.workload.bundle), on input
    ``input_id``, all timed interleaved in THIS process. ``toolchain_of(candidate)`` gives the
    bundle's toolchain id (default: ``candidate.meta["toolchain_id"]``, else ``candidate.id``).
    With ``check_outputs`` every variant's results are checked against the first prepared one
    (the good endpoint, which the predicate measures first); a wrong one is never timed.

    GPU host only (torch + cuda.bindings); not run in this session (no device time for issue 4):
    its logic is the BundleMeasure above, tested on CPU with fakes.
    """
    from ktriage.workload.backends import check_outputs as _check
    from ktriage.workload.backends import make_input
    from ktriage.measure.loader import runner_loader
    from ktriage.workload.bundle import load_bundle
    from ktriage.workload.bundle_launch import make_launcher
    from ktriage.workload.replay import artifact_backend

    bun = load_bundle(bundle) if isinstance(bundle, str) else bundle
    run_mode = mode or bun.mode
    case = next((c for c in bun.input_cases() if c.id == input_id), None)
    if case is None:
        raise KtriageError(f"bundle {bun.path} has no input {input_id}",
                           f"inputs in the bundle: {[c.id for c in bun.input_cases()]}")  # fmt: skip
    inp = make_input(bun.op, case, precision=bun.precision)
    pick = toolchain_of or (lambda c: str(c.meta.get("toolchain_id", c.id)))
    loader = runner_loader()
    reference: dict[str, Any] = {}

    def prepare(v: Variant) -> Callable[[], None]:
        import torch

        tc = pick(v) if isinstance(v, Candidate) else v
        if tc not in bun.toolchains:
            raise KtriageError(f"toolchain {tc} is not in bundle {bun.path}", f"bundle toolchains: {', '.join(bun.toolchains)}")
        replay = artifact_backend(backend, launch=make_launcher(bun, tc, loader), specs=bun.spec_source(),
                                  timing=artifact_timing, sm_count=bun.sm_count)  # fmt: skip
        call = replay.prepare(inp, run_mode)
        if check_outputs:
            outputs = replay.outputs()
            torch.cuda.synchronize()
            if not reference:
                reference.update(outputs)
            else:
                acc = _check(reference, outputs, precision=inp.precision)
                if not acc.passed:
                    raise KtriageError(f"{tc}: wrong results ({acc.reason})", "a wrong kernel is not timed; the candidate is skipped")

        def timed() -> None:
            call()

        grads = replay.grad_to_none

        def before() -> None:  # outside the timed region, as TritonBench resets grads
            for t in grads():
                t.grad = None

        timed.before = before  # type: ignore[attr-defined]
        return timed

    return BundleMeasure(prepare, options=options, seed=seed)


# ----------------------------------------------------------------------------------- the fake
@dataclass
class FakeNoisyTimings:
    """FAKE measurement (synthetic latencies with a known culprit) for tests and the noise benchmark.

    Candidate ``i`` has median ``base_ms`` before ``culprit`` and ``base_ms * (1 + effect)`` from it
    on (``steps`` adds further ``{index: factor}`` changes). Each sample is log-normal around it with
    CV ``cv``; with ``bimodal=(share, gap)`` a sample of a variant at index >= ``bimodal_from``
    (and < ``bimodal_to`` when given) is ``1 + gap`` slower with probability ``share``. ``drift`` is
    a relative slowdown added per ``measure`` call (time passes between sessions while candidates
    build: thermal creep, clocks); inside one call all variants are interleaved, as the GPU session
    measures them, so they share it. Variants are Candidates (their ``index``) or strings holding an
    index. ``fail``: indices that cannot be
    measured (absent from the result, with an ``errors`` entry). Counts ``samples_taken``/``calls``.
    """

    culprit: int
    effect: float
    cv: float
    base_ms: float = 1.0
    bimodal: tuple[float, float] | None = None
    bimodal_from: int = 0
    bimodal_to: int | None = None
    drift: float = 0.0
    steps: dict[int, float] = field(default_factory=dict)
    fail: frozenset[int] = frozenset()
    seed: int = 0
    samples_taken: int = 0
    calls: int = 0
    errors: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)

    def level(self, index: int) -> float:
        """The true median latency (ms) of candidate ``index``."""
        m = self.base_ms * ((1.0 + self.effect) if index >= self.culprit else 1.0)
        for at, factor in self.steps.items():
            if index >= at:
                m *= factor
        return m

    def __call__(self, variants: list[Variant], n: int) -> dict[str, list[float]]:
        self.calls += 1
        idx = [v.index if isinstance(v, Candidate) else int(v) for v in variants]
        live = [(variant_key(v), i) for v, i in zip(variants, idx) if i not in self.fail]
        for v, i in zip(variants, idx):
            if i in self.fail:
                self.errors[variant_key(v)] = "FAKE failure"
        if not live:
            return {}
        k = len(live)
        noise = np.exp(self.rng.normal(0.0, self.cv, (n, k)))
        levels = np.array([self.level(i) for _, i in live])
        x = levels[None, :] * noise * (1.0 + self.drift * (self.calls - 1))
        if self.bimodal is not None:
            share, gap = self.bimodal
            hit = [i >= self.bimodal_from and (self.bimodal_to is None or i < self.bimodal_to) for _, i in live]
            slow = (self.rng.random((n, k)) < share) & np.array(hit)[None, :]
            x = np.where(slow, x * (1.0 + gap), x)
        self.samples_taken += n * k
        return {key: [float(v) for v in x[:, j]] for j, (key, _) in enumerate(live)}


def fake_candidates(n: int, prefix: str = "c") -> list[Candidate]:
    """``n`` synthetic candidates 0..n-1 (0 = good endpoint, n-1 = bad), for the fake's callers."""
    return [Candidate(i, f"{prefix}{i}", f"{prefix}{i}", {}) for i in range(n)]

