"""`ktriage profile` names shared-memory bank conflicts (H200, 2026-12-04, benchmarks/calibration/misses):
TritonBench's inductor ``triton_red_fused_mul_sum_0`` is 14 % slower with Triton 3.3.1 than with 3.6.0
and TritonBench's ``gather_gemv``'s ``triton_red_fused_mv_0`` 40 %, both because a layout conversion through
shared memory became bank-conflicted. The profile's findings said "stall 'short_scoreboard' +37 points"
and never the conflicts, though ncu had counted them. The real ncu exports are read here."""

from __future__ import annotations

import tarfile
from pathlib import Path

from ktriage.profile.diff import compare_launches, sentence
from ktriage.profile.ncu import parse_raw_csv, summarize

RAW = Path(__file__).resolve().parents[2] / "benchmarks" / "calibration" / "misses" / "h200" / "raw.tar.xz"
REF, OLD = "triton-3.6.0.ptxas-12.8.93.682629b2", "triton-3.3.1.ptxas-12.4.99.0c9a828e"


def finding(case: str) -> str:
    with tarfile.open(RAW) as tar:

        def first_launch(tc: str) -> dict[str, object]:
            member = tar.extractfile(f"{case}/{tc}.raw.csv")
            assert member is not None
            return summarize(parse_raw_csv(member.read().decode())[0])

        ref, new = first_launch(REF), first_launch(OLD)
    return sentence("k", OLD, REF, "compile side", ref, new, compare_launches(ref, new))


def test_store_bank_conflicts_of_the_mul_sum_reduction_are_named() -> None:
    text = finding("tb_rms_norm_bwd-13")
    assert "shared-memory wavefronts 1.1M -> 5.3M (bank conflicts 19.0k -> 4.2M)" in text, text
    assert "duration 26.8 -> 30.6 us (+14%)" in text


def test_load_bank_conflicts_of_gather_gemv_are_named() -> None:
    text = finding("tb_gather_gemv_fwd-0")
    assert "shared-memory wavefronts 300.5k -> 1.1M (bank conflicts 992 -> 789.2k)" in text, text


def test_a_small_shared_memory_change_is_not_a_finding() -> None:
    """The same kernel at a smaller input: 1.5x fewer passes does not cross the gate (and the time is -3 %)."""
    assert "shared-memory" not in finding("tb_rms_norm_bwd-3")


def test_the_compile_side_half_of_the_sentence_names_the_conflicts_read_from_the_sass() -> None:
    """The bundle's resources carry the bank analysis (analyze.shared_banks): the profile's sentence
    sets the compile-side conflict factors next to the wavefronts ncu counted."""
    from ktriage.profile.diff import _compile_side

    ref = {"sass_opcodes": {"LDS": 129, "STS": 32}, "shared_wavefronts": {"LDS": 1.0, "STS": 1.0, "unrated": 0.0}}
    new = {
        "sass_opcodes": {"LDS": 33, "STS": 32},
        "shared_wavefronts": {"LDS": 1.97, "STS": 7.95, "unrated": 0.0},
    }
    text = _compile_side(new, ref, "triton-3.3.1")
    assert (
        text == "triton-3.3.1 SASS LDS 129->33; bank conflicts read from the SASS: LDS x1.0 -> x2.0, STS x1.0 -> x8.0"
    )
    assert "bank conflicts" not in _compile_side(ref, ref, "triton-3.6.0")
    assert "bank conflicts" not in _compile_side({"sass_opcodes": {}}, ref, "old bundle")  # resources before schema 6
