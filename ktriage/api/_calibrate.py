"""``ktriage.api.calibrate(...) -> CalibrateReport``: refit the cost model on GPU measurements
(docs/model.md).

The GPU verdicts of toolchains timed side by side (a calibration dataset, bench results files, or
runs in a store) are paired with the explain report of the same kernels and toolchains, the model's
free parameters are fitted, and the fit is scored holding out one operator at a time.

Why an entry point: the CLI checked the pairing of sources and reports, read them, built the
dataset and fitted it itself; a team's nightly job that refits the model now makes one call. The
cost model itself is ``ktriage.predict``; this only gathers its input and calls its fit.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ktriage.api import _args as args
from ktriage.api.paths import check_replaceable, check_writable
from ktriage.brief import brief
from ktriage.errors import FormatError, KtriageError, Worded, joined, option, spelled, worded
from ktriage.predict.calibration import DEFAULT_LEVEL, RecallBySize, WidthCeiling, held_out_groups
from ktriage.predict.model import DEFAULT_THRESHOLD
from ktriage.stats.gate import check_gate, gate_band
from ktriage.wording import plural

if TYPE_CHECKING:
    from ktriage.measure.cells import Cell, RunInfo
    from ktriage.predict.calibration import Calibration
    from ktriage.predict.dataset import CalibrationCell, Skipped

Say = Callable[[str], None]
__all__ = ["DEFAULT_LEVEL", "CalibrateReport", "calibrate"]


@dataclass(frozen=True)
class CalibrateReport:
    """The cells fitted on, the fit (parameters, and unless skipped its leave-one-operator-out
    scores), the gate the scores were counted at, and every measured pair of the results that made no
    cell (``skipped``: ``say`` heard them grouped by kind, the model file keeps each)."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    cells: list[CalibrationCell]
    calibration: Calibration
    threshold: float
    skipped: list[Skipped] = field(default_factory=list)

    def summary_text(self) -> str:
        """What ``ktriage calibrate`` prints: the cross-validation's confusion matrix (when run) and
        the fitted parameters, rounded, with what they mean when nothing was held out."""
        cal, lines = self.calibration, []
        operators = len({c.operator for c in self.cells})
        groups = len(set(held_out_groups(self.cells).values()))
        cells = plural(len(cal.cv_cells), "cell")
        if cal.scores is not None and not cal.held_out:
            if operators < 2:
                why = "a fit on one operator cannot be held out by operator: none is left to fit on"
            elif groups < 2:
                why = (
                    f"its {operators} operators launch kernels of the same names, so they are held out together: "
                    "none is left to fit on"
                )
            else:
                why = "--no-cv"
            lines.append(
                f"in sample, not held out ({why}): how well the model fits the {cells} it was fitted on, "
                f"not how well it predicts others (gate {gate_band(self.threshold)}):\n\n"
                + cal.scores.markdown()
                + "\n"
            )
        elif cal.scores is not None:
            lines.append(
                f"leave-one-operator-out over {plural(operators, 'operator')}, {cells} "
                f"(gate {gate_band(self.threshold)}; operators that launch a kernel of the same name are held out "
                f"together: {plural(groups, 'group')}):\n\n"
            )
            lines.append(cal.scores.markdown() + "\n")
            by_size = RecallBySize.of(cal.cv_cells, self.threshold)
            lines.append("\nrecall by the size of the measured change:\n\n" + by_size.markdown() + "\n")
            ceiling = WidthCeiling.of(
                [r.cell for r in cal.cv_cells], cal.params.interval_a, cal.params.interval_b, self.threshold
            )
            if ceiling.text():
                lines.append("\nwhat the interval's width alone allows:\n" + ceiling.text() + "\n")
        if cal.scores is not None and "n/a" in cal.scores.markdown():
            lines.append("(n/a: no cell was predicted that kind, for a precision, or measured it, for a recall)\n")
        params = {k: round(v, 4) if isinstance(v, float) else v for k, v in cal.params.to_json().items() if k != "cv"}
        lines.append("\nparameters: " + json.dumps(params) + "\n")
        lines += [line + "\n" for line in _what_the_parameters_mean(cal)]
        return "".join(lines)

    def model_json(self) -> str:
        """The parameters file (``explain --model FILE`` or ``KTRIAGE_MODEL=FILE`` reads it), with what the
        results had that the fit left out (``"skipped"``, every one: the printed notes group them)."""
        data = {**self.calibration.to_json(), "skipped": [s.to_json() for s in self.skipped]}
        return json.dumps(data, indent=1) + "\n"


