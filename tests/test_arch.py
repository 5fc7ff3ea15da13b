"""ktriage.arch: target parsing and the per-CC facts (checked against the H200 attributes and the
cuda_occupancy.h values recorded in shared/research/registers_occupancy.md §3)."""

from __future__ import annotations

import ast
import dataclasses
import sys
from pathlib import Path

import pytest

from ktriage.arch import SUPPORTED, Arch, parse_arch, supported_archs
from ktriage.errors import KtriageError

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("text", ["sm_90", "sm_90a", "SM_90", " sm_90 ", "90", "9.0", "cuda:90", "compute_90", 90])
def test_parse_forms_of_hopper(text: object) -> None:
    a = parse_arch(text)  # type: ignore[arg-type]
    assert (a.major, a.minor, a.cc, a.name) == (9, 0, 90, "sm_90")
    assert a == Arch(9, 0)
    assert parse_arch(a) is a


@pytest.mark.parametrize(
    ("text", "name", "ptxas"),
    [
        ("sm_70", "sm_70", "sm_70"),
        ("8.0", "sm_80", "sm_80"),
        ("86", "sm_86", "sm_86"),
        ("sm_89", "sm_89", "sm_89"),
        ("cuda:90", "sm_90", "sm_90a"),  # Triton adds "a" from CC 9.0 on
        ("sm_100", "sm_100", "sm_100a"),
        ("10.3", "sm_103", "sm_103a"),
        ("sm_120", "sm_120", "sm_120a"),
        ("12.1", "sm_121", "sm_121a"),
    ],
)
def test_names_and_ptxas_gpu_name(text: str, name: str, ptxas: str) -> None:
    a = parse_arch(text)
    assert a.name == name
    assert a.ptxas_name == ptxas


@pytest.mark.parametrize("bad", ["sm_95", "sm_60", "9.5", "foo", "", "sm_9", "cuda:", 95, True, 9.0])
def test_unknown_targets_raise_with_the_supported_list(bad: object) -> None:
    with pytest.raises(KtriageError) as info:
        parse_arch(bad)  # type: ignore[arg-type]
    assert "unsupported GPU target" in info.value.problem
    assert info.value.fix is not None
    assert "sm_90" in info.value.fix and "sm_120" in info.value.fix and "sm_70" in info.value.fix


def test_direct_construction_of_unknown_cc_raises() -> None:
    with pytest.raises(KtriageError):
        Arch(9, 5)


def test_supported_list_covers_the_brief() -> None:
    assert SUPPORTED == (
        "sm_70",
        "sm_72",
        "sm_75",
        "sm_80",
        "sm_86",
        "sm_87",
        "sm_89",
        "sm_90",
        "sm_100",
        "sm_101",
        "sm_103",
        "sm_110",
        "sm_120",
        "sm_121",
    )
    assert [a.name for a in supported_archs()] == list(SUPPORTED)


def test_hopper_matches_the_h200_device_attributes() -> None:
    # cuDeviceGetAttribute on the H200 (research §3.4 [GPU], and benchmarks/gpu/occupancy_vs_cuda.py).
    a = parse_arch("sm_90")
    assert a.regs_per_sm == 65536 and a.regs_per_block == 65536
    assert a.max_threads_per_sm == 2048 and a.max_warps_per_sm == 64
    assert a.max_ctas_per_sm == 32
    assert a.shared_per_sm == 233472  # 228 KB
    assert a.shared_per_block_optin == 232448  # 227 KB
    assert a.reserved_shared_per_block == 1024
    assert a.default_sm_count == 132
    assert a.max_threads_per_block == 1024 and a.max_warps_per_block == 32
    assert a.shared_alloc_unit == 128 and a.reg_alloc_unit == 256 and a.sub_partitions == 4
    assert a.max_regs_per_thread == 255
    assert a.carveouts[-1] == a.shared_per_sm and a.carveouts[0] == 0 and 196 * 1024 in a.carveouts


