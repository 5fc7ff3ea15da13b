"""The tune report: one JSON shape (``recommended``, ``default``, ``candidates``), a rich table and
markdown; one input's report or, for several inputs, a summary row per input. Each names the cost model
that priced the estimates and set the tie tolerance (``--model``, ``$KTRIAGE_MODEL`` or the shipped fit),
as explain's and triage's reports do (``model``, the ``Model: ...`` line)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ktriage.errors import in_flags
from ktriage.mdsafe import markdown_writer, md_text
from ktriage.predict.configs import tie_fraction
from ktriage.predict.model import Params
from ktriage.report.rich_table import add_columns
from ktriage.schema.jsontypes import JSONObject
from ktriage.spec.model import input_label
from ktriage.tune.screen import ScreenedConfig, ScreenResult
from ktriage.wording import plural, plus_minus

if TYPE_CHECKING:
    from ktriage.predict.model_used import ModelUsed
    from ktriage.tune.scaling import ScaleResult

SCHEMA = 1


def _summary(c: ScreenedConfig) -> JSONObject:
    data = c.to_json()
    return {
        "config": data["config"],
        "label": data["label"],
        "grid": data["grid"],
        "resources": data["resources"],
        "occupancy": data["occupancy"],
        "estimate": data["estimate"],
        "tied": data["tied"],
        "reason": data["reason"],
    }


def scaling_note(result: ScreenResult, scaling: ScaleResult[Any]) -> str | None:
    """One sentence when the scaling walk ends on another config than the screening recommends:
    which of the two the report recommends, and why. None when they agree or nothing is recommended.

    Why say it: the report printed both without a word (Liger embedding bwd: scaling ends on
    128x128 with 32 warps, the screening recommends 32x32 with 1 warp), so a reader could not tell
    which to take. The screening's is the recommendation because it compiled and priced the whole
    space; the scaling walks from the library's config one step at a time, judged by spills and
    occupancy, and never compares the configs it does not pass through."""
    rec = result.recommended
    if rec is None or rec.estimate is None or scaling.final == rec.config:
        return None
    final = next((c for c in result.candidates if c.config == scaling.final), None)
    if final is None:
        where = "not among the screened configs"
    elif final.rank is not None and final.estimate is not None:
        where = f"the screening's rank {final.rank}, estimate {final.estimate.estimate_us:.1f} us"
    else:
        where = f"{final.status} in the screening: {final.reason}"
    return (
        f"scaling ended on {scaling.final.label()} ({where}), not on the recommended {rec.config.label()} "
        f"(rank 1, estimate {rec.estimate.estimate_us:.1f} us): the report recommends the screening's, which "
        "compiled and priced the whole space, while the scaling is a greedy walk from the library's config "
        "(a smaller reduction block or more warps per step, judged by spills and occupancy only)."
    )


def to_json(
    result: ScreenResult,
    *,
    scaling: JSONObject | None = None,
    timing: JSONObject | None = None,
    scaling_note: str | None = None,
    model: ModelUsed | None = None,
) -> JSONObject:
    """Everything tune decided, with the reason for each candidate; ``model``: the model file that priced it
    (one input's report carries it; several inputs' document carries it once, beside ``inputs``)."""
    rec = result.recommended
    named = {"model": model.to_json()} if model is not None else {}
    return {
        "schema": SCHEMA,
        "spec": result.space.spec.name,
        "target": result.space.spec.target,
        "toolchain": str(result.toolchain.spec),
        **named,
        "max_spill_bytes": result.max_spill_bytes,
        "top_k": result.top_k,
        # estimates within this fraction of the best are ties, ranked by the smallest change (candidates' "tied")
        "tie_tolerance": round(tie_fraction(result.params), 4),
        "space": result.space.to_json(),
        "recommended": _summary(rec) if rec is not None else None,
        "default": _summary(result.default),
        "candidates": [c.to_json() for c in result.candidates],
        "scaling": scaling,
        "scaling_note": scaling_note,
        "timing": timing,
        "notes": list(result.notes),
    }


def report_json(
    results: Sequence[ScreenResult],
    scalings: Sequence[ScaleResult[Any]],
    timings: Sequence[JSONObject | None],
    model: ModelUsed | None = None,
) -> JSONObject:
    """The document of stdout's ``--format json`` and ``-o PATH.json``: one input's report, or
    ``{"schema", "model", "inputs": [...]}`` for several; either way ``model`` at the top, as explain's."""
    one = len(results) == 1
    reports = [
        to_json(r, scaling=sc.to_json(), timing=t, scaling_note=scaling_note(r, sc), model=model if one else None)
        for r, sc, t in zip(results, scalings, timings, strict=True)
    ]
    if one:
        return reports[0]
    named = {"model": model.to_json()} if model is not None else {}
    return {"schema": SCHEMA, **named, "inputs": reports}


