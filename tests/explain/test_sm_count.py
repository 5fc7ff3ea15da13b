"""``explain --sm-count N`` prices every kernel for N SMs (ktriage.spec.sms), not only the recipes whose
grid is the SM count: a catalog op's cost-model facts and waves follow it, and a recorded workload's
launches, recorded on M SMs, are priced for N with the report saying both (docs/explain.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

import ktriage.api as kt
from ktriage.explain.engine import KernelResult
from ktriage.predict.model import breakdown, load_params, profile
from ktriage.record.workload import compact, save_workload
from tests.conftest import RunCli

pytestmark = pytest.mark.slow

# Liger 0.5.10 embedding bwd, input 0: 768 CTAs, 2 a SM with either ptxas (3 waves on 132 SMs)
EMBEDDING = {"target": "liger.embedding", "mode": "bwd", "inputs": "0", "arch": "sm_90"}
TOOLCHAINS = ["triton==3.4.0,ptxas==12.4.131", "triton==3.4.0"]


def _waves(report: kt.ExplainReport) -> tuple[int, float, float]:
    """(the new kernel's facts' SM count, its waves, the reference's waves) as the cost model prices them."""
    comparison = report.result.specs[0].comparisons[0]
    params = load_params()
    new, ref = comparison.new.facts(), comparison.ref.facts()
    return new.sm_count, breakdown(profile(new), params)["waves"], breakdown(profile(ref), params)["waves"]


def test_a_catalog_ops_prediction_follows_sm_count(toolchain) -> None:
    """embedding's grid does not depend on the SM count, so its recipe never wrote the count into the
    spec, and the cost model priced it for 132 SMs whatever --sm-count said."""
    toolchain(TOOLCHAINS[0])
    usual = kt.explain(**EMBEDDING, toolchains=TOOLCHAINS)
    assert _waves(usual) == (132, 3.0, 3.0)
    small = kt.explain(**EMBEDDING, toolchains=TOOLCHAINS, sm_count=16)
    assert _waves(small) == (16, 24.0, 24.0)  # 768 CTAs / 16 SMs = 48 a SM, 2 resident: 24 waves
    prediction = small.result.specs[0].comparisons[0].prediction
    assert prediction is not None and prediction.kind == "regression"  # REDG -> ATOMG, priced at 16 SMs
    assert small.to_json()["kernels"][0]["sm_count"] == 16  # type: ignore[index,call-overload]
    assert "Compiled for: `sm_90`; priced for 16 SMs" in small.to_markdown()
    assert "priced for 132 SMs" in usual.to_markdown()


def test_the_terminal_says_the_target_and_the_sm_count_priced_for(run_cli: RunCli, toolchain) -> None:
    """The markdown, HTML and JSON said "Compiled for: sm_90; priced for N SMs"; the terminal table,
    what a user who passed --sm-count 114 reads first, said neither."""
    toolchain(TOOLCHAINS[0])
    argv = ["explain", "liger.embedding", "--bwd", "--input", "0", "--arch", "sm_90", "--sm-count", "114"]
    out = run_cli([*argv, *(x for t in TOOLCHAINS for x in ("-t", t))])
    assert out.exit_code == 0, out.stderr
    assert "Compiled for: sm_90; priced for 114 SMs" in out.stdout, out.stdout


def _terminal(report: kt.ExplainReport) -> str:
    console = Console(record=True, width=250)
    report.print_table(console)
    return console.export_text()


KERNEL = """
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
"""


def _workload(tmp_path: Path, host_sm_count: int | None) -> Path:
    """A workload as ``record`` writes it for one launch of 512 CTAs on a GPU of ``host_sm_count`` SMs
    (None: recorded before record kept the count)."""
    src = tmp_path / "src" / "scale.py"
    src.parent.mkdir(exist_ok=True)
    src.write_text(KERNEL)
    tensor = {"tensor": "fp32", "aligned": True, "shape": [131072], "strides": [1]}
    host: dict[str, object] = {"type": "host", "triton": "3.4.0", "target": "sm_90"}
    if host_sm_count is not None:
        host["sm_count"] = host_sm_count
    records = [
        {"type": "header", "format_version": 1, "kind": "ktriage-record-journal", "argv": ["prog.py"]},
        host,
        {
            "type": "kernel",
            "id": "K0",
            "kind": "jit",
            "function": "scale_kernel",
            "module": "scale",
            "original_module": "scale",
            "file": str(src),
            "snapshot": {"files": {"scale.py": KERNEL}, "notes": []},
            "package": None,
        },
        {
            "type": "launch",
            "id": "L0",
            "kernel": "K0",
            "args": [["x_ptr", tensor], ["n", 131072], ["BLOCK", 256]],
            "options": {"num_warps": 8},
            "grid": [512],
        },
    ]
    return save_workload(compact(records), tmp_path / f"W{host_sm_count}.json")


def test_a_workload_is_priced_for_its_recording_gpu_and_sm_count_overrides_it(toolchain, tmp_path: Path) -> None:
    """A workload recorded on an H100 PCIe (114 SMs) is priced for 114; --sm-count 16 prices the same
    recorded launch (grid 512) for 16 SMs, and the report says it was recorded on 114."""
    toolchain("triton==3.4.0")
    recorded = _workload(tmp_path, 114)
    own = kt.explain(target=recorded, toolchains=["triton==3.4.0"])
    (item,) = own.result.specs
    (result,) = item.results.values()
    assert isinstance(result, KernelResult) and result.facts().sm_count == 114
    assert "priced for 114 SMs" in own.to_markdown() and "recorded on" not in own.to_markdown()

    other = kt.explain(target=recorded, toolchains=["triton==3.4.0"], sm_count=16)
    (item,) = other.result.specs
    (result,) = item.results.values()
    assert isinstance(result, KernelResult)
    facts = result.facts()
    assert (facts.sm_count, facts.grid_ctas) == (16, 512)  # the recorded grid, on 16 SMs
    assert item.spec.meta["recorded_sm_count"] == 114
    assert "Compiled for: `sm_90`; priced for 16 SMs (recorded on 114)" in other.to_markdown()
    assert "Compiled for: sm_90; priced for 16 SMs (recorded on 114)" in _terminal(other)
    assert other.to_json()["kernels"][0]["sm_count"] == 16  # type: ignore[index,call-overload]


def test_an_older_workload_priced_for_another_count_says_its_recording_count_is_unknown(
    toolchain, tmp_path: Path
) -> None:
    """A workload from before ``record`` kept the GPU's SM count: --sm-count applies, and the report says
    the recording's count is not known rather than naming one."""
    toolchain("triton==3.4.0")
    report = kt.explain(target=_workload(tmp_path, None), toolchains=["triton==3.4.0"], sm_count=16)
    (item,) = report.result.specs
    (result,) = item.results.values()
    assert isinstance(result, KernelResult) and result.facts().sm_count == 16
    assert "priced for 16 SMs (recorded on a GPU whose SM count the workload does not keep)" in report.to_markdown()
