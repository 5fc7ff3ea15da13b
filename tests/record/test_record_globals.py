"""Module-level values computed by host helpers, recorded and compiled from the workload (issue 23's
serving kernels), through the real ``ktriage record`` and Triton 3.6.0's real launch path (only the
GPU driver faked), then compiled by ktriage from the workload alone and compared with the JIT's cubin.

The two patterns of vLLM's attention kernels, in kernels of our own:
- a constexpr whose default is a module-level expression (``FP8_MIN: tl.constexpr = float8_info.min``,
  ``float8_info`` made by a platform helper): the spec must carry the value the JIT bound;
- a module whose host helpers exist only in the recorded program (``servingish.platforms``,
  ``servingish.triton_utils``, which re-exports ``tl`` and ``triton``, as ``vllm.triton_utils`` does):
  the kernel reads ``tl``, ``triton`` and ``IS_HIP = tl.constexpr(current_platform.is_rocm())``, and
  a jit helper from a module of its package that imports ``tl`` and ``triton`` the same way; the
  compile machine cannot import either module; the recorded values stand in for the host code.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from record_helpers import INSITU, record_cli

from ktriage.analyze.cuobjdump import run_cuobjdump
from ktriage.compile.compiler import Artifact, CompileFailure, Compiler
from ktriage.insitu import kernel_source
from ktriage.record.snapshot import materialize, requirement, snapshot_digest
from ktriage.record.workload import load_workload
from ktriage.spec.packages import snapshot_dir

pytestmark = pytest.mark.slow

ATTN_OPS = """\
import math

from servingish.attn_helpers import _scaled
from servingish.platforms import current_platform
from servingish.triton_utils import tl, triton

float8_info = current_platform.fp8_info()
IS_HIP = tl.constexpr(current_platform.is_rocm())
is_hip_ = current_platform.is_rocm()
LOG2E = tl.constexpr(1.0 / math.log(2.0))


@triton.jit
def merge_states_kernel(out_ptr, a_ptr, b_ptr, n, BLOCK: tl.constexpr, USE_FP8: tl.constexpr = False,
                        FP8_MIN: tl.constexpr = float8_info.min, FP8_MAX: tl.constexpr = float8_info.max):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.minimum(tl.maximum(x, FP8_MIN), FP8_MAX), mask=mask)


@triton.jit
def decode_stage1_kernel(out_ptr, q_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    q = tl.load(q_ptr + offs, mask=mask)
    if IS_HIP:
        q = q * 2.0
    else:
        q = _scaled(q, LOG2E)
    tl.store(out_ptr + offs, q, mask=mask)


class Scaler:
    @triton.jit
    def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):  # a method's kernel: compiled from its own source
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        if IS_HIP:
            x = x * 2.0
        tl.store(x_ptr + offs, _scaled(x, LOG2E), mask=offs < n)


def decode(q, out, n):
    block = 8 if is_hip_ else 64  # host code reads is_hip_ too
    return decode_stage1_kernel[(triton.cdiv(n, block),)](out, q, n, BLOCK=block)


def merge(a, b, out, n):
    return merge_states_kernel[(triton.cdiv(n, 128),)](out, a, b, n, BLOCK=128)
"""

# a module of @triton.jit helpers that imports tl and triton from the host helper module too
# (vLLM's triton_attention_helpers): it is in the snapshot, and must import on the compile machine
ATTN_HELPERS = """\
from servingish.triton_utils import tl, triton


@triton.jit
def _scaled(x, s):
    return x * s
"""

PROGRAM = """
import sys, types
sys.path.insert(0, {insitu!r})
import fakedriver  # stands in for the GPU: Triton's real launch path, no device
fakedriver.install(90)
import triton
import triton.language as tl

# the engine's host-side helpers, answered by stand-ins of the program (no file: nothing to snapshot)
class _Info:
    min, max = -448.0, 448.0
platforms = types.ModuleType("servingish.platforms")
platforms.current_platform = types.SimpleNamespace(is_rocm=lambda: False, fp8_info=lambda: _Info())
triton_utils = types.ModuleType("servingish.triton_utils")
triton_utils.tl, triton_utils.triton = tl, triton
sys.modules.update({{"servingish.platforms": platforms, "servingish.triton_utils": triton_utils}})
sys.path.insert(0, {src!r})
from servingish import attn_ops

x, y, out = (fakedriver.FakeTensor("fp32", shape=(4096,)) for _ in range(3))
for name, compiled in (("merge", attn_ops.merge(x, y, out, 4096)), ("decode", attn_ops.decode(x, out, 4096)),
                       ("scale", attn_ops.Scaler.scale_kernel[(32,)](x, 4096, BLOCK=128))):
    with open({jit!r} + "/" + name + ".cubin", "wb") as fh:
        fh.write(compiled.asm["cubin"])
