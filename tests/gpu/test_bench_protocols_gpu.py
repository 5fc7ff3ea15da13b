"""GPU host only: the timing protocols of a bench input (queued, graph, events) on real kernels,
and one input of a bench plan measured end to end by the worker with a protocol per variant.

    python3 -m pytest -q -m gpu tests/gpu/test_bench_protocols_gpu.py
"""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.gpu


def _multi_kernel() -> Any:
    """A call of several small torch kernels with host work between them (as a native backward)."""
    import torch

    x = torch.rand(4096, 1024, device="cuda")

    def call() -> None:
        y = x * 2.0
        y = torch.relu(y - 0.5)
        y.sum(dim=1)

    return call


def test_queued_sampler_spins_the_gpu_while_the_turn_is_enqueued() -> None:
    from ktriage.measure.timing import EventSampler, TimingOptions, shared_flusher, shared_spinner

    opts = TimingOptions(calls_per_round=10, warmup_ms=2.0, min_warmup_calls=2)
    spinner = shared_spinner()
    assert spinner.cycles_per_ms > 1e5  # a real clock rate: > 100 MHz
    sampler = EventSampler(_multi_kernel(), opts, shared_flusher(), spinner)
    info = sampler.warmup()
    assert info["spin_ms"] > 0.2 and info["host_ms_per_call"] > 0
    samples = [s for _ in range(5) for s in sampler.sample(10)]
    assert len(samples) == 50 and all(s > 0 for s in samples)
    rep = sampler.info()
    assert rep["protocol"] == "queued" and rep["turns"] == 5 and 0 <= rep["overrun_turns"] <= 5


def test_a_turn_whose_spin_is_too_short_is_caught_and_the_spin_grows() -> None:
    from ktriage.measure.timing import EventSampler, TimingOptions, shared_flusher, shared_spinner

    sampler = EventSampler(_multi_kernel(), TimingOptions(calls_per_round=10), shared_flusher(), shared_spinner())
    sampler.warmup()
    sampler.spin_ms = 0.001  # far shorter than enqueueing 11 calls takes
    sampler.sample(10)
    assert sampler.overruns == 1 and sampler.spin_ms == pytest.approx(0.002)


def test_graph_sampler_resets_grads_inside_the_capture_and_subtracts_the_flush() -> None:
    import torch

    from ktriage.measure.timing import GraphSampler, TimingOptions, shared_flusher

    x = torch.rand(1 << 20, device="cuda")
    resets: list[int] = []

    def call() -> None:
        torch.mul(x, 2.0, out=x)

    call.before = lambda: resets.append(1)  # type: ignore[attr-defined]
    sampler = GraphSampler(call, TimingOptions(graph_calls=20), shared_flusher())
    sampler.warmup()
    assert len(resets) == 20  # once per captured call, host-side only
    samples = sampler.sample(10)
    assert len(samples) == 10 and all(s > 0 for s in samples)
    assert sampler.info() == {"protocol": "graph", "calls_per_sample": 20}


def test_one_bench_input_gets_a_protocol_per_variant_in_its_cells() -> None:
    from ktriage.bench.plan import BenchPlan
    from ktriage.bench.worker import measure_input, prepare_worker

    plan = BenchPlan(
        op="layer_norm",
        mode="bwd",
        input_ids=[0],
        native_backends=["torch_layer_norm"],
        artifact_backends=[],
        baseline="torch_layer_norm",
        precision="fp32",
        max_time_s=2.0,
    )
    prepare_worker(plan.to_json())
    cells: list[Any] = []
    measure_input({"plan": plan.to_json(), "input_id": 0}, cells.append)
    (cell,) = cells
    assert cell.status == "ok" and len(cell.samples_ms) >= plan.min_samples
    assert cell.extra["protocol"] == "queued" and "launch gaps" in cell.extra["protocol_reason"]
    assert cell.extra["calls_per_sample"] == 1 and cell.extra["probe_ms"] > 0