def _what_the_parameters_mean(cal: Calibration) -> list[str]:
    """The sentences a small fit needs next to its parameters: those its cells gave no reason to move (still the
    defaults: a model file from this fit prices those mechanisms as the defaults do, not as measured), and, with
    nothing held out, that the interval is the fit's own residuals' (narrower than a held-out one) and that the
    model file carries no held-out record for explain and triage to quote."""
    from ktriage.predict.model import Params

    default = Params()  # within 1e-6: the optimizer's finite differences nudge an unused parameter by ~1e-8
    kept = [k for k in Params.FREE if math.isclose(getattr(cal.params, k), getattr(default, k), rel_tol=1e-6)]
    out = []
    if kept:
        out.append(
            f"{len(kept)} of the {len(Params.FREE)} parameters kept their defaults (nothing in these cells moves them): "
            + ", ".join(kept)
        )
    if not cal.held_out:
        out.append(
            "the interval (interval_a, interval_b) comes from the residuals of the cells it was fitted on, "
            "so it is narrower than a held-out one; the model file has no held-out scores for explain and triage "
            "to quote (calibrate on two or more operators, with cross-validation, for those)"
        )
    return out


@args.entry_point
def calibrate(
    *,
    from_cells: Path | Sequence[str | Path] = (),
    results: Path | Sequence[str | Path] = (),
    runs: Sequence[str] = (),
    explain: Path | Sequence[str | Path] = (),
    operators: Sequence[str] = (),
    backends: Sequence[str] = (),
    db: str | None = None,
    cells_out: str | Path | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    level: float = DEFAULT_LEVEL,
    cross_validate: bool = True,
    say: Say | None = None,
) -> CalibrateReport:
    """Fit the cost model on the cells of ``from_cells`` (cells.jsonl datasets) plus those made from
    each of ``results`` (results files) and ``runs`` (run ids in the store ``db``), paired in that
    order with one ``explain`` JSON report each. ``operators``: one per results/run (default: the
    run's op); ``backends``: the artifact backend a catalog op's report compiled, one or one per
    source. ``cells_out``: write the dataset used there. ``level``: the coverage asked of the
    prediction interval, a fraction in (0, 1) (0.8, not 80). ``say``: each source's notes (what it
    skipped, one line per kind) and cell count. A lone str or Path where a list goes is one item
    (``from_cells="cells.jsonl"``).

    Raises :class:`~ktriage.errors.KtriageError` (naming the fix) for unpaired sources and reports,
    and :class:`~ktriage.errors.FormatError` for a file that is not what it should be."""
    from ktriage.predict.calibration import calibrate as fit_cells

    cross_validate = args.switch(cross_validate, "cross_validate", "--no-cv")
    threshold, level = args.THRESHOLD(threshold), args.LEVEL(level)
    check_gate(threshold)
    cells, skipped = gather_cells(
        from_cells=from_cells,
        results=results,
        runs=runs,
        explain=explain,
        operators=operators,
        backends=backends,
        db=db,
        cells_out=cells_out,
        say=say,
    )
    cal = fit_cells(cells, threshold=threshold, level=level, cross_validate=cross_validate)
    return CalibrateReport(cells, cal, threshold, skipped)


