"""``ktriage history``'s engine: read a cell's series from the store, find its change points, and
say for each what a bisect gets (the two runs around it and their toolchains).

The store query is :func:`ktriage.store.history.cell_history`; the detection on the plain series is
:func:`ktriage.stats.changepoints.detect_change_points` (Apache Otava). Here the two meet: the
series' ok points go to the detector, its indexes come back as runs.
"""

from __future__ import annotations

import datetime as _dt
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

from ktriage.errors import KtriageError, Worded, option, separated, spelled, worded
from ktriage.stats.changepoints import (
    DEFAULT_MAX_PVALUE,
    DEFAULT_MIN_SEGMENT,
    DEFAULT_WINDOW,
    ChangePoint,
    detect_change_points,
)
from ktriage.store.history import HistoryPoint, HistoryQuery, SeriesKey, cell_history, known_cells, known_ops
from ktriage.store.store import Store
from ktriage.wording import plural


@dataclass(frozen=True)
class Detection:
    """The detector's settings (Otava's defaults, plus the shortest level counted)."""

    max_pvalue: float = DEFAULT_MAX_PVALUE
    min_step_pct: float = 0.0
    window_len: int = DEFAULT_WINDOW
    min_segment: int = DEFAULT_MIN_SEGMENT


@dataclass(frozen=True)
class BisectHint:
    """The ``ktriage bisect`` a change between two toolchains suggests (``argv`` empty: none does)."""

    reason: str
    argv: tuple[str, ...] = ()

    @property
    def command(self) -> str:
        return shlex.join(self.argv) if self.argv else ""


@dataclass(frozen=True)
class RunChange:
    """A change point as runs: the last run at the old level (``before``) and the first at the new."""

    change: ChangePoint
    before: HistoryPoint
    after: HistoryPoint
    position: int  # the after run's index among the series' points (all of them, measured or not)
    recent: bool  # within the --fail-on-recent window
    bisect: BisectHint

    @property
    def direction(self) -> str:
        return "slower" if self.change.step_pct > 0 else "faster"


@dataclass
class SeriesHistory:
    key: SeriesKey
    points: list[HistoryPoint]
    changes: list[RunChange] = field(default_factory=list)
    note: str = ""  # why nothing could be detected (too few points)

    @property
    def measured(self) -> list[HistoryPoint]:
        return [p for p in self.points if p.median_ms is not None]


@dataclass
class HistoryReport:
    query: HistoryQuery
    detection: Detection
    store_url: str
    series: list[SeriesHistory]
    fail_on_recent: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def recent_changes(self) -> list[tuple[SeriesHistory, RunChange]]:
        return [(s, c) for s in self.series for c in s.changes if c.recent]


def _version(tc: Mapping[str, object], name: str) -> str | None:
    """A toolchain record's triton or ptxas version: its ``<name>_version``, else from its spec."""
    value = tc.get(f"{name}_version")
    if value:
        return str(value)
    m = re.search(rf"(?:^|,)\s*{name}\s*==\s*([^,\s]+)", str(tc.get("spec", "")))
    return m.group(1) if m else None


def bisect_hint(key: SeriesKey, before: HistoryPoint, after: HistoryPoint) -> BisectHint:
    """The bisect over the range between the two runs' toolchains (docs/bisect.md): Triton releases
    when Triton moved (ptxas kept when it did not), ptxas releases when only ptxas did."""
    if before.toolchain == after.toolchain and before.toolchain_info == after.toolchain_info:
        what = f"toolchain {before.toolchain}" if before.toolchain else "a native backend (no toolchain)"
        return BisectHint(
            f"both runs used {what}: the change is not the compiler's; compare the runs' provenance "
            f"(`ktriage runs show {before.run_id}` and `{after.run_id}`: driver, clocks, packages, workload)"
        )
    a, b = before.toolchain_info, after.toolchain_info
    ta, tb, pa, pb = _version(a, "triton"), _version(b, "triton"), _version(a, "ptxas"), _version(b, "ptxas")
    cell = [
        "--op",
        key.op,
        "--mode",
        key.mode,
        "--input",
        str(key.input_id),
        "--backend",
        key.backend,
        "--metric",
        "latency",
        "--bundle",
        "BUNDLE_DIR",
    ]
    if ta and tb and ta != tb:
        fixed = ["--toolchain", f"triton=={tb},ptxas=={pb}"] if pa and pb and pa == pb else []
        reason = f"Triton {ta} -> {tb}" + (
            f" (ptxas {pb} in both)" if fixed else (f", ptxas {pa} -> {pb}" if pa != pb else "")
        )
        return BisectHint(
            reason, ("ktriage", "bisect", "--source", "pypi:triton", "--good", ta, "--bad", tb, *fixed, *cell)
        )
    if pa and pb and pa != pb and ta:
        return BisectHint(
            f"ptxas {pa} -> {pb} (Triton {ta} in both)",
            (
                "ktriage",
                "bisect",
                "--source",
                "ptxas",
                "--good",
                pa,
                "--bad",
                pb,
                "--toolchain",
                f"triton=={ta}",
                *cell,
            ),
        )
    return BisectHint(
        f"toolchain {before.toolchain or '(host)'} -> {after.toolchain or '(host)'}: their records name no "
        "Triton or ptxas versions to bisect between"
    )


