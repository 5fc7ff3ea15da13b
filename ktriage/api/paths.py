"""Checks on the paths an entry point will write, made before any work (a triage compiles and
bisects for minutes; a recording runs a whole program): a path that cannot be written, or an
existing file of another kind that would be overwritten, is a :class:`KtriageError` naming the fix.

Why in the api layer: these are the verbs' argument checks (the CLI's ``-o`` and the library's
``output=`` are the same argument), and the CLI reaches them through here (``cli/options``).
``option`` names the argument in the message as the command spells it.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Collection
from pathlib import Path

from ktriage.errors import KtriageError

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

    fix = f"choose a writable {option} path"
    long = next((p for p in path.parts if len(os.fsencode(p)) > NAME_MAX), None)
    if long is not None:
        raise KtriageError(
            f"{option} {str(path)[:80]}...: the name {long[:40]}... is {len(os.fsencode(long))} bytes, "
            f"over the file system's {NAME_MAX}",
            f"{fix} with shorter names",
        )
    if len(os.fsencode(str(path.absolute()))) >= PATH_MAX:
        raise KtriageError(f"{option} {str(path)[:80]}...: the path is over {PATH_MAX} bytes", f"{fix}, shorter")
    if not folder and is_char_device(path):  # -o /dev/null: opened for writing, nothing made in /dev
        if not os.access(path, os.W_OK):
            raise KtriageError(f"{option} {path}: the device cannot be written (permission denied)", fix)
        return
    where = path
    try:
        if folder and path.exists() and not path.is_dir():
            raise KtriageError(f"{option} {path} is a file, not a folder", "give a folder (it is created if missing)")
        if not folder and path.is_dir():
            raise KtriageError(f"{option} {path} is a folder", f"give a file name, e.g. {path / example}")
        where = path if folder else path.parent
        while not where.exists() and where != where.parent:
            where = where.parent
        if not where.is_dir():
            raise NotADirectoryError(20, f"{where} is not a folder")
        with tempfile.NamedTemporaryFile(dir=where, prefix=".ktriage-probe-"):
            pass
    except OSError as exc:
        raise KtriageError(f"{option} {path}: cannot write in {where}: {exc.strerror or exc}", fix) from None


def _file_head(path: Path) -> bytes | None:
    """The first 4 KB of the file at ``path`` (what tells a file's kind); None when there is no readable
    file there (check_writable says what is wrong with the path)."""
    try:
        if not path.is_file():
            return None
        with path.open("rb") as fh:
            return fh.read(4096)
    except OSError:
        return None


def check_replaceable(path: Path, option: str, marker: bytes, what: str) -> None:
    """Refuse to overwrite an existing file that is not ``what`` (its first 4 KB lack ``marker``): a
    mistyped ``-o results.json`` must not destroy a results file with a workload."""
    head = _file_head(path)
    if head is not None and marker not in head:
        raise KtriageError(
            f"{option} {path} exists and is not {what}: it would be overwritten",
            f"give a new file name, or remove {path} first",
        )


# The ktriage files that only a GPU host, a recorded program or hours of bisecting make: an output of
# another kind must not replace one. Matched on the layout ktriage writes them in (the first keys of
# the document), so a report that merely mentions a run or a workload is not taken for one. A results
# file written before format_version (``{"run": {...``, still read by read_results) is one too: `explain
# -o run.json` replaced such a file without a word.
RESULTS_FILE = "a ktriage results file (measured cells)"
WORKLOAD = "a ktriage workload"
_DATA_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (RESULTS_FILE, re.compile(r'\A\s*\{\s*(?:"format_version":\s*\d+,\s*)?"run":\s*\{')),
    (WORKLOAD, re.compile(r'\A\s*\{\s*"format_version":\s*\d+,\s*"kind":\s*"ktriage-workload"')),
    ("a bisect state file", re.compile(r'\A\s*\{\s*"format_version":\s*\d+,\s*"fingerprint":\s*\{')),
    ("a ktriage model file", re.compile(r'\A\s*\{\s*"format":\s*\d+,\s*"params":\s*\{')),
)
BINARY = "a binary file"


def data_kind(head: bytes) -> str | None:
    """Which ktriage data file (or binary file: a gzipped workload, a database) these first bytes of
    a file begin; None for anything else, a report included."""
    if head.startswith(b"\x1f\x8b") or b"\0" in head:
        return BINARY
    text = head.decode("utf-8", errors="replace")
    return next((kind for kind, pattern in _DATA_KINDS if pattern.match(text)), None)


def check_not_data(path: Path, option: str, *, allowed: Collection[str | None] = ()) -> None:
    """Refuse to replace ``path`` when it holds ktriage data (:func:`data_kind`) of a kind not in
    ``allowed`` (the kinds the command writes there). Why: ``-o`` replaced whatever it named without a
    word, so ``triage ... -o run.json`` destroyed a results file measured on a GPU. Reports are replaced,
    as a nightly rewriting ``reports/triage.md`` must."""
    head = _file_head(path)
    kind = data_kind(head) if head is not None else None
    if kind is not None and kind not in allowed:
        raise KtriageError(
            f"{option} {path} exists and is {kind}: the report would replace it",
            f"write the report to another file, e.g. {option} {path.with_name(path.stem + '-report' + path.suffix)}",
        )
