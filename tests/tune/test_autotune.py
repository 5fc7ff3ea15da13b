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
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from ktriage.analyze.occupancy import compute_occupancy
from ktriage.errors import FormatError, KtriageError
from ktriage.predict.model import PARAMS_FILE, load_params
from ktriage.tune.autotune import Screened, SpillAwarePrune, estimate, ktriage_prune

REPO = Path(__file__).resolve().parents[2]

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
    proc = subprocess.run(
        [str(toolchain.python), "-c", PRELUDE + textwrap.dedent(body)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _labels(data: dict, kept: bool) -> list[str]:
    return [r["label"] for r in data["report"] if r["kept"] is kept]


@pytest.mark.slow
@pytest.mark.parametrize("triton_spec", ["triton==3.4.0", "triton==3.3.1"])
def test_autotuner_prunes_the_spilling_tile(toolchain, triton_spec: str) -> None:
    """Through Triton's own Autotuner.prune_configs (the hook finds the kernel from its caller): the
    64x256 fp32 reduction tile spills and is dropped, the spill-free tiles stay, in the user's order."""
    data = run_in_toolchain(
        toolchain(triton_spec),
        """
        prune = ktriage_prune(max_spill_bytes=0, keep=3, target="sm_90")
        tuned = triton.autotune(configs=cfgs((64, 256, 4), (64, 64, 4), (32, 128, 4)), key=["rnumel"],
                                prune_configs_by=prune, do_bench=lambda *a, **k: 0.0)(red_kernel)
        tuned.nargs = dict(ARGS)
        kept = tuned.prune_configs({})
        print(json.dumps({"kept": [c.kwargs for c in kept], "report": report(prune["ktriage"]),
                          "version": triton.__version__}))
    """,
    )
    assert data["version"] == triton_spec.split("==")[1]
    assert data["kept"] == [{"XBLOCK": 64, "RBLOCK": 64}, {"XBLOCK": 32, "RBLOCK": 128}]
    big = data["report"][0]
    assert big["kept"] is False and big["spill_store_bytes"] > 0 and "spills" in big["reason"]
    for row in data["report"][1:]:
        assert row["spill_store_bytes"] == 0 and row["occupancy"]["ctas_per_sm"] >= 1
        assert row["registers"] == row["occupancy"]["registers"] > 0


@pytest.mark.slow
def test_threshold_keep_and_ranking(toolchain) -> None:
    """A generous threshold keeps the spilling tile; keep=2 keeps the two best by the rank: the three
    spill-free tiles are estimated within 3 % of each other (the 2-warp 16x64 tile, with the highest
    occupancy, lowest), a tie the model cannot order, so the smallest changes from the first config
    (64x256, 4 warps) rank first, as tune ranks them: 64x64 (one knob), then 64x128 with 8 warps (two);
    a config that does not compile is kept, unscreened."""
    data = run_in_toolchain(
        toolchain("triton==3.4.0"),
        """
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
    """,
    )
    assert len(data["loose"]) == 4
    assert data["top2"] == [{"XBLOCK": 64, "RBLOCK": 64}, {"XBLOCK": 64, "RBLOCK": 128}]
    rows = data["top2_report"]
    assert rows[0]["kept"] is False and rows[0]["spill_store_bytes"] > 0
    assert rows[2]["kept"] is False and "ranked 3 of 3 (keep=2)" in rows[2]["reason"]
    assert [r["tied"] for r in rows] == [False, True, True, True]
    assert rows[2]["estimate"] == min(r["estimate"] for r in rows[1:])  # the lowest estimate, ranked by change
    assert rows[2]["occupancy"]["warps_per_sm"] > rows[3]["occupancy"]["warps_per_sm"]
    assert data["broken"] == [{"XBLOCK": 64, "RBLOCK": 64}, {"XBLOCK": 64, "RBLOCK": 3}]  # rank order
    assert data["broken_report"][0]["error"] and "not screened" in data["broken_report"][0]["reason"]


@pytest.mark.slow
def test_drop_in_decorator_binds_the_kernel(toolchain) -> None:
    """ktriage.tune.autotune.autotune(...) is triton.autotune with the hook bound to the kernel."""
    data = run_in_toolchain(
        toolchain("triton==3.4.0"),
        """
        tuned = autotune(cfgs((64, 256, 4), (64, 64, 4)), key=["rnumel"], target="sm_90",
                         do_bench=lambda *a, **k: 0.0)(red_kernel)
        tuned.nargs = dict(ARGS)
        print(json.dumps({"kept": [c.kwargs for c in tuned.prune_configs({})]}))
    """,
    )
    assert data["kept"] == [{"XBLOCK": 64, "RBLOCK": 64}]


# ----------------------------------------------------------------------------- pure logic (no Triton)


def test_estimate_rewards_occupancy_up_to_saturation_and_penalizes_spills() -> None:
    low = compute_occupancy("sm_90", 255, 4, 0)  # 2 CTAs, 8 warps
    mid = compute_occupancy("sm_90", 128, 4, 0)  # 4 CTAs, 16 warps
    high = compute_occupancy("sm_90", 32, 4, 0)
    assert estimate(low, 0) == 2.0
    assert estimate(mid, 0) == estimate(high, 0) == 1.0
    assert estimate(mid, 1024) == 2.0


@pytest.mark.parametrize(
    "kwargs, problem",
    [
        ({"target": "sm_91"}, "unknown or unsupported GPU target 'sm_91'"),
        ({"target": "foo"}, "unknown or unsupported GPU target 'foo'"),
        ({"max_spill_bytes": -1}, "max_spill_bytes=-1 is negative"),
        ({"keep": 0}, "keep=0 keeps no config"),
        ({"saturation_warps": 0}, "saturation_warps=0 must be >= 1"),
        ({"num_sms": 0}, "num_sms=0 must be >= 1"),
    ],
)
def test_the_hook_refuses_what_it_cannot_screen_with_when_made(kwargs: dict[str, object], problem: str) -> None:
    """An unknown target was read only inside triton.autotune: 'sm_91' aborted the tuning process
    (LLVM ERROR: Cannot select, Triton 3.4.0), '9.0' raised 'unknown compile target' although every
    ktriage verb takes it; saturation_warps=0 divided by zero in the warps-only estimate (a
    ZeroDivisionError out of triton.autotune). All are refused where the hook is made, with the fix;
    no Triton needed."""
    with pytest.raises(KtriageError) as refused:
        ktriage_prune(**kwargs)  # type: ignore[arg-type]
    assert refused.value.problem.startswith(problem) and refused.value.fix


@pytest.mark.parametrize("spelling", ["sm_90", "sm_90a", "9.0", "cuda:90", 90])
def test_the_hook_takes_every_arch_spelling(spelling: object) -> None:
    assert SpillAwarePrune(target=spelling).target == 90


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


@dataclass(frozen=True)
class FakeConfig:
    """A stand-in for ``triton.Config`` (ktriage's venv has no Triton): what the hook's ranking reads."""

    kwargs: dict[str, int]
    num_warps: int
    num_stages: int = 3


def _tied_rows() -> list[Screened]:
    """The start config (first given: 4 warps) and two others estimated within 3 % of it, the lowest
    estimate on the config that changes most (32 warps and XBLOCK): the Liger layer_norm case tune met."""
    occ = compute_occupancy("sm_90", 64, 4, 0)
    shapes = [({"XBLOCK": 8}, 4, 1.02), ({"XBLOCK": 8}, 8, 1.0), ({"XBLOCK": 16}, 32, 0.99), ({"XBLOCK": 8}, 2, 1.5)]
    return [
        Screened(FakeConfig(kw, w), f"x{kw['XBLOCK']}w{w}", True, "ok", registers=40, occupancy=occ, estimate=e)
        for kw, w, e in shapes
    ]


def test_the_hook_ranks_ties_as_tune_does_the_first_config_first() -> None:
    """The hook ranked by the raw estimate (32 warps first, the start config last of three) while tune
    ranks the estimates the model cannot tell apart by the smallest change from the start config. Now the
    hook applies tune's rule (predict.configs.ties_first_by) with the first config given as the start."""
    ranked = SpillAwarePrune(keep=2, model=load_params(PARAMS_FILE))._rank(_tied_rows())
    assert [r.label for r in sorted(ranked, key=lambda r: r.rank or 9)] == ["x8w4", "x8w8", "x16w32", "x8w2"]
    assert [r.label for r in ranked if r.kept] == ["x8w4", "x8w8"]
    assert [r.tied for r in ranked] == [True, True, True, False]
    assert "tied with 2 others within the model's ±3.4%" in ranked[0].reason and ranked[0].to_json()["tied"]


def test_the_hooks_ties_come_from_the_model_given(tmp_path: Path) -> None:
    """``model=`` reaches the hook's tie rule: a model file whose interval is 0 (it tells every estimate
    apart) ranks by estimate alone; a Params object is taken as it is; a file that is no model is refused
    when the hook is made, not at tuning time."""
    data = json.loads(PARAMS_FILE.read_text())
    data["params"]["interval_a"] = 0.0
    sharp = tmp_path / "sharp-model.json"
    sharp.write_text(json.dumps(data))
    for model in (sharp, str(sharp), replace(load_params(PARAMS_FILE), interval_a=0.0)):
        hook = ktriage_prune(keep=2, model=model)["ktriage"]
        ranked = hook._rank(_tied_rows())
        assert [r.label for r in sorted(ranked, key=lambda r: r.rank or 9)] == ["x16w32", "x8w8", "x8w4", "x8w2"]
        assert not any(r.tied for r in ranked)
    bad = tmp_path / "not-a-model.json"
    bad.write_text("{}")
    with pytest.raises(FormatError, match="no 'params' object"):
        ktriage_prune(model=bad)


@pytest.mark.slow
def test_example_screens_without_a_gpu(toolchain) -> None:
    """examples/autotune_example.py --target sm_90: the two big tiles spill and are dropped, three kept."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [str(toolchain("triton==3.4.0").python), str(REPO / "examples" / "autotune_example.py"), "--target", "sm_90"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line.split(None, 1) for line in proc.stdout.splitlines() if line.startswith(("keep", "drop"))]
    assert len(rows) == 7 and sum(1 for verdict, _ in rows if verdict == "keep") == 3
    dropped_for_spills = [text for verdict, text in rows if verdict == "drop" and "spills" in text]
    assert [t.split(",")[0:2] for t in dropped_for_spills] == [
        ["XBLOCK=64", " RBLOCK=256"],
        ["XBLOCK=128", " RBLOCK=128"],
    ]


# ----------------------------------------------------------------------------- the launch-aware estimates


def test_mma_estimate_prefers_intensity_and_counts_waves() -> None:
    """Pure logic: a 128x256 fp16 tile (compute bound on sm_90) beats 64x64 (L2 bound) for the same
    problem; one tile past a full wave doubles the time; a 2-stage pipeline of thin K slices is slower."""
    from ktriage.tune.autotune import MmaTile, mma_estimate

    occ1 = compute_occupancy("sm_90", 200, 8, 150_000)  # 1 CTA/SM
    occ4 = compute_occupancy("sm_90", 60, 4, 32_768)
    big, _ = mma_estimate(occ1, MmaTile(128, 256, 64, 3, 2, k=4096, tiles=512), num_sms=132, cc=90)
    small, why = mma_estimate(occ4, MmaTile(64, 64, 32, 4, 2, k=4096, tiles=4096), num_sms=132, cc=90)
    assert small > 2 * big and "memory bound" in why
    one_wave, _ = mma_estimate(occ1, MmaTile(128, 256, 64, 3, 2, k=4096, tiles=132), num_sms=132, cc=90)
    two_waves, why2 = mma_estimate(occ1, MmaTile(128, 256, 64, 3, 2, k=4096, tiles=133), num_sms=132, cc=90)
    assert two_waves == pytest.approx(2 * one_wave) and "-> 2" in why2
    deep, _ = mma_estimate(occ1, MmaTile(128, 128, 32, 4, 2, k=4096, tiles=132), num_sms=132, cc=90)
    shallow, _ = mma_estimate(occ1, MmaTile(128, 128, 32, 2, 2, k=4096, tiles=132), num_sms=132, cc=90)
    assert shallow > deep


def test_stream_estimate_counts_idle_sms_and_bytes_in_flight() -> None:
    from ktriage.tune.autotune import stream_estimate

    wide = compute_occupancy("sm_90", 32, 16, 0)  # 4 CTAs/SM of 16 warps
    full, _ = stream_estimate(wide, 0, num_sms=132, grid=132 * 64, tile_bytes=131072)
    half, why = stream_estimate(wide, 0, num_sms=132, grid=66, tile_bytes=131072)  # 1 CTA on half the SMs
    assert full == 1.0 and half == pytest.approx(2.0, rel=0.02) and "50% busy" in why
    occ = compute_occupancy("sm_90", 32, 4, 0)  # 16 CTAs/SM, 64 warps
    tiny, _ = stream_estimate(occ, 0, num_sms=132, grid=132 * 64, tile_bytes=256)  # 4 KB in flight
    assert tiny > 4 * full
    assert stream_estimate(occ, 0, num_sms=132)[0] == estimate(occ, 0)  # nothing known: the old estimate
    few_warps = compute_occupancy("sm_90", 206, 4, 0)  # 2 CTAs, 8 warps: big tiles, little issue
    assert stream_estimate(few_warps, 0, num_sms=132, grid=10**4, tile_bytes=65536)[0] > 1.1


def test_grid_and_dtype_helpers() -> None:
    from ktriage.tune.autotune import TensorArg, grid_ctas

    assert grid_ctas(lambda meta: (meta["M"] // meta["BLOCK_M"], 2), {"M": 1024, "BLOCK_M": 128}) == 16
    assert grid_ctas((3, 4, 5), {}) == 60 and grid_ctas(7, {}) == 7
    assert grid_ctas(None, {}) is None and grid_ctas(lambda meta: meta["missing"], {}) is None
    assert [TensorArg(d).element_size() for d in ("fp16", "bf16", "fp32", "fp8e4nv", "i64", "torch.float16")] == [
        2,
        2,
        4,
        1,
        8,
        2,
    ]


HOOK_BENCH = """
sys.path.insert(0, BENCH_DIR)
from autotune_hook import mm_kernel, mm_grid, mm_named_args
def mm(bm, bn, bk, s, w):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}, num_stages=s, num_warps=w)
"""


HOOK_BENCH = f"BENCH_DIR = {str(REPO / 'benchmarks' / 'tune')!r}" + HOOK_BENCH


@pytest.mark.slow
def test_matmul_is_ranked_by_the_tile_model(toolchain) -> None:
    """A real tl.dot kernel (Triton 3.4.0, sm_90, fp16 4096^3): the hook sees wgmma in the PTX and uses
    the tile model; 128x256 (8 warps) ranks above 128x128 above 64x64; the 4-warp 128x256 tile spills
    and is dropped; without a grid it infers cdiv(M,BM)*cdiv(N,BN), through the Autotuner it uses the
    launch's grid function."""
    data = run_in_toolchain(
        toolchain("triton==3.4.0"),
        HOOK_BENCH
        + textwrap.dedent("""
        cfgs = [mm(64, 64, 32, 4, 4), mm(128, 128, 64, 4, 4), mm(128, 256, 64, 3, 8), mm(128, 256, 64, 3, 4)]
        hook = ktriage_prune(keep=2, target="sm_90", kernel=mm_kernel)["ktriage"]
        kept = hook(cfgs, mm_named_args(4096, 4096, 4096))
        direct = report(hook)
        prune = ktriage_prune(keep=2, target="sm_90")
        tuned = triton.autotune(configs=cfgs, key=["M", "N", "K"], prune_configs_by=prune,
                                do_bench=lambda *a, **k: 0.0)(mm_kernel)
        tuned.nargs = mm_named_args(4096, 4096, 2048)
        tuned.prune_configs({"grid": lambda meta: (7,), "warmup": False})
        print(json.dumps({"kept": [c.kwargs["BLOCK_N"] for c in kept], "direct": direct,
                          "via": report(prune["ktriage"])}))
    """),
    )
    rows = data["direct"]
    assert data["kept"] == [256, 128]
    assert [r["rank"] for r in rows[:3]] == [3, 2, 1]
    assert all(r["model"] == "mma" for r in rows[:3]) and "flop/B" in rows[2]["detail"]
    assert rows[3]["kept"] is False and rows[3]["spill_store_bytes"] > 0
    assert rows[2]["grid"] == 32 * 16 and "inferred" in rows[2]["detail"]
    assert all(r["grid"] == 7 for r in data["via"][:3])


