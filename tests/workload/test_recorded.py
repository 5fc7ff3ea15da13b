"""Replaying a recorded launch without a GPU: the argument plan from the recorded descriptions, the
short labels, the differential comparison rule (numpy arrays, and torch CPU tensors through the
same code) and the check that decides "bitwise equal" / "within tolerance" / "wrong".

The kernels in the differential-check tests are FAKES (torch functions on CPU standing in for a
cubin launch): what is tested is the check around them, which runs unchanged on the GPU host."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from ktriage.errors import SpecError
from ktriage.workload.recorded.args import TensorArg, extent, plan_launch, short_label, tensor_arg
from ktriage.workload.recorded.check import diff_arrays, judge

REPO = Path(__file__).resolve().parents[2]
RECORDINGS = REPO / "benchmarks" / "record" / "h200"


def _input(name: str, kernel: int = 0, index: int = 0) -> dict:  # type: ignore[type-arg]
    data = json.loads(gzip.decompress((RECORDINGS / name).read_bytes()))  # committed gzipped
    return data["kernels"][kernel]["inputs"][index]  # type: ignore[no-any-return]


# ------------------------------------------------------------------------------------- the plan
def test_plan_of_a_real_recording_follows_the_descriptions() -> None:
    inp = _input("tb_cross_entropy_bwd.workload.json.gz")
    plan = plan_launch(inp["args"], inp["spec"]["signature"], inp["grid"])
    x, y, loss = plan.tensors
    assert (x.name, x.dtype, x.shape, x.strides, x.offset) == ("X_ptr", "fp32", (16384, 4096), (4096, 1), 0)
    assert x.storage_bytes == 268435456 and x.fill == "normal"
    assert (y.dtype, y.fill) == ("i64", "zeros")  # 16384 targets: too many to record, so zeros (a valid class)
    assert loss.shape == (16384,)
    # the launcher's arguments: the runtime parameters in order (constexprs, None pointers and ==1 strides are not)
    assert [a.name for a in plan.runtime] == [
        "X_ptr",
        "X_stride",
        "Y_ptr",
        "loss_ptr",
        "n_cols",
        "n_non_ignore",
        "sum_non_ignore_weight",
        "weight_sum",
        "ignore_index",
    ]
    assert plan.grid == (16384,)


def test_small_integer_tensors_get_their_recorded_values_and_bools_random_bits() -> None:
    arg = tensor_arg(
        "cu_seqlens",
        {
            "tensor": "i32",
            "aligned": True,
            "shape": [2, 3],
            "strides": [3, 1],
            "storage_bytes": 24,
            "values": [[0, 5, 9], [12, 20, 31]],
        },
    )
    assert (arg.fill, arg.values, arg.storage_elems) == ("values", [[0, 5, 9], [12, 20, 31]], 6)
    assert tensor_arg("mask", {"tensor": "i1", "shape": [8]}).fill == "bits"
    with pytest.raises(SpecError, match="3 recorded values for shape"):
        tensor_arg("bad", {"tensor": "i32", "shape": [4], "values": [1, 2, 3]})


def test_storage_covers_the_view_strided_offset_and_unaligned() -> None:
    # a transposed view of a 4x6 buffer: strides (1, 4) over 24 elements
    t = tensor_arg("t", {"tensor": "fp16", "aligned": True, "shape": [4, 6], "strides": [1, 4], "storage_bytes": 48})
    assert (extent(t.shape, t.strides), t.storage_elems, t.offset) == (24, 24, 0)
    # storage larger than the view (a slice of a bigger tensor) is kept at its recorded size
    s = tensor_arg("s", {"tensor": "fp32", "shape": [10], "strides": [2], "storage_bytes": 400})
    assert s.storage_elems == 100
    # unaligned: one element in, and the storage grows to still hold the whole view
    u = tensor_arg("u", {"tensor": "bf16", "aligned": False, "shape": [8], "strides": [1], "storage_bytes": 16})
    assert (u.offset, u.storage_elems) == (1, 9)
    # no strides or storage recorded: contiguous, exactly the view
    c = tensor_arg("c", {"tensor": "i64", "shape": [3, 5]})
    assert (c.strides, c.storage_elems) == ((5, 1), 15)


def test_an_inductor_recording_plans_with_the_specs_constexprs() -> None:
    """torch.compile on the H200 (benchmarks/record/h200c): inductor launches record the runtime
    arguments and the grid its launcher computed; the config's constexprs (XBLOCK) come from the spec."""
    data = json.loads(
        gzip.decompress((REPO / "benchmarks" / "record" / "h200c" / "compiled_model.workload.json.gz").read_bytes())
    )
    inputs = [i for k in data["kernels"] for i in k["inputs"]]
    assert len(inputs) == 17
    for inp in inputs:
        spec = inp["spec"]
        plan = plan_launch(inp["args"], spec["signature"], inp["grid"], constexprs=spec["constexprs"])
        assert [a.name for a in plan.args] == list(spec["signature"]) and plan.grid == tuple(inp["grid"])
        assert {a.name for a in plan.args if not a.runtime} == set(spec["constexprs"])
    with pytest.raises(SpecError, match="differ from the spec's parameters"):  # without them: refused, as before
        plan_launch(inputs[0]["args"], inputs[0]["spec"]["signature"], inputs[0]["grid"])


