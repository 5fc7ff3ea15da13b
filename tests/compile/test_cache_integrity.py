"""The cache format (ktriage/compile/cache.py) on plain folders: manifests, verification, quarantine,
sidecars, stale temp folders, gc. No compiles here; tests/compile/test_cache_faults.py damages real
entries made by real toolchains."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ktriage.compile import cache
from ktriage.compile.cache import ArtifactCache, entry_problem, read_sidecar, write_sidecar
from ktriage.compile.pool import InFlight


def _publish(root: Path, key: str = "k1", kind: str = "frontend") -> Path:
    store = ArtifactCache(root)
    tmp = store.temp_dir(kind, key)
    (tmp / "kernel.ptx").write_text("// ptx\n")
    (tmp / "kernel.triton.cubin").write_bytes(b"\x7fELF" + bytes(range(200)))
    (tmp / "result.json").write_text(json.dumps({"cache_format": cache.CACHE_FORMAT, "kernel_name": "k"}))
    return store.publish(kind, key, tmp)


def test_a_published_entry_has_a_manifest_of_every_file_and_verifies(tmp_path: Path) -> None:
    entry = _publish(tmp_path)
    manifest = json.loads((entry / cache.MANIFEST).read_text())
    assert manifest["format"] == cache.CACHE_FORMAT
    assert sorted(manifest["files"]) == ["kernel.ptx", "kernel.triton.cubin", "result.json"]
    assert all(len(f["sha256"]) == 64 for f in manifest["files"].values())
    assert entry_problem(entry) is None
    assert not list((tmp_path / "frontend").glob(".tmp-*"))
    hit = ArtifactCache(tmp_path).read("frontend", "k1")
    assert hit is not None and hit[1]["kernel_name"] == "k"


@pytest.mark.parametrize(
    "damage, words",
    [
        (lambda e: (e / "kernel.triton.cubin").write_bytes(b"\x7fELF"), "kernel.triton.cubin has 4 bytes"),
        (lambda e: (e / "kernel.ptx").write_text("// PTX\n"), "kernel.ptx does not match its sha256"),
        (lambda e: (e / "result.json").write_text('{"kernel_na'), "result.json has"),
        (lambda e: (e / "result.json").write_text(""), "result.json has 0 bytes"),
        (lambda e: (e / "result.json").unlink(), "result.json is missing"),
        (lambda e: (e / cache.MANIFEST).unlink(), "no manifest.json"),
        (lambda e: (e / cache.MANIFEST).write_text("{"), "manifest.json is unreadable"),
        (lambda e: (e / "stray.bin").write_bytes(b"x"), "files not in the manifest: stray.bin"),
    ],
)
def test_a_damaged_entry_is_quarantined_once_and_reads_as_a_miss(
    tmp_path: Path, damage, words: str, caplog: pytest.LogCaptureFixture
) -> None:
    entry = _publish(tmp_path)
    damage(entry)
    assert words in (entry_problem(entry) or "")
    store = ArtifactCache(tmp_path)
    with caplog.at_level("WARNING", logger="ktriage.cache"):
        assert store.read("frontend", "k1") is None
        assert store.read("frontend", "k1") is None  # gone: a plain miss now, not reported again
    assert not entry.exists()
    [repair] = store.repairs
    assert words in repair.problem and repair.quarantined_to is not None
    [moved] = [p for p in (tmp_path / cache.QUARANTINE).iterdir() if p.is_dir()]
    assert moved == repair.quarantined_to
    assert words in (moved / cache.QUARANTINE_REASON).read_text()
    assert [r.message for r in caplog.records] == [repair.line()]
    # republishing over the quarantined key works and verifies
    assert entry_problem(_publish(tmp_path)) is None


def test_publishing_over_a_damaged_entry_replaces_it(tmp_path: Path) -> None:
    """The old bug: an entry without result.json was recompiled, the rename failed silently and the old
    PTX was served."""
    entry = _publish(tmp_path)
    (entry / "result.json").unlink()
    (entry / "kernel.ptx").write_text("// stale\n")
    store = ArtifactCache(tmp_path)
    tmp = store.temp_dir("frontend", "k1")
    (tmp / "kernel.ptx").write_text("// fresh\n")
    (tmp / "result.json").write_text("{}")
    final = store.publish("frontend", "k1", tmp)
    assert (final / "kernel.ptx").read_text() == "// fresh\n" and entry_problem(final) is None
    assert len(store.repairs) == 1


def test_a_concurrent_writer_of_the_same_entry_wins_harmlessly(tmp_path: Path) -> None:
    first = _publish(tmp_path)
    second = _publish(tmp_path)
    assert first == second and entry_problem(first) is None
    assert not list((tmp_path / "frontend").glob(".tmp-*"))


def test_sidecars_carry_their_own_hash(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    entry = _publish(tmp_path)
    write_sidecar(entry, "resources-abc.json", {"registers": 40, "schema": 2})
    assert read_sidecar(entry, "resources-abc.json") == {"registers": 40, "schema": 2}
    assert entry_problem(entry) is None  # sidecars are not in the manifest, but are verified
    path = entry / "resources-abc.json"
    path.write_text(path.read_text().replace('"registers": 40', '"registers": 255'))
    assert "resources-abc.json" in (entry_problem(entry) or "")
    with caplog.at_level("WARNING", logger="ktriage.cache"):
        assert read_sidecar(entry, "resources-abc.json") is None
    assert not path.exists() and len(caplog.records) == 1
    assert entry_problem(entry) is None  # the sidecar alone went to quarantine; the entry is intact


def test_a_verified_sidecar_is_served_from_memory_until_its_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    entry = _publish(tmp_path)
    write_sidecar(entry, "resources-memo.json", {"registers": 40})
    assert read_sidecar(entry, "resources-memo.json") == {"registers": 40}
    loads: list[Path] = []
    real_load = cache._load_sidecar
    monkeypatch.setattr(cache, "_load_sidecar", lambda path: loads.append(path) or real_load(path))
    assert read_sidecar(entry, "resources-memo.json") == {"registers": 40}
    assert loads == []  # the same file: neither read nor hashed again
    write_sidecar(entry, "resources-memo.json", {"registers": 41})  # a new file (written aside, renamed)
    assert read_sidecar(entry, "resources-memo.json") == {"registers": 41}
    assert len(loads) == 1
    path = entry / "resources-memo.json"
    stamp = path.stat().st_mtime_ns
    path.write_text(path.read_text().replace('"registers": 41', '"registers": 42'))  # same inode and size
    os.utime(path, ns=(stamp + 10**9, stamp + 10**9))
    with caplog.at_level("WARNING", logger="ktriage.cache"):
        assert read_sidecar(entry, "resources-memo.json") is None  # its hash is checked again: damaged
    assert not path.exists() and len(caplog.records) == 1


def test_the_sidecar_memo_keeps_at_most_its_byte_budget_the_least_recently_read_dropped() -> None:
    """Pure bookkeeping: a long bisect reads thousands of sidecars; memory must not grow with them."""
    memo = cache._SidecarMemo(limit=800, largest=300)
    for name, size in (("a", 300), ("b", 300), ("c", 100)):
        memo.put(name, (1, size, 1), name.upper())
    assert memo.get("a", (1, 300, 1)) == (True, "A")  # read again: now the most recent
    memo.put("d", (1, 300, 1), "D")  # 1000 bytes: b, the least recently read, goes
    assert memo.get("b", (1, 300, 1)) == (False, None)
    assert [memo.get(k, (1, n, 1))[0] for k, n in (("a", 300), ("c", 100), ("d", 300))] == [True, True, True]
    assert memo.get("a", (2, 300, 1)) == (False, None)  # another inode: another file
    memo.put("e", (1, 301, 1), "E")  # larger than the largest kept: never kept
    assert memo.get("e", (1, 301, 1)) == (False, None)


def test_stale_temp_folders_are_cleaned(tmp_path: Path) -> None:
    folder = tmp_path / "frontend"
    folder.mkdir(parents=True)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    dead_pid = int(dead.stdout)
    host = cache._host()
    mine = folder / f".tmp-aaa-{host}.{os.getpid()}-0001"
    other_host = folder / f".tmp-eee-otherhost.{dead_pid}-0003"  # not our pids: age decides
    of_dead = folder / f".tmp-bbb-{host}.{dead_pid}-0002"
    old = folder / ".tmp-ccc-1a2b3c4d"  # an older ktriage's name, no pid: age decides
    young = folder / ".tmp-ddd-5e6f7a8b"
    for p in (mine, of_dead, old, young, other_host):
        p.mkdir()
        (p / "kernel.ptx").write_text("x")
    hour_ago = time.time() - 2 * cache.STALE_TMP_S
    os.utime(old, (hour_ago, hour_ago))
    ArtifactCache(tmp_path)  # cleans on open
    assert sorted(p.name for p in folder.iterdir()) == sorted([mine.name, young.name, other_host.name])


def test_gc_removes_quarantine_temps_and_unused_entries(tmp_path: Path) -> None:
    keep = _publish(tmp_path, "keep")
    unused = _publish(tmp_path, "unused")
    long_ago = time.time() - 40 * 86400
    os.utime(unused / cache.MANIFEST, (long_ago, long_ago))
    damaged = _publish(tmp_path, "damaged")
    (damaged / "kernel.ptx").write_text("edited")
    states = cache.verify_all(tmp_path)
    assert [s.key for s in states if s.problem] == ["damaged"]
    cache.fix_damaged(tmp_path, states)
    items, planned = cache.gc(tmp_path, older_than_days=30, dry_run=True)
    assert sorted(i.why for i in items) == ["quarantined", "unused"]
    assert unused.exists() and planned > 0
    items, freed = cache.gc(tmp_path, older_than_days=30)
    assert freed == planned and not unused.exists() and keep.exists()
    assert not any((tmp_path / cache.QUARANTINE).iterdir())
    info = cache.cache_info(tmp_path)
    assert info.entries == {"frontend": 1, "cubin": 0} and info.quarantined == 0


def test_an_old_format_entry_is_legacy_not_damaged(tmp_path: Path) -> None:
    old = tmp_path / "frontend" / "0123"
    old.mkdir(parents=True)
    (old / "result.json").write_text(json.dumps({"kernel_name": "k"}))
    [state] = cache.verify_all(tmp_path)
    assert state.legacy and state.problem is None
    assert cache.cache_info(tmp_path).legacy_entries == 1


def test_in_flight_holds_one_thread_per_key() -> None:
    flight = InFlight()
    active: dict[str, int] = {}
    peak: dict[str, int] = {}
    lock = threading.Lock()

    def work(key: str) -> None:
        with flight.hold(key):
            with lock:
                active[key] = active.get(key, 0) + 1
                peak[key] = max(peak.get(key, 0), active[key])
            time.sleep(0.01)
            with lock:
                active[key] -= 1

    threads = [threading.Thread(target=work, args=(k,)) for k in ["a", "b"] * 5]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak == {"a": 1, "b": 1}
    assert flight._keys == {}
