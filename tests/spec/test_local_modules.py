"""A kernel's @triton.jit helpers in other modules of the user's own project are part of its spec's key
(spec/source.local_module_files): an edited helper used to be served the artifact of the old one, since
only the kernel's own file was hashed. Fast: no toolchain."""

from __future__ import annotations

from pathlib import Path

from ktriage.spec.model import KernelSpec
from ktriage.spec.source import local_module_files

HELPER = "import triton\n\n\n@triton.jit\ndef _square(x):\n    return x * x\n"
KERNEL = (
    "import triton\nimport triton.language as tl\n\nfrom {imp} import _square\n\n\n"
    "def host():\n    from {pkg}unrelated import thing\n\n\n"
    "@triton.jit\ndef k(x_ptr, BLOCK: tl.constexpr):\n"
    "    offs = tl.arange(0, BLOCK)\n    tl.store(x_ptr + offs, _square(tl.load(x_ptr + offs)))\n"
)


def _spec(path: Path) -> KernelSpec:
    return KernelSpec(
        name="k", source=f"{path}:k", signature={"x_ptr": "*fp32", "BLOCK": "constexpr"}, constexprs={"BLOCK": 64}
    )


def _project(tmp_path: Path, package: bool) -> tuple[Path, Path, Path]:
    folder = tmp_path / "proj" / "mypkg" / "ops" if package else tmp_path / "flat"
    folder.mkdir(parents=True)
    if package:
        (folder.parent / "__init__.py").write_text("")
        (folder / "__init__.py").write_text("")
    (folder / "helpers.py").write_text(HELPER)
    (folder / "unrelated.py").write_text("thing = 1\n")
    kernel = folder / "k.py"
    kernel.write_text(KERNEL.format(imp=".helpers" if package else "helpers", pkg="." if package else ""))
    return kernel, folder / "helpers.py", folder / "unrelated.py"


def test_an_edited_helper_module_changes_the_key(tmp_path: Path) -> None:
    for package in (True, False):  # `from .helpers import` in a package; `from helpers import` beside the file
        kernel, helper, unrelated = _project(tmp_path / str(package), package)
        assert local_module_files(kernel) == [helper.resolve()]  # an import in a host function is not followed
        before = _spec(kernel).key()
        unrelated.write_text("thing = 2\n")
        assert _spec(kernel).key() == before
        helper.write_text(HELPER.replace("x * x", "x * x * x"))
        assert _spec(kernel).key() != before


def test_a_kernel_without_project_imports_keeps_its_key(tmp_path: Path) -> None:
    kernel = tmp_path / "alone.py"
    kernel.write_text(KERNEL.format(imp="triton.language", pkg="").replace("_square(", "tl.abs("))
    assert local_module_files(kernel) == []  # nothing added to the key: existing artifacts keep theirs


def test_ktriages_own_kernels_keep_their_keys_when_ktriage_changes() -> None:
    """The workload bundles' kernels (``workload/bundles/named_kernels.py``) import some 35 ktriage modules at
    module level: with their text in the key, every edit of ktriage would compile those kernels again."""
    import ktriage.workload.bundles.named_kernels as named

    assert local_module_files(Path(named.__file__)) == []
