"""record's lock (``ktriage.record.lock``) against real rival processes: a refused recorder always
names the holder's pid, a lock file a crashed recorder left is taken over, a private file a recorder
killed before linking it left is removed (only a dead recorder's), and a lock held by a process its
recorder started (the recorder gone) is refused with what to end."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ktriage.cli import exit_codes
from ktriage.cli.app import main
from ktriage.errors import KtriageError
from ktriage.record.lock import lock_path, output_lock
from ktriage.record.workload import load_workload

# A holder that freezes right after its FREEZE-th call of the system calls a lock is taken with
# (FREEZE 0: never), so that a rival meets every state the holder passes through; it says "frozen"
# or, once it holds the lock and the recording would run, "held".
HOLDER = """
import fcntl, os, sys, time
from pathlib import Path
from ktriage.record.lock import output_lock

output, freeze, state = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
calls = 0

def say(word):
    state.with_suffix(".tmp").write_text(word)
    state.with_suffix(".tmp").replace(state)

def frozen(fn):
    def call(*args, **kwargs):
        global calls
        out = fn(*args, **kwargs)
        calls += 1
        if calls == freeze:
            say("frozen")
            time.sleep(600)
        return out
    return call

for module, name in [(os, "open"), (os, "write"), (os, "pwrite"), (os, "ftruncate"), (os, "link"), (fcntl, "flock")]:
    if hasattr(module, name):
        setattr(module, name, frozen(getattr(module, name)))
with output_lock(output):
    say("held")
    time.sleep(600)
"""

# A process that holds the lock file open and locked with a pid that no longer runs in it: what a
# child of a recorder that died, having inherited the lock's descriptor, leaves.
ORPHAN_HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, sys.argv[2].encode())
fcntl.flock(fd, fcntl.LOCK_EX)
open(sys.argv[3], "w").close()
time.sleep(600)
"""


def _wait(condition: Callable[[], bool], what: str, limit_s: float = 120.0) -> None:
    end = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting: {what}")
        time.sleep(0.02)


def _dead_pid() -> int:
    """The pid of a process that has ended and been reaped."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _end(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)


def test_a_refused_rival_names_the_holders_pid_at_every_step_of_taking_the_lock(tmp_path: Path) -> None:
    """A rival that meets the holder between any two of its steps either takes the lock (the holder
    had not published it yet) or is refused naming the holder's pid. Before, the lock file was
    created and locked first and the pid written after: a rival in between was refused as "another
    `ktriage record` is writing W.json; its lock ... is held", with no pid to wait for or stop."""
    freeze = 1
    while True:
        output = tmp_path / f"step{freeze}" / "W.json"
        output.parent.mkdir()
        state = output.with_name("state")
        holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(output), str(freeze), str(state)])
        try:
            _wait(lambda s=state, h=holder: s.exists() or h.poll() is not None, f"the holder to reach step {freeze}")
            assert holder.poll() is None, f"the holder ended at step {freeze}"
            try:
                with output_lock(output):
                    taken = True
            except KtriageError as exc:
                taken = False
                assert f"(pid {holder.pid})" in exc.problem, (freeze, exc.problem)
                assert f"kill {holder.pid}" in (exc.fix or ""), exc.fix
            if state.read_text() == "held":
                assert not taken, "a rival took a lock that was held"
                break
        finally:
            _end(holder)
        freeze += 1
        assert freeze < 50, "the holder never held the lock"


def test_a_lock_file_left_by_a_crashed_recorder_is_taken_over(tmp_path: Path) -> None:
    """A recorder killed by SIGKILL leaves ``W.json.lock`` with its pid and no ``flock``: the next
    recorder takes it, writes its own pid in it and removes it at the end; nothing to delete by hand."""
    output = tmp_path / "W.json"
    lock_path(output).write_text(str(_dead_pid()))
    with output_lock(output):
        assert lock_path(output).read_text() == str(os.getpid())
    assert not lock_path(output).exists()


