"""A kernel made in another module of the user's project: ``from .common import make_kernel`` then
``kernel = make_kernel(...)`` in the kernel's file (spec/imports.py, spec/source.kernel_def). Before,
the loader refused every such kernel with "ktriage cannot tell from the source which @triton.jit def
that makes", though the compile worker imports the file as its package's module and has the kernel.
Now the import is followed within the project (relative imports against the file's package, absolute
ones against the folder above its top package, or the file's own folder outside a package), and only a
module that is not there is refused, named with where to put it. Fast: the real TOML loader, no
toolchain (compiled for real in tests/spec/test_factory_kernels.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ktriage.errors import KtriageError
from ktriage.spec.toml_file import loads_spec
from tests.spec.test_kernel_def import SCALE_ARGS

# a factory in the package's common module: the def it returns closes over FACTOR (as in test_kernel_def)
COMMON = """\
import triton
import triton.language as tl


def make_kernel(factor):
    FACTOR = tl.constexpr(factor)

    @triton.jit
    def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(y_ptr + offs, x * FACTOR, mask=offs < n)

    return scale_kernel


def make_tuned():
    @triton.autotune(configs=[triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 512})], key=["n"])
    @triton.jit
    def tuned_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

    return tuned_kernel


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))
"""

# every way a module of the package names the factory or the kernel of another module
OPS = """\
import mypkg.common
import mypkg.common as cm
from mypkg import common
from mypkg import make_kernel as reexported
from ..common import copy_kernel, make_kernel, make_tuned

relative = make_kernel(2.0)
from_package = common.make_kernel(3.0)
module_alias = cm.make_kernel(4.0)
dotted = mypkg.common.make_kernel(5.0)
through_init = reexported(6.0)
imported_kernel = copy_kernel
tuned = make_tuned()
"""


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "mypkg" / "ops").mkdir(parents=True)
    (tmp_path / "mypkg" / "__init__.py").write_text("from .common import make_kernel\n")
    (tmp_path / "mypkg" / "ops" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "common.py").write_text(COMMON)
    (tmp_path / "mypkg" / "ops" / "scale.py").write_text(OPS)
    return tmp_path


def _load(folder: Path, source: str, args: str = SCALE_ARGS) -> list:
    text = f'[kernel]\nsource = "{source}"\ngrid = [4]\n[kernel.args]\n{args}'
    return loads_spec(text, base_dir=folder, origin="spec.toml")


@pytest.mark.parametrize(
    "name", ["relative", "from_package", "module_alias", "dotted", "through_init", "imported_kernel"]
)
def test_a_kernel_made_in_another_module_of_the_package_loads(project: Path, name: str) -> None:
    (spec,) = _load(project, f"mypkg/ops/scale.py:{name}")
    assert spec.source == f"{(project / 'mypkg/ops/scale.py').resolve()}:{name}" and spec.name == name
    assert [n for n, _ in spec.launch["args"]] == ["x_ptr", "y_ptr", "n", "BLOCK"]
    assert spec.signature["BLOCK"] == "constexpr" and spec.constexprs["BLOCK"] == 1024


def test_the_factory_s_decorators_are_read_from_its_module(project: Path) -> None:
    """The @triton.autotune the other module's factory puts on its kernel picks BLOCK: the launch may
    leave it out, as the library's does (before: "[kernel.args] has no value for 'BLOCK'")."""
    args = SCALE_ARGS.replace("BLOCK = 1024\n", "")
    (spec,) = _load(project, "mypkg/ops/scale.py:tuned", args)
    assert spec.meta["decided_at_compile"] == ["BLOCK"]


def test_the_factory_s_module_is_part_of_the_key(project: Path) -> None:
    """An edited factory is a new kernel: its module's text is hashed with the kernel's file."""
    (spec,) = _load(project, "mypkg/ops/scale.py:relative")
    before = spec.key()
    common = project / "mypkg" / "common.py"
    common.write_text(common.read_text().replace("x * FACTOR", "x * FACTOR + 1"))
    assert spec.key() != before


def test_a_file_outside_a_package_follows_the_modules_beside_it(tmp_path: Path) -> None:
    """``python k.py`` imports the modules beside it, and so does the compile worker."""
    (tmp_path / "common.py").write_text(COMMON)
    (tmp_path / "k.py").write_text("from common import make_kernel\n\nk = make_kernel(2.0)\n")
    (spec,) = _load(tmp_path, "k.py:k")
    assert [n for n, _ in spec.launch["args"]] == ["x_ptr", "y_ptr", "n", "BLOCK"]


@pytest.mark.parametrize(
    ("line", "module", "put_at"),
    [
        ("from ..commons import make_kernel", "mypkg.commons", "mypkg/commons"),  # a typo
        ("from fastkernels.factory import make_kernel", "fastkernels.factory", "fastkernels/factory"),  # a library
    ],
)
def test_a_module_the_project_does_not_have_is_named_with_where_to_put_it(
    project: Path, line: str, module: str, put_at: str
) -> None:
    (project / "mypkg" / "ops" / "bad.py").write_text(f"{line}\n\nk = make_kernel(2.0)\n")
    with pytest.raises(KtriageError) as info:
        _load(project, "mypkg/ops/bad.py:k")
    assert f"bad.py: `{line}` (line 1): cannot find module {module!r} in the kernel's project" in info.value.problem
    assert f"(looked under {project.resolve()})" in info.value.problem
    assert info.value.fix.startswith(f"if {module} is your module, put it at {project.resolve() / put_at}.py")
    assert "point source at a module-level @triton.jit def" in info.value.fix


def test_a_relative_import_above_the_top_package_is_refused(project: Path) -> None:
    (project / "mypkg" / "ops" / "bad.py").write_text("from ... import common\n\nk = common.make_kernel(2.0)\n")
    with pytest.raises(KtriageError) as info:
        _load(project, "mypkg/ops/bad.py:k")
    assert "`from ... import common` (line 1) imports '...', which reaches above the top package" in info.value.problem
    assert info.value.fix.startswith("fix the relative import")


def test_a_module_named_as_the_kernel_is_refused_with_its_kernels(project: Path) -> None:
    (project / "mypkg" / "ops" / "bad.py").write_text("from .. import common\n\nk = common\n")
    with pytest.raises(KtriageError) as info:
        _load(project, "mypkg/ops/bad.py:k")
    assert f"bad.py: common is the module {(project / 'mypkg/common.py').resolve()}, not a function" in (
        info.value.problem
    )
    assert info.value.fix == "name a kernel in it: copy_kernel"
