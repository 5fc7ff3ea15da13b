"""Failures are findings: a cell that could not be compiled is shown as such, never as "no change".

Real toolchains (triton==3.3.1, triton==3.4.0 with its ptxas 12.8.93 and with ptxas 12.4.131) through
the real CLI entry. The kernel (tests/kernels_for_tests.py:tensor_descriptor_kernel) uses
`tl.make_tensor_descriptor`, which Triton 3.3.1 does not have: with 3.3.1 as the reference, explain
must say so and compare the rest against 3.4.0 (issue 9, point 4; issue 11, point 1).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ktriage.cli import exit_codes
from ktriage.cli.app import app
from ktriage.explain.failures import one_line

KERNELS = Path(__file__).resolve().parent / "kernels_for_tests.py"
NO_TMA = "AttributeError: module 'triton.language' has no attribute 'make_tensor_descriptor'"
SIGNATURE = '''[kernel.signature]
x_ptr = "*fp32"
y_ptr = "*fp32"
M = "i32"
N = "i32"
BM = "constexpr"
BN = "constexpr"
'''



def in_output(text: str, output: str) -> bool:
    """``text`` is in the terminal output, which wraps long lines (long temporary paths in CI):
    compared without whitespace."""
    return "".join(text.split()) in "".join(output.split())

def _spec_file(tmp_path: Path, source: str, blocks: tuple[int, ...] = (64, 128)) -> Path:
    """A spec file with one kernel per BN (a small sweep, so that failures form an input range)."""
    text = "".join(f'[[kernel]]\nname = "tdesc[BN={bn}]"\nsource = "{source}"\n{SIGNATURE}'
                   f"[kernel.constexprs]\nBM = 64\nBN = {bn}\n\n" for bn in blocks)
    path = tmp_path / "tdesc.toml"
    path.write_text(text)
    return path


def _explain(tmp_path: Path, spec: Path, *toolchains: str, extra: tuple[str, ...] = ()) -> tuple[Any, dict[str, Any], str]:
    """Run `ktriage explain` (table on stdout) and return the result, the JSON report and the markdown report."""
    report = tmp_path / "report.md"
    args = ["explain", str(spec), "--report", str(report), "-j", "2"]
    for t in toolchains:
        args += ["-t", t]
    out = CliRunner().invoke(app, args + list(extra))
    assert report.exists(), out.output
    return out, json.loads(report.with_suffix(".json").read_text()), report.read_text()


@pytest.fixture(autouse=True)
def _wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """Findings are asserted as whole lines: no wrapping at the console width."""
    monkeypatch.setenv("KTRIAGE_COLUMNS", "600")


def _ids(toolchain: Any, *specs: str) -> list[str]:
    return [toolchain(s).id for s in specs]


def test_reference_that_cannot_compile_falls_back_to_the_next(tmp_path: Path, toolchain: Any) -> None:
    """Acceptance of issue 9: 3.3.1 as reference says it cannot compile the kernel, the rest is compared
    against 3.4.0, the result is incomplete (exit 4) and nothing claims "no change"."""
    old, new, other = _ids(toolchain, "triton==3.3.1", "triton==3.4.0", "triton==3.4.0,ptxas==12.4.131")
    spec = _spec_file(tmp_path, f"{KERNELS}:tensor_descriptor_kernel")
    out, data, md = _explain(tmp_path, spec, "triton==3.3.1", "triton==3.4.0", "triton==3.4.0,ptxas==12.4.131")
    assert out.exit_code == exit_codes.INCOMPLETE == 4, out.output
    text = out.output
    assert (f"triton==3.3.1 cannot compile BN=64..128: {NO_TMA}; compared against triton==3.4.0 instead."
            in text), text
    assert f"error: frontend: {NO_TMA}" in text  # the failed cell: stage and one line
    assert "vs triton==3.4.0: [ptxas] registers" in text  # the changes column names the fallback
    assert "incomplete: 2 of 6 cells failed" in text
    for said in (text, md):
        assert "no resource changes" not in said.lower()
        assert "no change" not in said
    # JSON: which toolchain served as reference and why, the failures apart, complete false
    assert data["complete"] is False
    for kernel in data["kernels"]:
        assert kernel["reference"] == new
        assert kernel["reference_fallback"] == (f"triton==3.3.1 could not compile this kernel: frontend: {NO_TMA}; "
                                                "compared against triton==3.4.0 instead")
        assert kernel["failures"] == [{"toolchain": old, "toolchain_spec": "triton==3.3.1", "stage": "frontend",
                                       "kind": "compile", "message": NO_TMA, "fix": None}]
        assert [(c["reference"], c["toolchain"]) for c in kernel["comparisons"]] == [(new, other)]
        assert "registers" in {c["metric"] for c in kernel["comparisons"][0]["changes"]}
    assert data["findings"] and {f["reference"] for f in data["findings"]} == {"triton==3.4.0"}
    assert [(f["toolchain"], f["range"], f["reference_fallback"]) for f in data["failures"]] == [
        ("triton==3.3.1", "BN=64..128", "triton==3.4.0")]
    assert f"- **failed:** triton==3.3.1 cannot compile BN=64..128: {NO_TMA}" in md


def test_no_change_among_the_rest_is_not_called_no_change(tmp_path: Path, toolchain: Any) -> None:
    """The issue's case: the reference failed and the others agree. Neither the rows nor the findings
    may say "no change" as if every toolchain had been compared."""
    spec = _spec_file(tmp_path, f"{KERNELS}:tensor_descriptor_kernel")
    out, data, md = _explain(tmp_path, spec, "triton==3.3.1", "triton==3.4.0",
                             "triton==3.4.0,ptxas-options=--register-usage-level=10")
    assert out.exit_code == exit_codes.INCOMPLETE, out.output
    assert data["findings"] == [] and data["complete"] is False
    line = "No resource changes among the toolchains that compiled; 2 of 6 cells failed (listed below)."
    assert line in md and in_output(line, out.output)
    assert md.count("| vs triton==3.4.0: same resources (1 failed) |") == 2
    for said in (out.output, md):
        assert "no change" not in said and "No resource changes between" not in said
    assert "triton==3.3.1 cannot compile BN=64..128" in out.output


def test_allow_failures_gives_the_code_of_the_rest(tmp_path: Path, toolchain: Any) -> None:
    spec = _spec_file(tmp_path, f"{KERNELS}:tensor_descriptor_kernel")
    out, data, _ = _explain(tmp_path, spec, "triton==3.3.1", "triton==3.4.0", "triton==3.4.0,ptxas==12.4.131",
                            extra=("--allow-failures",))
    assert out.exit_code == exit_codes.OK, out.output
    assert data["complete"] is False
    assert "triton==3.3.1 cannot compile BN=64..128" in out.output  # still listed, only the code changes
    assert "exit code 0 (--allow-failures)" in out.output


def test_failing_assembler_is_incomplete_and_listed(tmp_path: Path, toolchain: Any) -> None:
    """issue 11: an assembler that rejects its options is a failure, not "no change" with exit 0."""
    bogus = "triton==3.4.0,ptxas-options=--bogus-flag"
    spec = _spec_file(tmp_path, f"{KERNELS}:tensor_descriptor_kernel")
    out, data, md = _explain(tmp_path, spec, "triton==3.4.0", bogus)
    assert out.exit_code == exit_codes.INCOMPLETE, out.output
    assert data["complete"] is False and data["findings"] == []
    kernel = data["kernels"][0]
    assert kernel["reference"] == toolchain("triton==3.4.0").id and kernel["reference_fallback"] is None
    (failure,) = kernel["failures"]
    assert failure["stage"] == "assemble" and "Unknown option '-bogus-flag'" in failure["message"]
    assert "\n" not in failure["message"] and failure["fix"]
    (summary,) = [f["summary"] for f in data["failures"]]
    assert summary.startswith(f"{bogus} cannot assemble BN=64..128: ptxas ")
    assert "No resource changes among the toolchains that compiled; 2 of 4 cells failed (listed below)." in md
    assert "No resource changes between" not in md and "| no change |" not in md
    assert "not compared: only triton==3.4.0 compiled it" in out.output
    assert in_output(f"{bogus} cannot assemble BN=64..128", out.output)


def test_import_failure_is_one_line_with_the_fix(tmp_path: Path, toolchain: Any) -> None:
    """A kernel module that imports what the compile worker does not have: one line, naming the module
    and the exception, plus a fix (the full text stays in the JSON results)."""
    kernel = tmp_path / "needs_dep.py"
    kernel.write_text("import triton\nimport triton.language as tl\nimport ktriage_missing_dep  # noqa: F401\n\n\n"
                      "@triton.jit\ndef k(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):\n    pass\n")
    spec = _spec_file(tmp_path, f"{kernel}:k", blocks=(64,))
    out, data, _ = _explain(tmp_path, spec, "triton==3.4.0")
    assert out.exit_code == exit_codes.INCOMPLETE, out.output
    (failure,) = data["kernels"][0]["failures"]
    assert failure["kind"] == "import"
    assert failure["message"] == f"importing {kernel} failed: ModuleNotFoundError: No module named 'ktriage_missing_dep'"
    assert "'ktriage_missing_dep' at import time" in failure["fix"] and "`source`" in failure["fix"]
    (summary,) = [f["summary"] for f in data["failures"]]
    assert summary.startswith(f"triton==3.4.0 cannot compile BN=64: importing {kernel} failed: ModuleNotFoundError")
    assert " — fix: " in summary and "\n" not in summary and summary.endswith("; no toolchain compiled it.")
    # the terminal wraps long lines (a long temporary path): compare without the wrapping's whitespace
    assert in_output(summary, out.output)
    assert data["kernels"][0]["reference"] is None
    assert data["kernels"][0]["reference_fallback"].endswith("; no toolchain compiled it, nothing is compared")
    assert "not compared: no toolchain compiled it" in out.output


def test_compilation_error_shortens_to_location_and_source_line(tmp_path: Path, toolchain: Any, compiler: Any) -> None:
    """Triton's CompilationError is five lines of kernel source and a caret; one_line keeps the
    location and the line the caret points at (the message of a real 3.4.0 compile)."""
    from ktriage.compile.compiler import CompileFailure
    from ktriage.spec.model import KernelSpec

    bad = tmp_path / "bad.py"
    bad.write_text("import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
                   "def bad(x_ptr, BM: tl.constexpr):\n    v = tl.load(x_ptr + tl.arange(0, BM))\n"
                   "    w = tl.reshape(v, [BM, 3])\n    tl.store(x_ptr + tl.arange(0, BM), w)\n")
    spec = KernelSpec(name="bad", source=f"{bad}:bad", signature={"x_ptr": "*fp32", "BM": "constexpr"},
                      constexprs={"BM": 64}, target="sm_90")
    failure = compiler.compile(spec, toolchain("triton==3.4.0"))
    assert isinstance(failure, CompileFailure) and len(failure.message.splitlines()) > 3
    assert one_line(failure.message) == "CompilationError at 3:8: `w = tl.reshape(v, [BM, 3])`"


@pytest.mark.parametrize(("message", "expected"), [
    # the worker's "internal" reply: the headline, then the traceback
    ("KeyError: 'ptx'\nTraceback (most recent call last):\n  File \"worker.py\", line 3, in handle\nKeyError: 'ptx'",
     "KeyError: 'ptx'"),
    # a crash while starting: the opening words, then the traceback's last exception line
    ("compile worker died: Traceback (most recent call last):\n  File \"w.py\", line 1, in <module>\n"
     "    import triton\nImportError: libcuda.so.1: cannot open shared object file",
     "compile worker died: ImportError: libcuda.so.1: cannot open shared object file"),
    # a dead worker's stderr tail: the last line says how it died
    ("compile worker died: warning: something harmless\nLLVM ERROR: Cannot select: intrinsic %llvm.nvvm.foo",
     "compile worker died: LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.foo"),
    # KtriageError text: the problem, not its fix line
    ("could not install liger-kernel==9.9: not found\n  fix: check the version exists on PyPI",
     "could not install liger-kernel==9.9: not found"),
    # Triton's CompilationError with the cause appended as a repr
    ("CompilationError: at 1:4:\ndef k(x):\n    tl.foo()\n    ^\nAttributeError(\"module 'triton.language' has no attribute 'foo'\")",
     "CompilationError at 1:4 (`tl.foo()`): AttributeError: module 'triton.language' has no attribute 'foo'"),
    ("", "failed"),
])
def test_one_line_message_shapes(message: str, expected: str) -> None:
    """The message formats the compile stage writes (copied from ktriage.compile and Triton), as strings."""
    assert one_line(message) == expected


def test_one_line_is_bounded() -> None:
    line = one_line("x" * 1000)
    assert len(line) <= 200 and line.endswith("…")
