"""Kernels defined in a method or a function body, in a module that imports a package that is not
installed where the workload is compiled (issue 23, point 1): recorded through the real ``ktriage
record`` (Triton's real launch path, only the GPU driver faked), with the values they close over,
and compiled from the workload alone with Triton 3.4.0.

The program's module imports ``tabulate_only_on_the_gpu_host`` at the top: the recording interpreter
has it (a stand-in file on its path), the compile worker does not, as TritonBench's low_mem_dropout
imports tabulate.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from record_helpers import INSITU, record_cli

from ktriage.cli.app import main
from ktriage.record.workload import load_workload
from ktriage.spec.packages import snapshot_dir

pytestmark = pytest.mark.slow

OPERATOR = """
import tabulate_only_on_the_gpu_host
import triton
import triton.language as tl


class Operator:
    def triton_softmax(self, x, out, n_cols):
        Operator.softmax_kernel[(1,)](out, x, n_cols, n_cols, n_cols, BLOCK_SIZE=1024, num_warps=4)

    @triton.jit
    def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols,
                       BLOCK_SIZE: tl.constexpr):
        row_idx = tl.program_id(0)
        offs = tl.arange(0, BLOCK_SIZE)
        row = tl.load(input_ptr + row_idx * input_row_stride + offs, mask=offs < n_cols, other=-float("inf"))
        num = tl.exp(row - tl.max(row, axis=0))
        tl.store(output_ptr + row_idx * output_row_stride + offs, num / tl.sum(num, axis=0), mask=offs < n_cols)


def make_scale(factor, block):
    SCALE = tl.constexpr(factor)

    @triton.jit
    def scale_by(x):
        return x * SCALE

    @triton.jit
    def scale_kernel(x_ptr, out_ptr, n):
        offs = tl.program_id(0) * block + tl.arange(0, block)
        tl.store(out_ptr + offs, scale_by(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)

    return scale_kernel
"""

PROGRAM = """
import sys
sys.path.insert(0, {insitu!r})
import fakedriver  # stands in for the GPU: Triton's real launch path, no device
fakedriver.install(90)
sys.path.insert(0, {src!r})
sys.path.insert(0, {gpu_only!r})
from nestedops import operator
import triton.language as tl

x, out = fakedriver.FakeTensor("fp32", shape=(1000,)), fakedriver.FakeTensor("fp32", shape=(1000,))
operator.Operator().triton_softmax(x, out, 1000)
kernel = operator.make_scale(3.0, tl.constexpr(256))
kernel[(4,)](x, out, 1000)
print("done")
"""


def test_kernels_in_a_method_and_a_closure_are_recorded_and_compile_from_the_workload(
    toolchain, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tc = toolchain("triton==3.4.0")
    src, gpu_only = tmp_path / "src", tmp_path / "gpu_only"
    (src / "nestedops").mkdir(parents=True)
    (src / "nestedops" / "__init__.py").write_text("")
    (src / "nestedops" / "operator.py").write_text(OPERATOR)
    gpu_only.mkdir()
    (gpu_only / "tabulate_only_on_the_gpu_host.py").write_text("TABLE = 1\n")
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM.format(insitu=str(INSITU), src=str(src), gpu_only=str(gpu_only)))
    out = tmp_path / "W.json"
    assert record_cli(out, [str(tc.python), str(prog)]) == 0
    capsys.readouterr()
    workload = load_workload(out)
    assert not workload.not_captured, workload.not_captured
    by_name = {k.function: k for k in workload.kernels}
    assert set(by_name) == {"softmax_kernel", "scale_kernel"}
    assert [i.jit_check for i in by_name["softmax_kernel"].inputs] == ["same"]
    closure = by_name["scale_kernel"]
    # the closed-over block size is a constexpr in the kernel's source: the spec has no parameter for it
    assert list(closure.inputs[0].spec.signature) == ["x_ptr", "out_ptr", "n"]
    notes = " ".join(closure.notes)
    assert "closed-over values carried" in notes and "block=tl.constexpr(256)" in notes and "scale_by=jit" in notes
    # compiled elsewhere from the workload alone: the sources gone, no tabulate in the toolchain
    shutil.rmtree(src)
    shutil.rmtree(gpu_only)
    for k in workload.kernels:
        shutil.rmtree(snapshot_dir(f"snapshot:{k.snapshot}"), ignore_errors=True)
    assert main(["explain", str(out), "-t", "triton==3.4.0", "-f", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    text = json.dumps(result)
    assert '"error"' not in text, text[:2000]
    # the closure's SCALE = 3.0 reached the kernel
    scale = next(k for k in workload.kernels if k.function == "scale_kernel")
    assert scale.inputs[0].spec.name in text
