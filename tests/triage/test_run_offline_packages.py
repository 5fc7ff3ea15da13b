"""``triage --run`` with a release toolchain on a host without network: the kernel modules' helper
(``packaging``, imported by Liger-Kernel's ``liger_kernel.ops.utils``) cannot be installed, and the
compile step says so with the package and the fix before compiling anything, instead of a partial
run whose every cell failed on a resolver message (the H200 run of issue 23 point 8).

Real parts: uv, with the package index a closed port on 127.0.0.1, offline, its cache empty; the
test home's Triton 3.6.0 toolchain; a fresh ktriage home for the packages (nothing installed); the
real Liger 0.8.5 recording of benchmarks/corpus/programs/liger_step.py (tests/data/workloads).
"""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ktriage.errors import KtriageError, SpecError
from ktriage.spec import packages

REPO = Path(__file__).resolve().parents[2]
WORKLOAD = REPO / "tests" / "data" / "workloads" / "liger_step.workload.json"


def go_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """From now on no network for uv and pip, and a fresh ktriage home; returns the home."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        index = f"http://127.0.0.1:{sock.getsockname()[1]}/simple"  # closed once the socket is
    for name, value in {
        "UV_OFFLINE": "1",
        "UV_INDEX_URL": index,
        "UV_DEFAULT_INDEX": index,
        "PIP_INDEX_URL": index,
        "PIP_NO_INDEX": "1",
        "UV_CACHE_DIR": str(tmp_path / "uv-cache"),
        "KTRIAGE_HOME": str(tmp_path / "home"),
    }.items():
        monkeypatch.setenv(name, value)
    return tmp_path / "home"


def test_an_offline_install_names_the_package_the_network_and_the_fix_and_is_tried_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    offline = go_offline(tmp_path, monkeypatch)
    runs: list[list[str]] = []
    real_run = subprocess.run

    def counting_run(cmd: list[str], *args: Any, **kwargs: Any) -> Any:  # the real uv, counted
        runs.append(list(cmd))
        return real_run(cmd, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", counting_run)
    with pytest.raises(SpecError) as first:
        packages.ensure_package("packaging==24.2")
    assert "could not install packaging==24.2" in first.value.problem
    assert "cannot reach the package index" in first.value.problem
    target = offline / "packages" / "packaging-24.2"
    assert str(target) in (first.value.fix or "") and "machine with network" in (first.value.fix or "")
    assert not target.exists()
    with pytest.raises(SpecError) as again:  # every kernel input and toolchain asks: uv runs once
        packages.ensure_package("packaging==24.2")
    assert again.value.problem == first.value.problem
    assert len(runs) == 1


@pytest.mark.slow
def test_a_release_toolchain_without_network_stops_the_compile_step_with_the_package_and_the_fix(
    toolchain: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ktriage.compile.compiler import Compiler
    from ktriage.record.workload import load_workload
    from ktriage.triage.program import require_packages

    release = toolchain("triton==3.6.0")  # built in the test home; its Python has no `packaging`
    offline = go_offline(tmp_path, monkeypatch)
    workload = load_workload(WORKLOAD)  # materializes the Liger snapshots in the fresh home
    with Compiler(jobs=1) as compiler:
        with pytest.raises(KtriageError) as err:
            require_packages(workload, [release], compiler)
    assert release.id in err.value.problem and "can compile none of the recorded kernels" in err.value.problem
    assert "could not install packaging==24.2" in err.value.problem
    assert "cannot reach the package index" in err.value.problem
    assert str(offline / "packages" / "packaging-24.2") in (err.value.fix or "")
