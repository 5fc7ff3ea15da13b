"""Shared-memory bank conflicts from the SASS addresses (analyze/shared_banks.py), checked against what
Nsight Compute measured on the H200 for the same cubins (benchmarks/calibration/misses/counters.md):
the listings are `cuobjdump -sass` of TritonBench's inductor kernels compiled by Triton 3.3.1/3.4.0 and
3.6.0 (tests/data/banks). Static wavefronts a warp, summed over the listing, against ncu's wavefronts:

| kernel | LDS here / ncu | STS here / ncu |
|---|---|---|
| mul_sum (2048x4096), 3.3.1 over 3.6.0 | 1.99 / 1.99 | 7.95 / 7.78 |
| mul_sum (2048x1024), 3.3.1 over 3.6.0 | 1.00 / 1.01 | 1.97 / 1.96 |
| gather_gemv mv, 3.3.1 and 3.4.0 over 3.6.0 | 3.82 / 3.99 | (3.6.0 stores with STSM) |
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from ktriage.analyze.sass import parse_sass
from ktriage.analyze.shared_banks import bank_summary, shared_accesses, wavefronts

DATA = Path(__file__).resolve().parents[1] / "data" / "banks"


def accesses(name: str):  # type: ignore[no-untyped-def]
    fn = next(iter(parse_sass(gzip.decompress((DATA / f"{name}.sass.gz").read_bytes()).decode()).values()))
    return shared_accesses(fn)


def total(name: str, kind: str) -> int:
    return sum(a.wavefronts or a.ideal for a in accesses(name) if a.opcode.startswith(kind))


@pytest.mark.parametrize(
    ("old", "new", "kind", "ncu"),
    [
        ("mul_sum_large_3.3.1", "mul_sum_large_3.6.0", "STS", 4251376 / 546481),
        ("mul_sum_large_3.3.1", "mul_sum_large_3.6.0", "LDS", 1050633 / 527246),
        ("mul_sum_small_3.3.1", "mul_sum_small_3.6.0", "STS", 275521 / 140596),
        ("mul_sum_small_3.3.1", "mul_sum_small_3.6.0", "LDS", 132872 / 132096),
        ("gather_mv_3.3.1", "gather_mv_3.6.0", "LDS", 1051857 / 263648),
        ("gather_mv_3.4.0", "gather_mv_3.6.0", "LDS", 1050780 / 263648),
    ],
)
def test_static_wavefronts_match_what_ncu_measured(old: str, new: str, kind: str, ncu: float) -> None:
    assert total(old, kind) / total(new, kind) == pytest.approx(ncu, rel=0.06)


def test_every_access_of_these_kernels_is_rated_and_summarized() -> None:
    assert all(a.wavefronts is not None for a in accesses("mul_sum_large_3.3.1"))
    summary = bank_summary(accesses("mul_sum_large_3.3.1"))
    assert summary["unrated"] == 0 and summary["STS"] == pytest.approx(7.95, abs=0.05)
    assert bank_summary(accesses("mul_sum_large_3.6.0")) == {"LDS": 1.0, "STS": 1.0, "unrated": 0.0}


def test_wavefronts_of_one_request() -> None:
    lanes = list(range(32))
    assert wavefronts([4 * i for i in lanes], 4) == (1, 1)  # consecutive words: conflict-free
    assert wavefronts([0] * 32, 4) == (1, 1)  # one word: a broadcast
    assert wavefronts([128 * i for i in lanes], 4) == (32, 1)  # one bank, 32 words
    assert wavefronts([16 * i for i in lanes], 16) == (4, 4)  # LDS.128, consecutive: a quarter-warp a pass
    assert wavefronts([64 * i for i in lanes], 16) == (16, 4)  # 64-byte stride: 4-way in each quarter
    assert wavefronts([128 * i for i in lanes], 4, [i == 0 for i in lanes]) == (1, 1)  # one active lane
