"""Opcode deltas and normalized PTX/SASS diffs, on real Triton 3.3.1 vs 3.4.0 output."""

from __future__ import annotations

from pathlib import Path

import pytest

from ktriage.analyze.diff import (
    aligned_diff,
    diff_summary,
    format_opcode_delta,
    normalize_ptx,
    normalize_sass,
    opcode_delta,
)
from ktriage.analyze.resources import Resources
from tests.triton_compile_for_tests import CompiledForTest, analyze_compiled

DATA = Path(__file__).resolve().parents[1] / "data" / "resources"


def read(name: str) -> str:
    return (DATA / name).read_text()


def _synthetic(opcodes: dict[str, int]) -> Resources:
    """A fake Resources carrying only an opcode histogram, to test the delta arithmetic."""
    return Resources(
        kernel_name="k",
        arch=None,
        registers=0,
        stack_bytes=0,
        spill_store_bytes=None,
        spill_load_bytes=None,
        shared_bytes=0,
        shared_static_bytes=0,
        shared_dynamic_bytes=None,
        local_loads=0,
        local_stores=0,
        sass_opcodes=opcodes,
    )


def test_opcode_delta_sorted_by_magnitude_nonzero_only() -> None:
    a = _synthetic({"REDG": 32, "FADD": 10, "MOV": 4, "LDG": 2})
    b = _synthetic({"ATOMG": 32, "FADD": 10, "MOV": 1, "CCTL": 32, "LDG": 3})
    delta = opcode_delta(a, b)
    assert list(delta.items()) == [("ATOMG", 32), ("CCTL", 32), ("REDG", -32), ("MOV", -3), ("LDG", 1)]
    assert format_opcode_delta(delta) == "ATOMG +32, CCTL +32, REDG -32, MOV -3, LDG +1"
    assert format_opcode_delta(delta, limit=2) == "ATOMG +32, CCTL +32, … 3 more"
    assert format_opcode_delta(opcode_delta(a, a)) == "no change"


def test_sass_normalization_removes_addresses_registers_encodings() -> None:
    lines = normalize_sass(read("atomic-3.4.0.sass"))
    text = "\n".join(lines)
    assert "/*" not in text and "R12" not in text and ".reuse" not in text
    assert "ATOMG.E.ADD.F32.FTZ.RN.STRONG.GPU PT, RZ, desc[UR][R.64], R" in lines
    assert lines[-1] == "EXIT" and not any(line.startswith("NOP") for line in lines)
    # nvdisasm's listing normalizes to the same lines except for branch-target spelling
    other = normalize_sass(read("atomic-3.4.0.nvdisasm.sass"), function="atomic_kernel")
    assert [x.split()[0] for x in other] == [x.split()[0] for x in lines]


def test_ptx_normalization_drops_debug_and_register_numbers() -> None:
    lines = normalize_ptx(read("atomic-3.4.0.ptx"))
    text = "\n".join(lines)
    assert ".loc" not in text and ".section" not in text and "//" not in text and ".b8 " not in text
    assert ".reg .b32 %r<N>;" in lines
    assert "@%p atom.global.gpu.acq_rel.add.f32 %r, [ %rd + 0 ], %r;" in lines


def test_sass_diff_atomic_shows_redg_to_atomg() -> None:
    a, b = read("atomic-3.3.1.sass"), read("atomic-3.4.0.sass")
    diff = aligned_diff(a, b, kind="sass", context=1, a_label="3.3.1", b_label="3.4.0")
    assert diff.startswith("--- 3.3.1\n+++ 3.4.0")
    assert diff.count("\n-REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR][R.64], R") == 8
    assert diff.count("\n+ATOMG.E.ADD.F32.FTZ.RN.STRONG.GPU PT, RZ, desc[UR][R.64], R") == 8
    s = diff_summary(a, b, kind="sass")
    assert (s.a_lines, s.b_lines) == (112, 118) and not s.is_identical
    assert s.removed > 8 and s.added > 8 and s.hunks > 8
    assert str(s).startswith(f"SASS: {s.removed} of 112 lines removed, {s.added} of 118 added")


def test_ptx_diff_atomic_is_small_and_keeps_the_atom() -> None:
    a, b = read("atomic-3.3.1.ptx"), read("atomic-3.4.0.ptx")
    s = diff_summary(a, b, kind="ptx")
    # the same atom instructions in both; only the header and a few address computations differ
    assert s.removed < 10 and s.added < 20 and s.a_lines > 80
    diff = aligned_diff(a, b, kind="ptx")
    assert "-.version 8.4" in diff and "+.version 8.7" in diff
    assert "atom.global" not in "".join(line for line in diff.splitlines() if line[:1] in "+-")


def test_identical_inputs_give_empty_diff() -> None:
    a = read("atomic-3.4.0.sass")
    assert aligned_diff(a, a, kind="sass") == ""
    s = diff_summary(a, a, kind="sass")
    assert s.is_identical and str(s) == "SASS identical after normalization (118 lines)"
    with pytest.raises(ValueError, match="kind must be"):
        aligned_diff(a, a, kind="llir")  # type: ignore[arg-type]


# --- real compiles -------------------------------------------------------------------------------


def _res(c: CompiledForTest) -> Resources:
    return analyze_compiled(c)


def _sass(c: CompiledForTest) -> str:
    import subprocess

    return subprocess.run([str(c.cuobjdump), "-sass", str(c.cubin)], capture_output=True, text=True, check=True).stdout


@pytest.mark.slow
def test_opcode_delta_real_atomic(compiled: dict[str, CompiledForTest]) -> None:
    delta = opcode_delta(_res(compiled["atomic-3.3.1"]), _res(compiled["atomic-3.4.0"]))
    assert delta["REDG"] == -8 and delta["ATOMG"] == 8
    assert "REDG -8" in format_opcode_delta(delta) and "ATOMG +8" in format_opcode_delta(delta)


@pytest.mark.slow
def test_real_reduction_diffs_3_3_1_vs_3_4_0(compiled: dict[str, CompiledForTest]) -> None:
    old, new = compiled["red256-3.3.1"], compiled["red256-3.4.0"]
    ptx = aligned_diff(old.ptx.read_text(), new.ptx.read_text(), kind="ptx")
    # LLVM's float-register removal: `.reg .f32` disappears, float moves become `.b32`
    assert "-.reg .f32 %f<N>;" in ptx
    ps = diff_summary(old.ptx.read_text(), new.ptx.read_text(), kind="ptx")
    assert ps.removed > 100 and ps.a_lines > 1000
    ss = diff_summary(_sass(old), _sass(new), kind="sass", function="red_kernel")
    # same 255 registers and spill bytes, but the SASS is not identical
    assert not ss.is_identical and ss.a_lines > 1000
    assert ss.removed + ss.added < ss.a_lines  # aligned: most lines match after normalization