def test_broken_descriptions_are_spec_errors_naming_the_argument() -> None:
    with pytest.raises(SpecError, match="argument q: tensor dtype 'complex64'"):
        tensor_arg("q", {"tensor": "complex64", "shape": [4]})
    with pytest.raises(SpecError, match="no recorded grid"):
        plan_launch([["x", 1]], {"x": "i32"}, None)
    with pytest.raises(SpecError, match="differ from the spec's parameters"):
        plan_launch([["x", 1]], {"y": "i32"}, [1])


def test_short_labels_name_shapes_and_scalars_not_strides_or_constexprs() -> None:
    inp = _input("tb_rms_norm_bwd.workload.json.gz", kernel=1)
    label = short_label(inp["args"], inp["spec"]["signature"])
    assert label.startswith("2048x1024,1024,2048")
    assert "stride" not in label and "BLOCK" not in label and len(label) < len(inp["label"]) / 2
    ml = _input("many_launches.workload.json.gz", index=1)
    assert short_label(ml["args"], ml["spec"]["signature"]) == "8192 n=8192"


# -------------------------------------------------------------------------- the comparison rule
def test_identical_results_are_bitwise_equal() -> None:
    a = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    d = diff_arrays("o", "fp32", a, a.copy(), np)
    assert d.bitwise_equal and d.passed and d.max_abs_err == 0.0


def test_last_bit_differences_pass_the_fp32_tolerance_but_are_not_bitwise() -> None:
    a = np.random.default_rng(1).standard_normal(4096).astype(np.float32)
    b = np.nextafter(a, np.float32(np.inf))  # one ulp everywhere: what an FMA or another reduction order gives
    d = diff_arrays("o", "fp32", a, b, np)
    assert d.passed and not d.bitwise_equal and d.mismatched_bits == 4096
    v = judge([d], reference_deterministic=True, reference_toolchain="A")
    assert v.agreement == "within tolerance" and v.reason is None


def test_a_wrong_element_fails_and_names_the_argument_and_error() -> None:
    a = np.ones(1024, dtype=np.float32)
    b = a.copy()
    b[17] = 1.5  # one element off by 0.5: 5e-1 > 1e-4 * peak
    same = diff_arrays("x", "fp32", a, a.copy(), np)
    bad = diff_arrays("dw", "fp32", a, b, np)
    assert not bad.passed and bad.max_abs_err == pytest.approx(0.5)
    v = judge([same, bad], reference_deterministic=False, reference_toolchain="triton-3.3.1")
    assert not v.passed and v.agreement == "differs"
    assert v.reason == (
        "results differ from the reference (triton-3.3.1): miscompile or non-determinism (max abs err 0.5, at arg dw)"
    )
    cell = v.to_cell()
    assert cell["worst_arg"] == "dw" and cell["passed"] is False and cell["reference_deterministic"] is False


def test_bf16_tolerance_is_looser_than_fp32() -> None:
    a = np.full(256, 1.0, dtype=np.float32)
    b = a * np.float32(1.004)  # 0.4%: inside bf16's 1e-2, far outside fp32's 1e-5
    # numpy has no bf16: the rule reads the dtype name, the bits are compared at its width
    assert not diff_arrays("o", "fp32", a, b, np).passed
    a16, b16 = a.astype(np.float16), b.astype(np.float16)
    assert diff_arrays("o", "fp16", a16, b16, np).passed


