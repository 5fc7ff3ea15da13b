"""The occupancy calculator, hand-computed per architecture, and the pure parts of the GPU check (PTX
assembled by the real ptxas). `ktriage occupancy` itself: tests/cli/test_occupancy.py.

Arithmetic used below (cuda_occupancy.h, research §3.2-3.3):
  regs/warp  = roundup(regs * 32, 256)
  reg CTAs   = ((65536 / 4) // regs_per_warp * 4) // warps      (0 if regs/warp * roundup(warps, 4) > 65536)
  warp CTAs  = max_warps_per_sm // warps
  smem alloc = roundup(shared + reserved, unit); smem CTAs = shared_per_sm // alloc (0 if alloc > optin + reserved)
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from ktriage.analyze.occupancy import Occupancy, compute_occupancy, registers_for_ctas, shared_for_ctas
from ktriage.arch import parse_arch
from ktriage.errors import KtriageError

REPO = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- registers


def test_hopper_255_registers_4_warps_is_2_ctas_register_limited() -> None:
    # 255*32 = 8160 -> 8192 per warp; 16384 // 8192 = 2 warps per sub-partition -> 8 warps -> 8 // 4 = 2 CTAs.
    occ = compute_occupancy("sm_90", 255, 4, 0)
    assert occ.ctas_per_sm == 2 and occ.warps_per_sm == 8 and occ.max_warps_per_sm == 64
    assert occ.occupancy == pytest.approx(0.125)
    assert occ.limiter == "registers"
    assert occ.limits["registers"] == 2 and occ.limits["warps"] == 16 and occ.limits["blocks"] == 32
    assert occ.registers_per_warp_allocated == 8192 and occ.registers_per_cta_allocated == 32768
    # 3 CTAs = 12 warps = 3 per sub-partition -> 16384 // 3 = 5461 -> 5376 per warp -> 168 registers.
    assert occ.lift == "≤ 168 registers per thread would allow 3 CTAs/SM (12 warps)"


def test_hopper_128_registers_8_warps() -> None:
    # 128*32 = 4096 per warp; 16384 // 4096 = 4 per sub-partition -> 16 warps -> 2 CTAs of 8 warps.
    occ = compute_occupancy("sm_90", 128, 8, 0)
    assert (occ.ctas_per_sm, occ.warps_per_sm, occ.limiter) == (2, 16, "registers")
    # 3 CTAs = 24 warps = 6 per sub-partition -> 16384 // 6 = 2730 -> 2560 per warp -> 80 registers.
    assert occ.lift == "≤ 80 registers per thread would allow 3 CTAs/SM (24 warps)"


def test_non_multiple_of_8_registers_round_up_to_the_256_unit() -> None:
    # 65 regs: 2080 -> 2304 per warp (same as 72); 16384 // 2304 = 7 -> 28 warps -> 7 CTAs of 4 warps.
    assert compute_occupancy("sm_90", 65, 4, 0).ctas_per_sm == 7
    assert compute_occupancy("sm_90", 72, 4, 0).ctas_per_sm == 7
    # 64 regs: 2048 per warp -> 8 per sub-partition -> 32 warps -> 8 CTAs.
    assert compute_occupancy("sm_90", 64, 4, 0).ctas_per_sm == 8


@pytest.mark.parametrize(
    ("regs", "warps", "ctas"),
    # research §1.5, "OCC reg-limited" column for CC 8.0 (min with the warp limit).
    [(33, 4, 12), (40, 8, 6), (72, 4, 7), (168, 4, 3), (255, 8, 1)],
)
def test_ampere_register_limit_matches_the_research_table(regs: int, warps: int, ctas: int) -> None:
    assert compute_occupancy("sm_80", regs, warps, 0).ctas_per_sm == ctas


def test_zero_ctas_when_a_cta_does_not_fit_the_register_file() -> None:
    # 255 regs x 12 warps: 8192 * 12 = 98304 > 65536 registers per block.
    occ = compute_occupancy("sm_90", 255, 12, 0)
    assert occ.ctas_per_sm == 0 and occ.warps_per_sm == 0 and occ.occupancy == 0.0
    assert occ.limiter == "registers" and occ.limits["registers"] == 0
    # 12 warps fit at 65536 // 12 = 5461 -> 5376 per warp -> 168 registers.
    assert occ.lift == "≤ 168 registers per thread would allow 1 CTA/SM (12 warps)"
    # 255 regs x 8 warps = exactly 65536: one CTA.
    assert compute_occupancy("sm_90", 255, 8, 0).ctas_per_sm == 1


def test_odd_warp_counts_use_the_sub_partition_split() -> None:
    # 64 regs, 3 warps: 8 warps per sub-partition -> 32 warps -> 32 // 3 = 10 CTAs (30 warps).
    occ = compute_occupancy("sm_90", 64, 3, 0)
    assert (occ.ctas_per_sm, occ.warps_per_sm, occ.limiter) == (10, 30, "registers")
    # 56 regs: 1792 per warp -> 9 per sub-partition -> 36 warps -> 12 CTAs.
    assert occ.lift == "≤ 56 registers per thread would allow 12 CTAs/SM (36 warps)"


def test_registers_for_ctas() -> None:
    assert registers_for_ctas("sm_90", 4, 3) == 168
    assert registers_for_ctas("sm_90", 8, 1) == 255  # 8192 * 8 = 65536
    assert registers_for_ctas("sm_90", 16, 1) == 128  # 4 warps per sub-partition -> 4096 per warp
    assert registers_for_ctas("sm_90", 32, 1) == 64
    assert registers_for_ctas("sm_90", 4, 16) == 32
    assert registers_for_ctas("sm_90", 4, 17) is None  # 68 warps > 64 warp slots
    assert registers_for_ctas("sm_86", 16, 3) == 40  # 48 warps -> 12 per sub-partition -> 1365 -> 1280
    with pytest.raises(KtriageError):
        registers_for_ctas("sm_90", 4, 0)


@pytest.mark.parametrize("target", ["sm_75", "sm_80", "sm_86", "sm_90", "sm_120"])
def test_registers_for_ctas_is_the_exact_threshold(target: str) -> None:
    """For every warp count and CTA target: the returned count allows the target, one more does not."""
    arch = parse_arch(target)
    for warps in range(1, 33):
        for ctas in range(1, arch.max_warps_per_sm // warps + 1):
            regs = registers_for_ctas(arch, warps, ctas)
            assert regs is not None
            assert compute_occupancy(arch, regs, warps, 0).limits["registers"] >= ctas
            if regs < 255:
                assert compute_occupancy(arch, regs + 1, warps, 0).limits["registers"] < ctas


# --------------------------------------------------------------------------- warps and blocks


def test_full_occupancy_reports_warps_and_the_hardware_maximum() -> None:
    # 32 regs, 4 warps: registers allow 16 CTAs (64 warps), warps allow 64 // 4 = 16: a tie.
    occ = compute_occupancy("sm_90", 32, 4, 0)
    assert (occ.ctas_per_sm, occ.warps_per_sm, occ.occupancy) == (16, 64, 1.0)
    assert occ.limiter == "warps"  # the hardware cap is named when it ties with a kernel resource
    assert occ.lift == "occupancy is at the hardware maximum"


def test_ga10x_48_warp_limit() -> None:
    # sm_86: 48 warps per SM. 32 regs x 16 warps: registers allow 4 CTAs, warps 48 // 16 = 3.
    occ = compute_occupancy("sm_86", 32, 16, 0)
    assert (occ.ctas_per_sm, occ.warps_per_sm, occ.limiter, occ.occupancy) == (3, 48, "warps", 1.0)
    # A 32-warp CTA: 1 CTA = 32 of 48 warps; num_warps=16 would fill the SM.
    occ = compute_occupancy("sm_86", 16, 32, 0)
    assert (occ.ctas_per_sm, occ.warps_per_sm, occ.limiter) == (1, 32, "warps")
    assert occ.occupancy == pytest.approx(2 / 3)
    assert occ.lift.startswith("num_warps=16 would allow 3 CTAs/SM (48 warps)")
    # The same kernel on sm_90 (64 warps) fits 2 CTAs.
    assert compute_occupancy("sm_90", 16, 32, 0).ctas_per_sm == 2


def test_block_cap_limits_small_ctas() -> None:
    # 1-warp CTAs with 16 regs: registers allow 128, warps 64, blocks 32 -> 32 CTAs (32 warps).
    occ = compute_occupancy("sm_90", 16, 1, 0)
    assert (occ.ctas_per_sm, occ.warps_per_sm, occ.limiter) == (32, 32, "blocks")
    assert occ.lift.startswith("num_warps=2 would allow 32 CTAs/SM (64 warps)")
    # sm_89 caps at 24 CTAs, sm_86 at 16.
    assert compute_occupancy("sm_89", 16, 1, 0).ctas_per_sm == 24
    assert compute_occupancy("sm_86", 16, 1, 0).ctas_per_sm == 16


def test_turing_32_warps_per_sm() -> None:
    # sm_75: 64 regs -> 2048 per warp -> 32 warps by registers; warps 32 // 8 = 4; tie -> warps.
    occ = compute_occupancy("sm_75", 64, 8, 0)
    assert (occ.ctas_per_sm, occ.warps_per_sm, occ.max_warps_per_sm, occ.limiter) == (4, 32, 32, "warps")


# --------------------------------------------------------------------------- shared memory


def test_reserved_kilobyte_makes_the_difference_on_hopper() -> None:
    # 116736 B (114 KB): + 1024 reserved = 117760 > 233472 / 2 -> 1 CTA; without the reservation -> 2.
    occ = compute_occupancy("sm_90", 32, 4, 116736)
    assert (occ.ctas_per_sm, occ.limiter, occ.shared_per_cta_allocated) == (1, "shared_memory", 117760)
    assert compute_occupancy("sm_90", 32, 4, 116736, reserved_shared=0).ctas_per_sm == 2
    # 1 KB less: 115712 + 1024 = 116736 = 233472 / 2 exactly -> 2 CTAs.
    assert compute_occupancy("sm_90", 32, 4, 115712).ctas_per_sm == 2
    assert occ.lift == "≤ 115712 bytes of shared memory per CTA would allow 2 CTAs/SM (8 warps)"


def test_reserved_kilobyte_and_128_byte_unit_on_ampere() -> None:
    # sm_80, 167936 B per SM: 2 CTAs need alloc <= 83968. 83000 + 1024 = 84024 -> 84096 -> 1 CTA;
    # without the reservation 83000 -> 83072 -> 2 CTAs.
    assert compute_occupancy("sm_80", 32, 4, 83000).ctas_per_sm == 1
    assert compute_occupancy("sm_80", 32, 4, 83000, reserved_shared=0).ctas_per_sm == 2
    # 46000 + 1024 = 47024 -> 47104 (368 * 128); 167936 // 47104 = 3.
    occ = compute_occupancy("sm_80", 32, 4, 46000)
    assert (occ.ctas_per_sm, occ.shared_per_cta_allocated, occ.limiter) == (3, 47104, "shared_memory")


def test_volta_has_no_reservation_and_a_256_byte_unit() -> None:
    # sm_70: 40000 -> 40192 (157 * 256); 98304 // 40192 = 2.
    occ = compute_occupancy("sm_70", 32, 4, 40000)
    assert (occ.ctas_per_sm, occ.shared_per_cta_allocated, occ.reserved_shared) == (2, 40192, 0)
    # No shared memory and no reservation: shared memory imposes no limit (reported as the CTA cap).
    assert compute_occupancy("sm_70", 32, 4, 0).limits["shared_memory"] == 32


def test_opt_in_limit_gives_zero_ctas() -> None:
    # sm_90: 232448 + 1024 = 233472 <= 227 KB + 1 KB -> 1 CTA; one byte more -> 233600 -> none.
    assert compute_occupancy("sm_90", 32, 4, 232448).ctas_per_sm == 1
    occ = compute_occupancy("sm_90", 32, 4, 232449)
    assert (occ.ctas_per_sm, occ.limiter, occ.limits["shared_memory"]) == (0, "shared_memory", 0)
    assert occ.lift == "≤ 232448 bytes of shared memory per CTA would allow 1 CTA/SM (4 warps)"
    # sm_86: 99 KB opt-in.
    assert compute_occupancy("sm_86", 32, 4, 101376).ctas_per_sm == 1
    assert compute_occupancy("sm_86", 32, 4, 101377).ctas_per_sm == 0


def test_carveout() -> None:
    # 10000 + 1024 = 11024 -> 11136; 16 CTAs (warp/register bound) use 178176 B -> the 196 KB step.
    occ = compute_occupancy("sm_90", 32, 4, 10000)
    assert occ.ctas_per_sm == 16 and occ.limits["shared_memory"] == 233472 // 11136
    assert occ.carveout_bytes == 196 * 1024
    # A 16 KB carveout preference holds one 11136 B CTA only.
    pinned = compute_occupancy("sm_90", 32, 4, 10000, carveout=16 * 1024)
    assert (pinned.ctas_per_sm, pinned.limiter, pinned.carveout_bytes) == (1, "shared_memory", 16384)
    # A preference smaller than one CTA is overridden by the smallest step that fits it (32 KB here).
    small = compute_occupancy("sm_90", 32, 4, 20000, carveout=8 * 1024)
    assert (small.ctas_per_sm, small.carveout_bytes) == (1, 32 * 1024)


def test_shared_for_ctas() -> None:
    assert shared_for_ctas("sm_90", 2) == 115712
    assert shared_for_ctas("sm_90", 1) == 232448
    assert shared_for_ctas("sm_80", 2) == 82944
    for ctas in (1, 2, 3, 5, 7):
        s = shared_for_ctas("sm_90", ctas)
        assert s is not None
        assert compute_occupancy("sm_90", 16, 1, s).limits["shared_memory"] >= ctas
        assert compute_occupancy("sm_90", 16, 1, s + 1).limits["shared_memory"] < ctas


def test_registers_and_shared_tie_lift_names_both() -> None:
    # 128 regs x 8 warps -> 2 CTAs; 100000 + 1024 -> 101120; 233472 // 101120 = 2: both limit to 2.
    occ = compute_occupancy("sm_90", 128, 8, 100000)
    assert occ.limits["registers"] == occ.limits["shared_memory"] == occ.ctas_per_sm == 2
    assert occ.limiter == "registers"
    assert occ.lift == (
        "≤ 80 registers per thread and ≤ 76800 bytes of shared memory per CTA would allow 3 CTAs/SM (24 warps)"
    )


# --------------------------------------------------------------------------- barriers


def test_named_barriers_limit_on_hopper_only() -> None:
    # CC 9.0: 2 * 32 = 64 barriers per SM; 3 per CTA -> 21 CTAs.
    occ = compute_occupancy("sm_90", 16, 1, 0, barriers=3)
    assert (occ.ctas_per_sm, occ.limiter, occ.limits["barriers"]) == (21, "barriers", 21)
    assert occ.lift == "≤ 2 named barriers would allow 32 CTAs/SM (32 warps)"
    assert compute_occupancy("sm_90", 16, 1, 0, barriers=0).limits.get("barriers") is None
    assert "barriers" not in compute_occupancy("sm_86", 16, 1, 0, barriers=3).limits


# --------------------------------------------------------------------------- input checks and JSON


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("sm_90", 256, 4, 0), {}),
        (("sm_90", -1, 4, 0), {}),
        (("sm_90", 32, 0, 0), {}),
        (("sm_90", 32, 33, 0), {}),
        (("sm_90", 32, 4, -1), {}),
        (("sm_95", 32, 4, 0), {}),
        (("sm_90", 32, 4, 0), {"reserved_shared": -5}),
        (("sm_90", 32, 4, 0), {"carveout": 300 * 1024}),
        (("sm_90", 32, 4, 0), {"barriers": -1}),
        (("sm_90", 32, 4, 0), {"barriers": 17}),  # a CTA has 16 named barriers (PTX: barrier 0..15)
        (("sm_80", 32, 4, 0), {"barriers": 99}),
    ],
)
def test_bad_input_raises_ktriage_error(args: tuple, kwargs: dict) -> None:
    with pytest.raises(KtriageError) as info:
        compute_occupancy(*args, **kwargs)
    assert info.value.fix


def test_sixteen_barriers_is_the_most_a_cta_has() -> None:
    occ = compute_occupancy("sm_90", 32, 4, 0, barriers=16)
    assert occ.limits["barriers"] == 4  # 2 * 32 barriers per SM / 16
    with pytest.raises(KtriageError, match=r"barrier count must be 0\.\.16 .* got 99"):
        compute_occupancy("sm_90", 32, 4, 0, barriers=99)


def test_to_json_is_plain_and_complete() -> None:
    occ = compute_occupancy("sm_90", 255, 4, 1024)
    data = json.loads(json.dumps(occ.to_json()))
    for key in (
        "ctas_per_sm",
        "warps_per_sm",
        "limiter",
        "occupancy",
        "limits",
        "lift",
        "max_warps_per_sm",
        "registers_per_warp_allocated",
        "shared_per_cta_allocated",
    ):
        assert key in data
    assert data["limits"]["registers"] == 2 and data["shared_per_cta_allocated"] == 2048
    assert isinstance(occ, Occupancy) and "limited by registers" in occ.describe()


# --------------------------------------------------------------------------- the GPU check's pure parts


def _find_ptxas() -> Path:
    """The real ptxas 12.8 bundled with Triton 3.4.0, from the project's toolchain (built once)."""
    from ktriage.toolchain.manager import ensure_toolchain

    return ensure_toolchain("triton==3.4.0").bundled_ptxas