def gather_cells(
    *,
    from_cells: Path | Sequence[str | Path] = (),
    results: Path | Sequence[str | Path] = (),
    runs: Sequence[str] = (),
    explain: Path | Sequence[str | Path] = (),
    operators: Sequence[str] = (),
    backends: Sequence[str] = (),
    db: str | None = None,
    cells_out: str | Path | None = None,
    say: Say | None = None,
    purpose: str = "fit",
) -> tuple[list[CalibrationCell], list[Skipped]]:
    """The measured cells of ``calibrate`` and ``score_model``, checked and read as both take them (their
    docstrings), with every measured pair that made no cell. Raises when no cell has a measured ratio
    (``purpose``: what the caller does with one, for the message: "fit", "score")."""
    from ktriage.predict.calibration import usable
    from ktriage.predict.dataset import cells_from_results, read_cells, skipped_summary, write_cells

    say = args.callback(say, "say")
    from_cells, results = args.paths(from_cells, "from_cells", "--from"), args.paths(results, "results", "--results")
    explain = args.paths(explain, "explain", "--explain")
    runs, operators = args.texts(runs, "runs", "--run"), args.texts(operators, "operators", "--operator")
    backends = args.texts(backends, "backends", "--backend")
    db = args.db(db)
    if cells_out is not None:  # before any work, and never over a results file or a report the fit reads
        cells_out = Path(args.path_or_name(cells_out, "cells_out", "--cells-out", example="cells.jsonl"))
        named = option("cells_out", "--cells-out")
        check_writable(Path(cells_out), named, example="cells.jsonl")
        check_replaceable(Path(cells_out), named, b'"measured": {', "a calibration dataset (cells.jsonl)")
    tell: Say = say or (lambda _m: None)
    sources: list[tuple[str, Path | str]] = [(str(p), Path(p)) for p in results] + [(f"run {r}", r) for r in runs]
    try:
        _check_pairing(len(sources), len(explain), len(operators), len(backends))
    except KtriageError:  # `--results cells.jsonl` alone: the file's kind is the mistake, not the count
        for path in results:
            _refuse_dataset_as_results(path)
        raise
    cells: list[CalibrationCell] = []
    skipped: list[Skipped] = []
    for path in from_cells:
        cells += read_cells(path)
    loaded = _Sources(db)
    for i, ((label, src), report_path) in enumerate(zip(sources, explain, strict=True)):
        info, measured = loaded.read(src)
        name = operators[i] if operators else (measured[0].key.op if measured else label)
        be = (backends[i] if len(backends) > 1 else backends[0]) if backends else None
        made, notes = cells_from_results(
            info, measured, _explain_report(Path(report_path)), operator=name, backend=be, source=label
        )
        for line in skipped_summary(notes):  # one line per kind of mismatch: every one is in the report
            tell(f"note: {line}")
        skipped += notes
        tell(f"{label}: {plural(len(made), 'cell')} ({name})")
        cells += made
    if not cells:
        raise KtriageError(
            "no calibration cells",
            worded(lambda o: f"pass {o('from_cells', '--from', 'cells.jsonl')}, or {spelled(_RESULTS_WITH_REPORT, o)}"),
        )
    if cells_out is not None:
        write_cells(cells_out, cells)
        tell(f"dataset: {cells_out}")
    if not usable(cells):
        which = (
            "the one calibration cell has no"
            if len(cells) == 1
            else f"none of the {len(cells)} calibration cells has a"
        )
        raise KtriageError(
            f"{which} measured ratio to {purpose} (a finite ratio above 0)",
            "pass cells whose bench measured both toolchains (a failed or missing side has no ratio)",
        )
    return cells, skipped


# How calibrate's messages name its sources, each option by its keyword and its flag (errors.option): the
# results files or runs that explain reports, operators and backends pair with, and one paired example.
_SOURCE = worded(lambda o: f"{o('results', '--results')} or {o('runs', '--run')}")
_RESULTS_WITH_REPORT = worded(
    lambda o: f"{o('results', '--results', 'R.json')} with {o('explain', '--explain', 'E.json')}"
)


def _sources(n: int) -> str:
    """How many results files and runs: "1 results file or run", "0 results files or runs"."""
    return plural(n, "results file or run", "results files or runs")


