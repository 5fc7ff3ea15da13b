"""ktriage.atomic, the one way to write a file: the target is replaced whole or not at all, no temp file
survives a failure, and the file and its folder are fsynced (observed with strace on a real run).

The failures are real ones: a serializer that raises half-way through, a KeyboardInterrupt inside the
block, a rename that the filesystem refuses (the target is a non-empty folder). No os function is
patched. The insitu worker's local copy (it may not import ktriage) is held to the same behaviour,
and so are the writers that used to leave their temp file behind (bisect state, bisect build marker,
bundle manifest).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from ktriage.atomic import TEMP_SUFFIX, atomic_open, write_atomic
from ktriage.insitu import worker


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(TEMP_SUFFIX))


def test_writes_text_and_bytes_with_plain_open_permissions(tmp_path: Path) -> None:
    text = tmp_path / "a.txt"
    assert write_atomic(text, "héllo\n") == text
    assert text.read_text(encoding="utf-8") == "héllo\n"
    blob = tmp_path / "b.bin"
    write_atomic(blob, b"\x00\x01")
    assert blob.read_bytes() == b"\x00\x01"
    plain = tmp_path / "plain.txt"
    plain.write_text("x")  # what open(path, "w") gives under this umask
    assert (text.stat().st_mode & 0o777) == (plain.stat().st_mode & 0o777)
    assert _leftovers(tmp_path) == []


def test_serializer_that_raises_half_way_leaves_target_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    target.write_text('{"old": true}')
    doc = {"a": list(range(10_000)), "z": object()}  # json.dump streams "a" before it fails on "z"
    with pytest.raises(TypeError), atomic_open(target) as fh:
        json.dump(doc, fh)
    assert target.read_text() == '{"old": true}'
    assert _leftovers(tmp_path) == []


def test_keyboard_interrupt_inside_the_block_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    with pytest.raises(KeyboardInterrupt), atomic_open(target) as fh:
        fh.write("half")
        raise KeyboardInterrupt
    assert not target.exists()
    assert _leftovers(tmp_path) == []


def _bisect_state(target: Path) -> None:
    from ktriage.bisect.search import StateFile

    StateFile(target, {"q": 1}).save()


def _bisect_marker(target: Path) -> None:
    from ktriage.bisect.workspace import _write_marker

    _write_marker(target, "stamp", "log", 1.0)


def _bundle_manifest(target: Path) -> None:
    from ktriage.workload.bundles.format import MANIFEST, write_manifest

    assert target.name == MANIFEST
    write_manifest(target.parent, {"format_version": 1})


def _insitu_copy(target: Path) -> None:
    worker.write_atomic(str(target), "data")


@pytest.mark.parametrize(
    "write",
    [
        pytest.param(lambda p: write_atomic(p, "data"), id="write_atomic"),
        pytest.param(_insitu_copy, id="insitu-local-copy"),
        pytest.param(_bisect_state, id="bisect-state"),
        pytest.param(_bisect_marker, id="bisect-marker"),
        pytest.param(_bundle_manifest, id="bundle-manifest"),
    ],
)
def test_refused_rename_leaves_target_and_no_temp(tmp_path: Path, write: Callable[[Path], None]) -> None:
    """The target is a non-empty folder: the temp file is written and fsynced, then the rename fails
    (a real OSError from the filesystem); the folder in the way is untouched and no temp file is left."""
    target = tmp_path / "manifest.json"
    target.mkdir()
    (target / "keep").write_text("x")
    with pytest.raises(OSError):
        write(target)
    assert (target / "keep").read_text() == "x"
    assert _leftovers(tmp_path) == []


def test_insitu_copy_writes_like_the_helper(tmp_path: Path) -> None:
    worker.write_atomic(str(tmp_path / "a.json"), '{"a": 1}')
    write_atomic(tmp_path / "b.json", '{"a": 1}')
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert (tmp_path / "a.json").stat().st_mode == (tmp_path / "b.json").stat().st_mode
    assert _leftovers(tmp_path) == []


_STRACE_SCRIPT = textwrap.dedent(
    """
    import sys
    from ktriage.atomic import write_atomic
    from ktriage.insitu import worker
    if sys.argv[2] == "helper":
        write_atomic(sys.argv[1], "data")
    else:
        worker.write_atomic(sys.argv[1], "data")
    """
)


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
@pytest.mark.parametrize("which", ["helper", "insitu"])
def test_file_and_folder_are_fsynced_around_the_rename(tmp_path: Path, which: str) -> None:
    """Observed, not mocked: the system calls of a real write under strace. The temp file is fsynced
    before the rename, and the target's folder is opened and fsynced after it."""
    folder = tmp_path / "out"
    folder.mkdir()
    target = folder / "r.json"
    log = tmp_path / "strace.log"
    proc = subprocess.run(
        ["strace", "-f", "-o", str(log), "-e", "trace=openat,fsync,rename,renameat,renameat2,close", sys.executable]
        + ["-c", _STRACE_SCRIPT, str(target), which],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0 and "ptrace" in proc.stderr:
        pytest.skip(f"strace cannot trace here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    assert target.read_text() == "data"
    lines = log.read_text().splitlines()
    fd_names: dict[str, str] = {}
    events: list[tuple[str, str]] = []
    for line in lines:
        if m := re.search(r'openat\(AT_FDCWD, "([^"]+)", ([^)]*)\) = (\d+)', line):
            fd_names[m.group(3)] = m.group(1)
        elif m := re.search(r"fsync\((\d+)\)\s+= 0", line):
            events.append(("fsync", fd_names.get(m.group(1), "?")))
        elif m := re.search(r'rename(?:at2?)?\((?:AT_FDCWD, )?"([^"]+)", (?:AT_FDCWD, )?"([^"]+)"', line):
            events.append(("rename", m.group(1) + " -> " + m.group(2)))
    renames = [i for i, (kind, what) in enumerate(events) if kind == "rename" and what.endswith(f"-> {target}")]
    assert len(renames) == 1, events
    tmp = events[renames[0]][1].split(" -> ")[0]
    assert Path(tmp).parent == folder and Path(tmp).name.endswith(TEMP_SUFFIX)
    assert ("fsync", tmp) in events[: renames[0]], events  # the data before the name
    after = events[renames[0] + 1 :]
    assert ("fsync", str(folder)) in after, events  # the rename itself durable
    assert not os.path.exists(tmp)


def test_a_symlink_target_replaces_what_it_points_at(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_atomic(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    assert _leftovers(tmp_path) == []


def test_a_fifo_is_written_in_place_not_renamed_over(tmp_path: Path) -> None:
    """``-o /dev/stdout`` or a pipe: no temp file beside it, the FIFO stays a FIFO."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_atomic(fifo, "through the pipe")
    reader.join(timeout=30)
    assert got == [b"through the pipe"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert _leftovers(tmp_path) == []
