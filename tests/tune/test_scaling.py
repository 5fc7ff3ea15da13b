"""RBLOCK scaling: inductor's rule on hand-computed cases, where ktriage's exact rule differs (named),
and the exact rule acting on a real inductor-style reduction compiled with Triton 3.4.0."""

from __future__ import annotations

import pytest

from ktriage.analyze.occupancy import compute_occupancy
from ktriage.tune.scaling import (
    ScalePoint,
    exact_rule,
    inductor_rule,
    inductor_skips_for_spills,
    scale_blocks,
    scale_loop,
    scale_proposals,
)
from ktriage.tune.space import TuneConfig, config_space
from tests.red_spec import red_spec

A100_SMS = 108


def _both(n_regs: int, num_warps: int, grid: int, arch: str = "sm_80", sms: int = A100_SMS):
    ind = inductor_rule(
        n_regs=n_regs, num_warps=num_warps, xnumel=grid, xblock=1, rblocks={"R0_BLOCK": 2048}, sm_count=sms
    )
    occ = compute_occupancy(arch, n_regs, num_warps, 0)
    exact = exact_rule(occ, grid_ctas=grid, sm_count=sms, spill_store_bytes=0)
    return ind, exact, occ


# --------------------------------------------------------------------- inductor's rule, by hand
def test_inductor_halves_largest_rblock_when_registers_limit():
    # 168 regs x 32 x 4 warps = 21504 per CTA -> 65536 // 21504 = 3 CTAs/SM; 108 SMs hold 324 < 1024.
    d = inductor_rule(
        n_regs=168, num_warps=4, xnumel=1024, xblock=1, rblocks={"R0_BLOCK": 2048, "R1_BLOCK": 16}, sm_count=A100_SMS
    )
    assert d.scale and d.max_blocks_per_sm == 3 and d.total_block == 1024
    assert d.new_rblocks == {"R0_BLOCK": 1024, "R1_BLOCK": 16}


def test_inductor_skips_when_grid_fits_one_wave():
    # 3 CTAs/SM x 108 = 324 >= 300 CTAs.
    d = inductor_rule(n_regs=168, num_warps=4, xnumel=300, xblock=1, rblocks={"R0_BLOCK": 2048}, sm_count=A100_SMS)
    assert not d.scale and "no need" in d.reason


def test_inductor_skips_small_rblock_and_few_registers():
    assert not inductor_rule(
        n_regs=255, num_warps=8, xnumel=10**6, xblock=1, rblocks={"R0_BLOCK": 64}, sm_count=1
    ).scale
    d = inductor_rule(n_regs=32, num_warps=8, xnumel=10**6, xblock=1, rblocks={"R0_BLOCK": 2048}, sm_count=1)
    assert not d.scale and "cannot limit" in d.reason


def test_inductor_uses_xblock_for_total_blocks():
    # 4096 rows / XBLOCK 8 = 512 CTAs; 72 regs x 32 x 4 = 9216 -> 7 CTAs/SM x 108 = 756 >= 512.
    d = inductor_rule(n_regs=72, num_warps=4, xnumel=4096, xblock=8, rblocks={"R0_BLOCK": 512}, sm_count=A100_SMS)
    assert d.total_block == 512 and d.max_blocks_per_sm == 7 and not d.scale


@pytest.mark.parametrize("n_regs,num_warps,expected", [(40, 8, 6), (72, 4, 7), (168, 4, 3), (255, 8, 1)])
def test_exact_rule_agrees_with_inductor_when_regs_multiple_of_8(n_regs, num_warps, expected):
    """Research notes §1.5: the two bounds agree when n_regs * 32 is a multiple of 256."""
    grid = expected * A100_SMS + 1  # one CTA more than a wave: both must scale
    ind, exact, occ = _both(n_regs, num_warps, grid)
    assert ind.max_blocks_per_sm == occ.limits["registers"] == expected
    assert ind.scale and exact.scale
    ind, exact, _ = _both(n_regs, num_warps, expected * A100_SMS)  # exactly one wave: neither scales
    assert not ind.scale and not exact.scale


# --------------------------------------------------------------------- where the exact rules differ
def test_differs_register_allocation_rounds_to_256_per_warp():
    # 33 regs: inductor 65536 // (33*32*4) = 15 CTAs/SM; exact: 33*32 = 1056 -> 1280 per warp,
    # 16384 // 1280 = 12 warps per sub-partition -> 48 warps -> 12 CTAs/SM.
    grid = 13 * A100_SMS
    ind, exact, occ = _both(33, 4, grid)
    assert ind.max_blocks_per_sm == 15 and occ.ctas_per_sm == 12 and occ.registers_per_warp_allocated == 1280
    assert not ind.scale  # inductor thinks 15 x 108 = 1620 slots hold 1404 CTAs
    assert exact.scale and exact.ctas_needed == 13


