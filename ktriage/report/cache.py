"""Rendering of ``ktriage cache info|verify|gc``: the cache's totals, its entries' states, what gc
removes. The facts come from ``ktriage.compile.cache``; here they are only laid out (records.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ktriage.mdsafe import markdown_writer
from ktriage.report import records
from ktriage.report.toolchain import human_size
from ktriage.schema.jsontypes import JSONObject
from ktriage.wording import plural

if TYPE_CHECKING:
    from pathlib import Path

    from rich.console import Console

    from ktriage.compile.cache import CacheInfo, EntryState, GcItem

VERIFY_COLUMNS = ("kind", "key", "state", "problem", "size")
GC_COLUMNS = ("why", "path", "size")


def info_fields(info: CacheInfo) -> JSONObject:
    return {
        "path": str(info.root) if info.exists else f"{info.root} (does not exist yet: made by the first compile)",
        "format": info.to_json()["format"],
        "entries": ", ".join(f"{k}: {n}" for k, n in info.entries.items()),
        "old-format entries": info.legacy_entries,
        "quarantined": info.quarantined,
        "temp folders": info.temps,
        "size": human_size(info.size_bytes),
    }


def info_json(info: CacheInfo) -> str:
    return records.to_json(info.to_json())


@markdown_writer
def info_markdown(info: CacheInfo) -> str:
    return "\n".join(records.kv_markdown("artifact cache", info_fields(info))) + "\n"


def print_info(info: CacheInfo, console: Console) -> None:
    console.print(records.kv_table("artifact cache", info_fields(info)))


def _state(s: EntryState, fixed: bool) -> str:
    if s.legacy:
        return "old format"
    if s.problem is None:
        return "ok"
    if s.quarantined is False:
        return "damaged, not moved"
    return "quarantined" if fixed else "damaged"


def verify_rows(states: Sequence[EntryState], fixed: bool, *, all_rows: bool = False) -> list[JSONObject]:
    """The damaged entries (every entry with ``all_rows``)."""
    return [
        {
            "kind": s.kind,
            "key": s.key,
            "state": _state(s, fixed),
            "problem": (s.problem or "") + (f"; not moved: {s.not_moved}" if s.not_moved else ""),
            "size": human_size(s.size),
        }
        for s in states
        if all_rows or s.problem is not None
    ]


def verify_summary(root: Path, states: Sequence[EntryState], fixed: bool) -> str:
    damaged = sum(1 for s in states if s.problem is not None)
    legacy = sum(1 for s in states if s.legacy)
    ok = len(states) - damaged - legacy
    text = f"{plural(len(states), 'entry', 'entries')} in {root}: {ok} ok, {damaged} damaged"
    if legacy:
        text += f", {legacy} of the old format (not read; `ktriage cache gc --older-than DAYS` removes them)"
    stuck = sum(1 for s in states if s.quarantined is False)
    if damaged and fixed and stuck:
        text += (
            f"; {damaged - stuck} quarantined, {stuck} could NOT be moved aside (they stay, refused on every "
            "read): make the cache writable and run `ktriage cache verify --fix` again"
        )
    elif damaged:
        text += (
            "; quarantined, they are compiled again when next needed"
            if fixed
            else "; `ktriage cache verify --fix` quarantines them"
        )
    return text


def verify_json(root: Path, states: Sequence[EntryState], fixed: bool) -> str:
    damaged = [s for s in states if s.problem is not None]
    return records.to_json(
        {
            "path": str(root),
            "entries": len(states),
            "damaged": len(damaged),
            "fixed": fixed,
            "damaged_entries": [s.to_json() for s in damaged],
        }
    )


@markdown_writer
def verify_markdown(root: Path, states: Sequence[EntryState], fixed: bool) -> str:
    return records.to_markdown(
        "damaged cache entries", VERIFY_COLUMNS, verify_rows(states, fixed), notes=[verify_summary(root, states, fixed)]
    )


def print_verify(root: Path, states: Sequence[EntryState], fixed: bool, console: Console) -> None:
    rows = verify_rows(states, fixed)
    if rows:
        records.print_rows(console, "damaged cache entries", VERIFY_COLUMNS, rows, styles={"state": "bold red"})
    console.print(verify_summary(root, states, fixed), highlight=False)


def gc_rows(items: Sequence[GcItem]) -> list[JSONObject]:
    return [{"why": i.why, "path": str(i.path), "size": human_size(i.size)} for i in items]


def gc_summary(items: Sequence[GcItem], freed: int, dry_run: bool) -> str:
    verb = "would free" if dry_run else "freed"
    return f"{plural(len(items), 'item')} {'to remove' if dry_run else 'removed'}; {verb} {human_size(freed)} ({freed} bytes)"


def gc_json(items: Sequence[GcItem], freed: int, dry_run: bool) -> str:
    return records.to_json({"dry_run": dry_run, "freed_bytes": freed, "items": [i.to_json() for i in items]})


@markdown_writer
def gc_markdown(items: Sequence[GcItem], freed: int, dry_run: bool) -> str:
    return records.to_markdown("cache gc", GC_COLUMNS, gc_rows(items), notes=[gc_summary(items, freed, dry_run)])


def print_gc(items: Sequence[GcItem], freed: int, dry_run: bool, console: Console) -> None:
    if items:
        records.print_rows(console, "cache gc" + (" (dry run)" if dry_run else ""), GC_COLUMNS, gc_rows(items))
    console.print(gc_summary(items, freed, dry_run), highlight=False)
