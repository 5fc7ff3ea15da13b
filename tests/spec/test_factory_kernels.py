"""Kernels held in a class body or made by a factory at import time, named by a spec file and compiled
for real (Triton 3.3.1 and 3.4.0 wheels, their ptxas, no GPU): ``explain`` compiles exactly what
Triton compiles for the module's attribute (the PTX of a direct ``triton.compile`` of
``factory.RMSNorm.fwd_kernel`` / ``factory.scale2_kernel`` in the same toolchain, text for text).
Where the kernel cannot be compiled the error says why and what to do: Triton 3.3.1 does not see a
factory's closed-over constexpr (its own JIT fails the same way), and a factory's result cannot be cut
out of a module that does not import. The spec loader's side (fast): tests/spec/test_kernel_def.py."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import ktriage.api as kt
from ktriage.compile.compiler import CompileFailure
from ktriage.explain.engine import KernelResult
from ktriage.explain.failures import describe
from tests.spec.test_cross_module_factory import COMMON, OPS
from tests.spec.test_kernel_def import FACTORY, RMS_ARGS, SCALE_ARGS

pytestmark = pytest.mark.slow  # real compiles with two toolchains

OLD, NEW = "triton==3.3.1", "triton==3.4.0"
SPECS = (
    f'[[kernel]]\nname = "scale"\nsource = "factory.py:scale2_kernel"\ngrid = [4]\n[kernel.args]\n{SCALE_ARGS}\n'
    f'[[kernel]]\nname = "rms"\nsource = "factory.py:RMSNorm.fwd_kernel"\ngrid = [64]\n[kernel.args]\n{RMS_ARGS}'
)
# Triton compiling the module's attribute itself, as the JIT would for these launches (all pointers and
# ints divisible by 16; Triton's default 4 warps, 3 stages), in the toolchain's own interpreter
DIRECT = """
import importlib, json, sys
job = json.loads(sys.argv[1])
sys.path.insert(0, job["folder"])
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
fn = importlib.import_module(job.get("module", "factory"))
for part in job["attribute"].split("."):
    fn = getattr(fn, part)
attrs = {(fn.arg_names.index(n),): [["tt.divisibility", 16]] for n in job["divisible"]}
src = ASTSource(fn, job["signature"], job["constexprs"], attrs)
sys.stdout.write(triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4}).asm["ptx"])
"""
CASES = {
    "scale": (
        "scale2_kernel",
        {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        ["x_ptr", "y_ptr", "n"],
    ),
    "rms": (
        "RMSNorm.fwd_kernel",
        {"x_ptr": "*bf16", "w_ptr": "*bf16", "y_ptr": "*bf16", "N": "i32", "eps": "fp32", "BLOCK": "constexpr"},
        ["x_ptr", "w_ptr", "y_ptr", "N"],
    ),
}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, toolchain: Any) -> Any:
    folder = tmp_path_factory.mktemp("factory")
    (folder / "factory.py").write_text(FACTORY)
    (folder / "spec.toml").write_text(SPECS)
    toolchain(OLD)
    toolchain(NEW)
    return kt.explain(target=folder / "spec.toml", toolchains=[OLD, NEW])


def _cells(report: Any, name: str) -> dict[str, Any]:
    (item,) = [s for s in report.result.specs if s.spec.name == name]
    return {str(r.toolchain.spec): r for r in item.results.values()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_explain_compiles_what_triton_compiles_for_the_attribute(
    report: Any, toolchain: Any, name: str, tmp_path: Path
) -> None:
    attribute, signature, divisible = CASES[name]
    cell = _cells(report, name)[NEW]
    assert isinstance(cell, KernelResult), describe(cell)
    spec = cell.artifact.spec
    assert spec.signature == signature and sorted(spec.divisible_by_16) == sorted(divisible)
    job = {
        "folder": str(Path(spec.source.rpartition(":")[0]).parent),
        "attribute": attribute,
        "signature": signature,
        "constexprs": {"BLOCK": 1024},
        "divisible": divisible,
    }
    # a cache of its own: Triton's default one (~/.triton) keys a kernel by its text, not its file, and
    # would serve a PTX naming the file of an earlier run
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "triton-cache")}
    direct = subprocess.run(
        [str(toolchain(NEW).python), "-c", DIRECT, json.dumps(job)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert direct.returncode == 0, direct.stderr[-2000:]
    assert cell.artifact.frontend.ptx_path.read_text() == direct.stdout
    assert cell.resources.registers > 0


def test_the_class_kernel_compiles_with_every_toolchain(report: Any) -> None:
    assert all(isinstance(c, KernelResult) for c in _cells(report, "rms").values())


def test_a_closure_the_old_triton_cannot_see_says_so_and_keeps_the_other_result(report: Any) -> None:
    """Triton 3.3.1 reads a kernel's module globals only: the factory's FACTOR is a NameError there, as
    in its own JIT. The cell says it is a closed-over value and what to do; 3.4.0's result stays."""
    cells = _cells(report, "scale")
    old = cells[OLD]
    assert isinstance(old, CompileFailure) and isinstance(cells[NEW], KernelResult)
    line = describe(old)
    assert line.startswith("frontend: the kernel reads FACTOR, a value it closes over (its factory's)"), line
    assert "fix: make FACTOR a module-level tl.constexpr, or a tl.constexpr parameter of the kernel" in line
    assert "FACTOR is not defined" in old.message  # Triton's own error is kept below


