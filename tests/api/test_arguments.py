"""Every entry point checks its arguments as the command checks its flags (ktriage/api/_args.py):
a lone str where a list goes is one item, a number out of the flag's range or of the wrong type is a
KtriageError naming the keyword and the flag, a GPU target is read in every spelling ``--arch`` takes.

Each case runs the real entry point; those that would compile or measure are refused before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ktriage.api as kt
from ktriage.compile.cache import ArtifactCache
from ktriage.errors import KtriageError


def _cache_entry(home: Path) -> Path:
    store = ArtifactCache(home / "artifacts")
    tmp = store.temp_dir("frontend", "k1")
    (tmp / "kernel.ptx").write_text("// ptx\n")
    (tmp / "result.json").write_text(json.dumps({"kernel_name": "k"}))
    return store.publish("frontend", "k1", tmp)


@pytest.mark.parametrize("days", [-1, -0.5, float("nan"), float("inf"), "30", True])
def test_cache_gc_refuses_an_age_that_is_no_age_and_removes_nothing(
    days: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A negative age listed every entry as unused (and without dry_run removed the whole cache), nan
    listed none, "30" was a TypeError."""
    monkeypatch.setenv("KTRIAGE_HOME", str(tmp_path))
    entry = _cache_entry(tmp_path)
    with pytest.raises(KtriageError, match=r"older_than_days \(--older-than\)"):
        kt.cache_gc(older_than_days=days)  # type: ignore[arg-type]
    assert entry.is_dir()
    assert kt.cache_gc(older_than_days=0.5).items == []  # a fresh entry is kept
    assert entry.is_dir()
