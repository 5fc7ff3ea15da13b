"""One way to write a file: a reader sees the old file or the new one, never half of one, and the new one
survives a crash once the call returns.

Why one helper: ktriage's writers (results files, bench bundle manifests, bisect state and build
markers, recorded workloads, toolchain markers, the artifact cache's manifests and sidecars) each had
their own temp-file-and-rename, with different guarantees: most did not fsync, and some left their
temp file behind when the write failed. Every writer goes through here instead (issue 26).

The steps, in order:

1. a temp file in the target's own folder (the same filesystem, so the rename is atomic), named
   ``.<name>.<random>.tmp``: hidden, unique per call, and ``*.tmp`` is what the artifact cache
   already skips as a file being written. It is created with ``O_EXCL`` and mode ``0o666`` less the
   umask, so the target gets the permissions a plain ``open(path, "w")`` gives it (``mkstemp``'s
   ``0600`` would not);
2. the caller's data is written, flushed and fsynced (on disk before a name points at it);
3. ``os.replace`` onto the target;
4. the folder is fsynced, so the rename itself is durable. A filesystem that cannot fsync a folder
   (some network and FUSE mounts refuse) is skipped: the rename has happened, only its durability
   is the filesystem's.

A target that is a symbolic link is resolved first (the file it points at is replaced, as ``open()``
would write it); a target that is a device, FIFO or socket (``-o /dev/stdout``) is written in place,
since there is nothing to rename over.

On any failure before the rename (an OSError, a serializer that raises, KeyboardInterrupt) the temp
file is removed, the target is untouched and the exception propagates unchanged. The folder is not
created here: a writer that may write into a new folder creates it first.

Lowest layer on purpose (imports nothing of ktriage), so every writer can use it. ``ktriage.insitu``
may not import it (it runs inside a toolchain's interpreter): ``insitu/worker.py`` keeps a small
local copy for the one file it writes this way, documented there.
"""

from __future__ import annotations

import io
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, TextIO

TEMP_SUFFIX = ".tmp"
"""The suffix of a temp file being written (``ktriage.compile.cache`` skips such names)."""


def temp_name(path: Path) -> Path:
    """A fresh temp file name beside ``path`` (hidden, ending in :data:`TEMP_SUFFIX`)."""
    return path.with_name(f".{path.name}.{secrets.token_hex(6)}{TEMP_SUFFIX}")


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make a folder's entries (names, renames) durable; a no-op where folders cannot be opened or
    fsynced (not every filesystem or platform allows it)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def fsync_file(path: str | os.PathLike[str]) -> None:
    """Flush an already written file's data to disk (e.g. a file a subprocess wrote)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def atomic_open(path: str | os.PathLike[str], *, encoding: str = "utf-8") -> Iterator[TextIO]:
    """A text file to write ``path`` through (see the module's steps): the target is replaced when the
    block ends normally, and left untouched, with no temp file, when it raises."""
    with _replace(Path(path)) as fh:
        text = io.TextIOWrapper(fh, encoding=encoding, write_through=True)
        try:
            yield text
            text.flush()
        finally:
            text.detach()  # the binary file stays _replace's to fsync and close


def write_atomic(path: str | os.PathLike[str], data: str | bytes, *, encoding: str = "utf-8") -> Path:
    """Replace ``path`` with ``data`` (text is encoded with ``encoding``) atomically and durably (see the
    module's steps); returns the path."""
    target = Path(path)
    with _replace(target) as fh:
        fh.write(data.encode(encoding) if isinstance(data, str) else data)
    return target


@contextmanager
def _replace(target: Path) -> Iterator[BinaryIO]:
    """The module's steps 1-4 around the caller's writes into a binary temp file."""
    if os.path.islink(target):  # write what the link points at, as open() would, not over the link
        target = Path(os.path.realpath(target))
    if _is_special(target):  # nothing to rename over (and /dev must never get a temp file)
        with open(target, "wb") as fh:
            yield fh
        return
    tmp = temp_name(target)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(target.parent)


def _is_special(path: Path) -> bool:
    """A device, FIFO or socket (``-o /dev/stdout``, a pipe): written in place, as ``open()`` would."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
