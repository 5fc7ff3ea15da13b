"""The artifact runner on a real GPU (run on the GPU host; see benchmarks/gpu/results/runner_check.md).

Launches cubins compiled on the CPU machine by benchmarks/gpu/make_runner_fixtures.py with Triton
3.3.1, 3.4.0 and 3.5.1 (bundle folder: $KTRIAGE_RUNNER_BUNDLE, default .gpu-artifacts/runner), checks
every output against torch, times them in every mode, and plants a fault and a hang in isolated
workers. Numbers go to $KTRIAGE_GPU_OUT/runner_results.json when that is set. No timing asserts.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
BUNDLE = Path(os.environ.get("KTRIAGE_RUNNER_BUNDLE", REPO / ".gpu-artifacts" / "runner"))

pytestmark = pytest.mark.gpu

RESULTS: dict[str, Any] = {}


# No GPU: tests/conftest.py skips every test here (the `gpu` marker). The bundle is read at import.
if not (BUNDLE / "manifest.json").exists():
    pytest.skip("needs the runner bundle (benchmarks/gpu/make_runner_fixtures.py)", allow_module_level=True)

import torch

from ktriage.measure.correctness import check_run
from ktriage.measure.driver import driver, ensure_context
from ktriage.measure.launch import LoadedKernel
from ktriage.measure.loader import load_for_runner
from ktriage.measure.timing import TimingOptions, measure_interleaved
from ktriage.workload.bundles.named_kernels import read_kernel_bundle

ENTRIES, EXTRA = read_kernel_bundle(BUNDLE)
VERSIONS = EXTRA["versions"]
_KERNELS: dict[str, LoadedKernel] = {}


def kernel(name: str) -> LoadedKernel:
    if name not in _KERNELS:
        _KERNELS[name] = load_for_runner(ENTRIES[name].artifact)
    return _KERNELS[name]


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


@pytest.fixture(scope="module", autouse=True)
def write_results():
    from ktriage.measure.env import GpuRecorder

    rec = GpuRecorder()
    RESULTS["gpu"] = rec.start()
    yield
    RESULTS["gpu"] = rec.finish()
    text = json.dumps(RESULTS, indent=1, default=str)
    out = os.environ.get("KTRIAGE_GPU_OUT")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "runner_results.json").write_text(text)


def test_runner_shares_torchs_primary_context() -> None:
    ctx = ensure_context(0)
    drv = driver()
    current = drv.cuCtxGetCurrent()[1]
    assert ctx.shared_with_torch
    assert int(current) == int(ctx.context) != 0
    assert ctx.sm_count == torch.cuda.get_device_properties(0).multi_processor_count


def test_gpu_environment_is_recorded() -> None:
    gpu = RESULTS["gpu"]
    assert gpu["sm_count"] == torch.cuda.get_device_properties(0).multi_processor_count
    assert "nvml" not in gpu, gpu.get("nvml")  # nvidia-ml-py is on the GPU host
    assert gpu["name"] and gpu["uuid"].startswith("GPU-") and gpu["driver"] and gpu["cuda_driver"]
    before = gpu["before"]
    assert before["sm_clock_mhz"] > 0 and before["mem_clock_mhz"] > 0 and before["temperature_c"] > 0


@pytest.mark.parametrize("version", VERSIONS)
def test_vector_add_is_correct_and_timed_in_every_mode(version: str) -> None:
    entry = ENTRIES[f"vector_add@{version}"]
    k = kernel(entry.name)
    n = entry.info["spec_meta"]["shape"]["N"]
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    launch = k.prepare(entry.grid, [x, y, out, n])
    acc = check_run(launch, {"out": out}, lambda: {"out": x + y})
    assert acc.passed, acc.reason
    assert acc.outputs[0].rel_err == 0.0  # one fp32 add: bit-exact with torch
    # The check really poisons: without the launch, the NaN poison fails it.
    miss = check_run(lambda: None, {"out": out}, lambda: {"out": x + y})
    assert not miss.passed and miss.outputs[0].nonfinite == n
    timings = {}
    for mode, flush in (
        ("events", True),
        ("events", False),
        ("graph", True),
        ("graph", False),
    ):
        opts = TimingOptions(mode=mode, l2_flush=flush, calls_per_round=10, graph_calls=20)
        res = measure_interleaved(
            {"v": launch}, min_samples=30, max_time_s=1.0, options=opts, stop=lambda s: len(s["v"]) >= 50
        )
        assert not res.errors and len(res.samples["v"]) >= 30
        assert all(t > 0 for t in res.samples["v"])
        timings[f"{mode}{'+flush' if flush else ''}"] = {
            "median_ms": median(res.samples["v"]),
            "n": len(res.samples["v"]),
            "warmup": res.warmup["v"],
        }
    check_after = check_run(launch, {"out": out}, lambda: {"out": x + y})  # graph replays left it intact
    assert check_after.passed
    RESULTS.setdefault("vector_add", {})[version] = {
        "n": n,
        "rel_err": acc.outputs[0].rel_err,
        "timings": timings,
    }


@pytest.mark.parametrize("version", VERSIONS)
def test_every_scalar_type_is_packed_right(version: str) -> None:
    k = kernel(f"scalars@{version}")
    out = torch.full((6,), float("nan"), device="cuda")
    values = [
        1.5,
        -2.25,
        2.5,
        -(2**40) - 8,
        4_000_000_000,
        True,
    ]  # fp32 fp16 bf16 i64 u32 i1
    k.launch((1,), [out, *values])
    torch.cuda.synchronize()
    expected = torch.tensor([float(v) for v in values], dtype=torch.float32)
    assert torch.equal(out.cpu(), expected), (out.cpu(), expected)


def _layer_norm_case(entry_name: str) -> dict[str, Any]:
    entry = ENTRIES[entry_name]
    shape = entry.info["spec_meta"]["shape"]
    m, n = shape["M"], shape["N"]
    eps = 1e-5
    x = torch.randn(m, n, device="cuda")
    w = torch.randn(n, device="cuda")
    b = torch.randn(n, device="cuda")
    dy = torch.randn(m, n, device="cuda")
    mean = x.mean(dim=1)
    rstd = torch.rsqrt(x.var(dim=1, unbiased=False) + eps)
    sm = entry.grid[0]
    dx = torch.empty_like(x)
    dwp = torch.empty(sm, n, device="cuda")
    dbp = torch.empty(sm, n, device="cuda")
    named = {
        "X_ptr": x,
        "W_ptr": w,
        "Mean_ptr": mean,
        "RSTD_ptr": rstd,
        "DX_ptr": dx,
        "DW_ptr": dwp,
        "DB_ptr": dbp,
        "DY_ptr": dy,
        "stride_x": n,
        "stride_dx": n,
        "stride_dw": n,
        "stride_db": n,
        "stride_dy": n,
        "n_rows": m,
        "n_cols": n,
    }
    return {
        "entry": entry,
        "m": m,
        "n": n,
        "x": x,
        "w": w,
        "b": b,
        "dy": dy,
        "dx": dx,
        "dwp": dwp,
        "dbp": dbp,
        "named": named,
        "eps": eps,
    }


def _torch_layer_norm_grads(c: dict[str, Any]) -> dict[str, torch.Tensor]:
    xr, wr, br = (c[k].clone().requires_grad_(True) for k in ("x", "w", "b"))
    y = torch.nn.functional.layer_norm(xr, (c["n"],), wr, br, eps=c["eps"])
    y.backward(c["dy"])
    return {"dx": xr.grad, "dw": wr.grad, "db": br.grad}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("input_id", ["6", "7"])
def test_liger_layer_norm_backward_matches_torch(version: str, input_id: str) -> None:
    name = f"layer_norm_bwd_{input_id}@{version}"
    c = _layer_norm_case(name)
    k = kernel(name)
    launch = k.prepare(c["entry"].grid, [c["named"][p.name] for p in k.params])
    ref = _torch_layer_norm_grads(c)
    acc = check_run(
        launch,
        {"dx": c["dx"], "dw_partial": c["dwp"], "db_partial": c["dbp"]},
        ref,
        views=lambda: {"dx": c["dx"], "dw": c["dwp"].sum(0), "db": c["dbp"].sum(0)},
    )
    assert acc.passed, acc.reason
    RESULTS.setdefault("layer_norm_bwd_accuracy", {})[name] = {o.name: o.rel_err for o in acc.outputs}


@pytest.mark.parametrize("input_id", ["6", "7"])
def test_layer_norm_backward_versions_interleaved_with_torch(input_id: str) -> None:
    cases = {v: _layer_norm_case(f"layer_norm_bwd_{input_id}@{v}") for v in VERSIONS}
    variants = {}
    for v, c in cases.items():
        k = kernel(c["entry"].name)
        variants[f"liger@triton-{v}"] = k.prepare(c["entry"].grid, [c["named"][p.name] for p in k.params])
    c0 = cases[VERSIONS[0]]
    xr, wr, br = (c0[k].clone().requires_grad_(True) for k in ("x", "w", "b"))
    y = torch.nn.functional.layer_norm(xr, (c0["n"],), wr, br, eps=c0["eps"])

    def torch_bwd() -> None:
        xr.grad = wr.grad = br.grad = None
        y.backward(c0["dy"], retain_graph=True)

    variants["torch_layer_norm"] = torch_bwd
    res = measure_interleaved(
        variants, min_samples=40, max_time_s=3.0, seed=7, stop=lambda s: all(len(v) >= 100 for v in s.values())
    )
    assert not res.errors and res.stopped_by in ("stop", "time")
    assert all(len(s) >= 40 for s in res.samples.values())
    assert len({tuple(o) for o in res.orders}) > 1  # the order really changes between rounds
    RESULTS.setdefault("layer_norm_bwd_interleaved", {})[f"N={c0['n']}"] = {
        "median_ms": {n: median(s) for n, s in res.samples.items()},
        "samples": {n: len(s) for n, s in res.samples.items()},
        "rounds": res.rounds,
        "stopped_by": res.stopped_by,
        "elapsed_s": res.elapsed_s,
    }


@pytest.mark.parametrize("version", VERSIONS)
def test_matmul_with_96kb_shared_memory(version: str) -> None:
    entry = ENTRIES[f"matmul@{version}"]
    k = kernel(entry.name)
    assert k.shared > 48 * 1024
    assert k.function_attribute("CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES") >= k.shared
    s = entry.info["spec_meta"]["shape"]
    m, n, kk = s["M"], s["N"], s["K"]
    a = torch.randn(m, kk, device="cuda", dtype=torch.float16)
    b = torch.randn(kk, n, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    named = {
        "a_ptr": a,
        "b_ptr": b,
        "c_ptr": c,
        "M": m,
        "N": n,
        "K": kk,
        "stride_am": kk,
        "stride_ak": 1,
        "stride_bk": n,
        "stride_bn": 1,
        "stride_cm": n,
        "stride_cn": 1,
    }
    launch = k.prepare(entry.grid, [named[p.name] for p in k.params])
    acc = check_run(launch, {"c": c}, lambda: {"c": (a.float() @ b.float()).half()})
    assert acc.passed, acc.reason
    RESULTS.setdefault("matmul", {})[version] = {
        "rel_err": acc.outputs[0].rel_err,
        "shared": k.shared,
    }


@pytest.mark.parametrize("version", [v for v in VERSIONS if f"desc_scale@{v}" in ENTRIES])
def test_global_scratch_is_allocated_for_device_tensor_descriptors(
    version: str,
) -> None:
    entry = ENTRIES[f"desc_scale@{version}"]
    k = kernel(entry.name)
    scratch = next(p for p in k.abi if p.name == "global_scratch")
    assert scratch.size_bytes_per_cta > 0
    m, n = entry.info["spec_meta"]["M"], entry.info["spec_meta"]["N"]
    x = torch.randn(m, n, device="cuda")
    out = torch.empty_like(x)
    launch = k.prepare(entry.grid, [x, out, m, n])
    acc = check_run(launch, {"out": out}, lambda: {"out": 2 * x})
    assert acc.passed, acc.reason
    grid_ctas = entry.grid[0] * entry.grid[1]
    assert [s.nbytes for s in k._scratch.values()] == [grid_ctas * scratch.size_bytes_per_cta]
    RESULTS.setdefault("scratch", {})[version] = {
        "bytes": grid_ctas * scratch.size_bytes_per_cta,
        "passed": True,
    }


@pytest.mark.parametrize("version", [v for v in VERSIONS if f"cluster_add@{v}" in ENTRIES])
def test_cluster_launch_for_num_ctas_2(version: str) -> None:
    entry = ENTRIES[f"cluster_add@{version}"]
    k = kernel(entry.name)
    assert k.num_ctas == 2 and k.needs_launch_ex
    n = entry.info["spec_meta"]["N"]
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    acc = check_run(k.prepare(entry.grid, [x, y, out, n]), {"out": out}, lambda: {"out": x + y})
    assert acc.passed, acc.reason
    RESULTS.setdefault("cluster", {})[version] = {
        "passed": True,
        "grid": list(entry.grid),
        "cluster_dims": list(k.cluster_dims),
    }


def test_fault_and_hang_are_isolated_and_the_run_goes_on() -> None:
    """A planted illegal-address store and a planted hang each cost one cell; every next cell runs."""
    from ktriage.measure.cells import CellKey
    from ktriage.measure.isolate import IsolatedRunner, Job

    sys.path.insert(0, str(REPO / "benchmarks" / "gpu"))  # runner_jobs, importable in spawned workers
    version = VERSIONS[-1]
    streamed = []

    def job(case: str, kernel_name: str, input_label: str, **extra: Any) -> Job:
        key = CellKey("runner_check", "fwd", len(streamed), input_label, case, version)
        payload = {
            "bundle": str(BUNDLE),
            "kernel": kernel_name,
            "case": case,
            "key": key.__dict__,
            **extra,
        }
        return Job([key], payload)

    with IsolatedRunner(
        "runner_jobs:handle",
        init="runner_jobs:init",
        timeout_s=8.0,
        on_cell=streamed.append,
    ) as runner:
        cells = []
        for j in (
            job("vector_add", f"vector_add@{version}", "before fault"),
            job("poke", f"poke@{version}", "fault"),
            job("vector_add", f"vector_add@{version}", "after fault"),
            job("spin", f"spin@{version}", "hang", max_iters=400_000_000),
            job("vector_add", f"vector_add@{version}", "after hang"),
        ):
            cells.extend(runner.run_job(j))
        started = runner.workers_started
    statuses = [(c.key.input_label, c.status) for c in cells]
    assert statuses == [
        ("before fault", "ok"),
        ("fault", "error"),
        ("after fault", "ok"),
        ("hang", "timeout"),
        ("after hang", "ok"),
    ], statuses
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in cells[1].error
    assert cells[3].error == "timeout after 8 s"
    assert started == 3  # the first worker, one after the fault, one after the hang
    pids = [c.extra["pid"] for c in cells if c.status == "ok"]
    assert len(set(pids)) == 3
    assert streamed == cells  # each cell reached the callback as it finished
    assert all(len(c.samples_ms) >= 20 for c in cells if c.status == "ok")
    RESULTS["isolation"] = {
        "cells": [
            {
                "label": c.key.input_label,
                "status": c.status,
                "error": c.error,
                "median_ms": median(c.samples_ms) if c.samples_ms else None,
            }
            for c in cells
        ],
        "workers_started": started,
    }