def test_integers_must_be_exact_and_nan_where_the_reference_is_finite_fails() -> None:
    a = np.arange(100, dtype=np.int64)
    b = a.copy()
    b[3] = 4
    d = diff_arrays("idx", "i64", a, b, np)
    assert not d.passed and d.max_abs_err == 1.0 and d.mismatched_bits == 1
    f = np.zeros(10, dtype=np.float32)
    g = f.copy()
    g[2] = np.nan
    n = diff_arrays("o", "fp32", f, g, np)
    assert not n.passed and n.nonfinite_mismatch == 1
    # the same NaN in both (a kernel that computes log of a negative input) is bitwise equal
    assert diff_arrays("o", "fp32", g, g.copy(), np).bitwise_equal


def test_chunked_comparison_equals_the_whole_one() -> None:
    rng = np.random.default_rng(4)
    a = rng.standard_normal(1000).astype(np.float32)
    b = a.copy()
    b[[3, 500, 999]] += np.float32(1e-2)
    b[10] = np.inf
    whole, chunked = diff_arrays("o", "fp32", a, b, np), diff_arrays("o", "fp32", a, b, np, chunk=7)
    assert (
        (whole.mismatched_bits, whole.nonfinite_mismatch)
        == (chunked.mismatched_bits, chunked.nonfinite_mismatch)
        == (4, 1)
    )
    assert whole.max_abs_err == pytest.approx(chunked.max_abs_err) and whole.rel_err == pytest.approx(chunked.rel_err)
    assert whole.peak_ref == chunked.peak_ref and not chunked.passed


def test_the_rule_gives_the_same_answer_on_torch_tensors() -> None:
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(2).standard_normal(512).astype(np.float32)
    b = a.copy()
    b[5] += 1e-3
    for x, y in ((a, b), (a, a.copy())):
        dn = diff_arrays("o", "fp32", x, y, np)
        dt = diff_arrays("o", "fp32", torch.from_numpy(x), torch.from_numpy(y), torch)
        assert (dn.passed, dn.bitwise_equal, dn.mismatched_bits) == (dt.passed, dt.bitwise_equal, dt.mismatched_bits)
        assert dn.max_abs_err == pytest.approx(dt.max_abs_err)
    bf = torch.ones(64, dtype=torch.bfloat16)
    assert diff_arrays("o", "bf16", bf, bf.clone(), torch).bitwise_equal


# ------------------------------------------------------- allocation and the check (torch on CPU)
def _plan():  # type: ignore[no-untyped-def]
    args = [
        ["x", {"tensor": "fp32", "aligned": True, "shape": [64], "strides": [1], "storage_bytes": 256}],
        [
            "idx",
            {
                "tensor": "i32",
                "aligned": True,
                "shape": [4],
                "strides": [1],
                "storage_bytes": 16,
                "values": [3, 1, 0, 2],
            },
        ],
        ["out", {"tensor": "fp32", "aligned": True, "shape": [64], "strides": [1], "storage_bytes": 256}],
        ["n", 64],
        ["BLOCK", 64],
    ]
    return plan_launch(args, {"x": "*fp32", "idx": "*i32", "out": "*fp32", "n": "i32", "BLOCK": "constexpr"}, [1])


def test_allocation_is_seeded_and_fills_by_the_rules() -> None:
    torch = pytest.importorskip("torch")
    from ktriage.workload.recorded.replay import allocate, runtime_args

    plan = _plan()
    a, b = allocate(plan, seed=7, device="cpu"), allocate(plan, seed=7, device="cpu")
    assert torch.equal(a.storages["x"], b.storages["x"])  # same seed, same data
    assert not torch.equal(a.storages["x"], allocate(plan, seed=8, device="cpu").storages["x"])
    assert 0.02 < float(a.storages["x"].std()) < 0.2  # N(0, 1) scaled by 0.1
    assert a.views["idx"].tolist() == [3, 1, 0, 2]
    args = runtime_args(plan, a)
    assert args == [a.views["x"].data_ptr(), a.views["idx"].data_ptr(), a.views["out"].data_ptr(), 64]
    c = a.clone()
    assert c.views["x"].data_ptr() != a.views["x"].data_ptr() and torch.equal(c.views["x"], a.views["x"])