def to_json_text(
    results: Sequence[ScreenResult],
    scalings: Sequence[ScaleResult[Any]],
    timings: Sequence[JSONObject | None],
    model: ModelUsed | None = None,
) -> str:
    return json.dumps(report_json(results, scalings, timings, model), indent=1) + "\n"


def _rows(result: ScreenResult, show_all: bool) -> list[ScreenedConfig]:
    """The ranked rows by rank, then the unranked (dropped for spills, duplicates, failed) by their
    estimate, those without one last. Why: ``--all`` listed the unranked in compile order, so the
    near misses (a config spilling a few bytes) were lost among the hopeless ones."""
    rows = result.candidates if show_all else [c for c in result.candidates if c.status == "kept" or c.is_default]
    return sorted(
        rows,
        key=lambda c: (c.rank is None, c.rank or 0, c.estimate is None, c.estimate.estimate_us if c.estimate else 0.0),
    )


ROWS_LEGEND = (
    "kept: the top --top-k by rank (the estimate; ties by the smallest change), which a GPU run times; dropped: not timed, the reason says why "
    "(spills over --max-spill-bytes, outside the top k, the same cubin as a better row, cannot launch); "
    "failed: did not compile or could not be analyzed. Ranked rows first, then the others by estimate."
)
"""What the table's status column means, under the table whenever a row is not kept."""


def ties_legend(params: Params | None = None) -> str:
    """Why rank 1 can have a higher estimate than rank 3, under the table whenever a row is tied: the
    reason of a tied row says "tied with N others", but a reader of the estimate column alone saw the ranks
    out of order. ``params``: the model that ranked them (its tolerance is the one stated)."""
    return (
        f"tied: estimates within the model's {plus_minus(f'{tie_fraction(params):.1%}')} of the best, which it cannot tell apart; "
        "these rank by the smallest change from the library's config, not by estimate, so a tied row can rank "
        "above one with a lower estimate. The GPU's timing decides among them."
    )


def _legends(rows: Sequence[ScreenedConfig], params: Params | None) -> list[str]:
    """The legend lines for these rows: what the statuses mean (a row not kept), what a tie is (a tied row,
    at the tolerance of ``params``, the model that ranked them)."""
    return [
        text
        for text, shown in (
            (ROWS_LEGEND, any(c.status != "kept" for c in rows)),
            (ties_legend(params), any(c.tied for c in rows)),
        )
        if shown
    ]


_COLUMNS = ("config", "status", "regs", "spill B", "CTAs/SM", "occupancy", "waves", "estimate us", "reason")


def _cells(c: ScreenedConfig) -> list[str]:
    r, o, e = c.resources, c.occupancy, c.estimate
    return [
        c.config.label() + (" (default)" if c.is_default else ""),
        c.status,
        str(r.registers) if r else "-",
        str(r.spill_store_bytes) if r else "-",
        str(o.ctas_per_sm) if o else "-",
        f"{o.occupancy:.0%}" if o else "-",
        str(e.waves) if e else "-",
        f"{e.estimate_us:.1f}" if e else "-",
        c.reason,
    ]


def _title(result: ScreenResult) -> str:
    return f"tune {result.space.spec.name} with {result.toolchain.spec}"


def _timing_lines(timing: JSONObject | None) -> list[str]:
    if not timing or not timing.get("winner"):
        return []
    sp = timing.get("speedup_over_default")
    lines = [f"GPU winner: {timing['winner']}" + (f", {sp:.2f}x the library's config" if sp else "")]
    vs = timing.get("winner_vs_baselines")
    lines += [f"{ratio:.2f}x {name}" for name, ratio in (vs.items() if isinstance(vs, Mapping) else ())]
    return lines


def _md(text: str) -> str:
    return md_text(text)


