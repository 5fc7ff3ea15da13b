"""One writer per ``record -o``: the lock file ``W.json.lock`` beside the output (an advisory ``flock``
that dies with its holder) and the folders of ``-o``, made and removed under it.

Why its own module: the lock is one concept with its own races (a rival between the lock's creation
and its pid, a folder removed under a rival, a file a crashed recorder left), and :mod:`run` is about
the program. Why the pid must be in the file whenever a rival can see it: a refused recorder names
the holder, and "another record is writing W.json" without a pid leaves the user guessing which
process to wait for or stop. A lock file first appears with its holder's pid already in it (written
into a private file, locked, then hard-linked into place); the only windows without it are the takeover
of a file a dead recorder left (rewritten in place, since its path is already taken) and filesystems
without hard links, and there a refused rival reads again briefly before it words the refusal.
The private file is named with its creator's pid (``.W.json.lock.<pid>.XXXXXXXX``) because a recorder
killed between its creation and its removal (SIGKILL, the OOM killer) leaves it behind; the next
recorder of the same output removes those whose pid no longer runs, and never one of a running process.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ktriage.errors import KtriageError
from ktriage.processes import pid_alive

LOCK_SUFFIX = ".lock"
RACES = 5  # a lock file removed or replaced under us this many times in a row: give up
HOLDER_READS = 50  # how often a refused rival reads a holder pid that is missing or not running...
HOLDER_READ_PAUSE_S = 0.02  # ...this far apart (about 1 s in all) before it says what it found
# what follows ".W.json.lock." in a private file's name: its creator's pid, then mkstemp's random letters
_PRIVATE_TAIL = re.compile(r"(?P<pid>[0-9]+)\.[a-z0-9_]+")


def lock_path(output: Path) -> Path:
    return output.with_name(output.name + LOCK_SUFFIX)


@contextmanager
def output_lock(output: Path) -> Iterator[None]:
    """Make the missing folders of ``output`` and hold ``W.json.lock`` in them (an advisory ``flock``,
    released by the kernel when its holder dies, even by SIGKILL) for the whole recording; a second
    writer of the same output is refused at once, naming the output, the holder's pid and the fix.

    The folders and the lock are one step because a recording that fails or is refused removes the
    folders it made (so a refusal leaves nothing behind): done after its lock was released, that
    removal raced a second recorder that had found the folder and not yet created its lock in it,
    which was then refused with "cannot create the lock ...: No such file or directory" (a writable
    folder, and nobody recording). Now the folders go while the lock is still held (a recorder that
    opened the lock before is refused as the holder's rival; one that creates a new lock keeps the
    folder from being removed), and a lock whose folder vanished before it was created makes the
    folders again. The lock file is removed while still held, so none is left behind; a writer that
    locked a file another writer had just removed sees that the path no longer names its file and
    tries again. A file left by a recorder that died (SIGKILL, a crash) holds no ``flock``: the next
    recorder takes it over, nothing to delete by hand; so are the private files such a recorder left
    (:func:`_remove_dead_private_files`), refused or not."""
    path = lock_path(output)
    made: list[Path] = []  # deepest first: the folders this call created (not a racing writer's)
    races = reads = 0
    _remove_dead_private_files(path)
    while True:
        made = _make_folders(output, made)
        try:
            fd = _take(path)
        except FileNotFoundError:  # a refused recording removed the folder it had made: make it again
            fd = None
        except _Held as held:
            reads += 1
            if held.pid is None and reads < HOLDER_READS:  # the holder is between its lock and its pid
                time.sleep(HOLDER_READ_PAUSE_S)
                continue
            raise _refusal(output, path, held.pid, held.raw) from None
        except OSError as exc:
            _remove_empty(made)
            raise KtriageError(
                f"cannot create the lock {path}: {exc.strerror or exc}", "record into a writable folder (-o)"
            ) from None
        if fd is not None:
            break
        races += 1
        if races >= RACES:  # pragma: no cover - five races in a row
            _remove_empty(made)
            raise KtriageError(f"cannot take the lock {path}", "try again")
    written = False
    try:
        yield
        written = True
    finally:
        try:
            path.unlink(missing_ok=True)
            if not written:  # while the lock is held (the docstring says why)
                _remove_empty(made)
        finally:
            os.close(fd)


class _Held(Exception):
    """The lock at the path is held by another process: ``pid`` when it names a running process (None
    while it is missing or names none), ``raw`` as read."""

    def __init__(self, pid: int | None, raw: str) -> None:
        super().__init__(raw)
        self.pid = pid
        self.raw = raw


def _take(path: Path) -> int | None:
    """The descriptor of the lock at ``path``, held and with this pid in it; None when the path changed
    under us (try again). Raises :class:`_Held` when another process holds it."""
    import fcntl

    fd = _publish(path)
    if fd is not None:
        return fd
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)  # an existing file (or, without hard links, a new one)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        raw = os.pread(fd, 32, 0).decode(errors="replace").strip()
        os.close(fd)
        raise _Held(int(raw) if raw.isdigit() and pid_alive(int(raw)) else None, raw) from None
    if not _names(path, fd):
        os.close(fd)  # the lock of a file another writer had just removed: take the new one
        return None
    os.ftruncate(fd, 0)  # a file a dead recorder left: ours now
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    return fd


def _publish(path: Path) -> int | None:
    """Our lock, held, published at ``path`` with our pid already in it: written into a private file
    beside it, locked, and hard-linked to ``path`` (which fails if a lock file is there), so that no
    rival ever finds the file without its holder's pid. None when a file is at ``path`` already, or
    the filesystem has no hard links (the caller opens ``path`` itself)."""
    import fcntl

    fd, name = tempfile.mkstemp(prefix=f"{_private_prefix(path)}{os.getpid()}.", dir=path.parent)
    try:
        os.write(fd, str(os.getpid()).encode())
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody else knows this file: never waits
        try:
            os.link(name, path)
        except FileExistsError:
            os.close(fd)
            return None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK):
                raise
            os.close(fd)
            return None
        return fd
    except BaseException:
        os.close(fd)
        raise
    finally:
        with contextlib.suppress(FileNotFoundError):  # removed by a recorder that took it for a dead one's
            os.unlink(name)


def _private_prefix(path: Path) -> str:
    """How the private files of the lock at ``path`` begin: ``.W.json.lock.`` (then the pid)."""
    return f".{path.name}."


def _remove_dead_private_files(path: Path) -> None:
    """Remove the private files of the lock at ``path`` (:func:`_publish`) that recorders killed between
    their creation and their removal left behind: those whose pid no longer runs on this host. A
    running process's file is kept (it is about to link or remove it), and so is a file whose name
    carries no pid (made by a ktriage that did not write one) or that cannot be removed (another
    user's): a leftover is untidy, never a reason to refuse a recording."""
    prefix = _private_prefix(path)
    try:
        with os.scandir(path.parent) as listing:
            entries = list(listing)
    except OSError:  # no folder yet: nothing was left in it
        return
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        tail = _PRIVATE_TAIL.fullmatch(entry.name[len(prefix) :])
        if tail is None or pid_alive(int(tail["pid"])):
            continue
        with contextlib.suppress(OSError):
            if entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)


