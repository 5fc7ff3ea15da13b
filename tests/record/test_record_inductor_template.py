"""Inductor template kernels (issue 23, point 2): flex attention's and mm's ``triton_tem_`` kernels,
and user-defined Triton kernels under torch.compile, launch through a launcher that takes its grid as
``FixedGrid`` values after the kernel's arguments; their grid was not recorded (flex_attention: 6 of
7 kernels benched as "-"). A template module as torch 2.13 renders mm's ``triton_mm`` template
(``@triton_heuristics.template`` over ``@triton.jit``, ``grid_type: FixedGrid``) runs through
inductor's real CachingAutotuner in a Triton 3.6.0 toolchain with torch 2.13 (CPU build), only the GPU
faked, under the real ``ktriage record``: its grid is recorded, and an input whose grid cannot be read
is reported at record time and by ``workload show``, never a silent "-"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from record_helpers import INSITU, record_cli

from ktriage.cli.app import main
from ktriage.compile.compiler import Artifact, Compiler
from ktriage.record.workload import load_workload
from ktriage.workload.recorded.bundle import bench_blockers

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow
SITE = Path(torch.__file__).resolve().parent.parent
MODULE = Path(__file__).parent / "data" / "inductor_template_module.py"

PROGRAM = """
import importlib.util, os, sys
sys.path.insert(0, {insitu!r})
import fakedriver
fakedriver.install(90)
from torch._inductor.runtime import triton_helpers
triton_helpers.set_driver_to_gpu = lambda: None
import torch
from torch._dynamo.device_interface import CudaInterface
CudaInterface.exchange_device = staticmethod(lambda idx: 0)
CudaInterface.maybe_exchange_device = staticmethod(lambda idx: 0)
torch._inductor.config.use_static_triton_launcher = False  # StaticallyLaunchedCudaKernel needs libcuda
spec = importlib.util.spec_from_file_location("cz4tmplmm0abcdef", {module!r})
mod = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = mod
spec.loader.exec_module(mod)
kernel = mod.triton_tem_fused_mm_0
def fresh(aligned=True):
    return [fakedriver.FakeTensor("fp32", shape=(64, 64), aligned=aligned) for _ in range(3)]
for _ in range(2):  # the wrapper's call: arguments, then the template's grid (mm_grid: cdiv(64, 32) ** 2)
    kernel.run(*fresh(), 4, 1, 1, stream=0)
if {break_grid!r}:  # a launcher whose grid the hook cannot evaluate: said at record time
    kernel.inductor_meta.pop("extra_launcher_args")
    kernel.run(*fresh(aligned=False), 4, 1, 1, stream=0)
"""


def _record(tc, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, break_grid: bool) -> Path:  # type: ignore[no-untyped-def]
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM.format(insitu=str(INSITU), module=str(MODULE), break_grid=break_grid))
    monkeypatch.setenv("PYTHONPATH", str(SITE))  # torch 2.13 (CPU build) next to the toolchain's Triton
    out = tmp_path / "W.json"
    assert record_cli(out, [str(tc.python), str(prog)]) == 0
    monkeypatch.delenv("PYTHONPATH")
    return out


def test_a_template_kernels_grid_is_recorded(
    toolchain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tc = toolchain("triton==3.6.0")
    out = _record(tc, tmp_path, monkeypatch, break_grid=False)
    assert "cannot bench" not in capsys.readouterr().err
    workload = load_workload(out)
    assert not workload.not_captured
    (kernel,) = workload.kernels
    assert kernel.kind == "inductor" and kernel.function == "triton_tem_fused_mm_0"
    (inp,) = kernel.inputs
    assert inp.count == 2 and inp.grid == [4, 1, 1]
    # the grid values are launcher arguments, not the kernel's: the recorded arguments are the kernel's three
    assert [a[0] for a in inp.args] == ["arg_A", "arg_B", "out_ptr0"]
    assert (inp.spec.num_warps, inp.spec.num_stages) == (4, 2)
    assert bench_blockers(workload) == []
    # compiled from the snapshot alone (a toolchain without torch), as bench builds its bundle
    with Compiler(jobs=1, cache_dir=tmp_path / "artifacts") as compiler:
        artifact = compiler.compile(inp.spec, tc)
    assert isinstance(artifact, Artifact), artifact
    assert artifact.kernel_name == "triton_tem_fused_mm_0"


def test_a_grid_that_cannot_be_read_is_said_at_record_time_and_by_workload_show(
    toolchain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tc = toolchain("triton==3.6.0")
    out = _record(tc, tmp_path, monkeypatch, break_grid=True)
    err = capsys.readouterr().err
    assert (
        "cannot bench K" in err
        and "triton_tem_fused_mm_0" in err
        and "no recorded grid: inductor's FixedGrid grid" in err
    )
    workload = load_workload(out)
    (blocked,) = bench_blockers(workload)
    assert "NameError" in blocked.why and "_grid_0" in blocked.why
    assert main(["workload", "show", str(out), "-f", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [b["input"] for b in shown["cannot_bench"]] == [blocked.input]
    assert main(["workload", "show", str(out)]) == 0
    text = capsys.readouterr().out
    assert "cannot bench" in text and "none: cannot bench" in text