def _one_markdown(
    result: ScreenResult, scaling: ScaleResult[Any], timing: JSONObject | None, show_all: bool, level: int
) -> list[str]:
    lines = [
        f"{'#' * level} {_md(_title(result))}",
        "",
        "| " + " | ".join(_COLUMNS) + " |",
        "|"
        + "|".join(
            "---:" if c in ("regs", "spill B", "CTAs/SM", "occupancy", "waves", "estimate us") else "---"
            for c in _COLUMNS
        )
        + "|",
    ]
    rows = _rows(result, show_all)
    lines += ["| " + " | ".join(_md(x) for x in _cells(c)) + " |" for c in rows]
    lines.append("")
    for legend in _legends(rows, result.params):
        lines += [f"_{_md(legend)}_", ""]
    rec = result.recommended
    lines.append(
        f"**recommended: {_md(rec.config.label())}** — {_md(rec.reason)}"
        if rec is not None
        else "**no recommendation**"
    )
    lines.append("")
    lines += [f"- note: {_md(in_flags(n))}" for n in result.notes]
    lines += [f"- scaling: {_md(step.sentence)}" for step in scaling.steps]
    note = scaling_note(result, scaling)
    if note:
        lines.append(f"- {_md(note)}")
    timed = _timing_lines(timing)
    if timed:
        lines.append(f"- {_md(timed[0])}")
        lines += [f"  - {_md(t)}" for t in timed[1:]]
    return lines


@markdown_writer
def to_markdown(
    results: Sequence[ScreenResult],
    scalings: Sequence[ScaleResult[Any]],
    timings: Sequence[JSONObject | None],
    *,
    show_all: bool = False,
    warnings: Sequence[str] = (),
    model: ModelUsed | None = None,
) -> str:
    """The report as markdown: one input's candidates table and recommendation, or for several
    inputs the summary table (each input's own table too with ``show_all``); last, the ``warnings`` of
    reading the GPU results (:class:`~ktriage.tune.timing_run.TimingRun`), which qualify the GPU winner.
    ``model``: the model that priced the estimates, named under the title (``Model: ...``)."""
    said = [f"- warning: {_md(w)}" for w in warnings]
    named = ["", _md(model.line())] if model is not None else []
    if len(results) == 1:
        title, *rest = _one_markdown(results[0], scalings[0], timings[0], show_all, 2)
        return "\n".join([title, *named, *rest, *said]).rstrip() + "\n"
    first = results[0]
    lines = [
        f"## tune {_md(first.space.spec.name.split('[')[0])} with {_md(str(first.toolchain.spec))}: {plural(len(results), 'input')}",
        *named,
        "",
        "| " + " | ".join(_SUMMARY_COLUMNS) + " |",
        "|" + "|".join("---" for _ in _SUMMARY_COLUMNS) + "|",
    ]
    lines += [
        "| " + " | ".join(_md(x) for x in _summary_cells(r, t)) + " |" for r, t in zip(results, timings, strict=True)
    ]
    if show_all:
        for r, sc, t in zip(results, scalings, timings, strict=True):
            lines += ["", *_one_markdown(r, sc, t, True, 3)]
    else:
        notes = _summary_notes(results)
        lines += [""] * bool(notes) + [f"- {_md(head)}: {_md(n)}" for head, n in notes]
    if said and not lines[-1].startswith("- "):
        lines.append("")
    return "\n".join([*lines, *said]).rstrip() + "\n"


def print_report(
    results: Sequence[ScreenResult],
    scalings: Sequence[ScaleResult[Any]],
    timings: Sequence[JSONObject | None],
    console: Console,
    *,
    show_all: bool = False,
    warnings: Sequence[str] = (),
    model: ModelUsed | None = None,
) -> None:
    """The table on the console: one input's candidates, or the summary of several (each input's
    table first with ``show_all``); last, the ``warnings`` of reading the GPU results. ``model``: the
    model that priced the estimates, named first (``Model: ...``)."""
    if model is not None:
        console.print(escape(model.line()))
    if len(results) == 1 or show_all:
        for r, sc, t in zip(results, scalings, timings, strict=True):
            print_table(r, console, show_all=show_all)
            for step in sc.steps:
                console.print(f"scaling: {escape(step.sentence)}")
            note = scaling_note(r, sc)
            if note:
                console.print(f"[yellow]note[/] {escape(note)}")
            for i, line in enumerate(_timing_lines(t)):
                console.print(("  " if i else "") + escape(line))
    if len(results) > 1:
        print_summary(results, timings, console)
        for head, note in [] if show_all else _summary_notes(results):
            console.print(f"[yellow]{escape(head)}[/]: {escape(note)}")
    print_warnings(warnings, console)


