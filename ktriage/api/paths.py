"""Checks on the paths an entry point will write, made before any work (a triage compiles and
bisects for minutes; a recording runs a whole program): a path that cannot be written, or an
existing file of another kind that would be overwritten, is a :class:`KtriageError` naming the fix.

Why in the api layer: these are the verbs' argument checks (the CLI's ``-o`` and the library's
``output=`` are the same argument), and the CLI reaches them through here (``cli/options``).
``option`` names the argument in the message as the command spells it. Which kind of ktriage data a
file holds, and the refusal to replace it (``data_kind``, ``check_not_data``), live in
``ktriage.schema.kinds`` (the bisect's ``--state`` checks them too, below this layer); they are
re-exported here for the CLI.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ktriage.errors import KtriageError
from ktriage.schema.kinds import RESULTS_FILE as RESULTS_FILE
from ktriage.schema.kinds import WORKLOAD as WORKLOAD
from ktriage.schema.kinds import check_not_data as check_not_data
from ktriage.schema.kinds import data_kind as data_kind
from ktriage.schema.kinds import file_head as file_head

NAME_MAX = 255  # bytes of one path component (Linux, macOS)
PATH_MAX = 4096  # bytes of a whole path (Linux)


def is_char_device(path: Path) -> bool:
    """Whether ``path`` is a character device (``/dev/null``, a terminal such as ``/dev/tty``): the usual
    way to discard an output or show it, written in place (``ktriage.atomic``), never replaced or
    given a file beside it. Block devices are not: a report written over a disk would destroy it."""
    try:
        return stat.S_ISCHR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def check_writable(path: Path, option: str = "--output", *, folder: bool = False, example: str = "report.md") -> None:
    """Refuse an output path that cannot be written, before any work: a folder (or, with ``folder``, a
    file), a path under a file, a name too long for the file system, or one whose nearest existing
    folder cannot be written in (tried with a probe file, so that it holds for root too; the missing
    folders below it are created when the output is written). A character device (``-o /dev/null``)
    needs only to be writable itself: it is written in place, so no probe goes into its folder. ``option`` names the option in the
    error (``-o``, ``--raw-dir``); ``example`` is the file name the fix suggests for a folder given."""
    import tempfile

    fix = "choose a writable " + option + " path"
    long = next((p for p in path.parts if len(os.fsencode(p)) > NAME_MAX), None)
    if long is not None:
        raise KtriageError(
            option + f" {str(path)[:80]}...: the name {long[:40]}... is {len(os.fsencode(long))} bytes, "
            f"over the file system's {NAME_MAX}",
            fix + " with shorter names",
        )
    if len(os.fsencode(str(path.absolute()))) >= PATH_MAX:
        raise KtriageError(option + f" {str(path)[:80]}...: the path is over {PATH_MAX} bytes", fix + ", shorter")
    if not folder and is_char_device(path):  # -o /dev/null: opened for writing, nothing made in /dev
        if not os.access(path, os.W_OK):
            raise KtriageError(option + f" {path}: the device cannot be written (permission denied)", fix)
        return
    where = path
    try:
        if folder and path.exists() and not path.is_dir():
            raise KtriageError(option + f" {path} is a file, not a folder", "give a folder (it is created if missing)")
        if not folder and path.is_dir():
            raise KtriageError(option + f" {path} is a folder", f"give a file name, e.g. {path / example}")
        where = path if folder else path.parent
        while not where.exists() and where != where.parent:
            where = where.parent
        if not where.is_dir():
            raise NotADirectoryError(20, f"{where} is not a folder")
        with tempfile.NamedTemporaryFile(dir=where, prefix=".ktriage-probe-"):
            pass
    except OSError as exc:
        raise KtriageError(option + f" {path}: cannot write in {where}: {exc.strerror or exc}", fix) from None


def check_replaceable(path: Path, option: str, marker: bytes, what: str) -> None:
    """Refuse to overwrite an existing file that is not ``what`` (its first 4 KB lack ``marker``): a
    mistyped ``-o results.json`` must not destroy a results file with a workload."""
    head = file_head(path)
    if head is not None and marker not in head:
        raise KtriageError(
            option + f" {path} exists and is not {what}: it would be overwritten",
            f"give a new file name, or remove {path} first",
        )