def _names(path: Path, fd: int) -> bool:
    """Whether ``path`` still names the file open at ``fd``."""
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except OSError:
        return False


def _refusal(output: Path, path: Path, pid: int | None, raw: str) -> KtriageError:
    """The refusal of a second writer: who holds the lock and what to do, for a holder that runs and
    for a lock whose recorder no longer runs (a process it started keeps the lock's file open)."""
    if pid is not None:
        return KtriageError(
            f"another `ktriage record` is writing {output} (pid {pid}); its lock {path} is held",
            f"wait until that recording ends (or stop it: kill {pid}), or record into another -o file",
        )
    gone = f"pid {raw}, which no longer runs" if raw.isdigit() else "its pid is not written in it"
    return KtriageError(
        f"the lock {path} of {output} is held, but not by a running `ktriage record` ({gone}): a process"
        " its recorder started still has the lock open",
        f"end that process (`fuser {path}` names it; the lock is released with it), or record into another -o file",
    )


def _make_folders(output: Path, made: Sequence[Path]) -> list[Path]:
    """Create the missing folders of ``output`` (the lock and the journal live beside it while the
    program runs, so they are needed before it starts); returns ``made`` with those this call created
    added, deepest first. A folder that existed before is never counted, nor one a racing writer made."""
    missing: list[Path] = []
    folder = output.parent
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    out = list(made)
    for path in reversed(missing):
        try:
            path.mkdir()
        except FileExistsError:
            continue
        except OSError as exc:
            _remove_empty(out)
            raise KtriageError(
                f"cannot create the folder of -o {output}: {exc.strerror or exc}", "choose a writable -o path"
            ) from None
        if path not in out:
            out.insert(0, path)
    return out


def _remove_empty(folders: Sequence[Path]) -> None:
    """Remove ``folders`` (deepest first) while they are empty; stop at the first that is not."""
    for path in folders:
        try:
            path.rmdir()  # only an empty folder: nothing written is lost
        except OSError:
            break
