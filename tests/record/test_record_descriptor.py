"""A launch with a host-side ``TensorDescriptor`` argument (Triton 3.4+: TMA kernels of fla-core 0.6, Triton's
persistent-matmul tutorial, TritonBench's tma kernels), recorded through the real ``ktriage record`` on
Triton's real launch path with only the GPU driver faked (``fakedriver``): the real Triton 3.4.0 and 3.6.0
``TensorDescriptor`` over stand-in tensors, the JIT's own binder and compile.

Before, the hook described such an argument as "unsupported" and the launch was "not captured": the workload
lost the kernel. Now it is recorded in the spec's form (dtype, shape, strides, block_shape, and padding where
the recording Triton has it), ``explain W.json`` compiles it with Triton 3.4.0 and 3.6.0 for sm_90 and refuses
it on 3.3.1 (and a NaN-padded one on 3.4.0) with the spec form's message, and a bundle of it builds, loads, and refuses to replay the input
with the cause (the runner cannot fill a CUtensorMap) instead of a misleading ABI error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from record_helpers import INSITU, record_cli

import ktriage.api as kt
from ktriage.compile.compiler import CompileFailure
from ktriage.errors import KtriageError
from ktriage.explain.engine import KernelResult
from ktriage.explain.failures import describe
from ktriage.predict.facts import spec_launch_inputs
from ktriage.record.workload import Workload, load_workload
from ktriage.workload.recorded.bundle import bench_blockers, load_recorded_bundle
from tests.spec.test_descriptor_spec import KERNEL  # the same tile copy the spec form's tests compile

pytestmark = pytest.mark.slow


# The program, as a TMA program's host code builds its descriptors. Its stand-in tensor's repr is as long
# as a torch tensor's (which prints values): a launch is told from another by what the JIT specializes on,
# never by a truncated repr (two descriptors that differ only in block_shape were one launch).
PROGRAM = """
import sys
sys.path.insert(0, {insitu!r})
import fakedriver  # stands in for the GPU: Triton's real launch path, no device
fakedriver.install(90)
sys.path.insert(0, {src!r})
import tiles
from triton.tools.tensor_descriptor import TensorDescriptor


class TorchLikeRepr(fakedriver.FakeTensor):
    def __repr__(self):
        return "tensor([[" + ", ".join(["0.1234"] * 200) + "]], device='cuda:0', dtype=torch.float16)"


def tensor(rows):
    return TorchLikeRepr("fp16", shape=(rows, 2048))


padding = {padding!r}
extra = {{"padding": padding}} if padding else {{}}
for _ in range(2):  # the same launch twice: one input, counted twice
    a = TensorDescriptor(tensor(4096), [4096, 2048], [2048, 1], [64, 32])
    b = TensorDescriptor.from_tensor(tensor(4096), [64, 32], **extra)
    tiles.copy_tile[(64, 64)](a, b, 64, 32)
