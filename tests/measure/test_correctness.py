"""The pre-timing correctness check on CPU tensors (same code path as on the GPU)."""

from __future__ import annotations

import math

import pytest
import torch

from ktriage.errors import KtriageError
from ktriage.measure.correctness import (
    INT_POISON,
    check_run,
    compare,
    poison_,
    random_like,
    tolerance_for,
)


def test_exact_and_rounding_level_errors_pass() -> None:
    ref = torch.randn(4096, generator=torch.Generator().manual_seed(1))
    assert compare(ref.clone(), ref).rel_err == 0.0
    noisy = ref * (1 + 1e-6 * torch.randn(4096, generator=torch.Generator().manual_seed(2)))
    chk = compare(noisy, ref)
    assert chk.passed and 0 < chk.rel_err < 1e-5


def test_a_real_error_fails_fp32_but_passes_bf16_tolerance() -> None:
    ref = torch.randn(1000, generator=torch.Generator().manual_seed(3))
    off = ref * 1.003
    assert not compare(off, ref).passed
    assert compare(off.bfloat16(), ref.bfloat16()).passed
    assert tolerance_for(torch.bfloat16).rel > tolerance_for(torch.float32).rel


def test_one_wrong_element_fails_by_peak_even_when_the_norm_hides_it() -> None:
    ref = torch.ones(1_000_000)
    out = ref.clone()
    out[17] = 1.05  # rel norm error 5e-5 passes, but one element is 5% off the peak
    chk = compare(out, ref)
    assert chk.rel_err < 1e-4 and not chk.passed and "max_abs_err" in (chk.reason or "")


def test_nan_never_passes_and_shape_mismatch_fails() -> None:
    ref = torch.zeros(8)
    out = torch.zeros(8)
    out[3] = float("nan")
    chk = compare(out, ref)
    assert not chk.passed and chk.nonfinite == 1 and math.isinf(chk.rel_err)
    assert not compare(torch.zeros(8), torch.zeros(9)).passed
    with pytest.raises(KtriageError, match="reference"):
        compare(torch.zeros(2), torch.tensor([0.0, float("nan")]))


def test_unwritten_outputs_are_caught_by_the_poison() -> None:
    x = torch.randn(100)
    out = torch.zeros(100)  # zeros would hide an unwritten half if the reference were zero there

    def half_kernel() -> None:
        out[:50] = x[:50] * 2

    acc = check_run(half_kernel, {"out": out}, {"out": x * 2}, synchronize=lambda: None)
    assert not acc.passed and acc.status == "wrong"
    assert acc.outputs[0].nonfinite == 50
    cell = acc.to_cell()
    assert cell["passed"] is False and "50 of 100" in cell["reason"]

    def full_kernel() -> None:
        out.copy_(x * 2)

    ok = check_run(full_kernel, {"out": out}, {"out": x * 2}, synchronize=lambda: None)
    assert ok.passed and ok.status == "ok" and ok.to_cell()["rel_err"] == 0.0


def test_views_compare_reductions_of_partials() -> None:
    dy = torch.randn(64, 32)
    partial = torch.empty(4, 32)

    def partial_kernel() -> None:
        partial.copy_(dy.view(4, 16, 32).sum(1))

    acc = check_run(
        partial_kernel,
        {"dw_partial": partial},
        lambda: {"dw": dy.sum(0)},
        synchronize=lambda: None,
        views=lambda: {"dw": partial.sum(0)},
    )
    assert acc.passed and [o.name for o in acc.outputs] == ["dw"]


def test_integer_outputs_get_a_sentinel_and_exact_compare() -> None:
    t = torch.zeros(5, dtype=torch.int64)
    poison_([t])
    assert t.tolist() == [INT_POISON] * 5
    assert not compare(torch.tensor([1, 2, 4]), torch.tensor([1, 2, 3])).passed
    assert compare(torch.tensor([1, 2, 3]), torch.tensor([1, 2, 3])).passed


def test_random_like_draws_fresh_values() -> None:
    t = torch.empty(1000)
    a, b = random_like(t), random_like(t)
    assert not torch.equal(a, b) and a.std() > 0.5
