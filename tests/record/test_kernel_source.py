"""A kernel compiles from its own source, not from its module's imports (issue 23, point 1).

Real Triton wheels in their toolchains, real ptxas: a kernel whose module imports packages that are
not installed in the toolchain (as TritonBench's low_mem_dropout imports tabulate), whose module runs
a program at import time, or that is defined in a class body, compiles; a kernel that truly reads a
missing module fails with an error naming it; a Triton error raised in a callee keeps its root cause.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ktriage.analyze.artifact import analyze_artifact
from ktriage.compile.compiler import Artifact, CompileFailure, Compiler
from ktriage.compile.messages import one_line
from ktriage.explain.failures import describe
from ktriage.explain.findings import failure_json
from ktriage.insitu.kernel_source import extract
from ktriage.spec.model import KernelSpec

pytestmark = pytest.mark.slow

MODULE = """
import tabulate_is_not_installed_here
import numpy_is_not_installed_here as np
from tabulate_is_not_installed_here import tabulate
import triton
import triton.language as tl

SCALE = tl.constexpr(2.0)
TABLE = tabulate([[1, 2]])


@triton.jit
def twice(x):
    return x * SCALE


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, twice(tl.load(x_ptr + offs, mask=mask)), mask=mask)


@triton.jit
def reads_numpy_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * np.pi, mask=offs < n)


class Operator:
    @triton.jit
    def method_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, twice(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)
"""

# A script that runs its program at import (no __main__ guard): importing it fails in a compile worker.
SCRIPT = """
import triton
import triton.language as tl
import torch


@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1, mask=offs < n)


x = torch.ones(1000, device="cuda")
assert x.sum().item() == 1000, "this program needs a GPU"
"""

# A builtin written for Triton 3.3's protocol (``_builder``), called by a 3.4 kernel, which passes
# ``_semantic``: Triton wraps the TypeError in a CompilationError that says only where (the gdc_wait
# failure of issue 23).
CALLEE_ERROR = """
import triton
import triton.language as tl
from triton.language import core


@core.builtin
def gdc_wait(_builder=None):
    return None


@triton.jit
def bad_kernel(x_ptr, BLOCK: tl.constexpr):
    gdc_wait()
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)
"""


def _spec(source: str, name: str, **extra: object) -> KernelSpec:
    return KernelSpec(
        name=name,
        source=source,
        signature={"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        constexprs={"BLOCK": 256},
        divisible_by_16=("x_ptr", "out_ptr", "n"),
        **extra,
    )  # type: ignore[arg-type]


@pytest.mark.parametrize("version", ["3.3.1", "3.4.0"])
def test_a_module_importing_missing_packages_compiles_its_kernel(
    version: str, toolchain, compiler: Compiler, tmp_path: Path
) -> None:
    tc = toolchain(f"triton=={version}")
    path = tmp_path / "kernels_with_host_imports.py"
    path.write_text(MODULE)
    out = compiler.compile(_spec(f"{path}:scale_kernel", "scale"), tc)
    assert isinstance(out, Artifact), describe(out)
    assert "tabulate_is_not_installed_here" in out.frontend.placeholder_imports
    # the jit callee read the module's global SCALE = 2.0
    assert "2.000000e+00" in out.frontend.text("ttir")


def test_a_kernel_that_reads_a_missing_module_is_an_error_naming_it(
    toolchain, compiler: Compiler, tmp_path: Path
) -> None:
    tc = toolchain("triton==3.4.0")
    path = tmp_path / "kernels_reading_numpy.py"
    path.write_text(MODULE)
    spec = KernelSpec(
        name="np",
        source=f"{path}:reads_numpy_kernel",
        signature={"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        constexprs={"BLOCK": 256},
    )
    out = compiler.compile(spec, tc)
    assert isinstance(out, CompileFailure)
    assert "the kernel reads np (numpy_is_not_installed_here)" in out.message
    assert "numpy_is_not_installed_here" in describe(out)


def test_a_script_that_runs_at_import_compiles_from_the_kernels_own_source(
    toolchain, compiler: Compiler, tmp_path: Path
) -> None:
    tc = toolchain("triton==3.4.0")
    path = tmp_path / "script_without_main_guard.py"
    path.write_text(SCRIPT)
    spec = KernelSpec(
        name="add_one",
        source=f"{path}:add_one",
        signature={"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        constexprs={"BLOCK": 1024},
    )
    out = compiler.compile(spec, tc)
    assert isinstance(out, Artifact), describe(out)
    # its line evidence names the script and reads its lines (the extracted copy keeps the line numbers),
    # not the temporary file the kernel was compiled from
    resources, _ = analyze_artifact(out)
    kernel_lines = [s for s in resources.source_lines if s.line and not s.file.startswith("triton/")]
    assert kernel_lines and {s.path for s in kernel_lines} == {str(path)}, [s.path for s in resources.source_lines]
    store = next(s for s in kernel_lines if "tl.store" in s.text)
    assert SCRIPT.splitlines()[store.line - 1].strip() == store.text
    assert not any("ktriage-extracted" in s.path or "ktriage-extracted" in s.file for s in resources.source_lines)


def test_a_callee_error_keeps_its_root_cause(toolchain, compiler: Compiler, tmp_path: Path) -> None:
    tc = toolchain("triton==3.4.0")
    path = tmp_path / "callee_error.py"
    path.write_text(CALLEE_ERROR)
    spec = KernelSpec(
        name="bad",
        source=f"{path}:bad_kernel",
        signature={"x_ptr": "*fp32", "BLOCK": "constexpr"},
        constexprs={"BLOCK": 16},
    )
    out = compiler.compile(spec, tc)
    assert isinstance(out, CompileFailure)
    assert "root cause: TypeError: gdc_wait() got an unexpected keyword argument '_semantic'" in out.message
    line = describe(out)  # the table's and the markdown's cell
    assert "TypeError: gdc_wait() got an unexpected keyword argument '_semantic'" in line, line
    assert "_semantic" in failure_json(out)["message"]  # the JSON's failures
    # a bench bundle's failed artifact becomes the GPU host's error cell with the same one line
    assert "_semantic" in one_line(out.message, out.kind) and one_line(out.message, out.kind) in line


def test_extract_keeps_what_the_kernel_needs_at_its_lines() -> None:
    text, kept = extract(MODULE, "Operator.method_kernel", package="pkg")
    assert "import triton.language as tl" in text and "def twice" in text and "SCALE = tl.constexpr(2.0)" in text
    assert "tabulate" not in text and "numpy" not in text and "class Operator" not in text
    original = MODULE.splitlines()
    ours = text.splitlines()
    def_line = next(i for i, ln in enumerate(original) if "def method_kernel" in ln)
    assert ours[def_line] == "def method_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):"
    assert kept == ["triton", "tl", "SCALE", "twice", "method_kernel"]


# A script whose top-level loop launches the kernel with variables named as the kernel's parameters
# (benchmarks/record/h200/many_launches.workload.json.gz, recorded from such a script).
SCRIPT_LOOP = """
import torch
import triton
import triton.language as tl


