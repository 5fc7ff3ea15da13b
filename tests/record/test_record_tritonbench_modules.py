"""TritonBench's own kernel modules that a newcomer's recording could not compile (issue 23): the
real ``low_mem_dropout`` (its module imports ``tabulate`` at the top), ``vector_exp`` (its kernel calls
``tritonbench.kernels.profile.time``), the tutorial ``gemm`` matmul (its configs module imports numpy
and torch) and ``softmax`` (its kernel is defined in the ``Operator`` class). They are launched on
Triton's real launch path from the TritonBench snapshot beside the checkout (only the GPU driver
faked; torch 2.13 CPU build; stand-ins for psutil and tabulate on the recording interpreter's path, as
the GPU host has the real ones), recorded by the real ``ktriage record``, then explained with Triton
3.4.0 from the workload alone, in a toolchain that has none of numpy, torch, tabulate or psutil."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from record_helpers import INSITU, record_cli

from ktriage.cli.app import main
from ktriage.record.workload import load_workload

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
SITE = Path(torch.__file__).resolve().parent.parent
TRITONBENCH = next(
    (
        p
        for p in (REPO.parent / "shared" / "thirdparty" / "tritonbench", Path("/work/shared/thirdparty/tritonbench"))
        if p.exists()
    ),
    REPO.parent / "shared" / "thirdparty" / "tritonbench",
)

STAND_IN = """# a stand-in for the recording host's real package (this CPU machine lacks it)
def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return lambda *a, **k: ""
"""

PROGRAM = """
import sys
sys.path.insert(0, {insitu!r})
import fakedriver  # stands in for the GPU: Triton's real launch path, no device
fakedriver.install(90)
from fakedriver import FakeTensor as T
import tritonbench.operators.low_mem_dropout.kernels as dropout
import tritonbench.operators.vector_exp.kernels as vexp
import tritonbench.operators.gemm.triton_matmul as mm
import tritonbench.operators.softmax.operator as softmax

n = 1 << 20
dropout._seeded_triton_dropout[(n // 1024,)](T("fp32", shape=(n,)), T("fp32", shape=(n,)), n, 0.5, 123, BLOCK_SIZE=1024)
vexp.triton_exp_kernel[(n // 1024,)](T("fp32", shape=(n,)), T("fp32", shape=(n,)), n, BLOCK_SIZE=1024)
a, b, c = (T("fp16", shape=(512, 512)) for _ in range(3))
mm.matmul_kernel.fn[(16,)](a, b, c, 512, 512, 512, 512, 1, 512, 1, 512, 1, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64,
                            GROUP_M=8, ACTIVATION="", ENABLE_BUFFER_OPS_ASSUMES=False, num_warps=8, num_stages=3)
x, y = T("fp32", shape=(4096, 1000)), T("fp32", shape=(4096, 1000))
softmax.Operator.softmax_kernel[(4096,)](y, x, 1000, 1000, 1000, BLOCK_SIZE=1024, num_warps=4)
"""


def test_tritonbench_kernels_whose_modules_need_the_gpu_hosts_packages_compile_from_the_workload(
    toolchain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if not (TRITONBENCH / "tritonbench" / "operators" / "low_mem_dropout" / "kernels.py").exists():
        pytest.skip(f"the TritonBench snapshot is not at {TRITONBENCH}")
    tc = toolchain("triton==3.6.0")
    toolchain("triton==3.4.0")
    stand_ins = tmp_path / "recording_host_only"
    stand_ins.mkdir()
    for name in ("psutil", "tabulate"):
        (stand_ins / f"{name}.py").write_text(STAND_IN)
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM.format(insitu=str(INSITU)))
    monkeypatch.setenv("PYTHONPATH", f"{SITE}:{TRITONBENCH}:{stand_ins}")
    out = tmp_path / "W.json"
    assert record_cli(out, [str(tc.python), str(prog)]) == 0
    monkeypatch.delenv("PYTHONPATH")
    capsys.readouterr()
    workload = load_workload(out)
    assert not workload.not_captured, workload.not_captured
    assert sorted(k.function for k in workload.kernels) == [
        "_seeded_triton_dropout",
        "matmul_kernel",
        "softmax_kernel",
        "triton_exp_kernel",
    ]
    assert all(i.jit_check == "same" for k in workload.kernels for i in k.inputs)
    assert main(["explain", str(out), "-t", "triton==3.4.0", "-f", "json"]) == 0
    text = capsys.readouterr().out
    result = json.loads(text)
    assert '"error"' not in text, text[:3000]
    # every kernel compiled and was analyzed: no failed cell, nothing incomplete
    assert result["complete"] and not result["failures"], result["failures"]
    assert sorted(k["spec"]["meta"]["function"] for k in result["kernels"]) == [
        "_seeded_triton_dropout",
        "matmul_kernel",
        "softmax_kernel",
        "triton_exp_kernel",
    ]
