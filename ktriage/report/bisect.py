"""Render a ``BisectReport``: JSON (for CI and tools), markdown (CI summaries, issues), terminal.

Every tested candidate is listed with its measurements, decision and confidence, then the culprit
and its predecessor (or the exact range that skipped/unsure candidates leave open), then the
explain between them.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Mapping

from rich.console import Console
from rich.markup import escape
from rich.table import Table

import ktriage
from ktriage.bisect.candidate import Observation
from ktriage.bisect.explained import CulpritKernel
from ktriage.bisect.run import BisectReport
from ktriage.bisect.search import StageResult
from ktriage.home import portable_path
from ktriage.mdsafe import markdown_writer, md_text
from ktriage.report.rich_table import add_columns
from ktriage.schema.jsontypes import JSONObject
from ktriage.wording import plural


def measurement_text(obs: Observation) -> str:
    """One short line of the evidence behind a decision."""
    m = obs.measurements
    if isinstance(vals := m.get("values"), Mapping):
        shown = ", ".join(f"{k}={_num(v)}" for k, v in list(vals.items())[:4])
        more = f" (+{len(vals) - 4} kernels)" if len(vals) > 4 else ""
        return f"{m.get('metric', '')}: {shown}{more}"
    if "exit" in m:
        return f"exit {m['exit']}" if m["exit"] is not None else "timed out"
    if "median_ms" in m:
        vg = m.get("vs_good")
        ratio = vg.get("ratio") if isinstance(vg, Mapping) else None
        rtxt = f", x{ratio:.3f} vs good" if isinstance(ratio, (int, float)) and math.isfinite(ratio) else ""
        return f"median {m['median_ms']:.4g} ms (n={m.get('n')}){rtxt}"
    return ""


def _num(v: object) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _conf(c: float | None) -> str:
    return "" if c is None else f"{c:.2f}"


def compiles_text(stage: StageResult) -> str:
    """``5 frontend compiles``, the stage's over every run of its state; after a --resume that read back
    compiled candidates, how many this run ran (the JSON's ``frontend_compiles``) and how many the earlier
    runs did (``frontend_compiles_earlier_runs``): the line added them without a word, and disagreed with
    the JSON's count of this run."""
    total = int(stage.cost().get("compiles", 0))
    now = int(stage.cost(this_run=True).get("compiles", 0))
    if total == now:
        return plural(total, "frontend compile")
    return f"{plural(total, 'frontend compile')} ({now} in this run, {total - now} in earlier runs, read back with --resume)"


def stage_line(report: BisectReport, stage: StageResult) -> str:
    """``12 candidates, 4 rounds, 4 tested after the endpoints, 6 frontend compiles`` (and the samples a
    time bisect took). The compiles only where the predicate compiles (a compile metric): a ``--command`` or
    ``--metric latency`` bisect compiles nothing, and its "0 frontend compiles" read as a cache miss count."""
    parts = [
        plural(len(stage.candidates), "candidate"),
        plural(stage.rounds, "round"),
        f"{stage.tested} tested after the endpoints",
    ]
    if report.options.metric not in (None, "latency"):
        parts.append(compiles_text(stage))
    if samples := int(stage.cost().get("samples", 0)):
        parts.append(plural(samples, "sample"))
    return ", ".join(parts)


def stage_summary(stage: StageResult) -> str:
    """The one-line answer of a stage."""
    if stage.status == "culprit":
        assert stage.culprit is not None and stage.predecessor is not None
        return f"first bad: {stage.culprit.label} (after {stage.predecessor.label})"
    ids = ", ".join(c.label for c in stage.range)
    return (
        f"ambiguous: the first bad candidate is one of {len(stage.range)} ({ids}); "
        f"{stage.candidates[stage.lo].label} is the last good, the others could not be decided"
    )


def outside_note(stage: StageResult) -> str | None:
    """The note of a stage where a tested candidate's metric value lies outside the endpoints' range
    (``StageResult.outside_endpoints``): the compile-only rule still names the side it is closer to,
    but the metric is not monotonic, and where the first bad is such a value it is no step from the
    good value to the bad one; its explain shows a change that is not the one between the endpoints
    (spill_store_bytes 2192 -> 2140 B, 3.5.0 at 1436 B: a "first bad" predicted 34 % faster), and the
    note says how to find the step to the bad value. None where every value lies in the range."""
    outside = stage.outside_endpoints()
    if not outside:
        return None
    good = stage.observations[0].measurements.get("values")
    bad = stage.observations[1].measurements.get("values")
    metric = stage.observations[0].measurements.get("metric", "the metric")
    ends = ""
    kernels = list(dict.fromkeys(k for values in outside.values() for k in values))
    if isinstance(good, Mapping) and isinstance(bad, Mapping) and len(kernels) == 1:
        ends = f" ({_num(good.get(kernels[0]))} at good, {_num(bad.get(kernels[0]))} at bad)"
    each = "; ".join(
        f"{stage.candidates[i].label}: " + ", ".join(f"{k}={_num(v)}" for k, v in values.items())
        for i, values in outside.items()
    )
    text = f"not monotonic: {metric} lies outside the endpoints' range{ends} at {each}"
    if stage.status == "culprit" and stage.hi in outside:
        assert stage.culprit is not None and stage.predecessor is not None
        text += (
            f"; the first bad, {stage.culprit.label}, is then no step between good and bad: the rule names it bad "
            f"as closer to the bad value (docs/bisect.md), but {stage.predecessor.label} -> {stage.culprit.label} "
            f"moves {metric} beyond both endpoints, and its explain is that change, not the one from good to bad; "
            f"to find where the value reaches the bad one, bisect again with --good {stage.culprit.id}"
        )
    return text


def to_json(report: BisectReport) -> JSONObject:
    """The bisect's JSON report: the one encoder (each part's ``to_json`` gives its entries)."""
    final = report.final
    return {
        "tool": "ktriage bisect",
        "ktriage_version": ktriage.__version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "options": {
            k: (str(v) if v is not None and not isinstance(v, (int, float, bool, str, list, tuple)) else v)
            for k, v in vars(report.options).items()
        },
        "found": report.found,
        "culprit": final.culprit.to_json() if final.culprit else None,
        "predecessor": final.predecessor.to_json() if final.predecessor else None,
        "range": [c.to_json() for c in final.range],
        "summary": stage_summary(final),
        "stages": [{"name": n, **s.to_json()} for n, s in zip(report.stage_names, report.stages)],
        "frontend_compiles": report.frontend_compiles,
        "frontend_compiles_earlier_runs": report.earlier_compiles,
        "explain": [e.to_json() for e in report.explain] if report.explain is not None else None,
        "explain_note": report.explain_note,
        "notes": [*(n for s in report.stages if (n := outside_note(s))), *report.notes],
        "state": portable_path(report.state_path) if report.state_path else None,
    }


@markdown_writer
def to_markdown(report: BisectReport, title: str = "ktriage bisect") -> str:
    """The markdown report: the verdict, each stage's table and answer, the explain, then the notes (as the
    terminal orders them: the answer first, the notes that qualify it after)."""
    lines = [f"# {title}", ""]
    final = report.final
    verdict = "culprit found" if report.found else "no single culprit"
    lines += [f"**{verdict}** — {_md(stage_summary(final))}", ""]
    for name, stage in zip(report.stage_names, report.stages):
        lines += [
            f"## {name}",
            "",
            _md(
                stage_line(report, stage)
            ),  # samples only where taken: a compile-only bisect's "0 samples" said nothing
            "",
            "| # | candidate | decision | confidence | measurements | reason |",
            "|---|---|---|---|---|---|",
        ]
        for o in sorted(stage.observations, key=lambda o: o.candidate.index):
            lines.append(
                f"| {o.candidate.index} | {_md(o.candidate.label)} | {o.outcome} | {_conf(o.confidence)} | "
                f"{_md(measurement_text(o))} | {_md(o.reason)} |"
            )
        lines += ["", _md(stage_summary(stage)), ""]
        if stage is not final:
            for note in stage_notes(stage):
                lines += [f"Note: {_md(note)}", ""]
    if report.explain:
        assert final.culprit and final.predecessor
        lines += [
            f"## explain: {_md(final.predecessor.label)} -> {_md(final.culprit.label)}",
            "",
            "| kernel | registers | spill store B | stack B | CTAs/SM | SASS delta | attribution |",
            "|---|---|---|---|---|---|---|",
        ]
        for e in report.explain:
            p, c = e.predecessor, e.culprit
            cells = [
                f"{_num(p[m])} -> {_num(c[m])}" if p[m] != c[m] else _num(p[m])
                for m in ("registers", "spill_store_bytes", "stack_bytes", "ctas_per_sm")
            ]
            lines.append(
                f"| {_md(e.kernel)} | "
                + " | ".join(cells)
                + f" | {_md(e.opcode_delta)} | {_md(_attribution_text(e))} |"
            )
        lines.append("")
        for e in report.explain:
            if e.prediction is not None:
                lines.append(f"- {_md(e.kernel)}: {_md(e.prediction.text())} (the cost model, docs/model.md)")
            for sentence in e.sentences:
                lines.append(f"- {_md(e.kernel)}: {_md(sentence)}")
        lines.append("")
    if report.explain_note:
        lines += [report.explain_note, ""]
    for note in [*stage_notes(final), *report.notes]:
        lines += [f"Note: {_md(note)}", ""]
    return "\n".join(lines)


def _md(text: str) -> str:
    return md_text(text)


def _attribution_text(kernel: CulpritKernel) -> str:
    """The attribution as a reader takes it: the kernel's own source said in words (its JSON key is
    ``kernel_source``), the compiler's side by name."""
    return "your kernel's source" if kernel.from_source else kernel.attribution


def stage_notes(stage: StageResult) -> list[str]:
    """A stage's notes: good results after the first bad one, values outside the endpoints' range."""
    notes = []
    if stage.non_monotonic:
        notes.append(
            "good results after the first bad one (not monotonic): "
            + ", ".join(stage.candidates[i].label for i in stage.non_monotonic)
        )
    if note := outside_note(stage):
        notes.append(note)
    return notes


def print_report(report: BisectReport, console: Console) -> None:
    """The terminal report: each stage's table, then the answer (first bad, or the range left open) and the
    culprit's explain, then the notes that qualify them. The answer leads: the notes came first, and a
    long note (the culprit is an improvement, predicted neutral) pushed "first bad" below the fold."""
    final = report.final
    for name, stage in zip(report.stage_names, report.stages):
        table = Table(title=escape(name), title_justify="left")
        add_columns(table, ("#", "candidate", "decision", "conf.", "measurements", "reason"))
        for o in sorted(stage.observations, key=lambda o: o.candidate.index):
            color = {"good": "green", "bad": "red", "skip": "yellow", "unsure": "magenta"}[o.outcome]
            table.add_row(
                str(o.candidate.index),
                escape(o.candidate.label),
                f"[{color}]{o.outcome}[/]",
                _conf(o.confidence),
                escape(measurement_text(o)),
                escape(o.reason),
            )
        console.print(table)
        console.print(escape(stage_line(report, stage)))
        if stage is not final:  # an earlier stage (a pin bump, bisected further): its answer, then its notes
            console.print(escape(stage_summary(stage)))
            for note in stage_notes(stage):
                console.print(f"[yellow]note:[/] {escape(note)}")
    style = "bold green" if report.found else "bold yellow"
    console.print(f"[{style}]{escape(stage_summary(final))}[/]")
    if report.explain:
        for e in report.explain:
            p, c = e.predecessor, e.culprit
            moved = [f"{m} {_num(p[m])} -> {_num(c[m])}" for m in p if p[m] != c[m]]
            predicted = f"; {e.prediction.text()}" if e.prediction is not None else ""
            console.print(
                f"  {escape(e.kernel)}: {escape(', '.join(moved) or 'no resource change')}; "
                f"SASS {escape(e.opcode_delta or 'unchanged')}; attribution: {escape(_attribution_text(e))}{escape(predicted)}"
            )
            if e.source_change is not None:
                console.print(f"    {escape(e.source_change.sentence())}")
    if report.explain_note:
        console.print(escape(report.explain_note))
    for note in [*stage_notes(final), *report.notes]:
        console.print(f"[yellow]note:[/] {escape(note)}")
