"""Kernels written against a library's re-export of Triton, or reading torch in a constexpr branch,
compile in a toolchain that has neither the library's stack nor torch (real Triton 3.4.0 and 3.6.0
wheels in their toolchains, real ptxas, no GPU).

- vLLM writes its kernels with ``from vllm.triton_utils import tl, triton``, and importing vllm needs
  torch and its package metadata. Here ``mypkg/__init__.py`` raises as vllm's import does in a worker;
  the kernel's ``from mypkg.utils import HAS_TRITON, tl, triton`` is bound to the toolchain's own
  ``triton``/``triton.language`` because ``mypkg/utils.py`` imports them itself (insitu/reexports.py),
  and the compile says so. A ``tl`` the library makes itself (a wrapper) is not taken for Triton's.
- torchao's hqq kernel reads ``torch.version.hip`` in a ``tl.constexpr`` branch: the torch placeholder
  is a plain module, as Triton requires of a global it does not track (it deep-copied a subclass).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import ktriage.api as kt
from ktriage.compile.compiler import Artifact, CompileFailure, Compiler
from ktriage.explain.failures import describe
from ktriage.insitu import reexports
from ktriage.insitu.kernel_source import extract
from ktriage.report.explain import to_json, to_markdown
from ktriage.spec.model import KernelSpec

UTILS = """
HAS_TRITON = True
if HAS_TRITON:
    import triton
    import triton.language as tl
else:
    triton = None
    tl = None
"""
KERNEL = """
import mypkg.heavy_host_side
from mypkg.utils import (
    HAS_TRITON,
    tl,
    triton,
)


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 5.0, mask=mask)
"""
HEAVY_INIT = 'raise RuntimeError("mypkg/__init__.py ran: the library needs its GPU stack to import")\n'
HIP_KERNEL = """
import torch
import triton
import triton.language as tl


@triton.jit
def hip_or_cuda_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if tl.constexpr(torch.version.hip is not None):
        factor = 7.0
    else:
        factor = 3.0
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)
"""


def _spec(source: str) -> KernelSpec:
    return KernelSpec(
        name="k",
        source=source,
        signature={"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        constexprs={"BLOCK": 256},
        divisible_by_16=("x_ptr", "out_ptr", "n"),
    )


def _package(root: Path, utils: str) -> Path:
    (root / "mypkg" / "ops").mkdir(parents=True)
    (root / "mypkg" / "__init__.py").write_text(HEAVY_INIT)
    (root / "mypkg" / "heavy_host_side.py").write_text("")
    (root / "mypkg" / "utils.py").write_text(utils)
    (root / "mypkg" / "ops" / "__init__.py").write_text("")
    kernel = root / "mypkg" / "ops" / "scale.py"
    kernel.write_text(KERNEL)
    return kernel


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.4.0", "3.6.0"])
def test_triton_reexported_by_a_library_that_does_not_import_is_the_toolchains_own(
    version: str, toolchain, compiler: Compiler, tmp_path: Path
) -> None:
    kernel = _package(tmp_path, UTILS)
    out = compiler.compile(_spec(f"{kernel}:scale_kernel"), toolchain(f"triton=={version}"))
    assert isinstance(out, Artifact), describe(out)
    assert set(out.frontend.triton_reexports) == {"mypkg.utils.tl -> triton.language", "mypkg.utils.triton -> triton"}
    assert "5.000000e+00" in out.frontend.text("ttir")
    # the kernel's lines are the file's: the store is line 14 of scale.py
    assert f'{kernel}":14:' in out.frontend.text("ttir")


@pytest.mark.slow
def test_the_report_says_which_names_were_bound_to_triton(toolchain, tmp_path: Path) -> None:
    kernel = _package(tmp_path, UTILS)
    spec = tmp_path / "spec.toml"
    spec.write_text(
        f'[[kernel]]\nname = "scale"\nsource = "{kernel}:scale_kernel"\ngrid = [4]\n[kernel.args]\n'
        'x_ptr = { dtype = "fp32", shape = [1024] }\nout_ptr = { dtype = "fp32", shape = [1024] }\n'
        "n = 1024\nBLOCK = 256\n"
    )
    toolchain("triton==3.4.0")
    report = kt.explain(target=spec, toolchains=["triton==3.4.0"])
    assert not report.result.failures
    line = (
        "Triton's own modules for names a library re-exports (the library not imported): "
        "mypkg.utils.tl -> triton.language, mypkg.utils.triton -> triton"
    )
    assert line in to_markdown(report.result, report.findings).replace("\\", "")
    (kernel_json,) = to_json(report.result, report.findings)["kernels"]  # type: ignore[misc]
    (cell,) = kernel_json["results"].values()  # type: ignore[index,union-attr]
    assert cell["artifact"]["triton_reexports"] == [  # type: ignore[index,call-overload]
        "mypkg.utils.tl -> triton.language",
        "mypkg.utils.triton -> triton",
    ]


@pytest.mark.slow
def test_a_tl_the_library_makes_itself_is_not_taken_for_tritons(toolchain, compiler: Compiler, tmp_path: Path) -> None:
    wrapped = UTILS + "tl = HAS_TRITON and tl\n"  # not Triton's module as imported: the library's own value
    kernel = _package(tmp_path, wrapped)
    out = compiler.compile(_spec(f"{kernel}:scale_kernel"), toolchain("triton==3.4.0"))
    assert isinstance(out, CompileFailure)
    assert "from mypkg.utils import" in out.message and "mypkg/__init__.py ran" in out.message


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.4.0", "3.6.0"])
def test_a_kernel_reading_torch_version_hip_compiles_the_cuda_branch(
    version: str, toolchain, compiler: Compiler, tmp_path: Path
) -> None:
    path = tmp_path / "hip_branch.py"
    path.write_text(HIP_KERNEL)
    out = compiler.compile(_spec(f"{path}:hip_or_cuda_kernel"), toolchain(f"triton=={version}"))
    assert isinstance(out, Artifact), describe(out)
    assert "torch" in out.frontend.placeholder_imports
    ttir = out.frontend.text("ttir")
    assert "3.000000e+00" in ttir and "7.000000e+00" not in ttir  # torch.version.hip is None: CUDA


def _reader(files: dict[str, str]) -> reexports.SourceReader:
    """A fake of the worker's reader (module name -> text on sys.path): these tests are of the rule."""
    return lambda module: (files[module], module.rpartition(".")[0] or None) if module in files else None


