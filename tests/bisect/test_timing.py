"""The measured-time bisect predicate on FAKE timings (ktriage.testing.FakeNoisyTimings).

The predicate's statistics are ktriage.stats.verdict's (tested there); these tests check the
decisions built on them: clear regressions, noise-only endpoints, bimodal candidates, adaptive
resampling, failures, resume, and the GPU adapter's plumbing with a fake sampler (no GPU here).
"""

from __future__ import annotations

import numpy as np
import pytest

from ktriage.bisect.candidate import Candidate, Observation
from ktriage.bisect.decide import classify
from ktriage.bisect.gpu_measure import BundleMeasure
from ktriage.bisect.time_predicate import TimePredicate
from ktriage.errors import KtriageError
from ktriage.stats.verdict import VerdictConfig, compare_samples
from ktriage.testing import FakeNoisyTimings, fake_candidates, lognormal

CANDS = fake_candidates(40)
GOOD, BAD = CANDS[0], CANDS[-1]


def armed(fake: FakeNoisyTimings, **kw: object) -> TimePredicate:
    pred = TimePredicate(fake, **kw)  # type: ignore[arg-type]
    pred.preflight(GOOD, BAD)
    return pred


def truth(fake: FakeNoisyTimings, c: Candidate) -> str:
    return "bad" if c.index >= fake.culprit else "good"


@pytest.mark.parametrize("seed", range(5))
def test_clear_regression_sides(seed: int) -> None:
    fake = FakeNoisyTimings(culprit=17, effect=0.30, cv=0.02, seed=seed)
    pred = TimePredicate(fake)
    pre = pred.preflight(GOOD, BAD)
    assert [o.outcome for o in pre] == ["good", "bad"]
    assert pre[0].measurements["direction"] == "regression"
    assert pre[0].measurements["endpoints"]["verdict"] == "regression"
    picks = [CANDS[i] for i in (3, 16, 17, 18, 30)]
    obs = pred.test(picks)
    assert [o.candidate for o in obs] == picks  # same order
    assert [o.outcome for o in obs] == ["good", "good", "bad", "bad", "bad"]
    for o in obs:
        m = o.measurements
        assert m["vs_good"]["p_value"] is not None and m["vs_bad"]["ci_low"] is not None
        assert o.confidence is not None and o.confidence > 0.99
        assert o.cost["samples"] >= m["n"] >= 10  # own samples plus a share of the endpoints'


def test_improvement_is_bisected_too() -> None:
    fake = FakeNoisyTimings(culprit=9, effect=-0.25, cv=0.02, seed=3)
    pred = armed(fake)
    assert pred.endpoints is not None and pred.endpoints.direction == "improvement"
    assert [o.outcome for o in pred.test([CANDS[8], CANDS[9]])] == ["good", "bad"]


@pytest.mark.parametrize("cv", [0.01, 0.05])
def test_noise_only_endpoints_stop_with_a_clear_error(cv: float) -> None:
    fake = FakeNoisyTimings(culprit=10, effect=0.0, cv=cv, seed=1)
    pred = TimePredicate(fake, max_samples=60)
    with pytest.raises(KtriageError) as err:
        pred.preflight(GOOD, BAD)
    assert "the endpoints do not differ by more than the noise" in err.value.problem
    assert "--threshold" in (err.value.fix or "")
    assert pred.endpoints is None
    with pytest.raises(KtriageError, match="before its preflight"):
        pred.test([CANDS[5]])


@pytest.mark.parametrize("seed", range(4))
def test_bimodal_candidate_between_the_endpoints_is_unsure_not_wrong(seed: int) -> None:
    # Candidate 5 is flaky: half of its samples at good's level, half at bad's (a slow path it
    # sometimes takes). It is neither; the predicate must not pick a side.
    fake = FakeNoisyTimings(
        culprit=20, effect=0.30, cv=0.01, bimodal=(0.5, 0.30), bimodal_from=5, bimodal_to=6, seed=seed
    )
    pred = armed(fake, max_samples=80)
    (obs,) = pred.test([CANDS[5]])
    assert obs.outcome == "unsure", obs.reason
    assert "bimodal" in obs.reason
    assert obs.measurements["n"] <= 80


