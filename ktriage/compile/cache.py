"""The artifact cache's on-disk format, in one place: entries that verify themselves when read.

Layout under the cache root (``$KTRIAGE_HOME/artifacts``)::

    frontend/<key>/          one frontend result (IR files, Triton's cubin, result.json, manifest.json)
    cubin/<key>/             one ptxas run (kernel.cubin, ptxas.log, result.json, manifest.json)
    <kind>/.tmp-<key>-<host>.<pid>-<rand>/   an entry being written (its writer's host and pid in the name)
    quarantine/<kind>-<key>-<stamp>/  a damaged entry moved aside (with QUARANTINE_REASON), never served

Why a manifest: an entry is a folder of files that is published with one ``rename``, but a file can
still be truncated or edited afterwards (a full disk, a crash before the data reached the disk, a
hand edit). ``manifest.json`` lists the sha256 and size of every file of the entry; it is written
last, after every file and the folder are fsynced, and the folder is renamed into place (then the
parent is fsynced). An entry whose manifest is missing, unreadable or does not match its files is
*damaged*: it is moved under ``quarantine/`` (kept for a post-mortem, removed by ``ktriage cache gc``),
reported once as a warning (logger ``ktriage.cache``, and :attr:`ArtifactCache.repairs`), and the
caller compiles it again.

*Sidecars* are files added to an entry after it was published (the analyzed resources,
``resources-<key>.json``, written by ``ktriage.analyze.artifact``). They are not in the manifest
(several processes may add them concurrently); each carries its own hash instead (:func:`write_sidecar`),
and a damaged one is quarantined alone and recomputed.

Entries of the old format (no manifest) live under other keys (:data:`CACHE_FORMAT` is part of every
key), so they are never read, never quarantined, and ``cache gc --older-than`` removes them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import shutil
import socket
import stat
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ktriage.atomic import TEMP_SUFFIX, fsync_dir, fsync_file, write_atomic
from ktriage.errors import CompileError
from ktriage.processes import pid_alive
from ktriage.schema.jsontypes import JSONObject

log = logging.getLogger("ktriage.cache")

CACHE_FORMAT = 2
"""Part of every cache key: entries of another format are other entries (never read as damaged)."""
MANIFEST = "manifest.json"
RESULT = "result.json"
QUARANTINE = "quarantine"
QUARANTINE_REASON = "QUARANTINE_REASON"
TMP_PREFIX = ".tmp-"
KINDS = ("frontend", "cubin")
SIDECAR_PREFIX = "resources-"
STALE_TMP_S = 3600.0
"""A temp folder older than this is stale even when its writer's pid is alive (a recycled pid)."""


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _canonical(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()


def is_sidecar(name: str) -> bool:
    return name.startswith(SIDECAR_PREFIX) and name.endswith(".json")


def _is_partial(name: str) -> bool:
    """A file being written (``*.tmp``, ``ktriage.atomic``'s temp files): neither part of the entry nor damage."""
    return name.endswith(TEMP_SUFFIX)


def _listed_files(entry: Path) -> list[str]:
    return sorted(
        p.name
        for p in entry.iterdir()
        if p.is_file() and p.name != MANIFEST and not is_sidecar(p.name) and not _is_partial(p.name)
    )


MAX_MANIFEST_BYTES = 16 << 20  # a manifest lists a handful of files: anything larger is not one


def _not_an_entry(entry: Path) -> str | None:
    """Why ``entry`` (a path under a kind's folder) is no entry folder, or None when it is a folder."""
    if entry.is_symlink():
        return "a symbolic link, not an entry folder (not written by ktriage)"
    if entry.exists() and not entry.is_dir():
        return "not a folder (a file replaced the entry)"
    return None


def _plain_name(name: object) -> bool:
    """A file name the manifest may list: one component inside the entry, never a path out of it."""
    return (
        isinstance(name, str)
        and name not in ("", ".", "..")
        and "/" not in name
        and "\\" not in name
        and "\x00" not in name
    )


def entry_problem(entry: Path, *, sidecars: bool = True) -> str | None:
    """What is wrong with a published entry, or None when every file matches its manifest, result.json
    is a JSON object and (``sidecars``) every sidecar matches its own hash. Only regular files inside
    the entry are read: a manifest that names a path outside it (``../../etc/passwd``) or a symbolic
    link is damage, never a file to hash or measure.

    A run's read passes ``sidecars=False``: a damaged sidecar is quarantined alone when it is read
    (:func:`read_sidecar`) and recomputed from the verified cubin; checked here, it sent the whole
    entry to quarantine and its kernel to be compiled again."""
    not_entry = _not_an_entry(entry)
    if not_entry:
        return not_entry
    try:
        if (entry / MANIFEST).stat().st_size > MAX_MANIFEST_BYTES:
            return f"manifest.json is over {MAX_MANIFEST_BYTES >> 20} MB: not a manifest of this cache"
        manifest = json.loads((entry / MANIFEST).read_text())
    except FileNotFoundError:
        return "no manifest.json (an interrupted or foreign write)"
    except RecursionError:
        return "manifest.json nests lists/objects too deep: not a manifest of this cache"
    except (OSError, ValueError) as exc:
        return f"manifest.json is unreadable ({exc})"
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or manifest.get("format") != CACHE_FORMAT:
        return "manifest.json is not a manifest of this cache format"
    if RESULT not in files:
        return "the manifest lists no result.json"
    bad = sorted(str(n)[:80] for n in files if not _plain_name(n))
    if bad:
        return f"the manifest names paths that are no file of the entry: {', '.join(bad)[:300]}"
    for name, want in sorted(files.items()):
        path = entry / name
        try:
            info = path.lstat()
        except OSError:
            return f"{name} is missing"
        if not stat.S_ISREG(info.st_mode):
            return f"{name} is not a regular file (a link or a folder)"
        size = info.st_size
        if not isinstance(want, dict) or size != want.get("size"):
            return f"{name} has {size} bytes, the manifest says {want.get('size') if isinstance(want, dict) else '?'}"
        if _sha256_file(path) != want.get("sha256"):
            return f"{name} does not match its sha256 in the manifest (edited or corrupted)"
    extra = sorted(set(_listed_files(entry)) - set(files))
    if extra:
        return f"files not in the manifest: {', '.join(extra)}"
    try:
        record = json.loads((entry / RESULT).read_text())
    except RecursionError:
        return "result.json nests lists/objects too deep"
    except ValueError as exc:
        return f"result.json is not valid JSON ({exc})"
    if not isinstance(record, dict):
        return "result.json is not a JSON object"
    for side in sorted(entry.glob(f"{SIDECAR_PREFIX}*.json")) if sidecars else []:
        problem = sidecar_problem(side)
        if problem:
            return f"{side.name}: {problem}"
    return None


def sidecar_problem(path: Path) -> str | None:
    return _load_sidecar(path)[1]


def _load_sidecar(path: Path) -> tuple[Any, str | None]:
    """A sidecar's data and None, or None and what is wrong with it (read and parsed once)."""
    try:
        wrapper = json.loads(path.read_text())
    except FileNotFoundError:
        return None, "missing"
    except RecursionError:
        return None, "nests lists/objects too deep"
    except (OSError, ValueError) as exc:
        return None, f"not valid JSON ({exc})"
    if not isinstance(wrapper, dict) or "data" not in wrapper or "sha256" not in wrapper:
        return None, "not a sidecar of this cache format (no data and sha256)"
    if hashlib.sha256(_canonical(wrapper["data"])).hexdigest() != wrapper["sha256"]:
        return None, "its data does not match its sha256 (edited or corrupted)"
    return wrapper["data"], None


@dataclass(frozen=True)
class Repair:
    """A damaged entry (or sidecar) that was moved aside, to be compiled again."""

    path: Path
    problem: str
    quarantined_to: Path | None

    def line(self) -> str:
        where = f"; moved to {self.quarantined_to}" if self.quarantined_to else ""
        return f"cache: damaged entry {self.path.parent.name}/{self.path.name}: {self.problem}; recompiling{where}"


@dataclass
class ArtifactCache:
    """The cache under ``root``: reading verified entries, publishing new ones, quarantine, temp cleanup."""

    root: Path
    repairs: list[Repair] = field(default_factory=list)
    _verified: set[Path] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _writable: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        try:
            clean_stale_temps(self.root)
        except OSError:
            pass  # a read-only cache: reads still work, the first write says what to do

    def entry(self, kind: str, key: str) -> Path:
        return self.root / kind / key

    # -- reading --------------------------------------------------------------------------------
    def read(self, kind: str, key: str) -> tuple[Path, JSONObject] | None:
        """The entry's folder and parsed result.json, or None when it is absent or was damaged (then
        it has been quarantined and reported)."""
        entry = self.entry(kind, key)
        not_entry = _not_an_entry(entry)
        if not_entry:
            self._damaged(entry, not_entry)
            return None
        if not entry.is_dir():
            return None
        if entry not in self._verified:
            problem = entry_problem(entry, sidecars=False)
            if problem is not None:
                self._damaged(entry, problem)
                return None
            with self._lock:
                self._verified.add(entry)
            _touch(entry / MANIFEST)
        try:
            record = json.loads((entry / RESULT).read_text())
        except (OSError, ValueError) as exc:  # changed since it was verified
            self._damaged(entry, f"result.json is unreadable ({exc})")
            return None
        return entry, record

    def _damaged(self, path: Path, problem: str) -> None:
        with self._lock:
            self._verified.discard(path)
        moved = quarantine(self.root, path, problem)
        repair = Repair(path, problem, moved)
        with self._lock:
            self.repairs.append(repair)
        log.warning(repair.line())

    # -- writing --------------------------------------------------------------------------------
    def check_writable(self, kind: str) -> None:
        """Raise a CompileError naming the fix when the cache cannot be written."""
        if kind in self._writable:
            return
        folder = self.root / kind
        try:
            folder.mkdir(parents=True, exist_ok=True)
            probe = folder / f"{TMP_PREFIX}probe-{_writer_tag()}-{uuid.uuid4().hex[:8]}"
            probe.mkdir()
            probe.rmdir()
        except OSError as exc:
            raise CompileError(
                f"the artifact cache {self.root} is not writable ({exc.strerror or exc})",
                f"make it writable (chmod -R u+w {self.root}) or point KTRIAGE_HOME at a writable folder",
            ) from exc
        self._writable.add(kind)

    def temp_dir(self, kind: str, key: str, *, create: bool = True) -> Path:
        """A fresh temp folder for an entry, named with this host and process id (see stale_temps)."""
        self.check_writable(kind)
        tmp = self.root / kind / f"{TMP_PREFIX}{key}-{_writer_tag()}-{uuid.uuid4().hex[:8]}"
        if create:
            tmp.mkdir()
        return tmp

    def publish(self, kind: str, key: str, tmp: Path) -> Path:
        """Seal ``tmp`` (manifest written last; files and folder fsynced) and rename it into place.

        A concurrent writer of the same entry wins harmlessly: its entry is used when it verifies; a
        damaged entry in the way is quarantined first. Returns the published folder."""
        try:
            write_manifest(tmp)
        except FileNotFoundError as exc:
            raise CompileError(
                f"the cache entry being written in {tmp} vanished before it was published",
                "another process removed it (ktriage cache gc?); run again",
            ) from exc
        final = self.entry(kind, key)
        for _ in range(3):
            try:
                os.replace(tmp, final)
            except OSError:
                not_entry = _not_an_entry(final)
                if not_entry:  # a file or link in the way: moved aside, then published
                    self._damaged(final, not_entry)
                    continue
                if final.is_dir():
                    problem = entry_problem(final)
                    if problem is None:
                        shutil.rmtree(tmp, ignore_errors=True)
                        with self._lock:
                            self._verified.add(final)
                        return final
                    self._damaged(final, problem)
                    continue
                raise
            fsync_dir(final.parent)
            with self._lock:
                self._verified.add(final)
            return final
        shutil.rmtree(tmp, ignore_errors=True)
        raise CompileError(
            f"could not publish the cache entry {final}", "remove it (ktriage cache verify --fix) and run again"
        )


def write_manifest(entry: Path) -> None:
    """List every file of ``entry`` with its sha256 and size, fsyncing each; the manifest goes last,
    written to a temp name, fsynced and renamed, then the folder is fsynced."""
    files: dict[str, dict[str, str | int]] = {}
    for name in _listed_files(entry):
        path = entry / name
        fsync_file(path)
        files[name] = {"sha256": _sha256_file(path), "size": path.stat().st_size}
    write_atomic(entry / MANIFEST, json.dumps({"format": CACHE_FORMAT, "files": files}, indent=1, sort_keys=True))


def quarantine(root: Path, path: Path, problem: str) -> Path | None:
    """Move a damaged entry (or sidecar file) under ``root/quarantine`` with a note of why; None when it
    was already gone (a concurrent reader moved it first)."""
    qdir = root / QUARANTINE
    stamp = time.strftime("%Y%m%dT%H%M%S")
    dest = qdir / f"{path.parent.name}-{path.name}-{stamp}-{uuid.uuid4().hex[:6]}"
    try:
        qdir.mkdir(parents=True, exist_ok=True)
        os.replace(path, dest)
    except FileNotFoundError:
        return None
    except OSError:
        # cannot move it (read-only cache): leave it, it is re-verified (and refused) on every read
        return None
    try:
        note = dest / QUARANTINE_REASON if dest.is_dir() else dest.with_name(dest.name + "." + QUARANTINE_REASON)
        note.write_text(f"{path}\n{problem}\n")
    except OSError:
        pass
    fsync_dir(qdir)
    return dest


def _touch(path: Path) -> None:
    """Mark an entry used (its manifest's mtime), for ``cache gc --older-than``."""
    try:
        os.utime(path)
    except OSError:
        pass


# -- sidecars ----------------------------------------------------------------------------------


class _SidecarMemo:
    """The sidecars this process verified, by path, with the (inode, size, mtime) they were read at;
    at most ``limit`` file bytes of them, the least recently read dropped first, none over ``largest``."""

    def __init__(self, limit: int, largest: int) -> None:
        self.limit = limit
        self.largest = largest
        self._items: OrderedDict[str, tuple[tuple[int, int, int], Any]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, path: str, stamp: tuple[int, int, int]) -> tuple[bool, Any]:
        with self._lock:
            hit = self._items.get(path)
            if hit is None or hit[0] != stamp:
                return False, None
            self._items.move_to_end(path)
            return True, hit[1]

    def put(self, path: str, stamp: tuple[int, int, int], data: Any) -> None:
        size = stamp[1]
        if size > self.largest:
            return
        with self._lock:
            old = self._items.pop(path, None)
            self._bytes += size - (old[0][1] if old is not None else 0)
            self._items[path] = (stamp, data)
            while self._bytes > self.limit:
                _path, (old_stamp, _data) = self._items.popitem(last=False)
                self._bytes -= old_stamp[1]


_sidecar_memo = _SidecarMemo(limit=32 << 20, largest=4 << 20)  # a typical sidecar is ~10 kB; the largest seen 2 MB


def read_sidecar(entry: Path, name: str) -> Any | None:
    """A sidecar's data, or None when absent or damaged (a damaged one is quarantined and reported).

    A sidecar this process has verified is served from memory while its file keeps the same inode,
    size and modification time (every write replaces the file: a new inode): a report quoting 40 of a
    cubin's lines read and re-hashed the same excerpt file 40 times, a tenth of a warm explain. The
    data is shared between callers, who only read it. An edit that keeps all three (a write in place
    that restores the mtime) is seen by the next process, which verifies the hash again."""
    path = entry / name
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    except OSError:
        info = None
    stamp = (info.st_ino, info.st_size, info.st_mtime_ns) if info is not None else None
    if stamp is not None:
        found, data = _sidecar_memo.get(str(path), stamp)
        if found:
            return data
    data, problem = _load_sidecar(path)
    if problem is not None:
        if problem == "missing":  # removed since the stat (cache gc)
            return None
        root = entry.parent.parent
        moved = quarantine(root, path, problem)
        repair = Repair(path, problem, moved)
        log.warning(repair.line())
        return None
    if stamp is not None:
        _sidecar_memo.put(str(path), stamp, data)
    return data


def write_sidecar(entry: Path, name: str, data: Any) -> None:
    """Add a self-hashed file to a published entry (``ktriage.atomic``: temp file, fsync, rename)."""
    wrapper = {"sha256": hashlib.sha256(_canonical(data)).hexdigest(), "data": data}
    try:
        write_atomic(entry / name, json.dumps(wrapper))
    except OSError:
        return  # a read-only cache: the facts are recomputed next time


# -- maintenance -------------------------------------------------------------------------------


def _host() -> str:
    return "".join(c for c in socket.gethostname() if c.isalnum())[:32] or "host"


def _writer_tag() -> str:
    return f"{_host()}.{os.getpid()}"


def _writer_pid(name: str) -> int | None:
    """The pid in ``.tmp-<key>-<host>.<pid>-<rand>`` when written on this host; None for another host's
    writer (its pids are not ours to test) and for older names: then age alone decides."""
    parts = name[len(TMP_PREFIX) :].split("-")
    if len(parts) < 3:
        return None
    host, _, pid = parts[-2].rpartition(".")
    return int(pid) if host == _host() and pid.isdigit() else None


def stale_temps(
    root: Path, *, max_age_s: float = STALE_TMP_S, now: float | None = None, parts: bool = True
) -> Iterator[Path]:
    """Temp folders and files whose writer is gone: its pid is dead, or older than ``max_age_s``.
    ``parts=False`` skips the ``*.tmp`` files inside published entries (a listing of every entry)."""
    now = time.time() if now is None else now
    for kind in KINDS:
        folder = root / kind
        if not folder.is_dir():
            continue
        for path in folder.iterdir():
            if path.name.startswith(TMP_PREFIX):
                # a pid-dead writer on this host is gone; its folder may still be young
                try:
                    age = now - path.stat().st_mtime
                except OSError:
                    continue
                pid = _writer_pid(path.name)
                if age > max_age_s or (pid is not None and pid != os.getpid() and not pid_alive(pid)):
                    yield path
            elif parts and path.is_dir():
                for part in path.glob("*.tmp"):
                    try:
                        if now - part.stat().st_mtime > max_age_s:
                            yield part
                    except OSError:
                        continue


def _remove(path: Path) -> int:
    size = tree_size(path)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
    return size


PARTS_SWEEP_MARK = ".parts-swept"
"""Touched in the cache root when the entries were last listed for stale ``*.tmp`` parts."""


def clean_stale_temps(root: Path, *, now: float | None = None) -> int:
    """Remove stale temp folders (every start: one listing per kind folder) and stale ``*.tmp`` parts
    inside entries; returns bytes freed. The parts need a listing of every entry (60-70 ms a start with
    2,500 entries), and a part is stale only after ``STALE_TMP_S``, so they are looked for at most once
    in that time (``PARTS_SWEEP_MARK``); ``ktriage cache gc`` always looks."""
    now = time.time() if now is None else now
    mark = root / PARTS_SWEEP_MARK
    try:
        parts = now - mark.stat().st_mtime >= STALE_TMP_S
    except OSError:
        parts = True
    freed = sum(_remove(p) for p in list(stale_temps(root, now=now, parts=parts)))
    if parts and root.is_dir():
        mark.touch()
        os.utime(mark, (now, now))
    return freed


def tree_size(path: Path) -> int:
    try:
        if path.is_file() or path.is_symlink():
            return path.lstat().st_size
        return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file())
    except OSError:
        return 0


