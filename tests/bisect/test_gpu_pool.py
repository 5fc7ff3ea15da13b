"""The per-GPU measure of a timed bisect (``bisect.gpu_pool.GpuWorkerMeasure``) with real worker
processes on the CPU: each pinned to its "GPU" by environment, its measure built once per process
from the factory and reused across calls. The measure is a FAKE (no GPU is touched)."""

from __future__ import annotations

import os
from typing import Any

from ktriage.bisect.gpu_pool import GpuWorkerMeasure


class FakePinnedMeasure:
    """Returns, per variant, [gpu seen, pid, calls so far]: what the test needs to see."""

    def __init__(self, broken: str) -> None:
        self.calls = 0
        self.broken = broken
        self.errors: dict[str, str] = {}

    def __call__(self, variants: list[Any], n: int) -> dict[str, list[float]]:
        self.calls += 1
        seen = float(os.environ.get("CUDA_VISIBLE_DEVICES", "-1"))
        out = {}
        for v in variants:
            if v == self.broken:
                self.errors[v] = "wrong results"
                continue
            out[str(v)] = [seen, float(os.getpid()), float(self.calls)] + [1.0] * (n - 3)
        return out


def fake_factory(broken: str) -> FakePinnedMeasure:
    return FakePinnedMeasure(broken)


def test_each_gpus_measure_runs_pinned_and_is_built_once() -> None:
    pool = [GpuWorkerMeasure(g, fake_factory, ("c3",), timeout_s=30) for g in (0, 1)]
    try:
        first = [m(["good", "bad", "c1", "c3"], 5) for m in pool]
        again = pool[1](["good", "bad", "c2"], 5)
    finally:
        for m in pool:
            m.close()
    for gpu, got in enumerate(first):
        assert set(got) == {"good", "bad", "c1"} and all(s[0] == gpu for s in got.values()) and len(got["good"]) == 5
    assert again["c2"][1] == first[1]["c1"][1] and again["c2"][2] == 2.0  # the same worker, its measure kept
    assert pool[1].errors["c3"] == "GPU 1: wrong results" and pool[0].errors["c3"] == "GPU 0: wrong results"


def test_bisect_gpus_is_checked_before_anything_runs(monkeypatch: Any, capsys: Any) -> None:
    from ktriage.cli.app import main

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    base = ["bisect", "--source", "ptxas", "--good", "12.4.131", "--bad", "12.8.93", "--op", "liger.embedding"]
    assert main([*base, "--metric", "sass:ATOMG", "--gpus", "all"]) == 2
    assert "error: --gpus applies to a timed bisect" in capsys.readouterr().err
    assert (
        main([*base, "--metric", "latency", "--gpus", "0,5", "--bundle", "b", "--backend", "liger", "--input", "0"])
        == 2
    )
    assert "GPU 5 is not visible here (GPUs 0, 1)" in capsys.readouterr().err
