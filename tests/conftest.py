"""Shared fixtures. Toolchains are real Triton wheels in real virtualenvs, built once per test home."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# A persistent home so that toolchain virtualenvs and artifacts survive between test runs (CI builds
# them once per run). Override with KTRIAGE_TEST_HOME.
TEST_HOME = Path(os.environ.get("KTRIAGE_TEST_HOME", REPO / ".ktriage-home"))
os.environ["KTRIAGE_HOME"] = str(TEST_HOME)


@pytest.fixture(scope="session")
def ktriage_home() -> Path:
    TEST_HOME.mkdir(parents=True, exist_ok=True)
    return TEST_HOME


@pytest.fixture(scope="session")
def toolchain(ktriage_home: Path):
    """Build (once per test home) and return a real toolchain: ``toolchain("triton==3.4.0")``."""
    from ktriage.toolchain.manager import ensure_toolchain

    cache: dict[str, object] = {}

    def get(spec: str):
        if spec not in cache:
            cache[spec] = ensure_toolchain(spec)
        return cache[spec]

    return get


@pytest.fixture()
def compiler(tmp_path: Path):
    """A compiler with a private artifact cache, so a test sees its own compiles."""
    from ktriage.compile.compiler import Compiler

    with Compiler(jobs=2, cache_dir=tmp_path / "artifacts") as c:
        yield c


@pytest.fixture(scope="session")
def shared_compiler(ktriage_home: Path):
    """A compiler on the test home's artifact cache: heavy sweeps compile once per test home."""
    from ktriage.compile.compiler import Compiler

    with Compiler(jobs=2) as c:
        yield c


@pytest.fixture(scope="session")
def compiled(ktriage_home: Path):
    """The analyze tests' standard kernels (64x64/64x256 reductions, an atomic) for Triton 3.3.1 and 3.4.0."""
    from triton_compile_for_tests import standard_compiles

    return standard_compiles(ktriage_home)


@pytest.fixture(scope="session")
def occupancy_gpu_check():
    """benchmarks/gpu/occupancy_vs_cuda.py as a module (its PTX generator is tested on the CPU too)."""
    import importlib.util
    import sys

    path = REPO / "benchmarks" / "gpu" / "occupancy_vs_cuda.py"
    spec = importlib.util.spec_from_file_location("occupancy_vs_cuda", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