print("done")
"""


def test_serving_patterns_record_and_compile_like_the_jit(
    toolchain, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tc = toolchain("triton==3.6.0")
    src, jit = tmp_path / "src", tmp_path / "jit"
    (src / "servingish").mkdir(parents=True)
    (src / "servingish" / "__init__.py").write_text("")
    (src / "servingish" / "attn_ops.py").write_text(ATTN_OPS)
    (src / "servingish" / "attn_helpers.py").write_text(ATTN_HELPERS)
    jit.mkdir()
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM.format(insitu=str(INSITU), src=str(src), jit=str(jit)))
    out = tmp_path / "W.json"
    assert record_cli(out, [str(tc.python), str(prog)]) == 0
    capsys.readouterr()
    workload = load_workload(out)
    assert not workload.not_captured, workload.not_captured
    by_name = {k.function: k for k in workload.kernels}
    assert set(by_name) == {"merge_states_kernel", "decode_stage1_kernel", "scale_kernel"}

    # 1. the defaults the launch left out are recorded with the values the JIT bound
    (merge,) = by_name["merge_states_kernel"].inputs
    assert merge.spec.constexprs == {"BLOCK": 128, "USE_FP8": False, "FP8_MIN": -448.0, "FP8_MAX": 448.0}
    assert [a[0] for a in merge.args][-3:] == ["USE_FP8", "FP8_MIN", "FP8_MAX"]
    assert merge.jit_check == "same" and by_name["decode_stage1_kernel"].inputs[0].jit_check == "same"

    # 2. the module-level values the kernels read are kept in their snapshot (both kernels share it)
    digest = by_name["merge_states_kernel"].snapshot
    assert by_name["decode_stage1_kernel"].snapshot == digest
    files = workload.snapshots[digest]["files"]
    assert "servingish/platforms.py" not in files and "servingish/triton_utils.py" not in files
    recorded = kernel_source.read_globals(files[kernel_source.GLOBALS_FILE])["servingish.attn_ops"]
    assert recorded["values"]["tl"] == {"module": "triton.language"} and recorded["values"]["triton"] == {
        "module": "triton"
    }
    assert recorded["values"]["IS_HIP"] == {"constexpr": False}
    assert recorded["defaults"]["merge_states_kernel"]["FP8_MIN"] == -448.0
    assert recorded["values"]["_scaled"] == {"import": "servingish.attn_helpers:_scaled"}
    helpers = kernel_source.read_globals(files[kernel_source.GLOBALS_FILE])["servingish.attn_helpers"]
    assert helpers["values"] == {"tl": {"module": "triton.language"}, "triton": {"module": "triton"}}

    # the method's kernel: its own source, cut out at record time, has the values in place of the host code
    scaler = by_name["scale_kernel"]
    nested = workload.snapshots[scaler.snapshot]["files"][scaler.module + ".py"]
    assert "servingish.platforms" not in nested and "servingish.triton_utils" not in nested
    assert "IS_HIP = __import__('triton.language').language.constexpr(False)" in nested

    # compiled elsewhere from the workload alone: the sources gone, no servingish.platforms there
    shutil.rmtree(src)
    for k in workload.kernels:
        shutil.rmtree(snapshot_dir(f"snapshot:{k.snapshot}"), ignore_errors=True)
    workload = load_workload(out)
    with Compiler(jobs=1, cache_dir=tmp_path / "artifacts") as compiler:
        for kernel, cubin in (
            (by_name["merge_states_kernel"], "merge"),
            (by_name["decode_stage1_kernel"], "decode"),
            (by_name["scale_kernel"], "scale"),
        ):
            spec = next(k for k in workload.kernels if k.function == kernel.function).inputs[0].spec
            artifact = compiler.compile(spec, tc)
            assert isinstance(artifact, Artifact), artifact
            ours = run_cuobjdump(tc.cuobjdump, artifact.cubin.cubin_path, "-sass")
            # the JIT's machine code (the cubins differ only in the line-info section naming the source file)
            assert ours == run_cuobjdump(tc.cuobjdump, jit / f"{cubin}.cubin", "-sass"), kernel.function
            assert kernel.function in ours

        # a workload recorded before the values were kept (its snapshot without the file) fails as before,
        # naming the host module that the kernel's module and its helpers' module import
        old_files = {k: v for k, v in files.items() if k != kernel_source.GLOBALS_FILE}
        old_digest = snapshot_digest(old_files)
        materialize(old_digest, old_files)
        old_spec = by_name["decode_stage1_kernel"].inputs[0].spec.replace(package=requirement(old_digest))
        failure = compiler.compile(old_spec, tc)
        assert isinstance(failure, CompileFailure)
        assert "No module named 'servingish.triton_utils'" in failure.message, failure.message
