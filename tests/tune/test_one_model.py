"""One cost model for `ktriage tune` and the autotune hook (issue 10, point 12): on the catalog fp16
matmul at 4096^3 (Triton 3.4.0, sm_90, no GPU) both entry points give every config of one set the same
tile-model estimate and so the same order; the Triton tutorial's own configs rank above 64x64x32
1-stage configs; the grid follows the block sizes; the start config competes."""

from __future__ import annotations

import math
import textwrap

import pytest

from ktriage.arch import throughput
from ktriage.catalog import expand_op
from ktriage.tune.screen import screen
from ktriage.tune.space import TuneConfig, apply_config, config_space
from tests.tune.test_autotune import run_in_toolchain

# The configs of Triton's tutorial 03 (get_cuda_autotune_config) that our space can express, the
# catalog's own start config (128x128x64, 8 warps, 3 stages), and the 64x64x32 1-stage configs
# the old model recommended.
TUTORIAL = [(128, 256, 64, 3, 8), (64, 256, 32, 4, 4), (128, 128, 32, 4, 4), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4)]
START = (128, 128, 64, 3, 8)
SMALL_1_STAGE = [(64, 64, 32, 1, 8), (64, 64, 32, 1, 4)]
SET = TUTORIAL + [START] + SMALL_1_STAGE


def _cfg(bm: int, bn: int, bk: int, stages: int, warps: int) -> TuneConfig:
    return TuneConfig.of(warps, stages, {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk})


def _matmul():
    return expand_op("tutorial.matmul", mode="fwd", dtype="fp16", inputs=["3"])[0]


def test_grid_follows_the_block_sizes() -> None:
    space = config_space(_matmul())
    assert {k.name for k in space.knobs} == {"BLOCK_M", "BLOCK_N", "BLOCK_K"}
    assert space.spec.grid == (1024,)
    assert space.apply(_cfg(64, 64, 32, 1, 8)).grid == (4096,)
    assert space.apply(_cfg(128, 256, 64, 3, 8)).grid == (512,)
    odd = expand_op("tutorial.matmul", mode="fwd", dtype="fp16", inputs=["1"])[0]  # 1000^3
    spec = apply_config(odd, _cfg(128, 64, 32, 3, 4), config_space(odd).knobs, config_space(odd).grid_fn)
    assert spec.grid == (math.ceil(1000 / 128) * math.ceil(1000 / 64),)


@pytest.mark.slow
def test_tune_and_hook_rank_the_matmul_configs_alike(toolchain, shared_compiler) -> None:
    tc = toolchain("triton==3.4.0")
    space = config_space(_matmul())
    configs = [_cfg(*c) for c in SET]
    result = screen(space, tc, shared_compiler, configs=configs, top_k=len(configs), staged=False)
    by_cfg = {c.config: c for c in result.candidates}
    tune_order = [c.config for c in sorted((c for c in result.candidates if c.rank), key=lambda c: c.rank or 0)]
    assert all(by_cfg[c].estimate is not None and by_cfg[c].estimate.model == "mma" for c in configs)  # type: ignore[union-attr]
    # the tutorial's configs and the start config rank above every 64x64x32 1-stage config
    worst_tutorial = max(tune_order.index(_cfg(*c)) for c in TUTORIAL + [START])
    assert all(tune_order.index(_cfg(*c)) > worst_tutorial for c in SMALL_1_STAGE)
    # the recommendation is never worse than the start config by the model
    start = by_cfg[_cfg(*START)]
    assert result.recommended is not None and start.estimate is not None
    assert result.recommended.estimate is not None
    assert result.recommended.estimate.estimate_us <= start.estimate.estimate_us

    data = run_in_toolchain(
        tc,
        textwrap.dedent(f"""
        from ktriage.catalog.kernels.matmul import matmul_kernel
        SET = {SET!r}
        cfgs = [triton.Config({{"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}}, num_stages=s, num_warps=w)
                for bm, bn, bk, s, w in SET]
        M = N = K = 4096
        args = {{"a_ptr": TensorArg("fp16"), "b_ptr": TensorArg("fp16"), "c_ptr": TensorArg("fp16"), "M": M, "N": N,
                 "K": K, "stride_am": K, "stride_ak": 1, "stride_bk": N, "stride_bn": 1, "stride_cm": N, "stride_cn": 1}}
        hook = ktriage_prune(keep=len(cfgs), target="sm_90", kernel=matmul_kernel)["ktriage"]
        hook(cfgs, args, grid=lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),))
        print(json.dumps(report(hook)))
    """),
    )
    rows = {tuple(c): r for c, r in zip(SET, data, strict=True)}
    clock = throughput(9, 0).sm_clock_hz
    for c in SET:
        cand, row = by_cfg[_cfg(*c)], rows[c]
        assert row["model"] == "mma" and cand.estimate is not None and cand.occupancy is not None
        assert row["registers"] == cand.resources.registers  # type: ignore[union-attr]
        assert row["occupancy"]["ctas_per_sm"] == cand.occupancy.ctas_per_sm
        assert row["grid"] == cand.estimate.grid_ctas
        assert row["estimate"] == pytest.approx(cand.estimate.estimate_us * clock / 1e6, rel=1e-6)
    hook_order = sorted(SET, key=lambda c: (rows[c]["estimate"], SET.index(c)))
    tune_by_value = sorted(SET, key=lambda c: (by_cfg[_cfg(*c)].estimate.estimate_us, SET.index(c)))  # type: ignore[union-attr]
    assert hook_order == tune_by_value
