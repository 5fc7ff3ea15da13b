"""Nothing measured is lost: real writer processes killed (SIGKILL), interrupted (SIGINT), crashed
(SIGSEGV), and two writers racing on one SQLite file. Each child commits cells one by one and
prints a line after each commit; the parent acts on those lines, then reads the store."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ktriage.cli import exit_codes
from ktriage.store import open_store
from tests.conftest import RunCli
from tests.store.fixtures import store_url  # noqa: F401  (the fixture: every test runs on SQLite and PostgreSQL)

SAMPLES_PER_CELL = 200

CHILD = r"""
import ctypes, faulthandler, signal, sys, time
faulthandler.register(signal.SIGUSR1)  # the parent asks for every thread's stack when the child seems stuck
from pathlib import Path
from ktriage.measure.cells import Cell, CellKey, RunInfo
from ktriage.store import open_store

url, run_id, mode, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
barrier = Path(sys.argv[5]) if len(sys.argv) > 5 else None

def cell(i):
    samples = [0.5 + 0.001 * ((i * 7919 + j * 104729) % 997) for j in range(SAMPLES)]
    return Cell(CellKey("layer_norm", "bwd", i, f"N={1024 + 512 * i}", "liger_layer_norm", "triton-3.4.0"), "ok", samples)

if barrier is not None:  # start together: both open a store that may not exist yet
    while not barrier.exists():
        time.sleep(0.005)
store = open_store(url)
run = RunInfo(run_id=run_id, command=f"child {mode}", gpu={"name": "NVIDIA H200"})

if mode == "sigint":
    with store.recording(run) as rec:
        for i in range(n):
            rec.add(cell(i))
            print("committed", i + 1, flush=True)
        time.sleep(600)
else:
    store.start_run(run)
    for i in range(n):
        store.add_cell(run_id, cell(i))
        print("committed", i + 1, flush=True)
    if mode == "segv":
        ctypes.string_at(0)  # a real crash: SIGSEGV, no Python cleanup runs
    elif mode == "hang":
        time.sleep(600)
    else:
        store.finish_run(run_id, "finished")
""".replace("SAMPLES", str(SAMPLES_PER_CELL))


_spawned: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _close_children() -> Iterator[None]:
    """Every child's pipes are closed (and a child still running killed) after its test."""
    yield
    while _spawned:
        proc = _spawned.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def spawn(
    tmp_path: Path, url: str, run_id: str, mode: str, n: int, barrier: Path | None = None
) -> subprocess.Popen[str]:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    args = [sys.executable, str(script), url, run_id, mode, str(n)] + ([str(barrier)] if barrier else [])
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _spawned.append(proc)
    return proc


def read_commits(proc: subprocess.Popen[str], count: int) -> int:
    """Block until the child says it committed ``count`` cells; returns that count."""
    assert proc.stdout is not None
    last = 0
    while last < count:
        line = proc.stdout.readline()
        assert line, f"child ended early: rc={proc.wait()} stderr={proc.stderr.read() if proc.stderr else ''}"
        last = int(line.split()[1])
    return last


def assert_cells_whole(url: str, run_id: str, at_least: int) -> int:
    """Every committed cell is there with all its samples; returns how many cells there are."""
    with open_store(url) as store:
        _, cells = store.load_run(run_id)
    assert len(cells) >= at_least
    assert [c.key.input_id for c in cells] == list(range(len(cells)))
    assert all(len(c.samples_ms) == SAMPLES_PER_CELL for c in cells)
    return len(cells)


def test_sigkill_mid_run_keeps_committed_cells(store_url: str, tmp_path: Path, run_cli: RunCli) -> None:
    proc = spawn(tmp_path, store_url, "killed000001", "hang", 6)
    committed = read_commits(proc, 6)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    assert assert_cells_whole(store_url, "killed000001", committed) == 6
    with open_store(store_url) as store:
        summary = store.summary("killed")
    assert summary.run.status == "running"  # nobody could mark it
    assert summary.writer_alive is False and summary.display_status == "interrupted (writer gone)"
    result = run_cli(["runs", "list", "--db", store_url])
    assert result.exit_code == exit_codes.OK, result.output
    assert "killed000001" in result.output and "interrupted (writer gone)" in result.output and "6/0/0" in result.output