def _ambiguous(points: list[HistoryPoint]) -> dict[str, list[str]]:
    by_run: dict[str, list[str]] = {}
    for p in points:
        by_run.setdefault(p.run_id, []).append(p.toolchain or "(host)")
    return {r: tcs for r, tcs in by_run.items() if len(tcs) > 1}


def _nothing_found(store: Store, q: HistoryQuery) -> KtriageError:
    ops = known_ops(store)
    if q.op not in ops:
        return KtriageError(
            f"the store {store.url} has no cell of op {q.op!r}",
            f"ops in the store: {', '.join(ops)}"
            if ops
            else Worded(
                "the store has no runs yet: kt.bench(...) or kt.runs_import(path=...) (`ktriage bench` or "
                "`ktriage runs import`)",
                "the store has no runs yet: `ktriage bench` or `ktriage runs import`",
            ),
        )
    cells = known_cells(store, q.op)
    listed = ", ".join(f"{b} ({m})" for b, m in cells)
    given = (("mode", q.mode), ("inputs", list(q.inputs)), ("toolchain", q.toolchain), ("gpu", q.gpu))
    flags = {"mode": "--mode", "inputs": "--input", "toolchain": "--toolchain", "gpu": "--gpu"}
    filters = separated(", ", (option(n, flags[n], v) for n, v in given if v))
    problem = f"no stored cell of {q.op} {q.backend}" + (
        worded(lambda o: f" with {spelled(filters, o)}") if filters else ""
    )
    stored = cell_history(store, HistoryQuery(q.op, q.backend, mode=q.mode))
    if stored:  # the cell is there: --input, --toolchain or --gpu took none of it, so say what they can take
        return KtriageError(problem, _stored_values(store, q, stored))
    return KtriageError(problem, f"backends (modes) of {q.op} in the store: {listed}")


def _stored_values(store: Store, q: HistoryQuery, stored: Mapping[SeriesKey, list[HistoryPoint]]) -> str:
    """The fix when the op and backend are stored and the filters took none of their cells: what each
    filter that matches nothing on its own can take (the backends it listed before were the ones given)."""
    points = [p for series in stored.values() for p in series]
    values = {
        "input": [f"{k.input_id} ({k.input_label})" for k in sorted(stored, key=lambda k: k.input_id)],
        "toolchain": sorted({p.toolchain or "host" for p in points}),
        "gpu": sorted({p.gpu for p in points if p.gpu}),
    }
    alone = {
        "input": HistoryQuery(q.op, q.backend, inputs=q.inputs, mode=q.mode),
        "toolchain": HistoryQuery(q.op, q.backend, mode=q.mode, toolchain=q.toolchain),
        "gpu": HistoryQuery(q.op, q.backend, mode=q.mode, gpu=q.gpu),
    }
    used = [name for name, value in (("input", q.inputs), ("toolchain", q.toolchain), ("gpu", q.gpu)) if value]
    missing = [name for name in used if not cell_history(store, alone[name])]
    what = {
        "input": worded(lambda o: f"{o('inputs', '--input')}: stored inputs"),
        "toolchain": worded(
            lambda o: (
                f"{o('toolchain', '--toolchain')} (a Triton version such as 3.4, a spec or an id): stored toolchains"
            )
        ),
        "gpu": worded(lambda o: f"{o('gpu', '--gpu')}: stored GPUs"),
    }
    listed = (what[name] + f": {', '.join(dict.fromkeys(values[name]))}" for name in missing or used)
    return separated("; ", listed) + ("" if missing else " (each filter matches some cells, none of them together)")