def test_differs_whole_warps_per_sub_partition_with_warps_not_multiple_of_4():
    # 40 regs, 2 warps: inductor 65536 // 2560 = 25 CTAs/SM (50 warps); exact: 1280 regs per warp,
    # 16384 // 1280 = 12 whole warps in each of 4 sub-partitions = 48 warps -> 24 CTAs of 2 warps.
    grid = 25 * A100_SMS
    ind, exact, occ = _both(40, 2, grid)
    assert ind.max_blocks_per_sm == 25 and occ.limits["registers"] == 24
    assert not ind.scale and exact.scale


def test_differs_cta_cap_per_sm_is_not_a_register_limit():
    # 40 regs, 1 warp: inductor 51 CTAs/SM; the SM holds at most 32 CTAs: smaller blocks cannot help,
    # so the exact rule does not scale (the blocks limit binds) while inductor misjudges the slots.
    grid = 40 * A100_SMS
    ind, exact, occ = _both(40, 1, grid)
    assert ind.max_blocks_per_sm == 51 and occ.ctas_per_sm == 32 and occ.limiter == "blocks"
    assert not ind.scale and not exact.scale


def test_differs_shared_memory_limit_ignored_by_inductor():
    # 64 regs, 4 warps: registers allow 8 CTAs/SM, but 100 KB of shared memory per CTA allows 2 on sm_90.
    occ = compute_occupancy("sm_90", 64, 4, 100 * 1024)
    ind = inductor_rule(n_regs=64, num_warps=4, xnumel=8 * 132, xblock=1, rblocks={"R0_BLOCK": 2048}, sm_count=132)
    exact = exact_rule(occ, grid_ctas=8 * 132, sm_count=132, spill_store_bytes=0)
    assert ind.max_blocks_per_sm == 8 and not ind.scale
    assert occ.limiter == "shared_memory" and occ.ctas_per_sm == 2 and exact.scale


def test_differs_local_array_is_not_a_spill():
    # A kernel with a 600-byte local array and no spills (research §2.2): Triton's n_spills = 150.
    assert inductor_skips_for_spills(stack_bytes=600)
    occ = compute_occupancy("sm_90", 40, 4, 0)
    assert not exact_rule(occ, grid_ctas=132, sm_count=132, spill_store_bytes=0).scale


def test_exact_rule_scales_on_true_spills():
    occ = compute_occupancy("sm_90", 255, 4, 0)
    d = exact_rule(occ, grid_ctas=10, sm_count=132, spill_store_bytes=680)
    assert d.scale and d.spills and "680 B" in d.reason


# --------------------------------------------------------------------- real compiles
@pytest.mark.slow
def test_scale_blocks_on_inductor_style_reduction(toolchain, shared_compiler):
    spec = red_spec("red[64x256]", divisible_by_16=("in_ptr", "out_ptr", "xnumel", "rnumel"))
    result = scale_blocks(spec, toolchain("triton==3.4.0"), shared_compiler)
    first = result.steps[0]
    # The library config spills (255 registers); halving RBLOCK removes the spills and is chosen.
    assert first.config.blocks["RBLOCK"] == 128 and first.kept and first.spill_store_bytes == 0
    assert "RBLOCK 256 -> 128 because it spills" in first.sentence
    assert result.changed and result.final.blocks["RBLOCK"] < 256
    assert all(s.sentence.endswith(".") for s in result.steps)
    assert result.steps[-1].sentence.split(": ")[1].startswith("stop")


def test_exact_rule_words_one_cta_per_sm_in_the_singular() -> None:
    """The reason counted by hand as "1 CTA(s)/SM"; ktriage.wording.plural says "1 CTA/SM", "2 CTAs/SM"."""
    one = exact_rule(compute_occupancy("sm_80", 255, 8, 0), grid_ctas=1000, sm_count=A100_SMS, spill_store_bytes=0)
    two = exact_rule(compute_occupancy("sm_80", 255, 4, 0), grid_ctas=1000, sm_count=A100_SMS, spill_store_bytes=0)
    assert one.reason.startswith("registers cap it at 1 CTA/SM while the grid of 1000 CTAs on 108 SMs"), one.reason
    assert two.reason.startswith("registers cap it at 2 CTAs/SM while"), two.reason