def _fake_kernels(torch):  # type: ignore[no-untyped-def]
    """FAKE kernels (torch on CPU, not cubins): what each stands for is in its name."""

    def good(b) -> None:  # type: ignore[no-untyped-def]
        b.views["out"].copy_(b.views["x"] * 2)

    def reordered(b) -> None:  # type: ignore[no-untyped-def]  # the same result, last bits changed
        b.views["out"].copy_(torch.nextafter(b.views["x"] * 2, torch.tensor(float("inf"))))

    def miscompiled(b) -> None:  # type: ignore[no-untyped-def]
        b.views["out"].copy_(b.views["x"] * 2)
        b.views["out"][9] += 1.0

    def accumulates(b) -> None:  # type: ignore[no-untyped-def]  # += into its output
        b.views["out"].add_(b.views["x"])

    def faults(b) -> None:  # type: ignore[no-untyped-def]
        raise RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS stand-in (not sticky)")

    return {
        "good": good,
        "reordered": reordered,
        "miscompiled": miscompiled,
        "accumulates": accumulates,
        "faults": faults,
    }


def test_differential_check_reports_bitwise_tolerance_wrong_and_errors() -> None:
    torch = pytest.importorskip("torch")
    from ktriage.workload.recorded.replay import allocate, differential_check

    plan = _plan()
    kernels = _fake_kernels(torch)
    pristine = allocate(plan, seed=0, device="cpu")
    before = pristine.clone()
    order = ["good", "reordered", "miscompiled", "faults"]
    check = differential_check(order, kernels, pristine, plan, synchronize=lambda: None, describe=str)
    assert check.reference == "good" and check.deterministic and check.idempotent
    out = check.outcomes
    assert out["good"].accuracy["reference"] is True
    assert (out["reordered"].status, out["reordered"].accuracy["agreement"]) == ("ok", "within tolerance")
    assert out["miscompiled"].status == "wrong"
    assert "results differ from the reference (good)" in str(out["miscompiled"].error)
    assert "at arg out" in str(out["miscompiled"].error)
    assert out["faults"].status == "error" and "ILLEGAL_ADDRESS" in str(out["faults"].error)
    # every toolchain ran on a copy: the pristine data is untouched
    assert all(torch.equal(before.storages[n], pristine.storages[n]) for n in pristine.storages)


def test_an_accumulating_kernel_is_not_idempotent_so_timed_calls_reset_it() -> None:
    torch = pytest.importorskip("torch")
    from ktriage.workload.recorded.replay import allocate, differential_check

    plan = _plan()
    kernels = _fake_kernels(torch)
    check = differential_check(
        ["accumulates", "faults"],
        kernels,
        allocate(plan, seed=0, device="cpu"),
        plan,
        synchronize=lambda: None,
        describe=str,
    )
    assert check.deterministic and not check.idempotent
    assert check.outcomes["accumulates"].accuracy["reset_before_each_call"] is True
    # a failing reference hands the reference role to the next toolchain that runs
    check2 = differential_check(
        ["faults", "good"], kernels, allocate(plan, seed=0, device="cpu"), plan, synchronize=lambda: None, describe=str
    )
    assert check2.reference == "good" and check2.outcomes["faults"].status == "error"


def test_reset_restores_the_pristine_data_in_place() -> None:
    pytest.importorskip("torch")
    from ktriage.workload.recorded.replay import allocate

    plan = _plan()
    pristine = allocate(plan, seed=3, device="cpu")
    work = pristine.clone()
    addr = work.views["out"].data_ptr()
    work.views["out"].fill_(5.0)
    work.reset_from(pristine)
    assert work.views["out"].data_ptr() == addr and bool((work.views["out"] == pristine.views["out"]).all())


def test_tensor_arg_is_frozen_plain_data() -> None:
    arg = tensor_arg("x", {"tensor": "fp32", "shape": [2]})
    assert isinstance(arg, TensorArg) and arg.itemsize == 4 and arg.storage_bytes == 8