@dataclass(frozen=True)
class EntryState:
    """One published entry as ``cache verify`` sees it."""

    kind: str
    key: str
    path: Path
    problem: str | None
    size: int
    legacy: bool = False
    """An entry of the old format (no manifest, written before CACHE_FORMAT 2): not damaged, not read."""
    quarantined: bool | None = None  # after verify --fix: moved aside (True) or left in place (False)
    not_moved: str | None = None  # why a damaged entry was left in place

    def to_json(self) -> JSONObject:
        return {
            "kind": self.kind,
            "key": self.key,
            "path": str(self.path),
            "ok": self.problem is None,
            "problem": self.problem,
            "size_bytes": self.size,
            "legacy": self.legacy,
            "quarantined": self.quarantined,
            "not_moved": self.not_moved,
        }


def _is_legacy(entry: Path) -> bool:
    """An entry of the format before manifests: no manifest, and a readable result.json without the
    ``cache_format`` key that every format-2 record carries. (A format-2 entry that lost its manifest
    still has that key, so it reads as damaged, not legacy.)"""
    if _not_an_entry(entry) or (entry / MANIFEST).exists():
        return False
    try:
        record = json.loads((entry / RESULT).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and "cache_format" not in record


def entries(root: Path) -> Iterator[tuple[str, Path]]:
    for kind in KINDS:
        folder = root / kind
        if folder.is_dir():
            for path in sorted(folder.iterdir()):
                if not path.name.startswith(TMP_PREFIX):  # a file or link there is listed: verify calls it damaged
                    yield kind, path


def verify_all(root: Path) -> list[EntryState]:
    """Every published entry of the cache, verified."""
    states = []
    for kind, path in entries(root):
        legacy = _is_legacy(path)
        problem = None if legacy else entry_problem(path)
        states.append(EntryState(kind, path.name, path, problem, tree_size(path), legacy))
    return states


@dataclass(frozen=True)
class CacheInfo:
    root: Path
    entries: dict[str, int]
    legacy_entries: int
    quarantined: int
    temps: int
    size_bytes: int
    exists: bool = True
    """False: the cache's folder (or the whole ktriage home) was not made yet; ``cache info`` does not make it."""

    def to_json(self) -> JSONObject:
        return {
            "path": str(self.root),
            "exists": self.exists,
            "entries": self.entries,
            "legacy_entries": self.legacy_entries,
            "quarantined": self.quarantined,
            "temp_folders": self.temps,
            "size_bytes": self.size_bytes,
            "format": CACHE_FORMAT,
        }


def cache_info(root: Path) -> CacheInfo:
    counts = dict.fromkeys(KINDS, 0)
    legacy = 0
    for kind, path in entries(root):
        if _is_legacy(path):
            legacy += 1
        else:
            counts[kind] += 1
    qdir = root / QUARANTINE
    quarantined = len([p for p in qdir.iterdir() if not p.name.endswith(QUARANTINE_REASON)]) if qdir.is_dir() else 0
    temps = sum(
        1 for kind in KINDS if (root / kind).is_dir() for p in (root / kind).iterdir() if p.name.startswith(TMP_PREFIX)
    )
    exists = root.is_dir()
    return CacheInfo(root, counts, legacy, quarantined, temps, tree_size(root) if exists else 0, exists)


@dataclass(frozen=True)
class GcItem:
    path: Path
    why: str  # "quarantined", "temp", "unused"
    size: int

    def to_json(self) -> JSONObject:
        return {"path": str(self.path), "why": self.why, "size_bytes": self.size}


def gc_plan(root: Path, *, older_than_days: float | None = None, now: float | None = None) -> list[GcItem]:
    """What ``cache gc`` removes: quarantined entries, stale temp folders, and (with ``older_than_days``)
    entries not used for that long (their manifest's mtime, or the folder's for old-format entries)."""
    now = time.time() if now is None else now
    items: list[GcItem] = []
    qdir = root / QUARANTINE
    if qdir.is_dir():
        items += [GcItem(p, "quarantined", tree_size(p)) for p in sorted(qdir.iterdir())]
    items += [GcItem(p, "temp", tree_size(p)) for p in stale_temps(root, now=now)]
    if older_than_days is not None:
        limit = older_than_days * 86400.0
        for _kind, path in entries(root):
            marker = path / MANIFEST
            try:
                used = (marker if marker.exists() else path).stat().st_mtime
            except OSError:
                continue
            if now - used > limit:
                items.append(GcItem(path, "unused", tree_size(path)))
    return items


def gc(root: Path, *, older_than_days: float | None = None, dry_run: bool = False) -> tuple[list[GcItem], int]:
    """Remove what :func:`gc_plan` lists (nothing with ``dry_run``); returns the items and bytes freed."""
    items = gc_plan(root, older_than_days=older_than_days)
    if dry_run:
        return items, sum(i.size for i in items)
    freed = 0
    for item in items:
        freed += _remove(item.path)
    return items, freed


def fix_damaged(root: Path, states: list[EntryState]) -> list[EntryState]:
    """Quarantine every damaged entry of a :func:`verify_all` answer; the states again, each damaged
    one saying whether it was moved (``quarantined``) and, if not, why (a read-only cache)."""
    out = []
    for s in states:
        if s.problem is None:
            out.append(s)
            continue
        why = _cannot_quarantine(root)
        moved = quarantine(root, s.path, s.problem) if why is None else None
        if moved is None and why is None and (s.path.exists() or s.path.is_symlink()):
            why = "it could not be moved (the cache or its quarantine folder is not writable)"
        out.append(dataclasses.replace(s, quarantined=moved is not None, not_moved=why))
    return out


def _cannot_quarantine(root: Path) -> str | None:
    qdir = root / QUARANTINE
    try:
        qdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"the quarantine folder {qdir} cannot be made ({exc.strerror or exc})"
    return None
