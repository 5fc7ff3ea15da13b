"""How ktriage times GPU work: CUDA events, L2 flush, warmup, raw samples, interleaved variants.

Compatible in spirit with TritonBench (``triton.testing.do_bench``: events around each call, a
256 MB buffer zeroed before each call to flush L2, warmup by time), and better where it matters for
comparing compiler versions:

- *Interleaving*: all variants of one cell group (the same op input across toolchains and
  backends) are measured in ONE process, in a freshly shuffled order every round, so clock,
  thermal and neighbour drift hits all of them alike instead of whichever ran last.
- *Raw samples kept* (ms per call), no outlier trimming here: statistics decide later.
- *Adaptive stop*: sampling ends when ``stop(samples)`` (the statistics layer's "interval narrow
  enough") says so, or a time cap is reached; cheap cells finish fast, noisy ones get more samples.

Per-call event timing measures GPU time between two events recorded around the call. With the L2
flush on, the flush kernel (~80 us on an H200) keeps the GPU busy while the host enqueues the next
launch, so host launch overhead is hidden. Without the flush, a sub-10 us kernel's sample includes
the host's launch gap; use ``mode="graph"`` there (N calls captured in one CUDA graph, a sample is
one replay / N), which removes launch gaps. Graph mode with the flush captures [flush, call] x N and
a flush-only graph, and reports (both - flush-only) / N per replay pair (TritonBench's newer
``--cudagraph`` does the same subtraction).

A call that launches several kernels from host code (a native backward: autograd and ATen dispatch
between the kernels) has CPU launch gaps *inside* the timed region, which the flush cannot hide and
which vary from process to process (the torch baseline's A/A spread on the H200). Capturing it in a
graph is not safe (its forward ran outside the capture stream). The ``queued`` protocol removes the
gaps instead: each turn starts with a spin kernel that holds the GPU while the host enqueues the
whole turn, so the GPU then runs every call's kernels back to back; a turn whose spin ran out before
the host was done is detected (an event after the spin has already completed) and the spin doubles.
``choose_protocol`` picks the protocol per variant; the choice and its reason go into each cell.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ktriage.errors import DeviceError, MeasureError
from ktriage.schema.jsontypes import JSONObject, JSONValue

#: TritonBench / do_bench flush size: larger than any current GPU's L2 (H200: 60 MB).
L2_FLUSH_BYTES = 256 * 1024 * 1024

TimingMode = Literal["events", "graph", "queued"]
#: ``auto``: each variant gets the protocol ``choose_protocol`` picks for it.
PROTOCOLS: tuple[str, ...] = ("events", "graph", "queued")
#: Kernels shorter than this (ms per call) are timed as CUDA-graph replays. Not 50 us: on the H200 a
#: 42 us layer_norm kernel read 4-8 % faster as graph replays than with per-call events (the events
#: between calls cost GPU time), enough to turn a -3 % "same" of issue 3 into a -4.6 % "improvement";
#: below ~10 us per-call events stop being usable at all.
GRAPH_BELOW_MS = 0.01
StopReason = Literal["stop", "time", "rounds", "no_variants"]
StopFn = Callable[[dict[str, list[float]]], bool]


@dataclass(frozen=True)
class TimingOptions:
    """Knobs of one measurement; recorded into RunInfo.settings for provenance."""

    mode: TimingMode = "events"
    l2_flush: bool = True
    flush_bytes: int = L2_FLUSH_BYTES
    warmup_ms: float = 25.0  # do_bench's default warmup, in milliseconds of wall time
    min_warmup_calls: int = 3
    calls_per_round: int = 10  # events: timed calls per variant per round; graph: replays per round
    # Rounds before the stop rule may end sampling: each variant timed in this many separate turns.
    # One turn is 10 calls back to back (about a millisecond), and on the H200 a whole turn can run
    # slow: the same cubin loaded twice in one process timed 16.35 and 17.63 us (minima 16.00 and
    # 16.77), and with 10 samples from one turn each, compare called identical code +7.7 % (1 process
    # in 8, TorchInductor's 16 us triton_poi_fused_add_addmm_1; the corpus's replicate flipped that
    # kernel from 0.91x to 1.10x: benchmarks/calibration/replicate/process_effect/). Over three turns
    # in shuffled order a slow turn is a third of a variant's samples, which its median and interval see.
    min_rounds: int = 3
    graph_calls: int = 20  # graph mode: calls captured in one graph
    device: int = 0

    def to_json(self) -> JSONObject:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def choose_protocol(
    *, native: bool, single_launch: bool, est_ms: float | None, graph_below_ms: float = GRAPH_BELOW_MS
) -> tuple[TimingMode, str]:
    """The timing protocol of one variant and why (recorded in its cell).

    ``native``: the call runs host-environment code (torch, autograd, a library); ``single_launch``:
    the call is exactly one kernel launch of ours (an artifact timed ``kernel``-only); ``est_ms``:
    a probe's time per call (None when unknown)."""
    if native or not single_launch:
        what = "native backend" if native else "artifact call with host work"
        return "queued", (
            f"{what}: host code launches several kernels per call, so per-call events would "
            "time CPU launch gaps; a spin kernel holds the GPU until the turn is enqueued "
            "(kernels back to back), and a graph capture of a forward made outside the "
            "capture stream is not safe"
        )
    if est_ms is not None and est_ms < graph_below_ms:
        return "graph", (
            f"one launch of ~{est_ms * 1e3:.0f} us < {graph_below_ms * 1e3:.0f} us: per-call "
            "events and switching dominate, so a sample is one CUDA-graph replay of many "
            "calls (flush-only graph subtracted)"
        )
    return "events", (
        "one kernel launch per call: the L2 flush before it keeps the GPU busy while the "
        "launch is enqueued, so per-call CUDA events time the kernel alone"
    )


