"""How explain names an input (explain/labels.py): a recorded input's label is its launch's every
argument, so among the inputs of one kernel function only the arguments that tell them apart are shown;
never two inputs with one short label; a catalog op's labels as written."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from ktriage.explain.labels import short_labels
from ktriage.spec.model import KernelSpec
from ktriage.spec.ranges import input_place, input_range

WORKLOAD = Path(__file__).resolve().parents[2] / "benchmarks/record/h200/tb_layer_norm_bwd.workload.json.gz"


def _bwd(n: int) -> str:
    return f"X_ptr=4096x{n},W_ptr={n},Mean_ptr=4096,RSTD_ptr=4096,DX_ptr=4096x{n},DW_ptr=132x{n},stride_x={n},stride_dx={n}"


def _recorded(function: str, kid: str, label: str) -> KernelSpec:
    meta = {"recorded": True, "function": function, "workload_kernel": kid, "input_label": label}
    return KernelSpec(f"{function}.{kid}[{label}]", "k.py:k", {"x_ptr": "*fp32"}, meta=meta)


def test_a_recorded_input_is_named_by_the_arguments_that_tell_it_apart() -> None:
    specs = [_recorded("bwd", "K7", _bwd(n)) for n in (4608, 5120, 8192)]
    specs += [_recorded("bwd", "K1", _bwd(1024))]  # another specialization of the same function: one group
    grid = [f"M={m},N={n},stride=1" for m, n in itertools.product((64, 128), (32, 256))]
    specs += [_recorded("mm", "K2", label) for label in grid]  # M alone does not tell them apart: N too
    specs += [_recorded("alone", "K3", "a=1,b=2")]  # nothing to tell apart from: the full label
    specs += [KernelSpec("liger.layer_norm.bwd[N=4608,M=4096]", "k.py:k", {}, meta={"input_label": "N=4608,M=4096"})]
    shorts = short_labels(specs)
    assert shorts[:4] == ["X_ptr=4096x4608", "X_ptr=4096x5120", "X_ptr=4096x8192", "X_ptr=4096x1024"]
    assert shorts[4:8] == ["M=64,N=32", "M=64,N=256", "M=128,N=32", "M=128,N=256"]
    assert shorts[8:] == ["a=1,b=2", "N=4608,M=4096"]  # a catalog op's labels stay as written
    assert len(set(shorts)) == len(shorts)


def test_a_range_of_shapes_that_differ_in_one_dimension_names_it_once() -> None:
    assert input_range(["X_ptr=4096x4608", "X_ptr=4096x8192"]) == "X_ptr=4096x{4608..8192}"
    assert input_range(["x=8x4096x64", "x=8x4096x128"]) == "x=8x4096x{64..128}"
    assert input_range(["x=8x64", "x=16x128"]) == "x=8x64..16x128"
    assert input_range(["N=4608", "N=8192"]) == "N=4608..8192"
    assert input_place("bwd.K7", ["X_ptr=4096x4608", "X_ptr=4096x8192"]) == "bwd.K7[X_ptr=4096x{4608..8192}]"


@pytest.mark.slow
def test_the_recorded_layer_norm_bullets_name_the_arguments_that_vary(toolchain, tmp_path: Path) -> None:
    """The TritonBench layer_norm recording, every input: each bullet's range fits a line
    (``_layer_norm_backward_kernel.K7[X_ptr=4096x{4608..8192}]``), the full labels stay in the JSON and
    beside the short ones in the markdown per-input table."""
    import ktriage.api as kt

    toolchain("triton==3.3.1"), toolchain("triton==3.6.0")
    report = kt.explain(target=str(WORKLOAD), toolchains=["triton==3.3.1", "triton==3.6.0"])
    spilled = report.regressions[0].summary()
    assert spilled.startswith("_layer_norm_backward_kernel.K7[X_ptr=4096x{4608..8192}] (8 inputs), triton==3.6.0 vs")
    assert "(worst at X_ptr=4096x4608);" in spilled and "at X_ptr=4096x8192, the largest of 8 inputs" in spilled
    assert all("Mean_ptr" not in g.summary() for g in report.groups)
    assert report.regressions[0].inputs[0] == _bwd(4608)  # the full label: the JSON's, and what -i selects
    md = report.to_markdown()
    assert "| input | arguments |" in md and f"X_ptr=4096x4608] | {_bwd(4608)} |" in md