@pytest.mark.parametrize("pid_text", ["dead", ""], ids=["a-dead-pid", "no-pid"])
def test_a_lock_held_by_a_process_whose_recorder_died_names_what_to_end(tmp_path: Path, pid_text: str) -> None:
    """The lock is held but the pid in it no longer runs (or none is written): the holder is a process
    the recorder started, that kept the lock open. The refusal says so and how to go on (end that
    process, ``fuser`` names it), rather than naming a pid to wait for that will never end."""
    output = tmp_path / "W.json"
    ready = tmp_path / "ready"
    written = str(_dead_pid()) if pid_text == "dead" else ""
    orphan = subprocess.Popen([sys.executable, "-c", ORPHAN_HOLDER, str(lock_path(output)), written, str(ready)])
    try:
        _wait(lambda: ready.exists() or orphan.poll() is not None, "the orphan to hold the lock")
        with pytest.raises(KtriageError) as info:
            with output_lock(output):
                pass
        problem, fix = info.value.problem, info.value.fix or ""
        assert "not by a running `ktriage record`" in problem, problem
        assert (f"pid {written}, which no longer runs" if written else "its pid is not written") in problem
        assert f"fuser {lock_path(output)}" in fix and "another -o file" in fix, fix
    finally:
        _end(orphan)
    assert lock_path(output).exists()  # the refused rival removed nothing of the holder's


# A recorder killed (SIGKILL, as the OOM killer does) between the creation of its private file and its
# link to the lock's name: what it leaves behind in the folder of -o.
KILLED_BEFORE_LINK = """
import os, signal, sys
from pathlib import Path
from ktriage.record.lock import output_lock

def killed(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

os.link = killed
with output_lock(Path(sys.argv[1])):
    pass
"""


def _private_files(output: Path) -> list[Path]:
    return sorted(output.parent.glob(f".{lock_path(output).name}.*"))


def test_a_private_file_left_by_a_recorder_killed_before_its_link_is_removed_by_the_next_record(
    tmp_path: Path, probe_sees_a_gpu: None
) -> None:
    """A recorder killed between creating ``.W.json.lock.<pid>.XXXXXXXX`` and linking it to ``W.json.lock``
    left the private file behind for good (its name carried no pid, so nobody could tell it was a dead
    recorder's). Its name now carries the pid, and the next ``ktriage record`` of the same output
    removes it."""
    output = tmp_path / "W.json"
    killed = subprocess.Popen([sys.executable, "-c", KILLED_BEFORE_LINK, str(output)])
    assert killed.wait(timeout=120) == -signal.SIGKILL
    left = _private_files(output)
    assert [p.name.startswith(f".W.json.lock.{killed.pid}.") for p in left] == [True], left
    assert left[0].read_text() == str(killed.pid)
    assert main(["record", "-o", str(output), "--", sys.executable, "-c", "pass"]) == exit_codes.OK
    assert _private_files(output) == [] and not lock_path(output).exists()
    assert load_workload(output).recorded["returncode"] == 0


def test_only_the_private_files_of_dead_recorders_are_removed(tmp_path: Path) -> None:
    """The next recorder removes a private file whose pid is dead, and keeps one whose pid runs (a rival
    between its file's creation and its link), one whose name carries no pid, and another output's."""
    output = tmp_path / "W.json"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        dead = tmp_path / f".W.json.lock.{_dead_pid()}.abc_123x"
        live = tmp_path / f".W.json.lock.{sleeper.pid}.abc_123x"
        no_pid = tmp_path / ".W.json.lock.abc_123x"
        other = tmp_path / f".V.json.lock.{_dead_pid()}.abc_123x"
        for path in (dead, live, no_pid, other):
            path.write_text("")
        with output_lock(output):
            assert not dead.exists()
        assert live.exists() and no_pid.exists() and other.exists()
    finally:
        _end(sleeper)