@pytest.mark.parametrize("seed", range(6))
def test_bimodal_machine_noise_never_gives_a_wrong_side(seed: int) -> None:
    # Every variant has a slow mode (clock state); the regression is large. Each decided candidate
    # must be on its true side; "unsure" is allowed.
    fake = FakeNoisyTimings(culprit=12, effect=0.5, cv=0.02, bimodal=(0.3, 0.15), seed=seed)
    pred = armed(fake, max_samples=100)
    obs = pred.test([CANDS[i] for i in (4, 11, 12, 25)])
    decided = [o for o in obs if o.outcome in ("good", "bad")]
    assert all(o.outcome == truth(fake, o.candidate) for o in decided), [(o.candidate.index, o.outcome) for o in obs]
    assert decided, "a 50% regression with 15% modes should decide something"


def test_adaptive_resampling_only_where_needed() -> None:
    # Low noise: decided on the first round (10 samples). Higher noise, same effect: needs more.
    calm = armed(FakeNoisyTimings(culprit=17, effect=0.20, cv=0.01, seed=2))
    obs = calm.test([CANDS[5], CANDS[25]])
    assert [o.outcome for o in obs] == ["good", "bad"]
    assert [o.measurements["n"] for o in obs] == [10, 10]
    assert [o.measurements["rounds"] for o in obs] == [1, 1]
    noisy = armed(FakeNoisyTimings(culprit=17, effect=0.20, cv=0.08, seed=2))
    obs = noisy.test([CANDS[5], CANDS[25]])
    assert [o.outcome for o in obs] == ["good", "bad"]
    assert all(o.measurements["n"] > 10 for o in obs)
    assert all(o.measurements["rounds"] > 1 for o in obs)


def test_decided_candidates_leave_the_session_early() -> None:
    # One easy candidate and one that sits at a third of the way (needs more data or ends unsure):
    # the easy one stops at the first round while the other keeps being measured.
    fake = FakeNoisyTimings(culprit=30, effect=0.30, cv=0.03, steps={10: 1.09}, seed=4)
    pred = armed(fake, max_samples=60)
    easy, hard = pred.test([CANDS[2], CANDS[12]])
    assert easy.outcome == "good" and easy.measurements["n"] == 10
    assert hard.measurements["n"] > 10
    assert hard.measurements["n"] <= 60


def test_samples_per_round_and_cap() -> None:
    fake = FakeNoisyTimings(culprit=20, effect=0.30, cv=0.01, bimodal=(0.5, 0.30), bimodal_from=5, bimodal_to=6, seed=0)
    pred = armed(fake, samples_per_round=7, max_samples=45, max_rounds=50)
    (obs,) = pred.test([CANDS[5]])
    assert obs.measurements["n"] <= 45
    assert (obs.measurements["n"] - 10) % 7 == 0 or obs.measurements["n"] == 45


def test_unmeasurable_candidate_is_skipped() -> None:
    fake = FakeNoisyTimings(culprit=17, effect=0.30, cv=0.02, fail=frozenset({8}), seed=0)
    pred = armed(fake)
    skip, ok = pred.test([CANDS[8], CANDS[9]])
    assert skip.outcome == "skip" and "FAKE failure" in skip.reason
    assert ok.outcome == "good"


def test_unmeasurable_endpoint_aborts() -> None:
    fake = FakeNoisyTimings(culprit=17, effect=0.30, cv=0.02, fail=frozenset({0}), seed=0)
    with pytest.raises(KtriageError, match="good endpoint c0 could not be measured"):
        TimePredicate(fake).preflight(GOOD, BAD)


def test_restore_from_stored_preflight() -> None:
    fake = FakeNoisyTimings(culprit=17, effect=0.30, cv=0.02, seed=5)
    pre = TimePredicate(fake).preflight(GOOD, BAD)
    stored = [Observation.from_json(o.to_json()) for o in pre]  # through the state file's JSON
    again = TimePredicate(fake)
    again.restore(stored[0], stored[1])
    assert again.endpoints is not None and again.endpoints.direction == "regression"
    assert [o.outcome for o in again.test([CANDS[16], CANDS[17]])] == ["good", "bad"]


