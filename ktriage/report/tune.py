"""The tune report: one JSON shape (``recommended``, ``default``, ``candidates``) and a rich table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ktriage.spec.model import input_label
from ktriage.tune.screen import ScreenedConfig, ScreenResult

SCHEMA = 1


def _summary(c: ScreenedConfig) -> dict[str, Any]:
    data = c.to_json()
    return {"config": data["config"], "label": data["label"], "grid": data["grid"], "resources": data["resources"],
            "occupancy": data["occupancy"], "estimate": data["estimate"], "reason": data["reason"]}


def to_json(result: ScreenResult, *, scaling: dict[str, Any] | None = None, timing: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything tune decided, with the reason for each candidate."""
    rec = result.recommended
    return {
        "schema": SCHEMA,
        "spec": result.space.spec.name,
        "target": result.space.spec.target,
        "toolchain": str(result.toolchain.spec),
        "max_spill_bytes": result.max_spill_bytes,
        "top_k": result.top_k,
        "space": result.space.to_json(),
        "recommended": _summary(rec) if rec is not None else None,
        "default": _summary(result.default),
        "candidates": [c.to_json() for c in result.candidates],
        "scaling": scaling,
        "timing": timing,
        "notes": list(result.notes),
    }


def print_table(result: ScreenResult, console: Console, *, show_all: bool = False) -> None:
    """Kept candidates (all with ``show_all``), the default marked, then the recommendation."""
    table = Table(title=f"tune {escape(result.space.spec.name)} with {escape(str(result.toolchain.spec))}")
    for col in ("config", "status", "regs", "spill B", "CTAs/SM", "occupancy", "waves", "estimate us", "reason"):
        table.add_column(col, overflow="fold")
    rows = result.candidates if show_all else [c for c in result.candidates if c.status == "kept" or c.is_default]
    rows = sorted(rows, key=lambda c: (c.rank is None, c.rank or 0))
    for c in rows:
        r, o, e = c.resources, c.occupancy, c.estimate
        table.add_row(
            escape(c.config.label() + (" (default)" if c.is_default else "")), c.status,
            str(r.registers) if r else "-", str(r.spill_store_bytes) if r else "-",
            str(o.ctas_per_sm) if o else "-", f"{o.occupancy:.0%}" if o else "-",
            str(e.waves) if e else "-", f"{e.estimate_us:.1f}" if e else "-", escape(c.reason),
        )
    console.print(table)
    rec = result.recommended
    if rec is None:
        console.print("[red]no recommendation[/]")
    else:
        console.print(f"recommended: [bold]{escape(rec.config.label())}[/] — {escape(rec.reason)}")
    for note in result.notes:
        console.print(f"[yellow]note[/] {escape(note)}")


def print_summary(results: Sequence[ScreenResult], timings: Sequence[dict[str, Any] | None], console: Console) -> None:
    """One row per tuned input: the compile-side recommendation and, once timed, the GPU winner."""
    table = Table(title=f"tune {escape(results[0].space.spec.name.split('[')[0])} with {escape(str(results[0].toolchain.spec))}: "
                        f"{len(results)} inputs")
    for col in ("input", "library config", "recommended", "regs", "spill B", "CTAs/SM", "GPU winner", "vs library", "vs baselines"):
        table.add_column(col, overflow="fold")
    for r, t in zip(results, timings, strict=True):
        rec, d = r.recommended, r.default
        res, occ = (rec.resources, rec.occupancy) if rec else (None, None)
        dres = d.resources
        base = (f"{d.config.label()} ({dres.spill_store_bytes} B spills)" if dres else d.config.label())
        timed = t or {}
        sp = timed.get("speedup_over_default")
        vs = ", ".join(f"{v:.2f}x {k}" for k, v in (timed.get("winner_vs_baselines") or {}).items())
        table.add_row(escape(input_label(r.space.spec.meta, r.space.spec.name)), escape(base),
                      escape(rec.config.label()) if rec else "[red]none[/]", str(res.registers) if res else "-",
                      str(res.spill_store_bytes) if res else "-", str(occ.ctas_per_sm) if occ else "-",
                      escape(str(timed.get("winner") or "-")), f"{sp:.2f}x" if sp else "-", escape(vs or "-"))
    console.print(table)
