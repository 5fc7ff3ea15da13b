"""The artifact cache under the ktriage home, as a library: ``cache_info()``, ``cache_verify(fix=...)``
and ``cache_gc(older_than_days=..., dry_run=...)`` (docs/cache.md).

Why entry points: ``ktriage cache`` found the cache's folder, checked, repaired and cleaned it
itself, so a CI job that checks its cache before a nightly had only the command line. Each returns
a typed report with the renderers ``ktriage cache`` writes with; the cache format's home stays
``ktriage.compile.cache``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ktriage.api._args import entry_point
from ktriage.brief import brief
from ktriage.mdsafe import markdown_writer

if TYPE_CHECKING:
    from rich.console import Console

    from ktriage.compile.cache import CacheInfo, EntryState, GcItem

__all__ = ["CacheGcReport", "CacheInfoReport", "CacheVerifyReport", "cache_gc", "cache_info", "cache_verify"]


@dataclass(frozen=True)
class CacheInfoReport:
    """Where the cache is, its entries per kind, and its size on disk (``info``)."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    info: CacheInfo

    def json_text(self) -> str:
        from ktriage.report.cache import info_json

        return info_json(self.info)

    @markdown_writer
    def to_markdown(self) -> str:
        from ktriage.report.cache import info_markdown

        return info_markdown(self.info)

    def print_table(self, console: Console) -> None:
        from ktriage.report.cache import print_info

        print_info(self.info, console)


@dataclass(frozen=True)
class CacheVerifyReport:
    """Every entry of the cache at ``root`` checked against its manifest (``states``); ``fixed``: the
    damaged ones were to be quarantined (each state says whether it was)."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    root: Path
    states: Sequence[EntryState]
    fixed: bool

    @property
    def damaged(self) -> bool:
        """Some entry did not verify (before any fix)."""
        return any(s.problem is not None for s in self.states)

    @property
    def ok(self) -> bool:
        """Every entry verifies, or the fix moved every damaged one aside."""
        return not self.damaged or (self.fixed and not any(s.quarantined is False for s in self.states))

    def json_text(self) -> str:
        from ktriage.report.cache import verify_json

        return verify_json(self.root, self.states, self.fixed)

    @markdown_writer
    def to_markdown(self) -> str:
        from ktriage.report.cache import verify_markdown

        return verify_markdown(self.root, self.states, self.fixed)

    def print_table(self, console: Console) -> None:
        from ktriage.report.cache import print_verify

        print_verify(self.root, self.states, self.fixed, console)


@dataclass(frozen=True)
class CacheGcReport:
    """What gc removed (or, with ``dry_run``, would remove) and the bytes freed."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    items: Sequence[GcItem]
    freed: int
    dry_run: bool

    def json_text(self) -> str:
        from ktriage.report.cache import gc_json

        return gc_json(self.items, self.freed, self.dry_run)

    @markdown_writer
    def to_markdown(self) -> str:
        from ktriage.report.cache import gc_markdown

        return gc_markdown(self.items, self.freed, self.dry_run)

    def print_table(self, console: Console) -> None:
        from ktriage.report.cache import print_gc

        print_gc(self.items, self.freed, self.dry_run, console)


@entry_point
def cache_info() -> CacheInfoReport:
    """The artifact cache of the ktriage home: where it is, how many entries it holds, its size. A
    report: a home or cache that does not exist yet is reported so (``info.exists``), not created."""
    from ktriage.compile.cache import cache_info as info

    return CacheInfoReport(info(_unmade_root()))


def _unmade_root() -> Path:
    """The artifact cache's folder, not created: ``info``, ``verify`` and ``gc`` read it, and a
    mistyped ``KTRIAGE_HOME`` must not become a new home by a check (verify and gc made one). A path
    that could never be the cache's folder (a file on the way, a name too long) is the KtriageError a
    creating verb gives. (Whether a missing folder could be created, in a read-only or pseudo file
    system, is not known without creating it.)"""
    from ktriage.errors import KtriageError
    from ktriage.home import home_path

    root = home_path() / "artifacts"
    try:
        on_the_way = next((p for p in (root, *root.parents) if p.exists()), None)
        if on_the_way is not None and not on_the_way.is_dir():
            raise NotADirectoryError(20, "Not a directory")
    except OSError as exc:
        raise KtriageError(
            f"cannot use {root} as the cache of the ktriage home: {exc.strerror or exc}",
            "set KTRIAGE_HOME to a writable folder (docs/environment.md)",
        ) from exc
    return root


@entry_point
def cache_verify(*, fix: bool = False) -> CacheVerifyReport:
    """Check every cache entry against its manifest (sha256 of each file); with ``fix``, quarantine
    the damaged ones (moved aside, compiled again when next needed). ``report.ok`` is False when an
    entry is damaged (with ``fix``: when one could not be moved aside, e.g. a read-only cache)."""
    from ktriage.api._args import switch
    from ktriage.compile.cache import fix_damaged, verify_all

    fix = switch(fix, "fix", "--fix")  # fix="no" was read for its truth: the damaged entries were moved aside
    root = _unmade_root()
    states = verify_all(root)
    if fix and any(s.problem is not None for s in states):
        states = fix_damaged(root, states)
    return CacheVerifyReport(root, states, fix)


@entry_point
def cache_gc(*, older_than_days: float | None = None, dry_run: bool = False) -> CacheGcReport:
    """Remove quarantined entries and stale temp folders (with ``older_than_days``, entries not used
    for that long too: a finite number of days >= 0, checked first, since a negative age would take
    the whole cache); ``dry_run``: list them, remove nothing."""
    from ktriage.api._args import OLDER_THAN_DAYS, switch
    from ktriage.compile.cache import gc

    days, dry_run = OLDER_THAN_DAYS.optional(older_than_days), switch(dry_run, "dry_run", "--dry-run")
    items, freed = gc(_unmade_root(), older_than_days=days, dry_run=dry_run)
    return CacheGcReport(items, freed, dry_run)
