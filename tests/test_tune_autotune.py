"""The spill-aware autotune hook, run inside real toolchains' Pythons (real Triton wheels, real ptxas).

ktriage's own venv has no Triton, so each test body is a script run by the toolchain's interpreter
with the repo on PYTHONPATH; it prints JSON that the test asserts on. The target is explicit (sm_90):
no GPU is needed.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from ktriage.analyze.occupancy import compute_occupancy
from ktriage.tune.autotune import Screened, SpillAwarePrune, estimate

REPO = Path(__file__).resolve().parent.parent

PRELUDE = """
import json, sys
import triton
from kernels_for_tests import red_kernel
from ktriage.tune.autotune import TensorArg, autotune, ktriage_prune
ARGS = {"in_ptr": TensorArg("fp32"), "out_ptr": TensorArg("fp32"), "xnumel": 4096, "rnumel": 4096}
def cfgs(*shapes):
    return [triton.Config({"XBLOCK": x, "RBLOCK": r}, num_warps=w) for x, r, w in shapes]
def report(hook):
    return [dict(s.to_json(), label=s.label) for s in hook.last_report]
"""


def run_in_toolchain(toolchain, body: str) -> dict:
    env = dict(os.environ, PYTHONPATH=f"{REPO}{os.pathsep}{REPO / 'tests'}")
    env.pop("TRITON_CACHE_DIR", None)
    proc = subprocess.run([str(toolchain.python), "-c", PRELUDE + textwrap.dedent(body)], env=env,
                          capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _labels(data: dict, kept: bool) -> list[str]:
    return [r["label"] for r in data["report"] if r["kept"] is kept]


@pytest.mark.slow
@pytest.mark.parametrize("triton_spec", ["triton==3.4.0", "triton==3.3.1"])
def test_autotuner_prunes_the_spilling_tile(toolchain, triton_spec: str) -> None:
    """Through Triton's own Autotuner.prune_configs (the hook finds the kernel from its caller): the
    64x256 fp32 reduction tile spills and is dropped, the spill-free tiles stay, in the user's order."""
    data = run_in_toolchain(toolchain(triton_spec), """
        prune = ktriage_prune(max_spill_bytes=0, keep=3, target="sm_90")
        tuned = triton.autotune(configs=cfgs((64, 256, 4), (64, 64, 4), (32, 128, 4)), key=["rnumel"],
                                prune_configs_by=prune, do_bench=lambda *a, **k: 0.0)(red_kernel)
        tuned.nargs = dict(ARGS)
        kept = tuned.prune_configs({})
        print(json.dumps({"kept": [c.kwargs for c in kept], "report": report(prune["ktriage"]),
                          "version": triton.__version__}))
    """)
    assert data["version"] == triton_spec.split("==")[1]
    assert data["kept"] == [{"XBLOCK": 64, "RBLOCK": 64}, {"XBLOCK": 32, "RBLOCK": 128}]
    big = data["report"][0]
    assert big["kept"] is False and big["spill_store_bytes"] > 0 and "spills" in big["reason"]
    for row in data["report"][1:]:
        assert row["spill_store_bytes"] == 0 and row["occupancy"]["ctas_per_sm"] >= 1
        assert row["registers"] == row["occupancy"]["registers"] > 0


@pytest.mark.slow
def test_threshold_keep_and_ranking(toolchain) -> None:
    """A generous threshold keeps the spilling tile; keep=2 keeps the two best by the estimate (the
    2-warp 16x64 tile has the highest occupancy); a config that does not compile is kept, unscreened."""
    data = run_in_toolchain(toolchain("triton==3.4.0"), """
        shapes = cfgs((64, 256, 4), (64, 128, 8), (16, 64, 2), (64, 64, 4))
        loose = ktriage_prune(max_spill_bytes=10**6, keep=4, target="sm_90", kernel=red_kernel)["ktriage"]
        loose_kept = loose(shapes, dict(ARGS))
        top2 = ktriage_prune(max_spill_bytes=0, keep=2, target="sm_90", kernel=red_kernel)["ktriage"]
        top2_kept = top2(shapes, dict(ARGS))
        broken = ktriage_prune(keep=3, target="sm_90", kernel=red_kernel)["ktriage"]
        broken_kept = broken(cfgs((64, 3, 4), (64, 64, 4)), dict(ARGS))
        print(json.dumps({"loose": [c.kwargs for c in loose_kept], "top2": [c.kwargs for c in top2_kept],
                          "top2_report": report(top2), "broken": [c.kwargs for c in broken_kept],
                          "broken_report": report(broken)}))
    """)
    assert len(data["loose"]) == 4
    assert data["top2"] == [{"XBLOCK": 16, "RBLOCK": 64}, {"XBLOCK": 64, "RBLOCK": 64}]
    rows = data["top2_report"]
    assert rows[0]["kept"] is False and rows[0]["spill_store_bytes"] > 0
    assert rows[1]["kept"] is False and "ranked" in rows[1]["reason"]
    assert rows[2]["occupancy"]["warps_per_sm"] > rows[3]["occupancy"]["warps_per_sm"]
    assert data["broken"] == [{"XBLOCK": 64, "RBLOCK": 64}, {"XBLOCK": 64, "RBLOCK": 3}]  # rank order
    assert data["broken_report"][0]["error"] and "not screened" in data["broken_report"][0]["reason"]