class VariantSampler(Protocol):
    """What the interleaving loop needs from one variant: warm it up, then give n samples (ms)."""

    def warmup(self) -> JSONObject: ...

    def sample(self, n: int) -> list[float]: ...


def sampler_info(sampler: VariantSampler) -> JSONObject:
    """What a sampler reports about itself after sampling (protocol, calls per sample, spins)."""
    info = getattr(sampler, "info", None)
    return dict(info()) if callable(info) else {}


SamplerFactory = Callable[[str, Callable[[], None]], VariantSampler]


# --------------------------------------------------------------------------------- GPU samplers


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - GPU host always has torch
        raise DeviceError("timing needs torch on the GPU host", "install torch with CUDA") from exc
    return torch


class L2Flusher:
    """A device buffer zeroed before each timed call, evicting the previous call's data from L2."""

    def __init__(self, nbytes: int = L2_FLUSH_BYTES, device: int = 0) -> None:
        torch = _torch()
        self.buffer = torch.empty(nbytes // 4, dtype=torch.int32, device=f"cuda:{device}")

    def flush(self) -> None:
        self.buffer.zero_()


_FLUSHERS: dict[tuple[int, int], L2Flusher] = {}


def shared_flusher(nbytes: int = L2_FLUSH_BYTES, device: int = 0) -> L2Flusher:
    """One flush buffer per process and size: a bench worker measures many inputs, and allocating
    256 MB per input is wasted time (and fragments the allocator between large inputs)."""
    key = (nbytes, device)
    if key not in _FLUSHERS:
        _FLUSHERS[key] = L2Flusher(nbytes, device)
    return _FLUSHERS[key]


class Spinner:
    """Holds the GPU in a spin kernel (``torch.cuda._sleep``) while the host enqueues a turn.

    Calibrated once per process (cycles per ms at the current clock); ``hold(ms)`` enqueues the spin
    and an event after it; ``overran()`` (non-blocking) says whether the GPU already passed that
    event, i.e. the spin ended before the host finished enqueueing and the turn may have gaps."""

    def __init__(self, device: int = 0) -> None:
        torch = _torch()
        self._torch = torch
        self.device = device
        self._mark = torch.cuda.Event()
        cycles = 2_000_000
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        per_ms = []
        for _ in range(3):
            start.record()
            torch.cuda._sleep(cycles)
            end.record()
            end.synchronize()
            per_ms.append(cycles / max(float(start.elapsed_time(end)), 1e-3))
        # The fastest observed clock: a spin sized with it lasts at least as long as asked.
        self.cycles_per_ms = max(per_ms)

    def hold(self, ms: float) -> None:
        self._torch.cuda._sleep(max(1, int(ms * self.cycles_per_ms)))
        self._mark.record()

    def overran(self) -> bool:
        return bool(self._mark.query())


_SPINNERS: dict[int, Spinner] = {}


def shared_spinner(device: int = 0) -> Spinner:
    if device not in _SPINNERS:
        _SPINNERS[device] = Spinner(device)
    return _SPINNERS[device]


#: The longest spin a turn may ask for (a call whose host side is slower than this has real gaps).
MAX_SPIN_MS = 50.0


def _warmup_calls(
    call: Callable[[], None],
    sync: Callable[[], None],
    warmup_ms: float,
    min_calls: int,
    clock: Callable[[], float] = time.perf_counter,
) -> JSONObject:
    """Call until ``warmup_ms`` of wall time and ``min_calls`` have passed (synchronized each time,
    so the time is the GPU's, and the queue never runs far ahead). Also reports the host time of
    one call (before its synchronize): how long the host takes to enqueue it."""
    t0 = clock()
    n = 0
    host: list[float] = []
    while n < min_calls or (clock() - t0) * 1e3 < warmup_ms:
        c0 = clock()
        call()
        host.append((clock() - c0) * 1e3)
        sync()
        n += 1
    host.sort()
    return {"warmup_calls": n, "warmup_ms": (clock() - t0) * 1e3, "host_ms_per_call": host[len(host) // 2]}


def _ms(value: JSONValue) -> float:
    """A number of milliseconds that :func:`_warmup_calls` wrote (always a float there)."""
    return float(value) if isinstance(value, (int, float)) else 0.0


class EventSampler:
    """Per-call CUDA-event timing, optionally flushing L2 before each call (do_bench's method).

    A timed callable may carry a ``before`` attribute (a callable): it runs before the L2 flush and
    the start event, i.e. outside the timed region — TritonBench resets gradients there.

    With a ``spinner`` (the ``queued`` protocol) each turn is enqueued behind a spin kernel long
    enough for the host to enqueue the whole turn, so the calls' kernels run without CPU gaps."""

    def __init__(
        self,
        fn: Callable[[], None],
        options: TimingOptions,
        flusher: L2Flusher | None,
        spinner: Spinner | None = None,
    ) -> None:
        self.fn = fn
        self.options = options
        self.flusher = flusher
        self.spinner = spinner
        torch = _torch()
        self._torch = torch
        self._events: list[tuple[Any, Any]] = []
        self.spin_ms = 0.0
        self.turns = 0
        self.overruns = 0

    def warmup(self) -> JSONObject:
        def call() -> None:
            before = getattr(self.fn, "before", None)
            if before is not None:
                before()
            if self.flusher is not None:
                self.flusher.flush()
            self.fn()

        info = _warmup_calls(
            call,
            self._torch.cuda.synchronize,
            self.options.warmup_ms,
            self.options.min_warmup_calls,
        )
        if self.spinner is not None:
            # Enough for the turn's calls (+ the untimed opener) at 1.5x the host's time per call.
            turn = (self.options.calls_per_round + 1) * _ms(info["host_ms_per_call"])
            self.spin_ms = min(MAX_SPIN_MS, 0.2 + 1.5 * turn)
            info["spin_ms"] = self.spin_ms
        return info

    def sample(self, n: int) -> list[float]:
        torch = self._torch
        while len(self._events) < n:
            self._events.append(
                (
                    torch.cuda.Event(enable_timing=True),
                    torch.cuda.Event(enable_timing=True),
                )
            )
        events = self._events[:n]
        before = getattr(self.fn, "before", None)  # e.g. set grads to None: outside the timed region
        if self.spinner is not None:
            self.spinner.hold(self.spin_ms)
        # One untimed call opens each turn: the first call after another variant ran pays for cold
        # instruction caches and TLBs (seen on the H200 as a slow mode holding exactly 1 sample in
        # each turn of 10), which is the switch, not the variant.
        if before is not None:
            before()
        if self.flusher is not None:
            self.flusher.flush()
        self.fn()
        for start, end in events:
            if before is not None:
                before()
            if self.flusher is not None:
                self.flusher.flush()
            start.record()
            self.fn()
            end.record()
        if self.spinner is not None:
            self.turns += 1
            if self.spinner.overran():  # the GPU caught up with the host: next turn spins longer
                self.overruns += 1
                self.spin_ms = min(MAX_SPIN_MS, 2 * self.spin_ms)
        events[-1][1].synchronize()
        return [float(s.elapsed_time(e)) for s, e in events]

    def info(self) -> JSONObject:
        out: JSONObject = {"protocol": "queued" if self.spinner is not None else "events", "calls_per_sample": 1}
        if self.spinner is not None:
            out.update(spin_ms=round(self.spin_ms, 3), turns=self.turns, overrun_turns=self.overruns)
        return out


def probe_ms(fn: Callable[[], None], flush: Callable[[], None] | None, calls: int = 3) -> float:
    """The least of a few event-timed calls (``fn.before`` and a flush before each): a variant's
    rough time per call, enough to pick its protocol; the calls double as its first warm-up."""
    torch = _torch()
    before = getattr(fn, "before", None)
    best = float("inf")
    for _ in range(calls):
        if before is not None:
            before()
        if flush is not None:
            flush()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        best = min(best, float(start.elapsed_time(end)))
    return best


class GraphSampler:
    """CUDA-graph timing: ``graph_calls`` calls captured once; a sample is one replay / graph_calls."""

    def __init__(self, fn: Callable[[], None], options: TimingOptions, flusher: L2Flusher | None) -> None:
        self.fn = fn
        self.options = options
        self.flusher = flusher
        self._torch = _torch()
        self.graph: Any = None
        self.flush_graph: Any = None

    def _capture(self, body: Callable[[], None]) -> Any:
        torch = self._torch
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):  # torch makes its capture stream current: our launches follow it
            for _ in range(self.options.graph_calls):
                body()
        return graph

    def warmup(self) -> JSONObject:
        torch = self._torch
        # Eager calls first (module load, lazy init must not happen inside a capture).
        info = _warmup_calls(self.fn, torch.cuda.synchronize, 0.0, self.options.min_warmup_calls)
        before = getattr(self.fn, "before", None)  # host-side only (grads to None): fine inside a capture
        fn = self.fn

        def call() -> None:
            if before is not None:
                before()
            fn()

        if self.flusher is not None:
            flusher = self.flusher

            def body() -> None:
                flusher.flush()
                call()

            self.graph = self._capture(body)
            self.flush_graph = self._capture(flusher.flush)
        else:
            self.graph = self._capture(call)
        replays = _warmup_calls(self._replay_pair, torch.cuda.synchronize, self.options.warmup_ms, 1)
        return {
            **info,
            "graph_calls": self.options.graph_calls,
            "warmup_replays": replays["warmup_calls"],
            "warmup_ms": _ms(info["warmup_ms"]) + _ms(replays["warmup_ms"]),
        }

    def _replay_pair(self) -> None:
        self.graph.replay()
        if self.flush_graph is not None:
            self.flush_graph.replay()

    def sample(self, n: int) -> list[float]:
        torch = self._torch
        k = self.options.graph_calls
        marks = [torch.cuda.Event(enable_timing=True) for _ in range(3 * n)]
        for i in range(n):
            a, b, c = marks[3 * i : 3 * i + 3]
            a.record()
            self.graph.replay()
            b.record()
            if self.flush_graph is not None:
                self.flush_graph.replay()
            c.record()
        marks[-1].synchronize()
        out = []
        for i in range(n):
            a, b, c = marks[3 * i : 3 * i + 3]
            total = float(a.elapsed_time(b))
            flush = float(b.elapsed_time(c)) if self.flush_graph is not None else 0.0
            out.append((total - flush) / k)
        return out

    def info(self) -> JSONObject:
        return {"protocol": "graph", "calls_per_sample": self.options.graph_calls}


def gpu_sampler_factory(options: TimingOptions, protocols: Mapping[str, str] | None = None) -> SamplerFactory:
    """Samplers sharing one L2-flush buffer (256 MB allocated once per process, not per variant).

    ``protocols``: a protocol per variant name (``choose_protocol``); others get ``options.mode``."""
    flusher = shared_flusher(options.flush_bytes, options.device) if options.l2_flush else None

    def make(name: str, fn: Callable[[], None]) -> VariantSampler:
        mode = (protocols or {}).get(name, options.mode)
        if mode == "graph":
            return GraphSampler(fn, options, flusher)
        if mode == "events":
            return EventSampler(fn, options, flusher)
        if mode == "queued":
            return EventSampler(fn, options, flusher, shared_spinner(options.device))
        raise MeasureError(f"unknown timing mode {mode!r}", f"use one of: {', '.join(PROTOCOLS)}")

    return make


# ------------------------------------------------------------------------------ interleaving


@dataclass
class InterleavedResult:
    """Raw per-call samples (ms) of each variant, plus how and why sampling ended."""

    samples: dict[str, list[float]]
    rounds: int
    orders: list[list[str]]
    stopped_by: StopReason
    elapsed_s: float
    warmup: dict[str, JSONObject] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # variants dropped after raising
    settings: JSONObject = field(default_factory=dict)
    info: dict[str, JSONObject] = field(default_factory=dict)  # per variant: protocol, calls per sample, spins


def round_order(names: list[str], rng: random.Random) -> list[str]:
    """A fresh random permutation of the variants for one round."""
    return rng.sample(names, len(names))


def measure_interleaved(
    variants: Mapping[str, Callable[[], None]],
    *,
    rounds: int = 1000,
    min_samples: int = 10,
    max_time_s: float = 10.0,
    stop: StopFn | None = None,
    seed: int = 0,
    options: TimingOptions | None = None,
    sampler_factory: SamplerFactory | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> InterleavedResult:
    """Time every variant of one cell group, interleaved in random order per round.

    Each round visits the variants in a new shuffled order (``seed`` makes it reproducible) and
    takes ``options.calls_per_round`` samples of each. After each round, once every variant has at
    least ``min_samples`` from at least ``options.min_rounds`` turns, ``stop(samples)`` may end sampling; ``max_time_s`` (wall time, warmup
    included) and ``rounds`` cap it. A variant that raises is dropped and its error kept, unless
    the error is a sticky CUDA error, which is re-raised (the context is gone; the isolation layer
    restarts the worker).
    """
    options = options or TimingOptions()
    factory = sampler_factory or gpu_sampler_factory(options)
    t0 = clock()
    rng = random.Random(seed)
    samplers: dict[str, VariantSampler] = {}
    result = InterleavedResult(
        {n: [] for n in variants},
        0,
        [],
        "rounds",
        0.0,
        settings={
            **options.to_json(),
            "seed": seed,
            "min_samples": min_samples,
            "max_time_s": max_time_s,
            "max_rounds": rounds,
        },
    )

    def guarded(name: str, action: Callable[[], Any]) -> Any:
        try:
            return action()
        except Exception as exc:
            if getattr(exc, "sticky", False):
                raise
            result.errors[name] = f"{type(exc).__name__}: {exc}"
            return None

    # Warm up in a shuffled order too, so no variant systematically gets the cold GPU.
    for name in round_order(list(variants), rng):
        sampler = guarded(name, functools.partial(factory, name, variants[name]))
        if sampler is None:
            continue
        info = guarded(name, sampler.warmup)
        if info is not None:
            samplers[name] = sampler
            result.warmup[name] = info
    active = [n for n in variants if n in samplers]
    if not active:
        result.stopped_by = "no_variants"
    while active and result.rounds < rounds:
        order = round_order(active, rng)
        result.orders.append(order)
        for name in order:
            got = guarded(name, functools.partial(samplers[name].sample, options.calls_per_round))
            if got is None:
                active.remove(name)
            else:
                result.samples[name].extend(got)
        result.rounds += 1
        live = {n: result.samples[n] for n in active}
        if (
            live
            and result.rounds >= options.min_rounds
            and all(len(s) >= min_samples for s in live.values())
            and stop is not None
            and stop(live)
        ):
            result.stopped_by = "stop"
            break
        if clock() - t0 >= max_time_s:
            result.stopped_by = "time"
            break
    else:
        if active:
            result.stopped_by = "rounds"
    result.elapsed_s = clock() - t0
    for name, sampler in samplers.items():
        result.info[name] = sampler_info(sampler)
    return result


def measure(
    fn: Callable[[], None], *, options: TimingOptions | None = None, min_samples: int = 50, max_time_s: float = 2.0
) -> list[float]:
    """Samples (ms) of one callable: ``min_samples`` of them, or fewer if the time cap hits first."""
    res = measure_interleaved(
        {"fn": fn},
        min_samples=min_samples,
        max_time_s=max_time_s,
        options=options,
        stop=lambda s: all(len(v) >= min_samples for v in s.values()),
    )
    if "fn" in res.errors:
        raise MeasureError(f"timing failed: {res.errors['fn']}", "check the callable on its own first")
    return res.samples["fn"]