# --------------------------------------------------------------------- the space bounds the steps
def _fake_register_bound_evaluate(cfg: TuneConfig) -> ScalePoint[TuneConfig]:
    """A fake compile (pure logic): the registers halve as the warps double (255 at 4 warps), so more
    warps always raise occupancy, and registers always cap CTAs/SM below what the 4096-CTA grid
    needs: the exact rule always says scale."""
    regs = min(255, 1020 // cfg.num_warps)
    return ScalePoint(cfg, regs, 0, compute_occupancy("sm_90", regs, cfg.num_warps, 0), grid_ctas=4096)


def test_scaling_steps_stay_within_the_narrowed_warps() -> None:
    """`ktriage tune --warps 4,8` printed `num_warps 8 -> 16` and `16 -> 32` scaling steps: the
    proposals doubled up to the arch's 1024 threads whatever the space, so the scaling recommended
    a config the user had ruled out and the screening never compiled."""
    space = config_space(red_spec(), warps=[4, 8], blocks={"RBLOCK": [256]})
    result = scale_loop(
        space.default,
        _fake_register_bound_evaluate,
        lambda cfg: scale_proposals(space, cfg),
        sm_count=132,
    )
    tried = {s.config.num_warps for s in result.steps}
    assert tried <= {4, 8}, [s.sentence for s in result.steps]
    assert result.final.num_warps == 8 and "num_warps 4 -> 8" in result.steps[0].sentence
    assert "no proposal helps" in result.steps[-1].sentence
    # the full space still doubles up to 32 warps (1024 threads)
    full = config_space(red_spec())
    assert [c.num_warps for c, _ in scale_proposals(full, TuneConfig.of(16, 3, {"XBLOCK": 64, "RBLOCK": 64}))] == [32]
    assert [c.num_warps for c, _ in scale_proposals(full, TuneConfig.of(32, 3, {"XBLOCK": 64, "RBLOCK": 64}))] == []


def test_scaling_step_that_only_adds_warps_says_so() -> None:
    """`num_warps 4 -> 8 because registers cap it at 2 CTAs/SM while ... needs 6: ..., 2 CTAs/SM
    (16 warps), which raises occupancy`: the step was taken for a CTAs/SM shortfall and left it as
    it was; the sentence now says what changed (warps per SM, at the same CTAs/SM) and that the
    shortfall remains. The fake compile keeps registers capping CTAs/SM at 2 as the warps double."""
    result = scale_loop(
        TuneConfig.of(4, 3, {"XBLOCK": 64, "RBLOCK": 256}),
        _fake_register_bound_evaluate,
        lambda cfg: (
            [(TuneConfig(cfg.num_warps * 2, 3, cfg.constexprs), f"num_warps {cfg.num_warps} -> {cfg.num_warps * 2}")]
            if cfg.num_warps < 8
            else []
        ),
        sm_count=132,
    )
    step = result.steps[0]
    assert step.kept and step.ctas_per_sm == 2, step.sentence
    assert "raises occupancy" not in step.sentence
    assert step.sentence.endswith(
        "which raises warps per SM from 8 to 16 at the same 2 CTAs/SM, still short of the 32 the grid needs."
    ), step.sentence


def test_scaling_step_that_adds_ctas_per_sm_names_them() -> None:
    """A step that lifts CTAs/SM says so with both counts (fake compile: 64 registers whatever the warps)."""

    def fake_evaluate(cfg: TuneConfig) -> ScalePoint[TuneConfig]:
        regs = 255 if cfg.blocks["RBLOCK"] == 256 else 64
        return ScalePoint(cfg, regs, 0, compute_occupancy("sm_90", regs, cfg.num_warps, 0), grid_ctas=4096)

    result = scale_loop(
        TuneConfig.of(4, 3, {"XBLOCK": 64, "RBLOCK": 256}),
        fake_evaluate,
        lambda cfg: (
            [(TuneConfig.of(4, 3, {"XBLOCK": 64, "RBLOCK": 128}), "RBLOCK 256 -> 128")]
            if cfg.blocks["RBLOCK"] == 256
            else []
        ),
        sm_count=132,
    )
    assert result.steps[0].sentence.endswith("which raises CTAs/SM from 2 to 8 (8 -> 32 warps/SM)."), result.steps[
        0
    ].sentence


def test_scaling_step_that_leaves_spills_under_the_limit_does_not_say_removes() -> None:
    """`tune --max-spill-bytes 64` on a softmax of 16384 columns printed `num_warps 4 -> 8 because it
    spills 2140 B ...: 255 registers, 32 B spills, ..., which removes the spills.`: 32 B were left. The
    step now says it brings them within the limit; a step to 0 B still says it removes them. Fake
    compile (pure logic): 2140 B at 4 warps, 32 B at 8, none at 16."""

    def fake_evaluate(cfg: TuneConfig) -> ScalePoint[TuneConfig]:
        spills = {4: 2140, 8: 32}.get(cfg.num_warps, 0)
        return ScalePoint(cfg, 255, spills, compute_occupancy("sm_90", 255, cfg.num_warps, 0), grid_ctas=132)

    def double(cfg: TuneConfig) -> list[tuple[TuneConfig, str]]:
        doubled = TuneConfig(cfg.num_warps * 2, 3, cfg.constexprs)
        return [(doubled, f"num_warps {cfg.num_warps} -> {cfg.num_warps * 2}")] if cfg.num_warps < 16 else []

    start = TuneConfig.of(4, 3, {"XBLOCK": 64, "RBLOCK": 256})
    within = scale_loop(start, fake_evaluate, double, sm_count=132, max_spill_bytes=64).steps[0]
    assert within.kept and within.spill_store_bytes == 32, within.sentence
    assert "removes the spills" not in within.sentence
    assert within.sentence.endswith("which brings the spills within the 64 B limit (--max-spill-bytes)."), (
        within.sentence
    )
    steps = scale_loop(start, fake_evaluate, double, sm_count=132).steps
    assert steps[0].sentence.endswith("which cuts the spills."), steps[0].sentence
    assert steps[1].sentence.endswith("which removes the spills."), steps[1].sentence