def analyze_series(
    key: SeriesKey, points: list[HistoryPoint], detection: Detection, fail_on_recent: int | None
) -> SeriesHistory:
    """The change points of one series, as runs (``points`` oldest first, one per run)."""
    out = SeriesHistory(key, points)
    measured = [(k, p) for k, p in enumerate(points) if p.median_ms is not None]
    values = [p.median_ms for _, p in measured]
    # a level holds at least --min-segment runs on each side: a shorter series can have no change point,
    # and "no change point" would read as a flat history (a nightly's gate that can never fire)
    need = max(4, 2 * detection.min_segment)
    if len(values) < need:
        why = f" ({detection.min_segment} on each side of a change, --min-segment)" if need > 4 else ""
        out.note = (
            f"{plural(len(values), 'measured run')}: change points need at least {need}{why}; nothing was detected"
        )
        return out
    # the gate tells a fresh change from an old one by the window; one that holds the whole series fired on
    # every change point it ever had (--fail-on-recent 40 on 30 nightlies: last month's step, every night).
    # Refused, as the short series above is not: it cannot be detected and cannot fire
    if fail_on_recent is not None and fail_on_recent >= len(points):
        raise KtriageError(
            worded(
                lambda o: (
                    f"{o('fail_on_recent', '--fail-on-recent', fail_on_recent)} holds the whole series {key.label} "
                    f"({len(points)} runs): every change point in it would count as recent, old ones too, so the gate could "
                    "not tell a fresh change from an old one"
                )
            ),
            worded(
                lambda o: (
                    f"give {o('fail_on_recent', '--fail-on-recent')} below {len(points)}, e.g. "
                    f"{o('fail_on_recent', '--fail-on-recent', 3)} (the latest runs a nightly watches), or leave it "
                    "out to list the change points without a gate"
                )
            ),
        )
    changes = detect_change_points(
        [float(v) for v in values if v is not None],
        max_pvalue=detection.max_pvalue,
        min_magnitude=detection.min_step_pct / 100.0,
        window_len=detection.window_len,
        min_segment=detection.min_segment,
    )
    for cp in changes:
        (_, before), (pos, after) = measured[cp.index - 1], measured[cp.index]
        recent = fail_on_recent is not None and pos >= len(points) - fail_on_recent
        out.changes.append(RunChange(cp, before, after, pos, recent, bisect_hint(key, before, after)))
    return out


def analyze_history(
    store: Store, query: HistoryQuery, detection: Detection = Detection(), *, fail_on_recent: int | None = None
) -> HistoryReport:
    """Every series ``query`` selects, with its change points. ``fail_on_recent`` N marks the
    changes whose first run at the new level is one of the series' last N runs."""
    if fail_on_recent is not None and fail_on_recent < 1:
        raise KtriageError(
            worded(lambda o: f"{o('fail_on_recent', '--fail-on-recent', fail_on_recent)} is below 1"),
            worded(
                lambda o: f"give the number of latest runs to watch, e.g. {o('fail_on_recent', '--fail-on-recent', 3)}"
            ),
        )
    if fail_on_recent is not None and fail_on_recent < detection.min_segment:
        # a change point has --min-segment runs at its new level (detect_change_points), so its first run is at
        # least that far from the end: a window of fewer latest runs never holds one, and the gate never fires
        m = detection.min_segment
        raise KtriageError(
            worded(
                lambda o: (
                    f"{o('fail_on_recent', '--fail-on-recent', fail_on_recent)} can never fire with "
                    f"{o('min_segment', '--min-segment', m)}: a change is reported once {m} runs hold the new level, so "
                    f"its first run is never among the latest {fail_on_recent}"
                )
            ),
            worded(
                lambda o: (
                    f"give {o('fail_on_recent', '--fail-on-recent')} {m} or more (e.g. "
                    f"{o('fail_on_recent', '--fail-on-recent', max(3, m))}), or lower "
                    f"{o('min_segment', '--min-segment')} to {fail_on_recent} "
                    "(a shorter level is easier to mistake for one outlying run)"
                )
            ),
        )
    found = cell_history(store, query)
    if not found:
        raise _nothing_found(store, query)
    report = HistoryReport(query, detection, store.url, [], fail_on_recent)
    for key, points in found.items():
        clash = _ambiguous(points)
        if clash:
            run_id, tcs = next(iter(clash.items()))
            raise KtriageError(
                f"run {run_id} measured {key.label} with {len(tcs)} toolchains ({', '.join(tcs)})",
                worded(
                    lambda o: (
                        f"pick one with {o('toolchain', '--toolchain')} (a part of its id, 'host' for a native backend)"
                    )
                ),
            )
        report.series.append(analyze_series(key, points, detection, fail_on_recent))
    gpus = sorted({p.gpu for s in report.series for p in s.points if p.gpu})
    if len(gpus) > 1:
        report.notes.append(
            f"the runs span {len(gpus)} GPUs ({', '.join(gpus)}): a change may be the GPU's; pick one with --gpu"
        )
    return report


def when(point: HistoryPoint) -> str:
    """The run's time as stored (ISO), for tables and plots."""
    try:
        return _dt.datetime.fromisoformat(point.created).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return point.created
