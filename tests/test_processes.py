"""ktriage.processes.pid_alive: the one test of whether a pid a lock, a temporary folder or a stored run
names still runs (real processes; no fakes)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from ktriage.processes import pid_alive


def test_this_process_runs_and_impossible_pids_do_not() -> None:
    assert pid_alive(os.getpid())
    assert not pid_alive(0) and not pid_alive(-1)
    assert not pid_alive(2**62)  # beyond pid_t: an answer, not an OverflowError


def test_a_process_that_ended_is_dead_reaped_or_not() -> None:
    """A child that exited but was not reaped is a zombie: it holds no lock and writes nothing, so it
    does not run (record's lock used to call it the holder)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while pid_alive(child.pid) and time.monotonic() < deadline:  # exits, stays a zombie until waited for
        time.sleep(0.05)
    assert not pid_alive(child.pid)
    child.wait()
    assert not pid_alive(child.pid)


def test_a_running_child_runs() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert pid_alive(child.pid)
    finally:
        child.kill()
        child.wait()