@pytest.mark.slow
def test_benchmark_dry_run_drops_grid_starved_and_spilling_reductions(toolchain, tmp_path: Path) -> None:
    """benchmarks/tune/autotune_hook.py --dry-run on the reduction cases (Triton 3.4.0, sm_90): a third
    is kept (cut >= 2x), no kept config spills, and on 2048 rows the configs whose grid leaves SMs idle
    (XBLOCK >= 16: <= 128 CTAs on 132 SMs) are not kept."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("TRITON_CACHE_DIR", None)
    proc = subprocess.run(
        [
            str(toolchain("triton==3.4.0").python),
            str(REPO / "benchmarks" / "tune" / "autotune_hook.py"),
            "--dry-run",
            "--target",
            "sm_90",
            "--out",
            str(tmp_path),
            "--only",
            "rms_32768x4096",
            "rms_2048x65536",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "autotune.json").read_text())
    assert [c["name"] for c in result["cases"]] == ["rms_32768x4096", "rms_2048x65536"]
    for case in result["cases"]:
        assert "error" not in case and case["configs"] == 20 and case["timed_pruned"] == 7 and case["cut"] >= 2
        kept = [r for r in case["hook_report"] if r["kept"]]
        assert all(r["spill_store_bytes"] == 0 and r["model"] == "stream" for r in kept)
        assert any(r["spill_store_bytes"] and "spills" in r["reason"] for r in case["hook_report"])
    starved = result["cases"][1]["hook_report"]
    assert all(r["grid"] >= 132 for r in starved if r["kept"])
    assert (tmp_path / "autotune.md").read_text().startswith("# ktriage autotune hook")
