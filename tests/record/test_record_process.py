"""Process control of ``ktriage record`` (issue 27), with real processes and real signals: the
program runs in its own process group; SIGTERM and SIGINT to record reach the whole group and the
workload is still written; SIGKILL of record leaves no orphan (the watchdog ends the group) and the
journal stays readable as the workload; a second record of the same -o refuses while the first runs.

The "program" is a Python process (so the hook installs and writes its journal header) that starts
a grandchild, writes both pids to a file and sleeps. Waits are bounded polls on a condition (the
pid file appears, the processes are gone), never timing asserts."""

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
from ktriage.record.workload import load_workload

PROGRAM = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open(sys.argv[1] + ".tmp", "w") as fh:
    fh.write(f"{os.getpid()} {child.pid}")
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(600)
"""


def _wait(condition: Callable[[], bool], what: str, limit_s: float = 120.0) -> None:
    end = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting: {what}")
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def _start_record(tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path, list[int]]:
    output = tmp_path / "W.json"
    pids = tmp_path / "pids"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ktriage", "record", "-o", str(output), "--", sys.executable, "-c", PROGRAM, str(pids)],
        cwd=tmp_path,
    )
    _wait(lambda: pids.exists() or proc.poll() is not None, "the program's pid file")
    assert proc.poll() is None, "record ended before the program started"
    return proc, output, [int(p) for p in pids.read_text().split()]


def _reap(pids: list[int]) -> None:
    for pid in pids:  # a failing test must not leave its sleepers behind
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_to_record_reaches_the_group_and_the_workload_is_written(tmp_path: Path, sig: signal.Signals) -> None:
    proc, output, pids = _start_record(tmp_path)
    try:
        proc.send_signal(sig)
        assert proc.wait(timeout=120) == exit_codes.INTERRUPTED
        _wait(lambda: not any(_alive(p) for p in pids), "the program and its child to end")
        workload = load_workload(output)  # W.json itself, compacted from the journal
        assert workload.recorded["interrupted"] == sig.name
        assert not Path(str(output) + ".journal").exists() and not Path(str(output) + ".lock").exists()
    finally:
        _reap(pids)


def test_sigkill_of_record_leaves_no_orphan_and_a_readable_workload(tmp_path: Path) -> None:
    proc, output, pids = _start_record(tmp_path)
    try:
        proc.kill()
        proc.wait(timeout=60)
        _wait(lambda: not any(_alive(p) for p in pids), "the watchdog to end the orphaned program and its child")
        assert not output.exists()
        workload = load_workload(output)  # read from the journal left beside it
        assert workload.kernels == [] and workload.path == output
    finally:
        _reap(pids)


def test_a_second_record_of_the_same_output_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], probe_sees_a_gpu: None
) -> None:
    proc, output, pids = _start_record(tmp_path)
    marker = tmp_path / "second-ran"
    try:
        code = main(["record", "-o", str(output), "--", sys.executable, "-c", f"open({str(marker)!r}, 'w')"])
        err = capsys.readouterr().err
        assert code == exit_codes.USAGE
        assert "another `ktriage record` is writing" in err and f"pid {proc.pid}" in err and "fix:" in err
        assert not marker.exists()  # refused before running anything
    finally:
        proc.terminate()
        proc.wait(timeout=120)
        _reap(pids)
    # once the first has ended, the same output records again
    assert main(["record", "-o", str(output), "--", sys.executable, "-c", "pass"]) == exit_codes.OK
    assert marker.exists() is False and load_workload(output).recorded["returncode"] == 0


def test_no_gpu_and_nothing_launched_is_refused_and_writes_no_workload(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A program that launched no kernel on a host without a usable GPU: record refuses, naming the
    problem (no GPU, so no Triton kernel) and the fix (record on the GPU machine, explain here), and
    leaves no empty W.json that would read as a recording (it used to write one and exit 0 or 4).
    The CUDA driver is asked for real: CUDA_VISIBLE_DEVICES="" hides any GPU, so the answer is the
    same on a GPU host."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    output = tmp_path / "W.json"
    code = main(["record", "-o", str(output), "--", sys.executable, "-c", "raise SystemExit(3)"])
    err = " ".join(capsys.readouterr().err.split())  # the console wraps long lines
    assert code == exit_codes.USAGE, err
    assert "no CUDA GPU here, so the program launched no Triton kernel (it exited 3)" in err
    assert "no CUDA driver" in err or "no usable GPU" in err or "finds no GPU" in err  # the driver's answer
    assert "fix: record on the GPU machine" in err and "explain W.json -t OLD -t NEW" in err
    assert not output.exists() and not (tmp_path / "W.json.journal").exists()
    assert not (tmp_path / "W.json.lock").exists()
    # a workload recorded there before is kept, not replaced by an empty one
    output.write_text('{"format_version": 1, "kind": "ktriage-workload", "kernels": []}')
    before = output.read_bytes()
    assert main(["record", "-o", str(output), "--", sys.executable, "-c", "pass"]) == exit_codes.USAGE
    err = " ".join(capsys.readouterr().err.split())
    assert "(it exited 0)" in err and "W.json is left as it was" in err
    assert output.read_bytes() == before


def test_a_program_that_launched_nothing_on_a_gpu_host_is_told_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], probe_sees_a_gpu: None
) -> None:
    """On a GPU host (the driver probe faked to answer as there) a program that launched no Triton
    kernel gets its empty workload, and record says why it is empty (explain's wording) instead of
    only "recorded 0 kernels"."""
    output = tmp_path / "W.json"
    assert main(["record", "-o", str(output), "--", sys.executable, "-c", "print('no kernel here')"]) == exit_codes.OK
    err = capsys.readouterr().err
    assert "recorded 0 kernels" in err and "nothing to explain:" in err and "launched no Triton kernel" in err
    assert "no GPU" not in err
    assert load_workload(output).kernels == []


def test_a_refused_recording_removes_the_folders_it_created_and_no_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`record -o new/dir/W.json` creates the folders of -o before the program runs (its lock and
    journal live there); a refused recording (no GPU, a command that cannot run) removes those it
    created, so it leaves nothing behind (an empty new/dir used to stay). A folder that was there
    before stays, even when empty."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # the real driver probe answers "no GPU" (as above)
    output = tmp_path / "new" / "dir" / "W.json"
    code = main(["record", "-o", str(output), "--", sys.executable, "-c", "pass"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == exit_codes.USAGE and "no CUDA GPU here" in err, err
    assert not (tmp_path / "new").exists()
    assert main(["record", "-o", str(output), "--", str(tmp_path / "no-such-program")]) == exit_codes.USAGE
    assert "not found" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()
    # a folder that existed before (empty) is kept; only the one record made below it goes
    (tmp_path / "new").mkdir()
    assert main(["record", "-o", str(output), "--", sys.executable, "-c", "pass"]) == exit_codes.USAGE
    assert (tmp_path / "new").is_dir() and not (tmp_path / "new" / "dir").exists()
    assert sorted(tmp_path.iterdir()) == [tmp_path / "new"]


def test_a_recording_written_keeps_the_folders_it_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], probe_sees_a_gpu: None
) -> None:
    output = tmp_path / "new" / "dir" / "W.json"
    assert main(["record", "-o", str(output), "--", sys.executable, "-c", "pass"]) == exit_codes.OK
    assert load_workload(output).kernels == []


def test_the_lock_makes_its_folders_and_removes_them_while_held(tmp_path: Path) -> None:
    """Two recordings into the same new folder: one that was refused removed the folder it had made
    after releasing its lock, while the other had found the folder and not yet created its lock in
    it; that one was refused with "cannot create the lock ...: No such file or directory" (seen about
    once in 150 rounds of three racing processes). The folders are made in the same step as the lock,
    again when they vanished before it, and removed while it is held."""
    from ktriage.record.lock import lock_path, output_lock

    output = tmp_path / "new" / "dir" / "W.json"
    with output_lock(output):  # the folders are the lock's: none to make beforehand
        assert lock_path(output).exists()
    assert output.parent.is_dir() and not lock_path(output).exists()  # a recording written keeps them
    output = tmp_path / "other" / "W.json"
    with pytest.raises(RuntimeError), output_lock(output):
        raise RuntimeError("refused")
    assert not (tmp_path / "other").exists()  # a refused one removes what it made, nothing else


def test_a_second_record_into_the_same_new_folder_is_refused_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], probe_sees_a_gpu: None
) -> None:
    """Two real recorders of one -o in a folder neither found: the second is refused with the output
    and the fix, and leaves the folder and the first's lock in place; the first still writes."""
    output = tmp_path / "new" / "dir" / "W.json"
    pids_file = tmp_path / "pids"
    first = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ktriage",
            "record",
            "-o",
            str(output),
            "--",
            sys.executable,
            "-c",
            PROGRAM,
            str(pids_file),
        ],
        cwd=tmp_path,
    )
    pids: list[int] = []
    try:
        _wait(lambda: pids_file.exists() or first.poll() is not None, "the program's pid file")
        assert first.poll() is None, "record ended before the program started"
        pids = [int(p) for p in pids_file.read_text().split()]
        code = main(["record", "-o", str(output), "--", sys.executable, "-c", "pass"])
        err = " ".join(capsys.readouterr().err.split())
        assert code == exit_codes.USAGE
        assert f"another `ktriage record` is writing {output} (pid {first.pid})" in err, err
        assert (
            f"fix: wait until that recording ends (or stop it: kill {first.pid}), or record into another -o file" in err
        )
        assert Path(str(output) + ".lock").exists()
    finally:
        first.terminate()
        first.wait(timeout=120)
        _reap(pids)
    assert load_workload(output).recorded is not None
