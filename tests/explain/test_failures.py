"""Failures are findings: how a compile failure's message is shortened to one line (one_line), on a
real Triton 3.4.0 CompilationError and on the message formats of the compile stage. The failures as
`ktriage explain` shows them (reference fallback, exit 4): tests/cli/test_explain.py.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from ktriage.explain.failures import one_line


@pytest.mark.slow  # a real compile with Triton 3.4.0
def test_compilation_error_shortens_to_location_and_source_line(tmp_path: Path, toolchain: Any, compiler: Any) -> None:
    """Triton's CompilationError is five lines of kernel source and a caret; one_line keeps the
    location, the line the caret points at and the root cause the worker adds (the ValueError raised
    inside tl.reshape, which Triton's message leaves in the exception chain; issue 23)."""
    from ktriage.compile.compiler import CompileFailure
    from ktriage.spec.model import KernelSpec

    bad = tmp_path / "bad.py"
    bad.write_text(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def bad(x_ptr, BM: tl.constexpr):\n    v = tl.load(x_ptr + tl.arange(0, BM))\n"
        "    w = tl.reshape(v, [BM, 3])\n    tl.store(x_ptr + tl.arange(0, BM), w)\n"
    )
    spec = KernelSpec(
        name="bad",
        source=f"{bad}:bad",
        signature={"x_ptr": "*fp32", "BM": "constexpr"},
        constexprs={"BM": 64},
        target="sm_90",
    )
    failure = compiler.compile(spec, toolchain("triton==3.4.0"))
    assert isinstance(failure, CompileFailure) and len(failure.message.splitlines()) > 3
    assert one_line(failure.message) == (
        "CompilationError at 3:8 (`w = tl.reshape(v, [BM, 3])`): ValueError: Shape element 1 must be a power of 2"
    )


INT8_DOT = """\
import triton
import triton.language as tl


@triton.jit
def int8_mm(a_ptr, b_ptr, c_ptr, K, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.int32)
    for k in range(0, K, BLOCK):
        a = tl.load(a_ptr + r[:, None] * K + (k + r[None, :]))
        b = tl.load(b_ptr + (k + r[:, None]) * BLOCK + r[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], acc)
"""


@pytest.mark.slow  # real compiles with Triton 3.4.0 and 3.6.0
def test_a_bare_triton_assertion_says_where_and_what_it_asserted(tmp_path: Path, toolchain: Any) -> None:
    """Triton 3.6's tl.dot asserts that the accumulator has the dot's out_dtype (int8 x int8 needs
    ``out_dtype=tl.int32`` next to an int32 ``acc``) with a bare ``assert``: the failure used to read
    ``... (`acc = tl.dot(a, b, acc)`): AssertionError`` and no more. The worker names where the assertion
    was raised and its text (insitu/worker.raised_at); 3.4.0, which compiles it, keeps its result."""
    import ktriage.api as kt
    from ktriage.compile.compiler import CompileFailure
    from ktriage.explain.engine import KernelResult

    (tmp_path / "mm.py").write_text(INT8_DOT)
    (tmp_path / "mm.toml").write_text(
        '[kernel]\nsource = "mm.py:int8_mm"\ngrid = [1]\n[kernel.args]\n'
        'a_ptr = { dtype = "int8", shape = [64, 256] }\nb_ptr = { dtype = "int8", shape = [256, 64] }\n'
        'c_ptr = { dtype = "int32", shape = [64, 64] }\nK = 256\nBLOCK = 64\n'
    )
    toolchain("triton==3.4.0")
    toolchain("triton==3.6.0")
    report = kt.explain(target=tmp_path / "mm.toml", toolchains=["triton==3.4.0", "triton==3.6.0"])
    cells = {str(r.toolchain.spec): r for r in report.result.specs[0].results.values()}
    assert isinstance(cells["triton==3.4.0"], KernelResult)
    failed = cells["triton==3.6.0"]
    assert isinstance(failed, CompileFailure)
    line = one_line(failed.message)
    assert re.fullmatch(
        r"CompilationError at 7:14 \(`acc = tl\.dot\(a, b, acc\)`\): AssertionError at "
        r"triton/language/semantic\.py:\d+ `assert .*acc\.type\.element_ty == out_dtype`",
        line,
    ), line
    (failure,) = report.to_json()["failures"]
    assert failure["toolchain"] == "triton==3.6.0" and line in failure["summary"]


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        # the worker's "internal" reply: the headline, then the traceback
        (
            "KeyError: 'ptx'\nTraceback (most recent call last):\n  File \"worker.py\", line 3, in handle\nKeyError: 'ptx'",
            "KeyError: 'ptx'",
        ),
        # a crash while starting: the opening words, then the traceback's last exception line
        (
            'compile worker died: Traceback (most recent call last):\n  File "w.py", line 1, in <module>\n'
            "    import triton\nImportError: libcuda.so.1: cannot open shared object file",
            "compile worker died: ImportError: libcuda.so.1: cannot open shared object file",
        ),
        # a dead worker's stderr tail: the last line says how it died
        (
            "compile worker died: warning: something harmless\nLLVM ERROR: Cannot select: intrinsic %llvm.nvvm.foo",
            "compile worker died: LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.foo",
        ),
        # KtriageError text: the problem, not its fix line
        (
            "could not install liger-kernel==9.9: not found\n  fix: check the version exists on PyPI",
            "could not install liger-kernel==9.9: not found",
        ),
        # Triton's CompilationError with the cause appended as a repr
        (
            "CompilationError: at 1:4:\ndef k(x):\n    tl.foo()\n    ^\nAttributeError(\"module 'triton.language' has no attribute 'foo'\")",
            "CompilationError at 1:4 (`tl.foo()`): AttributeError: module 'triton.language' has no attribute 'foo'",
        ),
        ("", "failed"),
    ],
)
def test_one_line_message_shapes(message: str, expected: str) -> None:
    """The message formats the compile stage writes (copied from ktriage.compile and Triton), as strings."""
    assert one_line(message) == expected


def test_one_line_is_bounded() -> None:
    line = one_line("x" * 1000)
    assert len(line) <= 200 and line.endswith("…")