def test_generated_ptx_reaches_the_intended_registers_with_real_ptxas(tmp_path: Path, occupancy_gpu_check) -> None:
    ptxas = _find_ptxas()
    check = occupancy_gpu_check
    seen = set()
    for recipe in check.recipes():
        assert recipe.name not in seen
        seen.add(recipe.name)
        ptx_file = tmp_path / f"{recipe.name}.ptx"
        ptx_file.write_text(check.make_ptx(recipe, 90))
        proc = subprocess.run(
            [str(ptxas), "--gpu-name", "sm_90", "-v", str(ptx_file), "-o", str(tmp_path / f"{recipe.name}.cubin")],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr
        used = re.search(r"Used (\d+) registers, used (\d+) barriers(?:, .*?(\d+) bytes smem)?", proc.stderr)
        assert used, proc.stderr
        assert int(used.group(1)) == recipe.intended_registers, (recipe.name, proc.stderr)
        assert int(used.group(2)) == 0  # no named barriers: the model is queried with barriers=0
        assert int(used.group(3) or 0) == recipe.static_shared
    # The grid covers counts that are not multiples of 8 and the whole 8..255 range.
    regs = {r.intended_registers for r in check.recipes()}
    assert {8, 33, 65, 129, 255} <= regs


def test_dynamic_shared_grid_covers_the_boundaries(occupancy_gpu_check) -> None:
    check = occupancy_gpu_check
    arch = parse_arch("sm_90")
    grid = check.dynamic_shared_grid(arch, 0, 1024)
    assert grid == sorted(set(grid)) and grid[0] == 0
    assert {115712, 115713, 232448, 232448 + 128, 48 * 1024} <= set(grid)
    # With static shared memory the limit moves down by the static part.
    assert max(check.dynamic_shared_grid(arch, 3000, 1024)) == 232448 - 3000 + 128


def test_comparison_and_reports_on_fake_cells(tmp_path: Path, occupancy_gpu_check) -> None:
    check = occupancy_gpu_check
    assert check.cells_match(2, 2, None)
    assert not check.cells_match(2, 3, None)
    assert check.cells_match(0, None, "CUDA_ERROR_INVALID_VALUE")  # refused launch == 0 CTAs
    assert not check.cells_match(1, None, "CUDA_ERROR_INVALID_VALUE")
    fake_cells = [
        check.Cell("k_fake", 255, 0, 4, 0, 2, None, 2, "registers"),
        check.Cell("k_fake", 255, 0, 8, 0, 2, None, 1, "registers"),
    ]
    for c in fake_cells:
        c.match = check.cells_match(c.model_ctas, c.driver_ctas, c.driver_error)
    facts = [{"attribute": "WARP_SIZE", "device": 32, "model": 32, "match": True, "must_match": True}]
    device = {"name": "fake device", "cc": "9.0", "driver_version": 1, "date": "today"}
    summary = check.summarize(fake_cells, device, facts)
    assert (summary["cells"], summary["matches"], summary["mismatches"], summary["ok"]) == (2, 1, 1, False)
    kernels = [{"name": "k_fake", "intended_registers": 255, "num_regs": 255, "static_shared": 0, "local_bytes": 0}]
    text = check.render_json(summary, kernels, fake_cells)
    data = json.loads(text)
    assert data["cell_columns"][0] == "kernel" and len(data["cells_rows"]) == 2
    assert data["mismatches"] == 1 and data["mismatched_cells"][0]["warps"] == 8
    md = check.render_markdown(summary, kernels)
    assert "2 cells, 1 matches, 1 mismatches" in md and "| k_fake | 255 | 8 |" in md