def _check_pairing(sources: int, reports: int, operators: int, backends: int) -> None:
    """Each explain report, operator and backend goes with one results file or run, in order; a count
    that does not match is refused naming the keyword and the flag of each side."""
    if reports != sources:
        raise KtriageError(
            worded(lambda o: f"{_sources(sources)} but {plural(reports, 'report')} in {o('explain', '--explain')}"),
            worded(lambda o: f"pass one explain report per item of {spelled(_SOURCE, o)}, in the same order"),
        )
    if operators and operators != sources:
        raise KtriageError(
            worded(lambda o: f"{plural(operators, 'name')} in {o('operators', '--operator')} for {_sources(sources)}"),
            worded(lambda o: f"pass one per item of {spelled(_SOURCE, o)}, or none"),
        )
    if backends and not sources:  # a dataset's cells carry their backends: backends would change nothing
        raise KtriageError(
            worded(
                lambda o: (
                    f"{o('backends', '--backend')} names the artifact backend of {spelled(_SOURCE, o)}, and none was given"
                )
            ),
            worded(
                lambda o: (
                    f"drop {o('backends', '--backend')} (the cells of {o('from_cells', '--from')} carry theirs), "
                    f"or add {spelled(_RESULTS_WITH_REPORT, o)}"
                )
            ),
        )
    if backends and backends not in (1, sources):
        raise KtriageError(
            worded(lambda o: f"{plural(backends, 'name')} in {o('backends', '--backend')} for {_sources(sources)}"),
            "pass one, or one per source",
        )


class _Sources:
    """Reads a results file, or a run of the store (opened once, on the first run asked)."""

    def __init__(self, db: str | None) -> None:
        self._db = db
        self._store: object = None

    def read(self, src: Path | str) -> tuple[RunInfo, list[Cell]]:
        if isinstance(src, Path):
            from ktriage.measure.results_file import read_results

            try:
                return read_results(src)
            except FormatError:  # a cells.jsonl read "not valid JSON: Extra data: line 2 column 1"
                _refuse_dataset_as_results(src)
                raise
        from ktriage.store.store import Store, open_store

        if not isinstance(self._store, Store):
            self._store = open_store(self._db, must_exist=True)
        return self._store.load_run(src)


# How an explain report for calibrate is written, both ways: a Python caller of kt.calibrate was told
# only the command, and the library writes the same JSON (ExplainReport.json_text).
_WRITE_EXPLAIN_REPORT = Worded(
    "Path('E.json').write_text(kt.explain(target=..., toolchains=[...]).json_text()) in Python, "
    "or `ktriage explain TARGET -t ... --format json -o E.json`",
    "`ktriage explain TARGET -t ... --format json -o E.json`",
)


# The largest explain report committed is 2.5 MB (benchmarks/explain: 30 inputs of layer_norm bwd, two
# toolchains); a recorded model's run of thousands of kernels stays well under this. KTRIAGE_MAX_INPUT_MB sets it.
MAX_EXPLAIN_MB = 512


def _explain_report(path: Path) -> dict[str, object]:
    """The explain report at ``path``, read as every other JSON input is (``ktriage.schema.core``: the size
    limit before reading, plain or gzipped, UTF-8, JSON, nesting depth). Why: it was ``json.loads(read_text())``,
    so a report that was not UTF-8 ended in Python's UnicodeDecodeError (a traceback), a huge one was read whole,
    and a results file or compare's JSON given in its place was "no tool: ktriage explain" without saying what
    it was. Every refusal names the file, the problem, and the file calibrate wants with how to write it."""
    from ktriage.predict.dataset import CALIBRATION_CELL, EXPLAIN_REPORT, RESULTS_FILE, document_kind, first_line_kind
    from ktriage.schema.core import check_depth, parse_json, read_text_gz, size_limit

    wanted = "pass the JSON explain report, written with " + _WRITE_EXPLAIN_REPORT
    try:
        text = read_text_gz(
            path, what="explain report", limit=size_limit(MAX_EXPLAIN_MB), fix="write it with " + _WRITE_EXPLAIN_REPORT
        )
        try:
            data = parse_json(text, origin=f"explain report {path}", fix=wanted)
        except FormatError:
            if first_line_kind(text) == CALIBRATION_CELL:  # cells.jsonl: "not valid JSON: Extra data" said nothing
                raise _cells_not_report(path) from None
            raise
        check_depth(data, origin=f"explain report {path}")
    except FormatError as exc:
        if exc.fix and _WRITE_EXPLAIN_REPORT in exc.fix:
            raise
        # the reader's own fix (raise the size limit, save as UTF-8, check the file) may not be the way on: this
        # may be the wrong file, so the fix also says which file calibrate reads and how to write one
        raise FormatError(exc.problem, joined(exc.fix or "", "; or ", wanted)) from None
    kind = document_kind(data)
    if kind == EXPLAIN_REPORT:
        assert isinstance(data, dict)  # document_kind tells only JSON objects
        _check_layout(path, data)
        return data
    if kind == CALIBRATION_CELL:  # a cells.jsonl of one line
        raise _cells_not_report(path)
    if kind == RESULTS_FILE:
        raise FormatError(
            f"{path} is {kind} (measured cells), not an explain report",
            worded(
                lambda o: (
                    f"pass it as {o('results', '--results')}, and as {o('explain', '--explain')} the JSON explain "
                    f"report of the same kernels and toolchains, written with {spelled(_WRITE_EXPLAIN_REPORT, o)}"
                )
            ),
        )
    if kind is None and isinstance(data, dict):
        kind = 'a JSON object without "tool": "ktriage explain"'
    elif kind is None:
        kind = "a JSON " + {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}.get(
            type(data), "null"
        )
    raise FormatError(f"{path} is {kind}, not an explain report", wanted)


