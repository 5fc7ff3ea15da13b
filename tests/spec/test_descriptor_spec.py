"""A host-side ``TensorDescriptor`` argument written in a spec by values: ``{ dtype, shape, strides,
block_shape }`` (spec/values.descriptor_value). Before, ``block_shape`` was "1 unknown tensor key", and
the same kernel written by types failed at assembly ("the PTX entry takes 11 parameters but the
signature has 2 runtime arguments"): no spec could explain a kernel that takes one. The loader's checks
are fast; the compiles are real (Triton 3.3.1, 3.4.0 and 3.9.0 wheels, their ptxas, sm_90 and sm_80, no
GPU): the worker builds a real TensorDescriptor over a stand-in tensor, each toolchain's JIT types it,
and the PTX is what ``triton.compile`` makes for the JIT's signature, text for text."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import ktriage.api as kt
from ktriage.compile.compiler import CompileFailure
from ktriage.errors import KtriageError
from ktriage.explain.engine import KernelResult
from ktriage.explain.failures import describe
from ktriage.measure.params import param_size
from ktriage.spec import Descriptor
from ktriage.spec.toml_file import dump_spec_toml, loads_spec
from ktriage.spec.values import spec_by_values

KERNEL = """\
import triton
import triton.language as tl


@triton.jit
def copy_tile(in_desc, out_desc, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    tile = in_desc.load([pid_m * BLOCK_M, pid_n * BLOCK_N])
    out_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], tile * 2)