def test_sigkill_while_cells_stream_in(store_url: str, tmp_path: Path) -> None:
    """Killed between two commits at an arbitrary point: all cells it reported are there, none torn."""
    proc = spawn(tmp_path, store_url, "killed000002", "finish", 100_000)
    committed = read_commits(proc, 15)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert assert_cells_whole(store_url, "killed000002", committed) >= committed


def wait_or_dump(proc: subprocess.Popen[str], timeout: float) -> tuple[int, str]:
    """The child's exit code and stderr; a child still running after ``timeout`` s (CI under load once
    took more than 60 s here) dumps its stacks (faulthandler, SIGUSR1) into the failure message."""
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)
        try:
            _, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        pytest.fail(f"the child did not exit {timeout} s after SIGINT; its stacks:\n{err}")
    return proc.returncode, err


def test_sigint_marks_run_interrupted(store_url: str, tmp_path: Path) -> None:
    proc = spawn(tmp_path, store_url, "ctrlc0000001", "sigint", 4)
    read_commits(proc, 4)
    proc.send_signal(signal.SIGINT)
    rc, err = wait_or_dump(proc, timeout=180)
    assert rc != 0 and "KeyboardInterrupt" in err, err
    assert assert_cells_whole(store_url, "ctrlc0000001", 4) == 4
    with open_store(store_url) as store:
        summary = store.summary("ctrlc0000001")
    assert summary.run.status == "interrupted" and summary.display_status == "interrupted"
    assert summary.error == "interrupted (KeyboardInterrupt)"


def test_segfault_keeps_committed_cells(store_url: str, tmp_path: Path) -> None:
    proc = spawn(tmp_path, store_url, "segv00000001", "segv", 3)
    assert proc.wait(timeout=60) == -signal.SIGSEGV
    assert assert_cells_whole(store_url, "segv00000001", 3) == 3


def test_two_writers_one_store(store_url: str, tmp_path: Path) -> None:
    """Two processes open the same (not yet created) store at once and write two runs: both succeed."""
    barrier = tmp_path / "go"
    procs = [spawn(tmp_path, store_url, f"racer{i:07d}", "finish", 40, barrier) for i in range(2)]
    barrier.touch()
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    for i in range(2):
        assert assert_cells_whole(store_url, f"racer{i:07d}", 40) == 40
    with open_store(store_url) as store:
        assert {s.run.run_id: (s.run.status, s.counts) for s in store.summaries()} == {
            "racer0000000": ("finished", {"ok": 40}),
            "racer0000001": ("finished", {"ok": 40}),
        }


def test_reader_watches_a_running_run(tmp_path: Path, run_cli: RunCli) -> None:
    """SQLite in WAL mode: another process reads the cells of a run whose writer is still alive."""
    url = f"sqlite:///{tmp_path / 'watch.db'}"
    proc = spawn(tmp_path, url, "watched00001", "hang", 5)
    try:
        read_commits(proc, 5)
        result = run_cli(["runs", "show", "watched", "--db", url])
        assert result.exit_code == exit_codes.OK, result.output
        assert "5 cells" in result.output and "running" in result.output and "writer gone" not in result.output
        with open_store(url) as store, store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    finally:
        proc.kill()
        proc.wait()
    assert os.path.exists(tmp_path / "watch.db")


def test_a_store_whose_file_another_connection_is_writing_waits_for_it(tmp_path: Path) -> None:
    """Opening a store while another connection holds the write lock of its file, still in rollback mode
    (what the second of two processes creating one store met): the switch to WAL waits for the lock, as
    every other statement does, instead of failing at once with "database is locked"."""
    path = tmp_path / "store" / "ktriage.db"
    path.parent.mkdir()
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Timer(1.0, lambda: holder.execute("COMMIT"))
    release.start()
    try:
        with open_store(f"sqlite:///{path}") as store:
            assert store.summaries(limit=1) == []
    finally:
        release.join()
        holder.close()