@pytest.mark.parametrize(
    ("target", "warps", "ctas", "smem_sm", "optin", "unit", "reserved"),
    [
        # (cuda_occupancy.h max blocks / granularity / carveout; warps per SM from research §3.4)
        ("sm_70", 64, 32, 96 * 1024, 96 * 1024, 256, 0),
        ("sm_75", 32, 16, 64 * 1024, 64 * 1024, 256, 0),
        ("sm_80", 64, 32, 167936, 166912, 128, 1024),
        ("sm_86", 48, 16, 102400, 101376, 128, 1024),
        ("sm_87", 48, 16, 167936, 166912, 128, 1024),
        ("sm_89", 48, 24, 102400, 101376, 128, 1024),
        ("sm_100", 64, 32, 233472, 232448, 128, 1024),
        ("sm_101", 48, 24, 233472, 232448, 128, 1024),
        ("sm_110", 48, 24, 233472, 232448, 128, 1024),
        ("sm_120", 48, 24, 102400, 101376, 128, 1024),
    ],
)
def test_per_cc_limits(target: str, warps: int, ctas: int, smem_sm: int, optin: int, unit: int, reserved: int) -> None:
    a = parse_arch(target)
    assert a.max_warps_per_sm == warps
    assert a.max_ctas_per_sm == ctas
    assert a.shared_per_sm == smem_sm
    assert a.shared_per_block_optin == optin
    assert a.shared_alloc_unit == unit
    assert a.reserved_shared_per_block == reserved


def test_turing_carveouts_have_no_zero_step() -> None:
    # cudaOccAlignUpShmemSizeVoltaPlus: Turing supports 32 KB and 64 KB only.
    assert parse_arch("sm_75").carveouts == (32768, 65536)
    assert parse_arch("sm_86").carveouts[-1] == 100 * 1024
    assert parse_arch("sm_80").carveouts[-1] == 164 * 1024


@pytest.mark.parametrize(
    ("target", "sms"), [("sm_80", 108), ("sm_86", 84), ("sm_89", 142), ("sm_90", 132), ("sm_100", 148)]
)
def test_default_sm_counts_of_the_usual_datacenter_parts(target: str, sms: int) -> None:
    a = parse_arch(target)
    assert a.default_sm_count == sms
    assert a.default_part
    assert str(sms) in a.describe()


def test_table_invariants_for_every_cc() -> None:
    for a in supported_archs():
        assert a.carveouts == tuple(sorted(a.carveouts))
        assert a.shared_per_sm == a.carveouts[-1], a.name
        # The opt-in per-block limit is the SM's shared memory minus the reservation.
        assert a.shared_per_block_optin == a.shared_per_sm - a.reserved_shared_per_block or a.major == 7, a.name
        assert a.max_warps_per_sm * a.warp_size == a.max_threads_per_sm
        assert a.default_sm_count > 0 and a.family


def test_arch_is_frozen_and_hashable() -> None:
    a = parse_arch("sm_90")
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.major = 8  # type: ignore[misc]
    assert {a, Arch(9, 0)} == {a}


# The modules the occupancy check imports on a bare GPU host, and the ktriage modules they may import
# (each itself in the list, so the whole chain stays standard-library only).
BARE_HOST_MODULES = ("ktriage/arch.py", "ktriage/analyze/occupancy.py", "ktriage/errors.py", "ktriage/wording.py")


@pytest.mark.parametrize("module", BARE_HOST_MODULES)
def test_modules_import_only_the_standard_library(module: str) -> None:
    """They must import on a bare GPU host (the occupancy check runs there with PYTHONPATH=.)."""
    allowed = {m.removesuffix(".py").replace("/", ".") for m in BARE_HOST_MODULES}
    tree = ast.parse((REPO / module).read_text())
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        for name in names:
            top = name.split(".")[0]
            assert top in sys.stdlib_module_names or name in allowed, name
