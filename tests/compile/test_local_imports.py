"""A user's own kernel named by its file in a spec (docs/specs.md) imports as in their program: a module of a
package with `from .helpers import _square`, a script's `from helpers import _square` beside it. Both used
to fail in every toolchain ("the kernel reads _square, which is not installed in this toolchain"): the file
was imported by path alone, with no package and not its folder on sys.path (insitu/worker.file_module).
And an ``autotune_config`` past the autotuner's list was compiled as config 0, silently
(insitu/launch_spec.resolve)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ktriage.compile.compiler import Artifact, CompileFailure
from ktriage.spec.toml_file import loads_spec

pytestmark = pytest.mark.slow

HELPER = "import triton\n\n\n@triton.jit\ndef _square(x):\n    return x * x\n"
KERNEL = """import triton
import triton.language as tl

from {imp} import _square


@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, _square(tl.load(x_ptr + offs, mask=m)), mask=m)


@triton.autotune(configs=[triton.Config({{"BLOCK": 64}}, num_warps=1), triton.Config({{"BLOCK": 256}}, num_warps=2)],
                 key=["n"])
@triton.jit
def tuned(x_ptr, n, BLOCK: tl.constexpr):
    k(x_ptr, n, BLOCK)
"""
ARGS = '[kernel.args]\nx_ptr = { dtype = "fp32", shape = [4096] }\nn = 4096\n'


def _spec(path: Path, fn: str, extra: str = "", args: str = ARGS):
    (spec,) = loads_spec(f'[kernel]\nsource = "{path}:{fn}"\ngrid = [16]\n{extra}\n{args}', base_dir=path.parent)
    return spec


def test_relative_and_sibling_imports_and_the_autotune_index(toolchain, compiler, tmp_path: Path) -> None:
    tc = toolchain("triton==3.4.0")
    ops = tmp_path / "proj" / "mypkg" / "ops"
    ops.mkdir(parents=True)
    for folder in (ops, ops.parent):
        (folder / "__init__.py").write_text("")
    (ops / "helpers.py").write_text(HELPER)
    (ops / "norm.py").write_text(KERNEL.format(imp=".helpers"))
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "helpers.py").write_text(HELPER)
    (flat / "kern.py").write_text(KERNEL.format(imp="helpers"))
    for path in (ops / "norm.py", flat / "kern.py"):
        art = compiler.compile(_spec(path, "k", args=ARGS + "BLOCK = 128\n"), tc)
        assert isinstance(art, Artifact), getattr(art, "message", art)
    # the second config is asked for and compiled; an index past the list is refused, with the fix
    picked = compiler.compile(_spec(ops / "norm.py", "tuned", "autotune_config = 1"), tc)
    assert isinstance(picked, Artifact) and picked.spec.constexprs["BLOCK"] == 256 and picked.spec.num_warps == 2
    past = compiler.compile(_spec(ops / "norm.py", "tuned", "autotune_config = 5"), tc)
    assert isinstance(past, CompileFailure)
    assert (
        "autotune_config = 5 is past the @triton.autotune of tuned (configs tried for this launch: 2)" in past.message
    )
    assert "fix: autotune_config is an index into its configs, from 0 to 1" in past.message


@pytest.mark.parametrize("layout", ["flat", "package"])
def test_two_projects_each_see_their_own_sibling_module(toolchain, tmp_path: Path, layout: str) -> None:
    """Two projects, each a ``kern.py`` beside its own ``helpers.py`` (BLOCK 1234 and 5678; flat, or in a
    package ``pkg`` with ``from .helpers import``), compiled by one worker one after the other: each kernel
    stores its own project's BLOCK. Before, the worker kept the first project's folder on sys.path and its
    ``helpers`` (``pkg``) in sys.modules, and the second kernel compiled with 1234, silently."""
    from ktriage.compile.compiler import Compiler

    tc = toolchain("triton==3.4.0")
    imp = "helpers" if layout == "flat" else ".helpers"
    kernel = f"import triton\nimport triton.language as tl\n\nfrom {imp} import BLOCK\n\n\n@triton.jit\ndef k(x_ptr):\n"
    kernel += "    tl.store(x_ptr, BLOCK)\n"
    paths = []
    for project, block in (("a", 1234), ("b", 5678)):
        folder = tmp_path / project / ("pkg" if layout == "package" else "")
        folder.mkdir(parents=True)
        if layout == "package":
            (folder / "__init__.py").write_text("")
        (folder / "helpers.py").write_text(f"import triton.language as tl\n\nBLOCK = tl.constexpr({block})\n")
        (folder / "kern.py").write_text(kernel)
        paths.append(folder / "kern.py")
    args = '[kernel.args]\nx_ptr = { dtype = "i32", shape = [1] }\n'
    with Compiler(jobs=1, cache_dir=tmp_path / "artifacts") as one_worker:
        arts = [one_worker.compile(_spec(path, "k", args=args), tc) for path in paths]
    stored = []
    for art in arts:
        assert isinstance(art, Artifact), getattr(art, "message", art)
        stored.append({n for n in ("1234", "5678") if f", {n};" in art.frontend.text("ptx")})  # mov.b32 %r1, 1234;
    assert stored == [{"1234"}, {"5678"}], "the second project compiled with the first one's helpers"
