"""The hook on inductor's launch path (torch.compile's kernels): CachingAutotuner.run.

On a CPU machine: the hook installs on torch 2.13's classes, and an inductor-generated module (the
shape torch 2.13 writes: ``@triton_heuristics.pointwise(...)`` over ``@triton.jit``, loaded by path
under a hash name like PyCodeCache does) launched through inductor's real CachingAutotuner
(precompile, launcher) with only the GPU faked is recorded with inductor's own compile inputs.
Compiled from its snapshot in a toolchain without torch, it is the machine code inductor compiled.
A real torch.compile run (StaticallyLaunchedCudaKernel included) needs the GPU host.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from record_helpers import INSITU, record_cli

from ktriage.analyze.cuobjdump import run_cuobjdump
from ktriage.compile.compiler import Artifact, Compiler
from ktriage.insitu import launch_hook
from ktriage.record.workload import load_workload

torch = pytest.importorskip("torch")
SITE = Path(torch.__file__).resolve().parent.parent
MODULE = Path(__file__).parent / "data" / "inductor_generated_module.py"

PROGRAM = """
import importlib.util, os, sys
sys.path.insert(0, {insitu!r})
import fakedriver
fakedriver.install(90)
# the rest of the stand-in GPU: inductor asks torch.cuda (a CPU build here) for a device guard
from torch._inductor.runtime import triton_helpers
triton_helpers.set_driver_to_gpu = lambda: None
import torch
from torch._dynamo.device_interface import CudaInterface
CudaInterface.exchange_device = staticmethod(lambda idx: 0)
CudaInterface.maybe_exchange_device = staticmethod(lambda idx: 0)
torch._inductor.config.use_static_triton_launcher = False  # StaticallyLaunchedCudaKernel needs libcuda
spec = importlib.util.spec_from_file_location({module_name!r}, {module!r})
mod = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = mod
spec.loader.exec_module(mod)
kernel = mod.triton_poi_fused_mul_0
for n in (4096, 4096, 8192):
    x, out = fakedriver.FakeTensor("fp32", shape=(n,)), fakedriver.FakeTensor("fp32", shape=(n,))
    kernel.run(x, out, n, stream=0)
with open({cubin!r}, "wb") as fh:  # what inductor compiled, to compare with ktriage's compile of the record
    fh.write(kernel.compile_results[0].kernel.asm["cubin"])
"""


def test_the_hook_installs_on_inductors_classes(tmp_path: Path) -> None:
    code = (
        f"import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('h', {str(launch_hook.__file__)!r})\n"
        f"h = importlib.util.module_from_spec(spec); spec.loader.exec_module(h)\n"
        f"h.install({str(tmp_path / 'j')!r})\n"
        f"from torch._inductor.runtime import triton_heuristics as th\n"
        f"assert th.CachingAutotuner.run._ktriage_record\n"
        # static launches go through CachingAutotuner.run too (its launchers wrap the static kernel)
        f"from torch._inductor.runtime import static_triton_launcher as s\n"
        f"assert hasattr(s, 'StaticallyLaunchedCudaKernel') and hasattr(th, 'StaticTritonCompileResult')\n"
        f"print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
    assert "not_captured" not in (tmp_path / "j").read_text()


# PyCodeCache's names: a bare hash (torch 2.13), or under inductor's package (torch 2.11, as on the H200):
# the generated module is still no runtime helper, so its host-side imports are still stubs.
@pytest.mark.slow
@pytest.mark.parametrize("module_name", ["cq3bkzuyrxhd4wr7", "torch._inductor.runtime.compile_tasks.cq3bkzuyrxhd4wr7"])
def test_an_inductor_kernel_is_recorded_through_the_fake_driver(
    toolchain, tmp_path: Path, monkeypatch, module_name: str
) -> None:
    tc = toolchain("triton==3.6.0")
    prog = tmp_path / "prog.py"
    prog.write_text(
        PROGRAM.format(
            insitu=str(INSITU), module=str(MODULE), module_name=module_name, cubin=str(tmp_path / "inductor.cubin")
        )
    )
    monkeypatch.setenv("PYTHONPATH", str(SITE))  # torch 2.13 (CPU build) next to the toolchain's Triton
    out = tmp_path / "W.json"
    assert record_cli(out, [str(tc.python), str(prog)]) == 0
    workload = load_workload(out)
    assert not workload.not_captured
    (kernel,) = workload.kernels
    assert kernel.kind == "inductor" and kernel.function == "triton_poi_fused_mul_0"
    assert [i.count for i in kernel.inputs] == [2, 1] and workload.host["torch"].startswith("2.13")
    spec = kernel.inputs[0].spec
    assert spec.signature == {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32", "XBLOCK": "constexpr"}
    assert spec.constexprs == {"XBLOCK": 256} and spec.divisible_by_16 == ("in_ptr0", "out_ptr0", "xnumel")
    assert (spec.num_warps, spec.num_stages) == (4, 1)  # the launcher's config, not Triton's defaults
    assert kernel.autotune_configs == [{"kwargs": {"XBLOCK": 256}, "num_warps": 4, "num_stages": 1, "num_ctas": 1}]
    # the grid inductor's launcher computes (its Grid1D expression, xnumel / XBLOCK): a replay needs it
    assert [i.grid for i in kernel.inputs] == [[4096 // 256, 1, 1], [8192 // 256, 1, 1]]
    # and on each input's spec, as written (explain's cost model reads the spec's grid: the CTAs, the waves)
    written = json.loads(out.read_text())["kernels"][0]["inputs"]
    assert [i["spec"]["grid"] for i in written] == [[4096 // 256, 1, 1], [8192 // 256, 1, 1]]
    files = workload.snapshots[kernel.snapshot]["files"]
    assert MODULE.read_text() in files.values()  # the generated module's text, by a portable name
    # its @triton.jit helpers' module is carried, the host-side modules it imports are stubs
    runtime = "torch/_inductor/runtime/"
    assert files[runtime + "triton_helpers.py"] == (SITE / runtime / "triton_helpers.py").read_text()
    assert files[runtime + "triton_heuristics.py"] == launch_hook.INDUCTOR_STUB and files["torch/__init__.py"] == ""
    # compiled from the snapshot alone in a toolchain without torch: the machine code inductor compiled
    # (the cubins differ in the line-info section, which names the source file)
    monkeypatch.delenv("PYTHONPATH")
    with Compiler(jobs=1, cache_dir=tmp_path / "artifacts") as compiler:
        artifact = compiler.compile(spec, tc)
    assert isinstance(artifact, Artifact), artifact
    ours = run_cuobjdump(tc.cuobjdump, artifact.cubin.cubin_path, "-sass")
    assert ours == run_cuobjdump(tc.cuobjdump, tmp_path / "inductor.cubin", "-sass")
    assert "triton_poi_fused_mul_0" in ours


H200_MODEL = Path(__file__).resolve().parents[2] / "benchmarks" / "record" / "h200c" / "compiled_model.workload.json.gz"


@pytest.mark.parametrize("version", ["3.3.1", "3.6.0"])
def test_the_h200_torch_compile_recording_compiles_from_its_snapshot(toolchain, tmp_path: Path, version: str) -> None:
    """A real torch.compile recording (torch 2.11 on the H200: var_mean + LayerNorm, its inductor
    reduction kernel): the generated module calls ``triton_helpers.set_driver_to_gpu()`` at import,
    which asks ``torch.cuda`` and ``torch.version``; the snapshot's ``torch/`` is an empty stub folder,
    so the compile worker's torch placeholder must answer for it (before, every kernel failed with
    "module 'torch' has no attribute 'cuda'")."""
    workload = load_workload(H200_MODEL)
    kernel = next(k for k in workload.kernels if k.function.startswith("triton_per_fused_add_mul_native_layer_norm"))
    assert workload.snapshots[kernel.snapshot]["files"]["torch/__init__.py"] == ""
    tc = toolchain(f"triton=={version}")
    with Compiler(jobs=1, cache_dir=tmp_path / "artifacts") as compiler:
        artifact = compiler.compile(kernel.inputs[0].spec, tc)
    assert isinstance(artifact, Artifact), artifact
    assert artifact.kernel_name == kernel.function


PLACEHOLDER_PROGRAM = """
import sys
sys.path.insert(0, {insitu!r})
import placeholders
placeholders.install()
sys.path.insert(0, {snapshot!r})
import torch
from torch._inductor.runtime import helper
print(torch.__file__ if getattr(torch, "__file__", None) else "placeholder", torch.version.hip,
      torch.cuda.is_available(), helper.VALUE)