@pytest.mark.slow
def test_drop_in_decorator_binds_the_kernel(toolchain) -> None:
    """ktriage.tune.autotune.autotune(...) is triton.autotune with the hook bound to the kernel."""
    data = run_in_toolchain(toolchain("triton==3.4.0"), """
        tuned = autotune(cfgs((64, 256, 4), (64, 64, 4)), key=["rnumel"], target="sm_90",
                         do_bench=lambda *a, **k: 0.0)(red_kernel)
        tuned.nargs = dict(ARGS)
        print(json.dumps({"kept": [c.kwargs for c in tuned.prune_configs({})]}))
    """)
    assert data["kept"] == [{"XBLOCK": 64, "RBLOCK": 64}]


# ----------------------------------------------------------------------------- pure logic (no Triton)


def test_estimate_rewards_occupancy_up_to_saturation_and_penalizes_spills() -> None:
    low = compute_occupancy("sm_90", 255, 4, 0)  # 2 CTAs, 8 warps
    mid = compute_occupancy("sm_90", 128, 4, 0)  # 4 CTAs, 16 warps
    high = compute_occupancy("sm_90", 32, 4, 0)
    assert estimate(low, 0) == 2.0
    assert estimate(mid, 0) == estimate(high, 0) == 1.0
    assert estimate(mid, 1024) == 2.0


def test_rank_keeps_best_then_unscreened_fake_configs() -> None:
    """_rank on fake Screened rows (no compile): best estimate first, ties by registers, then order."""
    occ = compute_occupancy("sm_90", 64, 4, 0)
    rows = [
        Screened("fake-a", "a", True, "ok", registers=90, occupancy=occ, estimate=1.0),
        Screened("fake-b", "b", True, "ok", registers=60, occupancy=occ, estimate=1.0),
        Screened("fake-c", "c", False, "spills"),
        Screened("fake-d", "d", True, "not screened (kept): x", error="x"),
        Screened("fake-e", "e", True, "ok", registers=40, occupancy=occ, estimate=2.0),
    ]
    ranked = SpillAwarePrune(keep=2)._rank(rows)
    assert [r.label for r in ranked if r.kept] == ["a", "b"]
    ranked = SpillAwarePrune(keep=4)._rank(rows)
    assert [r.label for r in ranked if r.kept] == ["a", "b", "d", "e"]
    assert "ranked 3 of 4" in SpillAwarePrune(keep=2)._rank(rows)[4].reason


@pytest.mark.slow
def test_example_screens_without_a_gpu(toolchain) -> None:
    """examples/autotune_example.py --target sm_90: the two big tiles spill and are dropped, three kept."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([str(toolchain("triton==3.4.0").python), str(REPO / "examples" / "autotune_example.py"),
                           "--target", "sm_90"], env=env, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line.split(None, 1) for line in proc.stdout.splitlines() if line.startswith(("keep", "drop"))]
    assert len(rows) == 7 and sum(1 for verdict, _ in rows if verdict == "keep") == 3
    dropped_for_spills = [text for verdict, text in rows if verdict == "drop" and "spills" in text]
    assert [t.split(",")[0:2] for t in dropped_for_spills] == [["XBLOCK=64", " RBLOCK=256"], ["XBLOCK=128", " RBLOCK=128"]]