# another shape only (the same grid and constexprs), the same specialization: a second input of the kernel
small = TensorDescriptor(tensor(1024), [1024, 2048], [2048, 1], [64, 32])
tiles.copy_tile[(64, 64)](small, TensorDescriptor.from_tensor(tensor(1024), [64, 32]), 64, 32)
# another block shape: another type (tensordesc<fp16[128, 64]>), so another kernel
big = TensorDescriptor(tensor(4096), [4096, 2048], [2048, 1], [128, 64])
tiles.copy_tile[(32, 32)](big, TensorDescriptor.from_tensor(tensor(4096), [128, 64]), 128, 64)
print("done")
"""
DESC = {"descriptor": "fp16", "shape": [4096, 2048], "strides": [2048, 1], "block_shape": [64, 32]}
TYPE = "tensordesc<fp16[64, 32]>"


def _record(tc: Any, tmp_path: Path, padding: str | None) -> tuple[int, Workload, Path]:
    src = tmp_path / "src"
    src.mkdir()
    (src / "tiles.py").write_text(KERNEL)
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM.format(insitu=str(INSITU), src=str(src), padding=padding))
    out = tmp_path / "W.json"
    code = record_cli(out, [str(tc.python), str(prog)])
    return code, load_workload(out), out


def _kernels(workload: Workload) -> dict[str, Any]:
    return {k.inputs[0].spec.signature["in_desc"]: k for k in workload.kernels}


def test_triton_3_4_descriptors_are_recorded_in_the_spec_form_and_explained(
    toolchain: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tc = toolchain("triton==3.4.0")
    code, workload, out = _record(tc, tmp_path, None)
    assert code == 0
    captured = capsys.readouterr()
    said = " ".join((captured.out + captured.err).split())
    assert not workload.not_captured, workload.not_captured
    kernels = _kernels(workload)
    assert set(kernels) == {TYPE, "tensordesc<fp16[128, 64]>"}
    tiles = kernels[TYPE]
    first, second = tiles.inputs
    # Triton 3.4's descriptor has no padding field: none recorded
    assert dict(first.args) == {"in_desc": DESC, "out_desc": DESC, "BLOCK_M": 64, "BLOCK_N": 32}
    assert (first.count, second.count) == (2, 1)
    assert dict(second.args)["in_desc"]["shape"] == [1024, 2048]
    spec = first.spec
    assert spec.signature == {"in_desc": TYPE, "out_desc": TYPE, "BLOCK_M": "constexpr", "BLOCK_N": "constexpr"}
    # the cost model's data size: each descriptor counts as its tensor (before: none, no pointer argument)
    assert spec_launch_inputs(spec)[::2] == (4096 * 2048 * 2, 2 * 4096 * 2048 * 2)
    assert first.jit_check == "same"  # what the JIT passed to triton.compile for the launch
    # record says at once that bench cannot replay it, and why
    assert "cannot bench K0 copy_tile input 0: argument in_desc cannot be benched: it is a host-side tensor " in said

    # explain compiles the recorded kernel with 3.4.0; 3.3.1's cell is refused with the spec form's message
    report = kt.explain(target=out, toolchains=["triton==3.3.1", "triton==3.4.0"])
    item = next(s for s in report.result.specs if s.spec.key() == spec.key())
    cells = {str(r.toolchain.spec): r for r in item.results.values()}
    cell = cells["triton==3.4.0"]
    assert isinstance(cell, KernelResult), describe(cell)
    assert [p.name for p in cell.artifact.abi if p.name.startswith("in_desc")] == [
        "in_desc",
        "in_desc[1]",
        "in_desc[2]",
        "in_desc[3]",
        "in_desc[4]",
    ]
    assert "cp.async.bulk.tensor" in cell.artifact.frontend.ptx_path.read_text()
    refused = cells["triton==3.3.1"]
    assert isinstance(refused, CompileFailure) and refused.kind == "spec"
    line = describe(refused)
    assert "argument in_desc is a host-side TensorDescriptor, which Triton 3.3.1 does not have (it came in 3.4)" in line
    assert line.endswith("fix: compare this kernel across Triton 3.4 and later (e.g. -t triton==3.4.0)")


def test_triton_3_6_descriptors_keep_their_padding_and_a_bundle_refuses_to_replay_them(
    toolchain: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tc = toolchain("triton==3.6.0")
    code, workload, out = _record(tc, tmp_path, "nan")
    assert code == 0
    capsys.readouterr()
    assert not workload.not_captured, workload.not_captured
    tiles = _kernels(workload)[TYPE]
    first, second = tiles.inputs
    args = dict(first.args)
    assert args["in_desc"] == {**DESC, "padding": "zero"}  # Triton 3.5+ has the field: its value is kept
    assert args["out_desc"] == {**DESC, "padding": "nan"}
    assert dict(second.args)["out_desc"]["padding"] == "zero"
    assert first.jit_check == "same"

    assert first.spec.meta["descriptor_padding"] == {"out_desc": "nan"} and "descriptor_padding" not in second.spec.meta

    # Triton 3.4's TensorDescriptor has no padding field (a program's padding="nan" is a TypeError there): the
    # NaN-padded input is refused with the message of the same launch by values; the other inputs of its kernel,
    # and every input with 3.6.0, compile (before, 3.4.0 compiled the NaN-padded input too)
    report = kt.explain(target=out, toolchains=["triton==3.4.0", "triton==3.6.0"])
    cells = {(s.spec.name, str(r.toolchain.spec)): r for s in report.result.specs for r in s.results.values()}
    refused = cells.pop((first.spec.name, "triton==3.4.0"))
    assert isinstance(refused, CompileFailure) and refused.kind == "spec", refused
    line = describe(refused)
    assert 'argument out_desc is a TensorDescriptor with padding = "nan", which Triton 3.4.0 does not have' in line
    assert "fix: compare this kernel across Triton 3.5 and later (e.g. -t triton==3.5.0)" in line
    assert len(cells) == 5 and all(isinstance(c, KernelResult) for c in cells.values()), [
        describe(c) for c in cells.values() if isinstance(c, CompileFailure)
    ]

    # the bundle builds and loads (its ABI: the CUtensorMap of 128 bytes, then shape and strides) ...
    bundle_dir = tmp_path / "bundle"
    kt.bench_recorded(workload=out, toolchains=["triton==3.6.0"], compile_only=True, bundle=bundle_dir)
    recorded = load_recorded_bundle(bundle_dir)
    assert recorded.bundle.failure_lines() == []
    # ... and each input is refused where the GPU host's bench plans its replay, with the cause
    for entry in recorded.entries:
        with pytest.raises(KtriageError) as info:
            entry.plan(recorded.bundle.specs[entry.spec_key])
        assert "argument in_desc cannot be benched: it is a host-side tensor descriptor (TMA)" in info.value.problem
        assert "runner cannot fill a CUtensorMap" in info.value.problem
        assert "explain it from the recording" in info.value.fix
    blockers = bench_blockers(workload)
    assert len(blockers) == len([i for k in workload.kernels for i in k.inputs])
