"""Which stored toolchains a ``--toolchain`` filter names (``runs list``, ``history``): one rule for both.

Why components, not substrings: ``--toolchain 3.4`` was a substring of the id and spec, so it also
matched ``triton-3.3.1.ptxas-13.4.59.<hash>`` (its ptxas is 13.4.59) and ``triton-3.40.0``. A filter
now names a toolchain's parts. A toolchain id is ``triton-<triton>.ptxas-<ptxas>.<hash8>``
(``ktriage.toolchain.manager.toolchain_id``); a selector matches when it is, case-insensitively:

- the whole id (``triton-3.4.0.ptxas-12.8.93.da4345e0``), or its hash alone (``da4345e0``);
- the id cut at a dot (``triton-3.4.0.ptxas-12.8.93``, as compare quotes it; ``triton-3.4``);
- a Triton version or a prefix of one at a version boundary (``3.4`` is 3.4.0 and 3.4.1, not 3.40.0,
  and never a ptxas version);
- a spec (docs/toolchains.md), every item of which holds: ``triton==V`` and ``ptxas==V`` by version
  prefix of that part of the id, any other item (``triton=host``, ``ptxas-options=-O3``) as an item
  of the toolchain's recorded spec;
- ``host``: a native backend (a cell without a toolchain), as ``history`` shows it.

Anything else is refused (:func:`check_selector`) with the forms it may take, rather than matching nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ktriage.errors import KtriageError
from ktriage.toolchain.spec import KNOWN_KEYS

HOST = "host"  # the selector of a native backend (no toolchain)
_VERSION = re.compile(r"^\d+(\.\d+)*$")
_HASH = re.compile(r"^[0-9a-f]{8}$")
_SPEC_ITEM = re.compile(rf"^({'|'.join(map(re.escape, KNOWN_KEYS))})(==|=)(?!=).+$")  # spec.py's keys
_ID = re.compile(r"^triton-(?P<triton>.+?)(?:\.ptxas-(?P<ptxas>.+?))?(?:\.(?P<hash>[0-9a-f]{8}))?$")
FORMS = (
    "a Triton version or its prefix (3.4), a spec (triton==3.4.0, triton==3.4.0,ptxas==12.8.93, triton=host), "
    "a toolchain id or the id cut at a dot (triton-3.4.0.ptxas-12.8.93), its 8-character hash, or host for a "
    "native backend"
)


@dataclass(frozen=True)
class _Parts:
    triton: str
    ptxas: str
    hash: str


def _parts(tc_id: str) -> _Parts:
    m = _ID.match(tc_id)
    if m is None:  # not an id ktriage writes (a hand-made store): only the whole id names it
        return _Parts("", "", "")
    return _Parts(m.group("triton"), m.group("ptxas") or "", m.group("hash") or "")


def _version_prefix(wanted: str, version: str) -> bool:
    """``3.4`` names 3.4.0, 3.4.1 and 3.4.0+git1a2b, not 3.40.0: the prefix ends where a number does."""
    wanted = wanted.rstrip(".")
    return bool(wanted) and version.startswith(wanted) and not version[len(wanted) : len(wanted) + 1].isdigit()


def _spec_items(spec: str) -> list[str]:
    return [item.replace(" ", "") for item in spec.lower().split(",") if item.strip()]


def check_selector(selector: str, flag: str = "--toolchain") -> str:
    """``selector`` stripped, or a KtriageError naming the forms it may take."""
    sel = selector.strip().lower()
    if sel == HOST or _VERSION.match(sel.rstrip(".")) or _HASH.match(sel) or sel.startswith("triton-"):
        return sel
    items = _spec_items(sel)
    if items and all(_SPEC_ITEM.match(i) for i in items):
        return sel
    raise KtriageError(f"{flag} {selector!r} names no part of a toolchain", f"give {FORMS}")


def toolchain_matches(selector: str, tc_id: str, spec: str = "") -> bool:
    """Whether ``selector`` (module docstring) names the toolchain ``tc_id`` ("" for a native backend)
    whose recorded spec is ``spec`` ("" when unknown)."""
    sel = selector.strip().lower()
    tc_id = tc_id.lower()
    if not tc_id:
        return sel == HOST
    if sel == tc_id:
        return True
    parts = _parts(tc_id)
    if sel.startswith("triton-"):
        return tc_id.startswith(sel.rstrip(".") + ".")
    if _HASH.match(sel) and sel == parts.hash:
        return True
    if _VERSION.match(sel.rstrip(".")):
        return _version_prefix(sel, parts.triton)
    items = _spec_items(sel)
    if not items or "=" not in sel:
        return False
    recorded = _spec_items(spec)
    for item in items:
        if item.startswith("triton=="):
            ok = _version_prefix(item.removeprefix("triton=="), parts.triton)
        elif item.startswith("ptxas=="):
            ok = _version_prefix(item.removeprefix("ptxas=="), parts.ptxas)
        else:
            ok = item in recorded
        if not ok:
            return False
    return True
