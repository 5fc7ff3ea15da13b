"""Compile workers' temp folders (issue 27): the Triton cache folder a worker compiles into is made by
the host, named with the host's pid, and removed when the worker is closed; the stale sweep removes
those of dead hosts. With a real toolchain's worker (import only, no compile)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ktriage.compile.pool import TRITON_CACHE_PREFIX, CompileWorker, sweep_triton_caches


def _mine() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob(f"{TRITON_CACHE_PREFIX}{os.getpid()}-*")}


def test_a_closed_worker_leaves_no_triton_cache_folder() -> None:
    worker = CompileWorker(Path(sys.executable))
    reply = worker.request({"id": "x", "bogus": True}, timeout=120)  # the worker answers (an error): it ran
    assert not reply.ok
    folder = Path(worker._env["TRITON_CACHE_DIR"])
    assert folder.is_dir() and folder.name in _mine()  # made by the host, named with its pid
    worker.close()
    assert not folder.exists()


def test_the_sweep_removes_dead_hosts_folders_and_keeps_live_ones() -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    ).stdout.strip()
    gone = Path(tempfile.mkdtemp(prefix=f"{TRITON_CACHE_PREFIX}{dead}-"))
    live = Path(tempfile.mkdtemp(prefix=f"{TRITON_CACHE_PREFIX}{os.getpid()}-"))
    try:
        assert sweep_triton_caches() >= 1
        assert not gone.exists() and live.exists()
    finally:
        for path in (gone, live):
            if path.exists():
                path.rmdir()
