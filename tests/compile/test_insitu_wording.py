"""The two insitu messages that counted with a hand-made plural ("constexpr parameter(s)", "config{'s'}")
are worded as lists and labels instead: ktriage/insitu runs in a toolchain's interpreter and may not import
ktriage.wording (the first import-linter contract). Each through the function that words it, in a real
toolchain's Python and Triton."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ktriage.compile.compiler import CompileFailure
from ktriage.spec.toml_file import loads_spec

pytestmark = pytest.mark.slow

INSITU = Path(__file__).parents[2] / "ktriage" / "insitu"

KERNEL = """import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=1)], key=["n"])
@triton.jit
def tuned(x_ptr, n, BLOCK: tl.constexpr):
    k(x_ptr, n, BLOCK)
"""

# Started as the compile worker is (this folder first on sys.path, ktriage not importable), in the toolchain.
BUILD_SOURCE = """import importlib.util, sys
sys.path.insert(0, sys.argv[1])
import worker
spec = importlib.util.spec_from_file_location("kern", sys.argv[2])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
signature = {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
for heuristics in ({}, {"BLOCK": None}):
    try:
        worker.build_source(mod.k, {"signature": signature}, heuristics)
    except worker.WorkerError as exc:
        print(exc)
"""


def test_a_missing_constexpr_is_named_in_a_list(toolchain, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    tc = toolchain("triton==3.4.0")
    kern = tmp_path / "kern.py"
    kern.write_text(KERNEL)
    out = subprocess.run(
        [str(tc.python), "-c", BUILD_SOURCE, str(INSITU), str(kern)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == [
        "constexpr parameters without a value: BLOCK",
        "constexpr parameters without a value: BLOCK; computed by the kernel's @triton.heuristics from the "
        "launch's arguments: BLOCK (record the launch with ktriage's JIT harness or `record`, or give the values)",
    ]
    assert sys.executable != str(tc.python)  # the toolchain's own interpreter, not this one


def test_an_autotune_index_past_one_config_is_counted_as_a_label(toolchain, compiler, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    tc = toolchain("triton==3.4.0")
    kern = tmp_path / "kern.py"
    kern.write_text(KERNEL)
    args = '[kernel.args]\nx_ptr = { dtype = "fp32", shape = [4096] }\nn = 4096\n'
    (spec,) = loads_spec(
        f'[kernel]\nsource = "{kern}:tuned"\ngrid = [16]\nautotune_config = 3\n{args}', base_dir=tmp_path
    )
    past = compiler.compile(spec, tc)
    assert isinstance(past, CompileFailure)
    assert (
        "autotune_config = 3 is past the @triton.autotune of tuned (configs tried for this launch: 1)" in past.message
    )
    assert "fix: autotune_config is an index into its configs, from 0 to 0" in past.message
