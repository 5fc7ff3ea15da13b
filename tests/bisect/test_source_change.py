"""The kernel's own files compared between a bisect's predecessor and culprit (ktriage.bisect.source_change):
real files in two folders, as two checkouts hold them; no compile."""

from __future__ import annotations

from pathlib import Path

from ktriage.bisect.source_change import SourceChange, compare_kernel_files, kernel_files


def _checkout(root: Path, spec: str, kernel: str, helper: str | None = None) -> list[Path]:
    (root / "kernels").mkdir(parents=True)
    (root / "spec.toml").write_text(spec)
    (root / "kernels" / "red.py").write_text(kernel)
    if helper is not None:
        (root / "kernels" / "__init__.py").write_text("")
        (root / "kernels" / "helpers.py").write_text(helper)
    return kernel_files(root / "kernels" / "red.py", root / "spec.toml")


KERNEL = "import triton\n\n\n@triton.jit\ndef red(x, RBLOCK: tl.constexpr):\n    pass\n"
WITH_HELPER = "from kernels.helpers import acc\n" + KERNEL


def test_the_lines_that_changed_are_named_by_file_and_line(tmp_path: Path) -> None:
    a = _checkout(tmp_path / "a", "[kernel]\nRBLOCK = 64\n", KERNEL)
    b = _checkout(tmp_path / "b", "[kernel]\nRBLOCK = 256\n", KERNEL.replace("pass", "return"))
    names, hunks, unreadable = compare_kernel_files(a, b, tmp_path / "a", tmp_path / "b")
    assert names == ["spec.toml", "kernels/red.py"] and unreadable == []
    assert [h.text() for h in hunks] == ["spec.toml:2: RBLOCK = 64 -> RBLOCK = 256", "kernels/red.py:6: pass -> return"]
    change = SourceChange(True, tuple(names), tuple(hunks))
    assert change.sentence().startswith("your kernel's source changed: spec.toml:2: RBLOCK = 64 -> RBLOCK = 256; ")
    assert change.sentence().endswith("(the same toolchain compiled both sides, so the compiler did not change)")
    both = SourceChange(False, tuple(names), tuple(hunks)).sentence()
    assert "the toolchain changed too, so the frontend/ptxas attribution cannot tell its share" in both


def test_a_helper_module_the_kernel_imports_is_compared_too(tmp_path: Path) -> None:
    """A @triton.jit helper beside the kernel is compiled into it: an edit there is the kernel's change."""
    a = _checkout(tmp_path / "a", "", WITH_HELPER, helper="def acc():\n    return 1\n")
    b = _checkout(tmp_path / "b", "", WITH_HELPER, helper="def acc():\n    return 2\n")
    names, hunks, _ = compare_kernel_files(a, b, tmp_path / "a", tmp_path / "b")
    assert "kernels/helpers.py" in names
    assert [h.text() for h in hunks] == ["kernels/helpers.py:2: return 1 -> return 2"]


def test_nothing_changed_in_the_kernels_files_is_said_so(tmp_path: Path) -> None:
    a = _checkout(tmp_path / "a", "[kernel]\n", KERNEL)
    b = _checkout(tmp_path / "b", "[kernel]\n", KERNEL)
    names, hunks, _ = compare_kernel_files(a, b, tmp_path / "a", tmp_path / "b")
    assert hunks == []
    text = SourceChange(True, tuple(names), ()).sentence()
    assert text.startswith("no line of the kernel's files changed (spec.toml, kernels/red.py), yet its PTX did")


def test_a_file_read_only_on_one_side_is_named(tmp_path: Path) -> None:
    a = _checkout(tmp_path / "a", "", KERNEL)
    b = _checkout(tmp_path / "b", "", WITH_HELPER, helper="def acc():\n    return 2\n")
    _, hunks, _ = compare_kernel_files(a, b, tmp_path / "a", tmp_path / "b")
    texts = [h.text() for h in hunks]
    assert "kernels/red.py:1: (nothing) -> from kernels.helpers import acc" in texts
    assert "kernels/helpers.py:1: (no such file) -> new file, 2 lines" in texts
