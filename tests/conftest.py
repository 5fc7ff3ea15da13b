"""Shared fixtures. Toolchains are real Triton wheels in real virtualenvs, built once per test home.

The tree mirrors the package: the tests of ``ktriage/<package>/<module>.py`` live in
``tests/<package>/test_<module>.py``, CLI-level tests of a verb in ``tests/cli/test_<verb>.py``, and the
tests that need a GPU (marked ``gpu``) in ``tests/gpu/`` (``pytest -m gpu tests/gpu`` on the GPU host).
Every folder is a package (``__init__.py``), so basenames may repeat (tests/measure/test_timing.py,
tests/stats/test_compare.py) and helpers import as ``tests.<...>`` (tests.bisect.repos,
tests.store.fixtures, tests.triton_compile_for_tests). The exception is tests/bisect: as a package it
would be the standard library's ``bisect`` (which ``random`` imports) in every subprocess given
``PYTHONPATH=tests`` for kernels_for_tests.py (tests/tune/test_autotune.py,
tests/data/resources/make_fixtures.py). Without ``__init__.py`` pytest imports its modules by basename,
so those basenames must not repeat elsewhere in a folder without ``__init__.py``.

Here is the one place that decides whether a GPU is present (:func:`gpu_present`): ``gpu``-marked tests
are skipped without one (:func:`pytest_collection_modifyitems`), and a test that only branches on it
asks for the ``has_gpu`` fixture. CLI tests drive the real entry point, ``ktriage.cli.app.main(argv)``,
through the ``run_cli`` fixture.
"""

from __future__ import annotations

import functools
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import pytest

REPO = Path(__file__).resolve().parent.parent

# A suite started in the background of a non-interactive shell (`nohup bash scripts/test.sh &`) inherits
# SIGINT ignored, and so would every process it starts (an ignored signal survives exec): the tests that
# interrupt ktriage with SIGINT (tests/store/test_crash.py, tests/compile/test_cache_faults.py,
# tests/record/test_record_process.py) would then test nothing and fail. With Python's handler installed,
# the children start with SIGINT at its default, as from a terminal. (Each xdist worker imports this too.)
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

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
    from tests.triton_compile_for_tests import standard_compiles

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


# ----------------------------------------------------------------------------- the GPU probe


@functools.cache
def gpu_present() -> bool:
    """Whether this machine has an NVIDIA GPU that torch can use: the one GPU probe of the tests.

    torch, because the GPU tests launch and check through it; imported only when a ``gpu`` test is
    selected or a test asks for ``has_gpu``, so a CPU run (``-m "not gpu"``) never pays for it."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


NO_GPU = "needs an NVIDIA GPU with torch (run `pytest -m gpu tests/gpu` on the GPU host)"


@pytest.hookimpl(trylast=True)  # after -m/-k deselection: probe only when a gpu test is still selected
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if gpu_items and not gpu_present():
        for item in gpu_items:
            item.add_marker(pytest.mark.skip(reason=NO_GPU))


@pytest.fixture(scope="session")
def has_gpu() -> bool:
    """:func:`gpu_present`, for a CPU test whose expectation differs on a GPU host."""
    return gpu_present()


@pytest.fixture()
def probe_sees_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake of the CUDA driver probe (``ktriage.record.run.gpu_problem``) that answers as on a GPU
    host: for the tests of what ``ktriage record`` does with a program that launched no kernel where
    one could have run (its exit codes, the empty workload it writes). On this CPU machine the real
    probe makes record refuse such a recording instead; that refusal is tested with the real probe
    (tests/record/test_record_process.py, CUDA_VISIBLE_DEVICES="" hiding any GPU)."""

    def fake_probe_of_a_gpu_host(env: Mapping[str, str] | None = None) -> str | None:
        return None

    monkeypatch.setattr("ktriage.record.run.gpu_problem", fake_probe_of_a_gpu_host)


# ----------------------------------------------------------------------------- the CLI


class CliResult(NamedTuple):
    """What one ``ktriage`` run gave: ``main``'s exit code and what it printed."""

    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        """stdout, then stderr (each in order; not interleaved as a terminal would show them)."""
        return self.stdout + self.stderr

    @property
    def err_text(self) -> str:
        """stderr with rich's line wrapping undone (runs of whitespace as one space)."""
        return " ".join(self.stderr.split())

    @property
    def problem(self) -> str:
        """The ``error:`` line of a user error (print_error), unwrapped."""
        assert "error: " in self.err_text, self.stderr
        return self.err_text.split("error: ", 1)[1].split(" fix: ", 1)[0]

    @property
    def fix(self) -> str | None:
        """The ``fix:`` line of a user error, unwrapped (with the details print_error shows after it)."""
        return self.err_text.split(" fix: ", 1)[1] if " fix: " in self.err_text else None


RunCli = Callable[..., CliResult]  # the type of the ``run_cli`` fixture, for annotations
CLI_COLUMNS = "250"  # wide enough that no table or error line of the tests wraps


@pytest.fixture()
def run_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> RunCli:
    """``run_cli(argv, env={...})``: run the real ``ktriage.cli.app.main(argv)`` in this process and
    return (exit code, stdout, stderr). The terminal is wide (COLUMNS, KTRIAGE_COLUMNS) and
    ``KTRIAGE_DEBUG`` is unset, so errors come out as the user sees them; ``env`` is set (for the rest
    of the test) before the run."""
    from ktriage.cli.app import main

    monkeypatch.setenv("COLUMNS", CLI_COLUMNS)
    monkeypatch.setenv("KTRIAGE_COLUMNS", CLI_COLUMNS)
    monkeypatch.delenv("KTRIAGE_DEBUG", raising=False)

    def run(argv: Sequence[str], env: Mapping[str, str] | None = None) -> CliResult:
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
        capsys.readouterr()  # what the test printed before is not the command's
        code = main(list(argv))
        out, err = capsys.readouterr()
        return CliResult(code, out, err)

    return run


# ----------------------------------------------------------------------------- temp folders left behind


@pytest.fixture(scope="session", autouse=True)
def no_triton_cache_folder_left() -> object:
    """At the end of the session (after every other session fixture, e.g. ``shared_compiler``, is
    closed): no compile worker of this process left its ``ktriage-triton-cache-<pid>-*`` folder in the
    temp folder (issue 27: dozens piled up). Reported as an error at the teardown of the last test."""
    import tempfile

    yield None
    from ktriage.compile.pool import TRITON_CACHE_PREFIX

    left = sorted(p.name for p in Path(tempfile.gettempdir()).glob(f"{TRITON_CACHE_PREFIX}{os.getpid()}-*"))
    assert not left, f"compile workers left their Triton cache folders in {tempfile.gettempdir()}: {left}"