def test_endpoint_passed_as_candidate_is_not_measured() -> None:
    fake = FakeNoisyTimings(culprit=17, effect=0.30, cv=0.02, seed=5)
    pred = armed(fake)
    before = fake.samples_taken
    assert [o.outcome for o in pred.test([GOOD, BAD])] == ["good", "bad"]
    assert fake.samples_taken == before


def test_relative_gate_follows_the_endpoints() -> None:
    big = armed(FakeNoisyTimings(culprit=17, effect=0.50, cv=0.01, seed=1))
    small = armed(FakeNoisyTimings(culprit=17, effect=0.08, cv=0.01, seed=1))
    fixed = armed(FakeNoisyTimings(culprit=17, effect=0.50, cv=0.01, seed=1), relative_gate=None)
    assert big.endpoints and small.endpoints and fixed.endpoints
    assert 0.10 < big.endpoints.config.threshold < 0.15  # ~ 1.5 ** (1/3) - 1 = 14.5%, from the CI's near end
    assert small.endpoints.config.threshold == 0.05  # never below the configured gate
    assert fixed.endpoints.config.threshold == 0.05


def test_partial_change_is_unsure() -> None:
    # Two changes: +15% at 10, +15% more at 30. Candidate 20 is half way: neither side.
    fake = FakeNoisyTimings(culprit=30, effect=0.15, cv=0.01, steps={10: 1.15}, seed=0)
    pred = armed(fake)
    (obs,) = pred.test([CANDS[20]])
    assert obs.outcome == "unsure"
    assert "between the endpoints" in obs.reason


def test_classify_rules_directly() -> None:
    r = np.random.default_rng(0)
    cfg = VerdictConfig()
    good, bad = lognormal(r, 40, 1.0, 0.01), lognormal(r, 40, 1.3, 0.01)
    like_good, like_bad = lognormal(r, 40, 1.0, 0.01), lognormal(r, 40, 1.3, 0.01)
    beyond = lognormal(r, 40, 1.6, 0.01)
    assert (
        classify(compare_samples(good, like_bad, cfg), compare_samples(bad, like_bad, cfg), "regression").outcome
        == "bad"
    )
    assert (
        classify(compare_samples(good, like_good, cfg), compare_samples(bad, like_good, cfg), "regression").outcome
        == "good"
    )
    assert (
        classify(compare_samples(good, beyond, cfg), compare_samples(bad, beyond, cfg), "regression").outcome == "bad"
    )
    few = classify(
        compare_samples(good[:5], like_bad[:5], cfg), compare_samples(bad[:5], like_bad[:5], cfg), "regression"
    )
    assert few.outcome is None and not few.final  # too few samples: measure more


# ------------------------------------------------------------------- GPU adapter plumbing (fakes)
class FakeSampler:
    """FAKE VariantSampler: constant samples per variant, counts calls."""

    def __init__(self, value: float) -> None:
        self.value, self.warmups, self.samples = value, 0, 0

    def warmup(self) -> dict[str, object]:
        self.warmups += 1
        return {"warmup_calls": 1}

    def sample(self, n: int) -> list[float]:
        self.samples += n
        return [self.value] * n


def test_bundle_measure_plumbing_with_fakes() -> None:
    prepared: list[str] = []
    values = {"c0": 1.0, "c1": 1.0, "c2": 2.0}

    def fake_prepare(v: Candidate | str) -> object:
        key = v.id if isinstance(v, Candidate) else v
        prepared.append(key)
        if key == "c3":
            raise KtriageError("c3: wrong results (FAKE)", "skip it")
        return lambda: None

    made: dict[str, FakeSampler] = {}

    def factory(name: str, _fn: object) -> FakeSampler:
        made[name] = FakeSampler(values[name])
        return made[name]

    m = BundleMeasure(fake_prepare, sampler_factory=factory)  # type: ignore[arg-type]
    out = m(CANDS[:4], 20)
    assert set(out) == {"c0", "c1", "c2"} and all(len(v) == 20 for v in out.values())
    assert out["c2"] == [2.0] * 20
    assert m.errors == {"c3": "c3: wrong results (FAKE)"}
    out2 = m(CANDS[:4], 10)
    assert all(len(v) == 10 for v in out2.values())
    assert prepared == ["c0", "c1", "c2", "c3"]  # prepared once, reused; a failed one is not retried
    # The predicate turns the failure into a skip.
    pred = TimePredicate(m)
    pred.endpoints = None
    assert pred._errors()["c3"].startswith("c3: wrong results")


