"""The interleaving loop's order, seed, stop and cap logic, with a fake clock and fake samplers."""

from __future__ import annotations

import itertools

import pytest

from ktriage.measure.timing import TimingOptions, _warmup_calls, measure_interleaved


class FakeClock:
    """Seconds that advance only when a fake sampler says time passed."""

    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t


class FakeStickyError(RuntimeError):
    """Looks like a CudaError with a lost context."""

    sticky = True
    name = "CUDA_ERROR_ILLEGAL_ADDRESS"


class FakeSampler:
    """Returns ``ms`` per call and advances the fake clock by the time the calls would take."""

    def __init__(
        self,
        name: str,
        ms: float,
        clock: FakeClock,
        log: list[tuple[str, str]],
        fail_at: int | None = None,
        error: Exception | None = None,
    ) -> None:
        self.name, self.ms, self.clock, self.log = name, ms, clock, log
        self.fail_at, self.error, self.calls = fail_at, error, 0

    def warmup(self) -> dict[str, int]:
        self.log.append(("warmup", self.name))
        self.clock.t += 0.025
        return {"warmup_calls": 3}

    def sample(self, n: int) -> list[float]:
        self.calls += 1
        if self.fail_at is not None and self.calls >= self.fail_at:
            raise self.error or RuntimeError("boom")
        self.log.append(("sample", self.name))
        self.clock.t += n * self.ms / 1e3
        return [self.ms] * n


def fake_factory(
    clock: FakeClock,
    log: list,
    ms: dict[str, float],
    **fail: tuple[int, Exception | None],
):  # type: ignore[type-arg]
    def make(name, _fn):
        at, err = fail.get(name, (None, None))
        return FakeSampler(name, ms[name], clock, log, at, err)

    return make


VARIANTS = {"a": lambda: None, "b": lambda: None, "c": lambda: None, "d": lambda: None}
MS = {"a": 1.0, "b": 2.0, "c": 0.5, "d": 1.5}


def run(seed: int = 0, **kw):
    clock, log = FakeClock(), []
    opts = TimingOptions(calls_per_round=kw.pop("calls", 5))
    fail = kw.pop("fail", {})
    res = measure_interleaved(
        VARIANTS, seed=seed, options=opts, clock=clock.now, sampler_factory=fake_factory(clock, log, MS, **fail), **kw
    )
    return res, log, clock


def test_each_round_visits_every_variant_in_a_fresh_random_order() -> None:
    res, log, _ = run(rounds=30, max_time_s=1e9)
    assert res.rounds == 30 and res.stopped_by == "rounds"
    assert all(sorted(o) == ["a", "b", "c", "d"] for o in res.orders)
    assert len({tuple(o) for o in res.orders}) > 5  # shuffled, not a fixed rotation
    firsts = {o[0] for o in res.orders}
    assert firsts == {"a", "b", "c", "d"}  # nobody always goes first
    # The calls really happened in the recorded order, after all warmups.
    warm = [n for kind, n in log if kind == "warmup"]
    assert sorted(warm) == ["a", "b", "c", "d"] and log[:4] == [("warmup", n) for n in warm]
    sampled = [n for kind, n in log if kind == "sample"]
    assert sampled == list(itertools.chain.from_iterable(res.orders))
    assert res.samples["b"] == [2.0] * 150


def test_the_seed_makes_the_order_reproducible() -> None:
    a, _, _ = run(seed=3, rounds=10, max_time_s=1e9)
    b, _, _ = run(seed=3, rounds=10, max_time_s=1e9)
    c, _, _ = run(seed=4, rounds=10, max_time_s=1e9)
    assert a.orders == b.orders
    assert a.orders != c.orders


def test_stop_is_asked_only_once_min_samples_are_there() -> None:
    seen: list[int] = []

    def stop(samples: dict[str, list[float]]) -> bool:
        seen.append(min(len(s) for s in samples.values()))
        return True

    res, _, _ = run(min_samples=12, stop=stop, calls=5, max_time_s=1e9)
    assert seen == [15]  # rounds 1-2 give 5, 10 samples: not asked; round 3 gives 15
    assert res.stopped_by == "stop" and res.rounds == 3


def test_stop_waits_for_three_turns_of_every_variant_even_when_one_turn_gives_enough_samples() -> None:
    """On the H200 a whole turn (10 calls back to back) can run slow; one turn per variant called identical
    code +7.7 %. So the stop rule is asked only once every variant was timed in min_rounds separate turns."""
    asked: list[int] = []

    def stop(samples: dict[str, list[float]]) -> bool:
        asked.append(min(len(s) for s in samples.values()))
        return True

    res, _, _ = run(min_samples=10, stop=stop, calls=10, max_time_s=1e9)
    assert TimingOptions().min_rounds == 3
    assert asked == [30] and res.stopped_by == "stop" and res.rounds == 3  # not after round 1's 10 samples
    assert res.settings["min_rounds"] == 3  # recorded with the run's settings


