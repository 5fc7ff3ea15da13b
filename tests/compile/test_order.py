"""Compile order must not change results (issue 9, point 3).

Triton 3.2 and 3.3 set the LLVM option ``nvptx-short-ptr`` only in their PTX step, so the first kernel
a process compiles gets another LLVM datalayout than every later one (3.4 sets it in make_llir). The
toolchain probe detects this per frontend by measurement (``order_sensitive``), and compile workers of
such frontends compile a priming kernel first. These tests compile the same specs in two orders, each
in a fresh worker, and demand identical cubins; the control shows the effect is real without priming.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ktriage.catalog.registry import expand_op
from ktriage.compile.compiler import Artifact, Compiler
from ktriage.compile.pool import CompileWorker
from ktriage.spec.model import KernelSpec

pytestmark = pytest.mark.slow


def _specs() -> list[KernelSpec]:
    """Two matmul configs (the issue's example: 210 vs 208 registers by order on 3.3.1) and a softmax."""
    mm = expand_op("tutorial.matmul", inputs=["0"])[0]
    other = mm.replace(name=mm.name + ".64x64", constexprs={**mm.constexprs, "BLOCK_M": 64, "BLOCK_N": 64}, num_warps=4)
    return [mm, other, expand_op("tutorial.softmax", inputs=["0"])[0]]


def _cubins(order: list[KernelSpec], toolchain: object, cache: Path) -> dict[str, bytes]:
    with Compiler(jobs=1, cache_dir=cache) as compiler:  # jobs=1: one fresh worker sees the order
        out = {}
        for spec in order:
            art = compiler.compile(spec, toolchain)  # type: ignore[arg-type]
            assert isinstance(art, Artifact), art
            out[spec.name] = art.cubin.cubin_path.read_bytes()
        return out


@pytest.mark.parametrize("version", ["3.2.0", "3.3.1"])
def test_two_orders_give_identical_cubins(version: str, toolchain, tmp_path: Path) -> None:
    tc = toolchain(f"triton=={version}")
    assert tc.facts().order_sensitive, f"the probe should detect Triton {version}'s compile-order effect"
    specs = _specs()
    forward = _cubins(specs, tc, tmp_path / "a")
    backward = _cubins(list(reversed(specs)), tc, tmp_path / "b")
    assert forward.keys() == backward.keys()
    for name in forward:
        assert forward[name] == backward[name], f"{name}: the cubin depends on compile order with Triton {version}"


def test_without_priming_the_first_compile_differs(toolchain, tmp_path: Path) -> None:
    """The control: a raw worker, not primed, compiles the same spec first and second: different LLVM IR."""
    tc = toolchain("triton==3.3.1")
    spec = _specs()[0]
    worker = CompileWorker(tc.python)
    try:
        first = worker.request({"id": "1", "spec": spec.to_json(), "sys_path": [], "out_dir": str(tmp_path / "1")})
        second = worker.request({"id": "2", "spec": spec.to_json(), "sys_path": [], "out_dir": str(tmp_path / "2")})
    finally:
        worker.close()
    assert first.ok and second.ok, (first.error, second.error)
    llir = [Path(r.data["files"]["llir"]).read_text() for r in (first, second)]
    assert llir[0] != llir[1]
    layout = [next(ln for ln in text.splitlines() if ln.startswith("target datalayout")) for text in llir]
    assert "p3:32:32" not in layout[0] and "p3:32:32" in layout[1]  # shared-memory pointers 32-bit only later


def test_order_insensitive_frontend_is_not_primed(toolchain) -> None:
    assert not toolchain("triton==3.4.0").facts().order_sensitive