# ------------------------------------------------------------------- end to end with the core search
@pytest.mark.parametrize("workers", [1, 3])
def test_search_with_time_predicate_finds_the_culprit(workers: int) -> None:
    from ktriage.bisect.search import run_search

    fake = FakeNoisyTimings(culprit=23, effect=0.20, cv=0.03, drift=0.01, seed=11)
    res = run_search(CANDS, TimePredicate(fake), workers=workers)
    assert res.status == "culprit"
    assert res.culprit is not None and res.culprit.index == 23
    assert res.predecessor is not None and res.predecessor.index == 22
    assert res.confidence is not None and res.confidence > 0.99
    assert res.cost()["samples"] == fake.samples_taken  # every sample is charged to some observation
    if workers == 3:
        assert res.rounds < 6  # k-ary: fewer rounds than ceil(log2 38)


def test_search_resume_reuses_the_stored_endpoints_and_rounds() -> None:
    import json

    from ktriage.bisect.search import run_search

    fake = FakeNoisyTimings(culprit=7, effect=0.30, cv=0.02, seed=3)
    record: dict[str, object] = {"preflight": None, "rounds": []}
    first = run_search(CANDS, TimePredicate(fake), record=record)
    stored = json.loads(json.dumps(record))  # as the state file holds it
    calls = fake.calls
    again = run_search(CANDS, TimePredicate(fake), record=stored)
    assert fake.calls == calls  # nothing measured again
    assert again.culprit is not None and first.culprit is not None
    assert again.culprit.index == first.culprit.index == 7


@pytest.mark.parametrize("seed", range(4))
def test_search_stays_inside_the_flaky_zone(seed: int) -> None:
    from ktriage.bisect.search import run_search

    # Candidates 20..22 are flaky (half their samples at bad's level), fully slow from 23 on: the
    # first change is somewhere in 20..23 and which one is "the" culprit is a matter of definition.
    # The search must not leave that zone: a culprit in it, or a range inside it (a flaky candidate
    # whose 10 first samples happen to be all slow may be called bad - 1% per test here).
    fake = FakeNoisyTimings(
        culprit=23, effect=0.30, cv=0.01, bimodal=(0.5, 0.30), bimodal_from=20, bimodal_to=23, seed=seed
    )
    res = run_search(CANDS, TimePredicate(fake, max_samples=60), workers=1)
    assert 19 <= res.lo and res.hi <= 23, (res.lo, res.hi)
    flaky = [o for o in res.observations if 20 <= o.candidate.index <= 22]
    assert any(o.outcome == "unsure" and "bimodal" in o.reason for o in flaky) or res.status == "culprit"


def test_preflight_refines_a_loose_distance_before_sizing_the_gate() -> None:
    import math

    # 10 samples decide a 30% regression at 10% noise, but with an interval reaching far down;
    # the gate must come from a distance known to ~25%, not from that first interval.
    fake = FakeNoisyTimings(culprit=17, effect=0.30, cv=0.10, seed=0)
    good_obs, _ = TimePredicate(fake).preflight(GOOD, BAD)
    m = good_obs.measurements
    assert m["endpoints"]["n_ref"] == 10  # decided in the first round ...
    assert m["n"] > 10  # ... then refined
    d = m["distance"]
    assert math.log(d["ci_low"]) >= 0.75 * math.log(d["ratio"])
    assert m["candidate_threshold"] > 0.06  # ~ (1.3 ** 0.75) ** (1/3) - 1 = 6.8%, not the 5% floor
    fixed = TimePredicate(FakeNoisyTimings(culprit=17, effect=0.30, cv=0.10, seed=0), relative_gate=None)
    assert fixed.preflight(GOOD, BAD)[0].measurements["n"] == 10  # no gate to size: no refining