def test_the_json_specialization_holds_what_docs_specs_md_says(report: Any) -> None:
    """docs/specs.md: each result's ``artifact.specialization`` holds the toolchain's decision; the launch
    is the kernel's ``spec.launch``."""
    (kernel,) = [k for k in report.to_json()["kernels"] if k["name"] == "rms"]
    for result in kernel["results"].values():
        specialization = result["artifact"]["specialization"]
        assert set(specialization) == {
            "signature",
            "constexprs",
            "divisible_by_16",
            "equal_to_1",
            "num_warps",
            "num_stages",
        }
        assert specialization["constexprs"] == {"BLOCK": 1024}
    assert [name for name, _ in kernel["spec"]["launch"]["args"]][-1] == "BLOCK"
    meta = _cells(report, "rms")[NEW].artifact.spec.meta  # the rest: the API's resolved spec
    assert meta["launch"] == kernel["spec"]["launch"] and [name for name, _ in meta["jit_args"]][0] == "x_ptr"


def test_a_factory_result_of_a_module_that_does_not_import_says_what_to_do(tmp_path: Path, toolchain: Any) -> None:
    """The class kernel is compiled from its own source (a ``@staticmethod`` kernel unwrapped); the
    factory's result exists only in the imported module, and the error says so, not "defines no"."""
    (tmp_path / "factory.py").write_text(FACTORY + 'SETTINGS = open("/nonexistent/settings.json").read()\n')
    (tmp_path / "spec.toml").write_text(SPECS)
    toolchain(NEW)
    report = kt.explain(target=tmp_path / "spec.toml", toolchains=[NEW])
    assert isinstance(_cells(report, "rms")[NEW], KernelResult)
    scale = _cells(report, "scale")[NEW]
    assert isinstance(scale, CompileFailure) and scale.kind == "import"
    assert "FileNotFoundError" in scale.message
    assert "scale2_kernel is made when the module runs (line 34 `scale2_kernel = make_scale_kernel(2.0)`)" in (
        scale.message
    )
    assert describe(scale).endswith(
        "fix: scale2_kernel exists only in the imported module: make the module import without a GPU, or write "
        "the kernel as a module-level @triton.jit def"
    )


def test_a_factory_of_another_module_compiles_what_triton_compiles(tmp_path: Path, toolchain: Any) -> None:
    """``relative = make_kernel(2.0)`` with ``from ..common import make_kernel`` (and ``common.make_kernel(3.0)``):
    the loader follows the import to read the parameters, and the worker, which imports the file as its
    package's module, compiles the kernel with the value the factory closed over: the PTX of a direct
    ``triton.compile`` of ``mypkg.ops.scale.relative``, text for text, and not the other factor's."""
    (tmp_path / "mypkg" / "ops").mkdir(parents=True)
    (tmp_path / "mypkg" / "__init__.py").write_text("from .common import make_kernel\n")
    (tmp_path / "mypkg" / "ops" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "common.py").write_text(COMMON)
    (tmp_path / "mypkg" / "ops" / "scale.py").write_text(OPS)
    (tmp_path / "spec.toml").write_text(
        "".join(
            f'[[kernel]]\nname = "{n}"\nsource = "mypkg/ops/scale.py:{n}"\ngrid = [4]\n[kernel.args]\n{SCALE_ARGS}'
            for n in ("relative", "from_package")
        )
    )
    toolchain(NEW)
    report = kt.explain(target=tmp_path / "spec.toml", toolchains=[NEW])
    ptx = {}
    for name in ("relative", "from_package"):
        cell = _cells(report, name)[NEW]
        assert isinstance(cell, KernelResult), describe(cell)
        _, signature, divisible = CASES["scale"]
        job = {
            "folder": str(tmp_path),
            "module": "mypkg.ops.scale",
            "attribute": name,
            "signature": signature,
            "constexprs": {"BLOCK": 1024},
            "divisible": divisible,
        }
        # a cache per kernel: Triton 3.4's cache key of the two (same text, other closed-over value) is one,
        # and a shared cache served the first one's PTX for the second
        env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path / f"triton-cache-{name}")}
        direct = subprocess.run(
            [str(toolchain(NEW).python), "-c", DIRECT, json.dumps(job)],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
        assert direct.returncode == 0, direct.stderr[-2000:]
        ptx[name] = cell.artifact.frontend.ptx_path.read_text()
        assert ptx[name] == direct.stdout
    assert ptx["relative"] != ptx["from_package"]  # 2.0 and 3.0: each kernel has its factory's value


def test_a_kernel_rebound_by_heuristics_compiles_with_what_they_compute(tmp_path: Path, toolchain: Any) -> None:
    """``k = triton.jit(k)`` then ``k = triton.heuristics({"EVEN": ...})(k)`` (unsloth's cross entropy):
    loaded without EVEN in [kernel.args] and compiled with the value the heuristic computes."""
    (tmp_path / "factory.py").write_text(FACTORY)
    (tmp_path / "spec.toml").write_text(
        f'[kernel]\nname = "heur"\nsource = "factory.py:heuristic_kernel"\ngrid = [4]\n[kernel.args]\n{SCALE_ARGS}'
    )
    toolchain(NEW)
    report = kt.explain(target=tmp_path / "spec.toml", toolchains=[NEW])
    cell = _cells(report, "heur")[NEW]
    assert isinstance(cell, KernelResult), cell
    assert cell.artifact.spec.constexprs["EVEN"] is True  # n = 4096, BLOCK = 1024