"""
DESC = '{ dtype = "fp16", shape = [4096, 2048], strides = [2048, 1], block_shape = [64, 32] }'
ARGS = f"in_desc = {DESC}\nout_desc = {DESC}\nBLOCK_M = 64\nBLOCK_N = 32\n"
TYPE = "tensordesc<fp16[64, 32]>"


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    (tmp_path / "tiles.py").write_text(KERNEL)
    return tmp_path


def _spec_text(args: str = ARGS, target: str = "sm_90") -> str:
    return f'[kernel]\nsource = "tiles.py:copy_tile"\ntarget = "{target}"\ngrid = [64, 64]\n[kernel.args]\n{args}'


def test_a_descriptor_loads_with_the_jit_s_type(folder: Path) -> None:
    (spec,) = loads_spec(_spec_text(), base_dir=folder, origin="spec.toml")
    assert spec.signature == {"in_desc": TYPE, "out_desc": TYPE, "BLOCK_M": "constexpr", "BLOCK_N": "constexpr"}
    assert dict(spec.launch["args"])["in_desc"] == {
        "descriptor": "fp16",
        "shape": [4096, 2048],
        "strides": [2048, 1],
        "block_shape": [64, 32],
    }
    assert spec.divisible_by_16 == ()


@pytest.mark.parametrize(
    ("desc", "problem", "fix"),
    [
        (
            '{ dtype = "fp16", shape = [4096, 2048], strides = [2048, 1], block_shape = [64, 32], align = 16 }',
            "argument in_desc: 1 unknown tensor descriptor key ['align']",
            "a tensor descriptor (a table with block_shape) has block_shape, dtype, padding, shape, strides",
        ),
        (
            '{ dtype = "fp16", shape = [4096, 2048], strides = [2050, 1], block_shape = [64, 32] }',
            "strides [2050, 1] of a fp16 tensor descriptor: a TMA descriptor needs the last stride 1",
            "(strides in elements: multiples of 8 for fp16)",
        ),
        (
            '{ dtype = "fp16", shape = [4096, 2048], block_shape = [64, 48] }',
            "block_shape [64, 48] has a dimension that is not a power of two",
            "e.g. block_shape = [128, 64]",
        ),
        (
            '{ dtype = "fp16", shape = [4096, 2048], block_shape = [64] }',
            "block_shape has 1 dimension for a shape of 2",
            "give one per dimension of shape",
        ),
        (
            '{ dtype = "fp16", shape = [4096, 2048], block_shape = [64, 32], padding = "inf" }',
            "argument in_desc: tensor descriptor padding 'inf'",
            'padding is "zero" (out-of-bounds loads read 0, the default) or "nan"',
        ),
        (
            '{ dtype = "i32", shape = [4096, 2048], block_shape = [64, 32], padding = "nan" }',
            'argument in_desc: padding = "nan" on a i32 tensor descriptor',
            "Triton pads with NaN for floating-point types only",
        ),
    ],
)
def test_a_descriptor_or_padding_triton_would_refuse_is_refused_when_the_file_loads(
    folder: Path, desc: str, problem: str, fix: str
) -> None:
    with pytest.raises(KtriageError) as info:
        loads_spec(_spec_text(ARGS.replace(DESC, desc, 1)), base_dir=folder, origin="spec.toml")
    assert problem in info.value.problem and fix in info.value.fix


# Triton compiling the kernel for the JIT's signature, in the toolchain's own interpreter
DIRECT = """
import json, sys
job = json.loads(sys.argv[1])
sys.path.insert(0, job["folder"])
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import tiles
src = ASTSource(tiles.copy_tile, job["signature"], {(2,): 64, (3,): 32}, {})
sys.stdout.write(triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4}).asm["ptx"])
"""


@pytest.mark.slow
def test_explain_compiles_a_descriptor_kernel_and_refuses_it_before_triton_3_4(
    folder: Path, toolchain: Any, tmp_path: Path
) -> None:
    old, new, newest = "triton==3.3.1", "triton==3.4.0", "triton==3.9.0"
    (folder / "spec.toml").write_text(_spec_text())
    for tc in (old, new, newest):
        toolchain(tc)
    report = kt.explain(target=folder / "spec.toml", toolchains=[old, new, newest])
    (item,) = report.result.specs
    cells = {str(r.toolchain.spec): r for r in item.results.values()}
    for tc in (new, newest):
        cell = cells[tc]
        assert isinstance(cell, KernelResult), describe(cell)
        assert cell.artifact.spec.signature["in_desc"] == TYPE  # the JIT's own type for the descriptor
        assert cell.resources.registers > 0
        # lowered to TMA on sm_90: the CUtensorMap, then shape (i32) and strides (i64) per dimension
        abi = [(p.name, p.ptx_type) for p in cell.artifact.abi if p.name.startswith("in_desc")]
        assert [name for name, _ in abi] == ["in_desc", "in_desc[1]", "in_desc[2]", "in_desc[3]", "in_desc[4]"]
        with pytest.raises(
            KtriageError, match="'in_desc' has Triton type 'tensordesc<fp16\\[64, 32\\]>', which the runner"
        ):
            param_size(cell.artifact.abi[0])  # the runner cannot fill a CUtensorMap: a bench refuses, naming it
    ptx = cells[new].artifact.frontend.ptx_path.read_text()
    assert "cp.async.bulk.tensor" in ptx
    job = {
        "folder": str(folder),
        "signature": {"in_desc": TYPE, "out_desc": TYPE, "BLOCK_M": "constexpr", "BLOCK_N": "constexpr"},
    }
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "triton-cache")}
    direct = subprocess.run(
        [str(toolchain(new).python), "-c", DIRECT, json.dumps(job)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert direct.returncode == 0, direct.stderr[-2000:]
    assert ptx == direct.stdout
    refused = cells[old]
    assert isinstance(refused, CompileFailure) and refused.kind == "spec"
    line = describe(refused)
    assert "argument in_desc is a host-side TensorDescriptor, which Triton 3.3.1 does not have (it came in 3.4)" in line
    assert line.endswith("fix: compare this kernel across Triton 3.4 and later (e.g. -t triton==3.4.0)")


@pytest.mark.slow
def test_a_descriptor_not_lowered_to_tma_still_compiles(folder: Path, toolchain: Any) -> None:
    """On sm_80 Triton passes the descriptor as a pointer, shape and strides, and from 3.5 flag bytes
    (two in 3.9): the launch ABI is read off the PTX, the compile's resources stand."""
    (folder / "spec.toml").write_text(_spec_text(target="sm_80"))
    toolchain("triton==3.9.0")
    report = kt.explain(target=folder / "spec.toml", toolchains=["triton==3.9.0"])
    ((cell),) = [r for s in report.result.specs for r in s.results.values()]
    assert isinstance(cell, KernelResult), describe(cell)
    abi = [p for p in cell.artifact.abi if p.name.startswith("in_desc")]
    assert len(abi) == 1 + 4 * 2 + 2 and abi[0].ptx_type.startswith("u64")
    assert [p.name for p in cell.artifact.abi if p.hidden] == ["global_scratch", "profile_scratch"]


