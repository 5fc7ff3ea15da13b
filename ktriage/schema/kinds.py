"""Which kind of ktriage data a file holds, told from its first bytes, and the refusal to replace it.

Why here, in the schema layer: the ``-o`` checks of every verb (``ktriage.api.paths``) and the bisect's
``--state`` (``ktriage.bisect.search``, a layer below the api) must tell the same kinds apart with the
same words: one table of kinds, one check.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path

from ktriage.errors import KtriageError

HEAD_BYTES = 4096  # what tells a file's kind


def file_head(path: Path) -> bytes | None:
    """The first 4 KB of the file at ``path``; None when there is no readable file there (the
    writers' path checks say what is wrong with the path)."""
    try:
        if not path.is_file():
            return None
        with path.open("rb") as fh:
            return fh.read(HEAD_BYTES)
    except OSError:
        return None


# The ktriage files that only a GPU host, a recorded program or hours of bisecting make: an output of
# another kind must not replace one. Matched on the layout ktriage writes them in (the first keys of
# the document), so a report that merely mentions a run or a workload is not taken for one. A results
# file written before format_version (``{"run": {...``, still read by read_results) is one too: `explain
# -o run.json` replaced such a file without a word.
RESULTS_FILE = "a ktriage results file (measured cells)"
WORKLOAD = "a ktriage workload"
BISECT_STATE = "a bisect state file"
_DATA_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (RESULTS_FILE, re.compile(r'\A\s*\{\s*(?:"format_version":\s*\d+,\s*)?"run":\s*\{')),
    (WORKLOAD, re.compile(r'\A\s*\{\s*"format_version":\s*\d+,\s*"kind":\s*"ktriage-workload"')),
    (BISECT_STATE, re.compile(r'\A\s*\{\s*"format_version":\s*\d+,\s*"fingerprint":\s*\{')),
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


def check_not_data(
    path: Path,
    option: str,
    *,
    allowed: Collection[str | None] = (),
    written: str = "the report",
    fix: str | None = None,
    named: str | None = None,
) -> None:
    """Refuse to replace ``path`` when it holds ktriage data (:func:`data_kind`) of a kind not in
    ``allowed`` (the kinds the command writes there). Why: ``-o`` replaced whatever it named without a
    word, so ``triage ... -o run.json`` destroyed a results file measured on a GPU. Reports are replaced,
    as a nightly rewriting ``reports/triage.md`` must. ``written``: what would replace it, as the message
    names it (``the bisect state`` for ``--state``); ``fix``: the way on (default: another ``-o`` file);
    ``named``: how the message names the file (default ``{option} {path}``; the bisect state's is
    ``state='PATH' (--state PATH)``, as kt.bisect's callers pass it)."""
    head = file_head(path)
    kind = data_kind(head) if head is not None else None
    if kind is not None and kind not in allowed:
        raise KtriageError(
            (named or option + f" {path}") + f" exists and is {kind}: {written} would replace it",
            fix
            or f"write {written} to another file, e.g. "
            + option
            + f" {path.with_name(path.stem + '-report' + path.suffix)}",
        )