def test_the_time_cap_ends_sampling() -> None:
    # Each round costs 5 * (1 + 2 + 0.5 + 1.5) ms = 25 ms of fake GPU time; warmup 4 * 25 ms.
    res, _, clock = run(max_time_s=0.5, stop=lambda s: False, rounds=10_000)
    assert res.stopped_by == "time"
    assert res.rounds == 16  # 0.1 s warmup + 16 * 0.025 s = 0.5 s
    assert res.elapsed_s == pytest.approx(clock.t)


def test_a_failing_variant_is_dropped_and_the_others_go_on() -> None:
    res, _, _ = run(rounds=6, max_time_s=1e9, fail={"b": (3, ValueError("wrong launch"))})
    assert "wrong launch" in res.errors["b"]
    assert len(res.samples["b"]) == 10  # two rounds of 5 before it failed
    assert all(len(res.samples[n]) == 30 for n in "acd")
    assert all("b" not in o for o in res.orders[3:])


def test_a_sticky_cuda_error_is_raised_for_the_isolation_layer() -> None:
    with pytest.raises(FakeStickyError):
        run(
            rounds=6,
            max_time_s=1e9,
            fail={"c": (2, FakeStickyError("illegal address"))},
        )


def test_settings_are_kept_for_provenance() -> None:
    res, _, _ = run(rounds=1, max_time_s=1e9, seed=9)
    s = res.settings
    assert s["seed"] == 9 and s["l2_flush"] is True and s["flush_bytes"] == 256 * 1024 * 1024
    assert s["mode"] == "events" and s["warmup_ms"] == 25.0
    assert res.warmup["a"] == {"warmup_calls": 3}


def test_warmup_runs_for_its_time_and_at_least_its_calls() -> None:
    clock = FakeClock()
    calls = []

    def call() -> None:
        calls.append(1)
        clock.t += 0.004  # 4 ms per call

    info = _warmup_calls(call, lambda: None, warmup_ms=25.0, min_calls=3, clock=clock.now)
    assert info["warmup_calls"] == 7  # 7 * 4 ms = 28 ms >= 25 ms
    calls.clear()
    clock.t = 0
    info = _warmup_calls(
        lambda: (calls.append(1), setattr(clock, "t", clock.t + 1.0)),
        lambda: None,
        25.0,
        3,
        clock.now,
    )
    assert info["warmup_calls"] == 3  # slow calls: the minimum count rules


# ---------------------------------------------------------------------------- protocol choice
from ktriage.measure.timing import GRAPH_BELOW_MS, choose_protocol, gpu_sampler_factory


def test_native_backends_get_the_queued_protocol_whatever_their_time() -> None:
    for est in (None, 0.01, 0.3, 5.0):
        proto, why = choose_protocol(native=True, single_launch=False, est_ms=est)
        assert proto == "queued" and "launch gaps" in why


def test_artifact_calls_with_host_work_are_queued_too() -> None:
    assert choose_protocol(native=False, single_launch=False, est_ms=0.2)[0] == "queued"


def test_short_single_kernels_are_graph_replays_and_long_ones_per_call_events() -> None:
    assert choose_protocol(native=False, single_launch=True, est_ms=0.004)[0] == "graph"
    assert choose_protocol(native=False, single_launch=True, est_ms=0.044)[0] == "events"  # 44 us: per-call events
    assert choose_protocol(native=False, single_launch=True, est_ms=GRAPH_BELOW_MS)[0] == "events"
    assert choose_protocol(native=False, single_launch=True, est_ms=2.4)[0] == "events"
    assert choose_protocol(native=False, single_launch=True, est_ms=None)[0] == "events"  # no probe: the old default
    assert choose_protocol(native=False, single_launch=True, est_ms=0.044, graph_below_ms=0.05)[0] == "graph"


def test_an_unknown_protocol_is_refused_when_its_sampler_is_made() -> None:
    from ktriage.errors import MeasureError

    make = gpu_sampler_factory(TimingOptions(l2_flush=False), {"a": "bogus"})
    with pytest.raises(MeasureError, match="bogus"):
        make("a", lambda: None)


class InfoSampler(FakeSampler):
    def info(self) -> dict[str, object]:
        return {"protocol": "graph", "calls_per_sample": 20}


def test_each_variants_sampler_info_is_kept() -> None:
    clock, log = FakeClock(), []
    res = measure_interleaved(
        {"a": lambda: None},
        rounds=2,
        max_time_s=1e9,
        clock=clock.now,
        sampler_factory=lambda n, _f: InfoSampler(n, 1.0, clock, log),
    )
    assert res.info == {"a": {"protocol": "graph", "calls_per_sample": 20}}
    res, _, _ = run(rounds=1, max_time_s=1e9)
    assert res.info["a"] == {}  # a sampler without info() reports nothing