def test_padding_is_part_of_the_descriptor_and_zero_is_the_default(folder: Path) -> None:
    """``padding = "nan"`` (Triton 3.5+) reaches the worker with the launch; ``"zero"``, all Triton 3.4 has,
    is the default: a spec that says it is the spec that does not (one key, one compile), and 3.4 compiles it.
    Before, ``padding`` was "1 unknown tensor descriptor key"."""
    nan = DESC.replace("block_shape", 'padding = "nan", block_shape')
    zero = DESC.replace("block_shape", 'padding = "zero", block_shape')
    (padded,) = loads_spec(_spec_text(ARGS.replace(DESC, nan, 1)), base_dir=folder, origin="spec.toml")
    (zeroed,) = loads_spec(_spec_text(ARGS.replace(DESC, zero, 1)), base_dir=folder, origin="spec.toml")
    (plain,) = loads_spec(_spec_text(), base_dir=folder, origin="spec.toml")
    assert dict(padded.launch["args"])["in_desc"]["padding"] == "nan"
    assert padded.signature["in_desc"] == TYPE  # the JIT's type does not carry it
    assert "padding" not in dict(zeroed.launch["args"])["in_desc"]
    assert zeroed.key() == plain.key() != padded.key()
    # written back as the file reads it
    (again,) = loads_spec(dump_spec_toml(padded), base_dir=folder, origin="again.toml")
    assert again.key() == padded.key()


def test_the_python_form_is_checked_as_the_file_is(folder: Path) -> None:
    with pytest.raises(KtriageError, match="tensor descriptor padding 'NaN'"):
        spec_by_values(
            f"{folder / 'tiles.py'}:copy_tile",
            {
                "in_desc": Descriptor("fp16", (4096, 2048), (2048, 1), (64, 32), padding="NaN"),
                "out_desc": Descriptor("fp16", (4096, 2048), (2048, 1), (64, 32)),
                "BLOCK_M": 64,
                "BLOCK_N": 32,
            },
            grid=[64, 64],
        )


@pytest.mark.slow
def test_nan_padding_compiles_from_triton_3_5_and_is_refused_by_3_4(folder: Path, toolchain: Any) -> None:
    """Triton 3.4's TensorDescriptor has no padding: its cell names the field, the version and the fix; 3.6.0
    builds the descriptor with it and compiles the kernel as it does without (padding is a launch-time fill)."""
    nan = DESC.replace("block_shape", 'padding = "nan", block_shape')
    (folder / "spec.toml").write_text(_spec_text(ARGS.replace(DESC, nan, 1)))
    for tc in ("triton==3.4.0", "triton==3.6.0"):
        toolchain(tc)
    report = kt.explain(target=folder / "spec.toml", toolchains=["triton==3.4.0", "triton==3.6.0"])
    (item,) = report.result.specs
    cells = {str(r.toolchain.spec): r for r in item.results.values()}
    compiled = cells["triton==3.6.0"]
    assert isinstance(compiled, KernelResult), describe(compiled)
    assert compiled.artifact.spec.signature["in_desc"] == TYPE
    refused = cells["triton==3.4.0"]
    assert isinstance(refused, CompileFailure) and refused.kind == "spec"
    line = describe(refused)
    assert 'argument in_desc is a TensorDescriptor with padding = "nan", which Triton 3.4.0 does not have' in line
    assert "fix: compare this kernel across Triton 3.5 and later (e.g. -t triton==3.5.0), or drop padding" in line