"""


def test_a_snapshot_stub_folder_gets_the_placeholder_and_a_real_torch_still_wins(toolchain, tmp_path: Path) -> None:
    snapshot = tmp_path / "snap"
    (snapshot / "torch" / "_inductor" / "runtime").mkdir(parents=True)
    for init in ("torch", "torch/_inductor", "torch/_inductor/runtime"):
        (snapshot / init / "__init__.py").write_text("")
    (snapshot / "torch" / "_inductor" / "runtime" / "helper.py").write_text("VALUE = 'from the snapshot'\n")
    prog = tmp_path / "p.py"
    prog.write_text(PLACEHOLDER_PROGRAM.format(insitu=str(INSITU), snapshot=str(snapshot)))
    tc = toolchain("triton==3.6.0")  # no torch in a toolchain's interpreter: the placeholder answers
    out = subprocess.run([str(tc.python), str(prog)], capture_output=True, text=True, check=True).stdout.split()
    assert out[:3] == ["placeholder", "None", "True"] and " ".join(out[3:]) == "from the snapshot"
    # where torch is installed (this interpreter), the stub folder in front of it does not hide it
    real = subprocess.run(
        [
            sys.executable,
            "-c",
            PLACEHOLDER_PROGRAM.format(insitu=str(INSITU), snapshot=str(snapshot)).replace(
                "from torch._inductor.runtime import helper", "helper = type('h', (), {'VALUE': 'x'})"
            ),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert real[0] == str(Path(torch.__file__))


def test_a_kernel_pickled_back_from_inductors_subprocess_is_reloaded_for_its_snapshot() -> None:
    """inductor's subprocess-compiled kernels arrive with ``fn.fn = None`` (prepare_for_pickle): the
    H200 recording of compiled_model lost one kernel's snapshot that way ("its source file could not be
    read"). The hook reloads it through inductor's ``_reload_kernel``, as inductor itself does.
    FAKE autotuner objects: only the attribute protocol is under test."""
    from types import SimpleNamespace

    def kernel() -> None: ...

    fresh = SimpleNamespace(fn=SimpleNamespace(fn=kernel))
    assert launch_hook.inductor_function(fresh) is kernel
    pickled = SimpleNamespace(
        fn=SimpleNamespace(fn=None), _reload_kernel=lambda: SimpleNamespace(fn=SimpleNamespace(fn=kernel))
    )
    assert launch_hook.inductor_function(pickled) is kernel
    assert (
        launch_hook.inductor_function(SimpleNamespace(fn=SimpleNamespace(fn=None))) is None
    )  # no way back: the caller notes why
