"""A comparison as markdown, fit for a CI job summary ($GITHUB_STEP_SUMMARY): the headline first,
then what needs action (baseline warning, regressions worst first, cliffs, errors), then the rest
folded away in <details>."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

from ktriage.compare.not_compared import NotComparedGroups, group_not_compared
from ktriage.compare.pairing import BaselineCheck, Comparison, PairResult
from ktriage.compare.quote import CounterQuote, comparison_quotes
from ktriage.compare.report import CompareReport
from ktriage.mdsafe import markdown_writer, md_code, md_text
from ktriage.measure.provenance import run_date_gpu
from ktriage.stats.gate import gate_band
from ktriage.wording import agree, fmt_interval, fmt_pct, plural

MS_DIGITS = 4  # significant digits of a column's smallest time


def fmt_ms(v: float, decimals: int) -> str:
    """A time in ms with ``decimals`` places (``ms_decimals``: its column's, so the points line up); every
    report's table of times (compare's, triage's) writes them here."""
    if not math.isfinite(v):
        return "-"
    return f"{v:.{decimals}f}"


def ms_decimals(values: Iterable[float]) -> int:
    """The decimal places of a table's ms columns: four significant digits of its smallest time, the same
    places for every row. Why: four significant digits per time drop trailing zeros and give each its own places
    ("0.0423" next to "0.1268", "2.8" under "2.817"), so right-aligned the decimal points did not line up."""
    smallest = min((abs(v) for v in values if math.isfinite(v) and v != 0), default=1.0)
    return max(0, MS_DIGITS - 1 - math.floor(math.log10(smallest)))


def pairs_ms_decimals(pairs: Iterable[PairResult]) -> int:
    """The decimal places of one table of ``pairs``: ``ms_decimals`` of their ref and new medians. One home
    for compare's terminal, markdown and HTML tables: the HTML wrote each time with its own four significant
    digits ("0.0168" above "0.01693") after the other two shared a column's places, so one pair read differently per format."""
    return ms_decimals(x for p in pairs if p.verdict for x in (p.verdict.median_ref, p.verdict.median_new))


def fmt_ci(p: PairResult) -> str:
    """A pair's confidence interval as changes (``fmt_interval``, as triage's measured column writes it)."""
    v = p.verdict
    return "-" if v is None else fmt_interval(v.ci_low, v.ci_high)


def _esc(text: str) -> str:
    """Text from the input (labels, names, error messages): inert markdown (``mdsafe.md_text``)."""
    return md_text(text)


NO_BASELINE_CHECK = "No baseline check was made."


@markdown_writer
def baseline_markdown(b: BaselineCheck | None) -> str:
    """The baseline check as a markdown line: the message alone, marked WARNING or Note where it
    needs reading. Why no "Baseline check:" label: every message names the baseline in its first
    words ("baseline torch_layer_norm could not be confirmed unchanged", "no baseline backend ..."),
    so a label read "Baseline check: baseline torch_layer_norm ...". One home for compare and triage."""
    if b is None:
        return NO_BASELINE_CHECK
    mark = {"moved": "WARNING", "unsure": "Note", "absent": "Note", "none": "Note"}.get(b.status)
    return f"> **{mark}:** {_esc(b.message)}" if mark else _esc(b.message)


#: What the numbers of a pair's row are. Why said: "change" is the Hodges-Lehmann estimate (the median of all
#: pairwise new/ref ratios), not the ratio of the two "ms" columns, so a row could read 0.01693 -> 0.01696 ms and
#: -0.9% (fla2_rotary, K0) with nothing saying the two disagree by design.
COLUMNS_TEXT = "ms: each side's median; change: Hodges-Lehmann new/ref, not the medians' ratio"


def method_text(c: Comparison) -> str:
    """``gate ±5%, 95% confidence, Mann-Whitney U on raw samples; ms: ...``: what a verdict of ``c`` and its
    row's numbers mean, said after its headline in every output (the gate decides regression from same;
    --threshold moves it; ``COLUMNS_TEXT``)."""
    return (
        f"gate {gate_band(c.config.threshold)}, {c.config.confidence:.0%} confidence, Mann-Whitney U on raw"
        f" samples; {COLUMNS_TEXT}"
    )


def headline(c: Comparison) -> str:
    n = c.counts()
    parts = [
        plural(n["regression"], "regression"),
        plural(n["improvement"], "improvement"),
        f"{n['same']} same",
        f"{n['unsure']} unsure",
    ]
    if not_compared := len(c.problems()):  # the baseline's too: the count of the list every output gives
        parts.append(f"{not_compared} not compared (errors/missing)")
    if c.reference_failed():
        parts.append(
            f"the reference {c.ref_label} failed every kernel here: compare against one that ran"
            " (--reference TOOLCHAIN with --toolchains; reference= in the API)"
        )
    elif c.new_failed():
        parts.append(f"{c.new_label} failed every kernel here: nothing of it was measured (its errors are below)")
    if one_turn := len(c.one_turn_verdicts()):
        parts.append(
            f"{one_turn} {agree(one_turn, 'verdict rests', 'verdicts rest')} on a single turn of back-to-back"
            " calls per side (a ktriage before 3 turns per variant, or --max-time ended sampling): a whole turn"
            " can run slow, so re-measure with ktriage bench before acting on it"
        )
    parts += [f"WARNING: {w}" for w in c.warnings]
    return ", ".join(parts)


def _pair_table(c: Comparison, pairs: Sequence[PairResult], ranked: bool) -> list[str]:
    confidence = c.config.confidence
    head = ["#"] if ranked else []
    lines = [
        "| "
        + " | ".join([*head, "op", "input", "backend", "ref ms", "new ms", "change", f"{confidence:.0%} CI", "p"])
        + " |"
    ]
    # the numbers right-aligned (ref ms .. p), as the terminal's, so their decimal points line up
    lines.append("|" + "---|" * (len(head) + 3) + "---:|" * 5)
    decimals = pairs_ms_decimals(pairs)
    for k, p in enumerate(pairs, 1):
        v = p.verdict
        assert v is not None
        row = [str(k)] if ranked else []
        row += [
            _esc(f"{p.op}.{p.mode}"),
            _esc(p.input_label),
            _esc(c.row_backend(p)),
            fmt_ms(v.median_ref, decimals),
            fmt_ms(v.median_new, decimals),
            f"**{fmt_pct(v.ratio)}**" if p.kind == "regression" else fmt_pct(v.ratio),
            fmt_ci(p),
            f"{v.p_value:.2g}",
        ]
        lines.append("| " + " | ".join(row) + " |")
    return lines


@markdown_writer
def comparison_markdown(c: Comparison, level: int = 2) -> str:
    h = "#" * level
    out = [f"{h} ktriage compare: {md_code(c.ref_label)} -> {md_code(c.new_label)}", ""]
    out.append(f"**{headline(c)}** ({method_text(c)})")
    out.append("")
    out.append(baseline_markdown(c.baseline))
    out.append("")
    regs = c.regressions()
    if regs:
        out += [f"{h}# Regressions, worst first", "", *_pair_table(c, regs, ranked=True), ""]
    out += counters_markdown(c, h)
    if c.cliffs:
        out += [f"{h}# Cliffs along input sweeps", ""]
        out += [f"- {_esc(f.describe())}" for f in c.cliffs]
        out.append("")
    out += _not_compared_markdown(group_not_compared(c.not_compared_cells(rows=True)), h)
    imps = c.improvements()
    if imps:
        out += [
            f"<details><summary>Improvements ({len(imps)})</summary>",
            "",
            *_pair_table(c, imps, ranked=True),
            "",
            "</details>",
            "",
        ]
    uns = c.unsure()
    if uns:
        out += [f"<details><summary>Unsure ({len(uns)}): more samples or a quieter GPU needed</summary>", ""]
        out += [f"- {_esc(c.row_label(p))}: {_esc(p.verdict.reason)}" for p in uns if p.verdict]
        out += ["", "</details>", ""]
    same = c.same()
    if same:
        out += [
            f"<details><summary>Same ({len(same)})</summary>",
            "",
            *_pair_table(c, same, ranked=False),
            "",
            "</details>",
            "",
        ]
    out += _provenance(c)
    return "\n".join(out).rstrip() + "\n"


def _not_compared_markdown(groups: NotComparedGroups, h: str) -> list[str]:
    """Compare's section of the cells no verdict covers: its heading and :func:`not_compared_rows`."""
    if not groups.count:
        return []
    return [f"{h}# Errors and missing cells (not compared): {groups.count}", "", *not_compared_rows(groups)]


def not_compared_rows(groups: NotComparedGroups) -> list[str]:
    """The cells no verdict covers, a row per reason (most cells first): its count, the reason, its first
    cells and "and N more", as the table and the HTML group them; compare's and triage's markdown both.
    One row per cell, cut at 200, filled a CI summary when a side lacked a whole operator; the JSON lists
    every cell."""
    if not groups.count:
        return []
    out = ["| cells | why | which |", "|---|---|---|"]
    for g in groups.reasons:
        which = [_esc(label) for label in g.labels] + ([f"and {g.more} more"] if g.more else [])
        out.append(f"| {g.count} | {_esc(g.reason)} | {'<br>'.join(which)} |")
    out.append("")
    if groups.other_reasons:
        out += [
            f"... and {plural(groups.other_cells, 'cell')} for {plural(groups.other_reasons, 'other reason')}"
            " (the JSON report lists every cell with its reason)",
            "",
        ]
    elif any(g.more for g in groups.reasons):
        out += ["(the JSON report lists every cell not compared, with its reason)", ""]
    return out


def counters_markdown(c: Comparison, h: str = "##") -> list[str]:
    """The Nsight Compute counters of the compared cells that carry them (``bench --profile``,
    ``profile --results``), one line each next to the pair's verdict (``ktriage.compare.quote``)."""
    quotes = comparison_quotes(c)
    notes = c.profile_notes()
    if not quotes and not notes:
        return []
    out = [f"{h}# Counters (Nsight Compute) next to the verdicts", ""]
    out += [f"- **{_esc(q.head())}** {_esc(q.label())}: {_esc(q.text)}" for q in quotes]
    out += [f"- not profiled: {_esc(n)}" for n in notes if not quoted(n, quotes)]
    return out + [""]


def quoted(note: str, quotes: Sequence[CounterQuote]) -> bool:
    """A note a pair's quote already says (``ncu could not run`` for that toolchain): said once."""
    why = note.split(": ", 1)[-1]
    return any(why in q.text and not q.available for q in quotes)


def run_lines(c: Comparison, code: Callable[[str], str] = str, text: Callable[[str], str] = str) -> list[str]:
    """``ref: run 1d99dfb06145 (2026-..., NVIDIA H200, driver 570.86, status ok)``, one per side (one, ``both
    sides: run ...``, when both sides are one run, as the HTML's "both": a lone "ref:" left the reader looking
    for the new side's run): where the numbers come from, under the markdown's "Runs:" and in the terminal
    (``code``/``text`` mark the run id and the words up for the format)."""
    lines = []
    one_run = c.ref_run is not None and c.new_run is not None and c.ref_run.run_id == c.new_run.run_id
    for side, run in (("both sides" if one_run else "ref", c.ref_run), ("new", c.new_run)):
        if run is None:
            continue
        date, gpu, _ = run_date_gpu(run)
        drv = run.gpu.get("driver") if run.gpu else None  # left out where the run has none, as it always was
        lines.append(
            f"{side}: run {code(run.run_id)} ({text(date)}, {text(gpu)}{', driver ' + text(str(drv)) if drv else ''}, status {text(run.status)})"
        )
    if one_run:
        lines = lines[:1]
    return lines


def _provenance(c: Comparison) -> list[str]:
    lines = [f"- {x}" for x in run_lines(c, code=md_code, text=_esc)]
    return ["Runs:", "", *lines, ""] if lines else []


@markdown_writer
def to_markdown(report: CompareReport) -> str:
    """All comparisons of one ``ktriage compare`` (several when one run's toolchains are compared)."""
    comparisons = report.comparisons
    if len(comparisons) == 1:
        return comparison_markdown(comparisons[0])
    total = report.regression_count
    head = [f"# ktriage compare: {len(comparisons)} comparisons, {plural(total, 'regression')}", ""]
    return "\n".join(head) + "\n" + "\n".join(comparison_markdown(c, level=2) for c in comparisons)