def _refuse_dataset_as_results(path: Path) -> None:
    """A calibration dataset given as ``--results`` is refused as what it is, with the option that reads
    it; anything else returns (its own error stands). Only on a failure path: the file is read again
    (results files are capped by the results reader's size limit)."""
    from ktriage.measure.results_file import read_results_text
    from ktriage.predict.dataset import CALIBRATION_CELL, first_line_kind

    try:
        text = read_results_text(path)
    except FormatError:
        return  # missing, unreadable or too large: the reader's own refusal says so
    if first_line_kind(text) == CALIBRATION_CELL:
        raise FormatError(
            f"{path} is a calibration dataset (cells.jsonl: one calibration cell a line), not a results file",
            worded(
                lambda o: (
                    f"pass it as {o('from_cells', '--from', str(path))}; {o('results', '--results')} takes a "
                    f"results file of `ktriage bench`, each with its explain report ({spelled(_RESULTS_WITH_REPORT, o)})"
                )
            ),
        )


def _cells_not_report(path: Path) -> FormatError:
    """A calibration dataset given as ``--explain``: named, with the option that reads it."""
    return FormatError(
        f"{path} is a calibration dataset (cells.jsonl: one calibration cell a line), not an explain report",
        worded(
            lambda o: (
                f"pass it as {o('from_cells', '--from', str(path))}; {o('explain', '--explain')} takes the JSON explain "
                f"report of a results file's kernels, written with {spelled(_WRITE_EXPLAIN_REPORT, o)}"
            )
        ),
    )


def _check_layout(path: Path, data: dict[str, object]) -> None:
    """The lists calibrate walks, as ``ktriage explain`` writes them: ``toolchains`` (objects with a string
    ``spec`` and ``id``) and ``kernels`` (objects whose ``spec``, its ``meta`` and ``results`` are objects). Why: a
    report edited by hand or cut and mended otherwise ended in an internal error ("'int' object is not
    iterable"). The facts inside each result are read as written (``predict.facts``)."""

    def objects(value: object, *keys: str) -> list[dict[str, object]] | None:
        """``value`` if it is a list of objects whose ``keys`` (where present) are objects too, else None."""
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            return None
        return value if all(isinstance(v.get(k, {}), dict) for v in value for k in keys) else None

    toolchains, kernels = objects(data.get("toolchains", [])), objects(data.get("kernels", []), "spec", "results")
    if toolchains is None or not all(
        isinstance(t.get("spec"), str) and isinstance(t.get("id"), str) for t in toolchains
    ):
        bad = '"toolchains" is not a list of objects, each with a "spec" and an "id" string'
    elif kernels is None or not all(
        isinstance(spec, dict) and isinstance(spec.get("meta") or {}, dict)  # a spec's meta may be null
        for spec in (k.get("spec", {}) for k in kernels)
    ):
        bad = '"kernels" is not a list of objects, each with a "spec" (its "meta" too) and "results" object'
    else:
        return
    raise FormatError(
        f"explain report {path} is not laid out as ktriage explain writes it: {bad}",
        "write it again (not by hand) with " + _WRITE_EXPLAIN_REPORT,
    )