@pytest.mark.slow
def test_time_bisect_explains_the_culprit_from_the_bundle(toolchain, shared_compiler, tmp_path) -> None:
    """On the GPU host nothing compiles: a time bisect over a bundle explains culprit vs predecessor
    from the bundle's recorded resources (real ptxas 12.4.131 vs 12.8.93 cubins of the Liger
    embedding backward: REDG -> ATOMG), names ptxas for a ptxas range, and says how to get the PTX diff."""
    from pathlib import Path

    from ktriage.bisect.explained import OpcodeMove
    from ktriage.bisect.run import BisectOptions, BisectReport, _bundle_candidates, _explain_from_bundle
    from ktriage.bisect.search import StageResult
    from ktriage.report.bisect import to_markdown
    from ktriage.workload.bundles.build import build_bundle

    tcs = [toolchain("triton==3.4.0,ptxas==12.4.131"), toolchain("triton==3.4.0")]
    out = build_bundle("embedding", "bwd", ["0"], tcs, tmp_path / "b", sm_count=132, compiler=shared_compiler)
    opts = BisectOptions(
        source="ptxas",
        good="12.4.131",
        bad="12.8.93",
        metric="latency",
        op="liger.embedding",
        inputs=("0",),
        toolchain="triton==3.4.0",
        bundle=Path(out),
        backend="liger_embedding",
    )
    cands = _bundle_candidates(opts, "ptxas")
    assert [c.meta["version"] for c in cands] == ["12.4.131", "12.8.93"]
    report = BisectReport(opts, [StageResult("culprit", 0, 1, cands, [], 1, 0)], ["ptxas"])
    _explain_from_bundle(opts, report)
    assert report.explain and len(report.explain) == 1
    e = report.explain[0]
    deltas = {c.opcode: c.delta for c in e.opcode_changes if isinstance(c, OpcodeMove)}
    assert deltas["ATOMG"] > 0 and deltas["REDG"] == -deltas["ATOMG"] and e.attribution == "ptxas"
    md = to_markdown(report)
    assert "ATOMG +" in md and "ktriage explain liger.embedding --bwd --input 0" in md


class FakeGpu(FakeNoisyTimings):
    """FAKE timings of one GPU of a multi-GPU host: its own speed (``base_ms``) and the variants it was asked for."""

    def __init__(self, gpu: int, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.gpu = gpu
        self.asked: set[str] = set()

    def __call__(self, variants: list, n: int) -> dict[str, list[float]]:  # type: ignore[type-arg,override]
        self.asked |= {v.id if isinstance(v, Candidate) else str(v) for v in variants}
        return super().__call__(variants, n)


def test_a_round_over_several_gpus_compares_each_candidate_with_its_own_gpus_endpoints() -> None:
    """GPU 1 runs everything 15 % faster than GPU 0 (a FAKE GPU-to-GPU offset, larger than the
    regression's distance to a candidate): mixing GPU 1's candidates with GPU 0's endpoint samples
    would misplace them. Each GPU measures its group with both endpoints, so every side is right."""
    gpu0 = FakeGpu(0, culprit=17, effect=0.30, cv=0.02, seed=1)
    gpu1 = FakeGpu(1, culprit=17, effect=0.30, cv=0.02, seed=2, base_ms=0.85)
    pred = TimePredicate(gpu0, more_gpus=[gpu1])
    pred.preflight(GOOD, BAD)
    picks = [CANDS[i] for i in (3, 16, 17, 18, 25, 30)]
    obs = pred.test(picks)
    assert [o.candidate for o in obs] == picks
    assert [o.outcome for o in obs] == ["good", "good", "bad", "bad", "bad", "bad"]
    # the round split in search order: the first half on GPU 0, the second on GPU 1, endpoints on both
    assert [o.measurements["gpu"] for o in obs] == [0, 0, 0, 1, 1, 1]
    assert {GOOD.id, BAD.id} <= gpu0.asked and {GOOD.id, BAD.id} <= gpu1.asked
    assert not {c.id for c in picks[3:]} & gpu0.asked and not {c.id for c in picks[:3]} & gpu1.asked
    # one candidate (or one GPU): measured as before, on the first measure, no GPU noted
    (single,) = pred.test([CANDS[5]])
    assert single.outcome == "good" and "gpu" not in single.measurements