@pytest.mark.parametrize(
    ("utils", "name", "expected"),
    [
        ("import triton\nimport triton.language as tl\n", "tl", "triton.language"),
        ("import triton\nimport triton.language as tl\n", "triton", "triton"),
        ("import triton.language\n", "triton", "triton"),
        ("from triton import language as tl\n", "tl", "triton.language"),
        (UTILS, "tl", "triton.language"),  # vLLM's: a placeholder in the else branch, never taken here
        ("try:\n    import triton\nexcept ImportError:\n    triton = None\n", "triton", "triton"),
        ("from pkg.inner import tl\n", "tl", "triton.language"),  # re-exported twice
        ("from .inner import tl\n", "tl", "triton.language"),
        ("import triton\ntriton = wrap(triton)\n", "triton", None),  # the library's own value
        ("if FLAG:\n    import triton\n    triton = wrap(triton)\n", "triton", None),
        ("tl = make_language()\n", "tl", None),
        ("import numpy as tl\n", "tl", None),
        ("import triton.language as triton\nimport triton\n", "triton", None),  # bound to two modules
        ("def __getattr__(name):\n    import triton\n    return triton\n", "triton", None),
    ],
)
def test_which_names_count_as_tritons_own(utils: str, name: str, expected: str | None) -> None:
    files = {"pkg.utils": utils, "pkg.inner": "import triton.language as tl\n"}
    assert reexports.triton_module("pkg.utils", name, _reader(files)) == expected


def test_the_extracted_statement_binds_tritons_modules_on_its_own_line() -> None:
    asked: list[tuple[str, str]] = []

    def triton_module(module: str, name: str) -> str | None:
        asked.append((module, name))
        return {"tl": "triton.language", "triton": "triton"}.get(name)

    text, _ = extract(KERNEL, "scale_kernel", package="mypkg.ops", triton_module=triton_module)
    lines = text.splitlines()
    # HAS_TRITON is not read by the kernel: left out, so the library is not imported at all
    assert lines[2] == "import triton.language as tl; import triton"
    assert lines[9] == "@triton.jit" and KERNEL.splitlines()[9] == "@triton.jit"
    assert "mypkg" not in text
    assert ("mypkg.utils", "HAS_TRITON") in asked
    # without the rule (`ktriage record`'s extraction) the statement stays as written
    assert "from mypkg.utils import (" in extract(KERNEL, "scale_kernel", package="mypkg.ops")[0]