def print_warnings(warnings: Sequence[str], console: Console) -> None:
    """Each warning of reading the GPU results, its head (``read by rank:``) in yellow."""
    for text in warnings:
        head, _, rest = text.partition(":")
        console.print(f"[yellow]{escape(head)}:[/]{escape(rest)}")


def _summary_notes(results: Sequence[ScreenResult]) -> list[tuple[str, str]]:
    """The inputs' notes for under the summary table, each once, as ``(head, text)``: the head names the
    inputs the note qualifies (``note (N=4096, N=8192)``), or none where it qualifies every input (``note``);
    the text names options by their flags (the reports' readers type them).

    Why under the summary: the notes qualify the recommendation in an input's row (a fixed trip count that
    cannot rank the block, no config within the spill limit, the space searched), and several inputs lost
    what one input's report says right after its recommendation. Why once: a note about the kernel (no
    tunable block) is every input's, and the summary said it once per input, the same words over and over.
    With ``--all`` each input's own table carries them instead (one home each); the JSON keeps each input's
    own."""
    inputs: dict[str, dict[str, None]] = {}  # note -> the inputs it qualifies, in order (a dict: no repeats)
    for r in results:
        for note in r.notes:
            inputs.setdefault(in_flags(note), {})[input_label(r.space.spec.meta, r.space.spec.name)] = None
    return [("note" if len(on) == len(results) else f"note ({', '.join(on)})", n) for n, on in inputs.items()]


def print_table(result: ScreenResult, console: Console, *, show_all: bool = False) -> None:
    """Kept candidates (all with ``show_all``), the default marked, then the recommendation."""
    rows = _rows(result, show_all)
    table = Table(title=escape(_title(result)), caption=escape("\n".join(_legends(rows, result.params))) or None)
    add_columns(table, _COLUMNS, overflow="fold")
    for c in rows:
        table.add_row(*(escape(x) for x in _cells(c)))
    console.print(table)
    rec = result.recommended
    if rec is None:
        console.print("[red]no recommendation[/]")
    else:
        console.print(f"recommended: [bold]{escape(rec.config.label())}[/] — {escape(rec.reason)}")
    for note in result.notes:
        console.print(f"[yellow]note[/] {escape(in_flags(note))}")


def print_summary(results: Sequence[ScreenResult], timings: Sequence[JSONObject | None], console: Console) -> None:
    """One row per tuned input: the compile-side recommendation and, once timed, the GPU winner."""
    table = Table(
        title=f"tune {escape(results[0].space.spec.name.split('[')[0])} with {escape(str(results[0].toolchain.spec))}: "
        f"{plural(len(results), 'input')}"
    )
    add_columns(table, _SUMMARY_COLUMNS, overflow="fold")
    for r, t in zip(results, timings, strict=True):
        table.add_row(*(escape(x) for x in _summary_cells(r, t)))
    console.print(table)


_SUMMARY_COLUMNS = (
    "input",
    "library config",
    "recommended",
    "regs",
    "spill B",
    "CTAs/SM",
    "GPU winner",
    "vs library",
    "vs baselines",
)


def _summary_cells(r: ScreenResult, t: JSONObject | None) -> list[str]:
    rec, d = r.recommended, r.default
    res, occ = (rec.resources, rec.occupancy) if rec else (None, None)
    dres = d.resources
    base = f"{d.config.label()} ({dres.spill_store_bytes} B spills)" if dres else d.config.label()
    timed = t or {}
    sp = timed.get("speedup_over_default")
    by_baseline = timed.get("winner_vs_baselines")
    vs = ", ".join(f"{v:.2f}x {k}" for k, v in (by_baseline.items() if isinstance(by_baseline, Mapping) else ()))
    return [
        input_label(r.space.spec.meta, r.space.spec.name),
        base,
        rec.config.label() if rec else "none",
        str(res.registers) if res else "-",
        str(res.spill_store_bytes) if res else "-",
        str(occ.ctas_per_sm) if occ else "-",
        str(timed.get("winner") or "-"),
        f"{sp:.2f}x" if sp else "-",
        vs or "-",
    ]