@triton.jit
def add(x, y, o, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(o + i, tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)


sizes = [4096, 8192]
xs = {n: (torch.randn(n, device="cuda"), torch.randn(n, device="cuda"), torch.empty(n, device="cuda")) for n in sizes}
for n in sizes:
    x, y, o = xs[n]
    add[(triton.cdiv(n, 1024),)](x, y, o, n, BLOCK=1024)
"""


def test_extract_leaves_out_statements_that_bind_only_the_kernels_own_names() -> None:
    """The kernel's parameters and locals are its own: a top-level loop that binds ``x, y, o, n`` (and
    calls the kernel) is not something the kernel needs. Kept, it ran the recorded program's loop
    at compile time, and the many_launches recording compiled with neither Triton 3.3.1 nor 3.6.0."""
    text, kept = extract(SCRIPT_LOOP, "add", package=None)
    assert kept == ["triton", "tl", "add"], kept
    assert "torch" not in text and "for n in sizes" not in text


def test_extract_keeps_a_star_import_only_for_a_name_nothing_else_binds() -> None:
    text = "import triton\nfrom helpers import *\nfrom other import *\n\n@triton.jit\ndef k(x):\n    y = x\n    return twice(y)\n"
    kept, _ = extract(text, "k", package=None)
    assert "from helpers import *" in kept and "from other import *" in kept
    plain = text.replace("twice(y)", "y")
    assert "import *" not in extract(plain, "k", package=None)[0]


def test_a_placeholder_is_for_one_module_only(tmp_path: Path) -> None:
    """A module that guards an optional import still sees it missing after another kernel's module
    needed a placeholder for it (the worker serves many kernels in one process)."""
    import subprocess
    import sys

    from ktriage.insitu import worker

    (tmp_path / "needs.py").write_text("import optional_dep_not_here\nVALUE = 1\n")
    (tmp_path / "guards.py").write_text(
        "try:\n    import optional_dep_not_here\n    HAS = True\nexcept ImportError:\n    HAS = False\n"
    )
    code = (
        f"import sys; sys.path.insert(0, {str(Path(worker.__file__).parent)!r}); sys.path.insert(0, {str(tmp_path)!r})\n"
        "import placeholders, worker\nplaceholders.install()\n"
        "assert worker._import_with_placeholders('needs').VALUE == 1\n"
        "import guards\nprint(guards.HAS)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.stdout.strip() == "False", out.stderr[-2000:]
