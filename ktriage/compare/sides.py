"""The two sides of a compare: a results file or a store run, loaded into cells.

A path is a results file (ktriage's own results file, or TritonBench's CSV/JSON:
``ktriage.measure.tritonbench_format``; any of them may be gzipped, ``run.json.gz``); anything else a run id (or unique prefix) in the store.
``compare`` and ``triage`` both load their sides here, so both read the same things: a run id
works wherever a results file does. The checks of a pair of sides live here too, for the same reason
(both verbs refuse the same pairs in the same words): ``check_baseline``, ``check_not_one_run`` (one
run given as both sides) and ``check_precision`` (two dtypes, unless --allow-precision-mismatch).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ktriage.errors import KtriageError, joined, option, spelled, worded

if TYPE_CHECKING:  # the cells' module is light, but keep `compare --help` from loading anything
    from ktriage.measure.cells import Cell, RunInfo


@dataclass
class LoadedSide:
    """One side of a compare, read: its run, its cells, and the name reports give it.

    ``label``: the file's stem for a results file, the run id for a store run (what ``compare``
    prints); ``path``: the results file it was read from (None for a store run or a side built in
    memory), so that a caller that names sides by file name (``triage``) can."""

    run: RunInfo
    cells: list[Cell]
    label: str
    path: Path | None = None


Side = str | Path | LoadedSide  # what a caller may pass: a path, a run id, or a side already loaded


def load_side(ref: str | Path, db: str | None = None, *, op: str | None = None, mode: str | None = None) -> LoadedSide:
    """A results file if ``ref`` is a path (ktriage's JSON, or TritonBench's CSV or JSON: ``op``/``mode``
    for a CSV whose name does not say them), else a run id (or unique prefix) in the store."""
    from ktriage.measure.results_file import results_name

    path = Path(ref)
    if results_name(path).suffix in (".json", ".csv") or path.exists():
        from ktriage.measure.tritonbench_format import MODES, read_run_file

        if mode is not None and mode not in MODES:
            raise KtriageError(
                worded(lambda o: f"{o('mode', '--mode', mode)} is not a pass"),
                f"use one of: {', '.join(sorted(MODES))}",
            )
        run, cells = read_run_file(path, op=op, mode=mode)
        _check_cells(cells, str(path))
        _check_named(cells, op, mode, str(path))
        return LoadedSide(run, cells, results_name(path).stem, path)
    try:
        from ktriage.store import open_store
    except ImportError as exc:  # the store is optional for file comparisons
        raise KtriageError(
            f"{ref!r} is not a results file, and the results store is not available ({exc})",
            "pass result JSON files written by `ktriage bench --output-json`",
        ) from exc
    store = open_store(db, must_exist=True)  # reading a run never creates or converts a store
    try:
        run, cells = store.load_run(str(ref))
    finally:
        store.close()
    _check_cells(cells, f"run {run.run_id}")
    _check_named(cells, op, mode, f"run {run.run_id}")
    return LoadedSide(run, cells, run.run_id)


def resolve_side(side: Side, db: str | None = None, *, op: str | None = None, mode: str | None = None) -> LoadedSide:
    """``side`` loaded (``load_side``), or returned as it is when it already is."""
    return side if isinstance(side, LoadedSide) else load_side(side, db, op=op, mode=mode)


def _check_named(cells: list[Cell], op: str | None, mode: str | None, what: str) -> None:
    """--op/--mode name what a TritonBench file does not say; a side that says it (ktriage's results, a
    TritonBench JSON, a run in the store) and says otherwise is refused rather than compared as what it holds."""
    for name, given, held in (
        ("op", op, {c.key.op for c in cells}),
        ("mode", mode, {c.key.mode for c in cells}),
    ):
        if given is not None and given not in held:
            raise KtriageError(
                joined(
                    option(name, "--" + name, given), f" does not match {what}, which holds {', '.join(sorted(held))}"
                ),
                joined("drop ", option(name, "--" + name), " (it is for a TritonBench CSV whose name does not say it)"),
            )


def _check_cells(cells: list[Cell], what: str) -> None:
    """A side without cells compares to nothing: refused, not an empty table that exits 0."""
    if not cells:
        raise KtriageError(
            f"{what} has no cells: there is nothing to compare",
            "give a results file or run that measured something (ktriage runs show RUN lists its cells)",
        )


def check_baseline(baseline: str | None, *sides: list[Cell]) -> None:
    """``--baseline`` must name a backend of the results (an unknown one would silently check nothing) that no
    toolchain compiled (the baseline's pairs are kept apart from the counts, so a compiled one hid its regressions)."""
    if baseline is None:
        return
    backends = sorted({c.key.backend for cells in sides for c in cells})
    if baseline not in backends:
        raise KtriageError(
            worded(lambda o: f"{o('baseline', '--baseline', baseline)} is not a backend of these results"),
            f"use one of: {', '.join(backends)}",
        )
    compiled = {c.key.backend for cells in sides for c in cells if c.key.toolchain is not None}
    if baseline in compiled:  # its pairs are the baseline's, kept apart: "0 regressions", exit 0, on a regression
        native = [b for b in backends if b not in compiled]
        raise KtriageError(
            worded(
                lambda o: (
                    f"{o('baseline', '--baseline', baseline)} is compiled by the toolchains being compared: as the "
                    "baseline its changes "
                    "would be set apart, and none of them counted as a regression"
                )
            ),
            f"name a backend that runs without a toolchain: {', '.join(native)}"
            if native
            else worded(
                lambda o: (
                    f"drop {o('baseline', '--baseline')} (these results have no backend that runs without a toolchain)"
                )
            ),
        )


# ------------------------------------------------------------------------------------------ one run twice
def check_not_one_run(old: LoadedSide, new: LoadedSide, names: tuple[object, object], fix: str) -> None:
    """Refuse one run given as both sides: every cell compared with itself is "same", a verdict of "no
    change" that says nothing (two halves of one run share its id and differ in their cells). ``names``:
    the sides as the caller gave them; ``fix``: what that verb does instead. A TritonBench file gets a new
    run id each time it is read, so one file twice is told by its path."""
    same_file = old.path is not None and new.path is not None and old.path.resolve() == new.path.resolve()
    if (same_file or old.run.run_id == new.run.run_id) and _measured(old.cells) == _measured(new.cells):
        what = "one file" if same_file else f"run {old.run.run_id}"
        raise KtriageError(
            f"both sides are {what} ({names[0]} and {names[1]}): every cell would be compared with itself", fix
        )


def _measured(cells: list[Cell]) -> list[tuple[str, list[float]]]:
    """What a side measured, in a comparable order: two sides equal here are one run read twice."""
    return sorted((repr(c.key), c.samples_ms) for c in cells)


def file_warnings(*sides: LoadedSide) -> list[str]:
    """What the files of ``sides`` say a reader must know before taking the comparison for one of all
    they hold (a TritonBench backend with no latency, left out: ``tritonbench_format.WARNINGS``). Why
    read here: compare and triage put them with the precision warning, where a report's reader looks."""
    from ktriage.measure.tritonbench_format import WARNINGS

    out: list[str] = []
    for side in sides:
        said = side.run.settings.get(WARNINGS) if isinstance(side.run.settings, dict) else None
        out += [str(w) for w in said] if isinstance(said, list) else []
    return out


# ------------------------------------------------------------------------------------------ precision
# What check_precision's refusal and warning name: the keyword of kt.compare and kt.triage and the flag of
# the commands, both, since the same message reaches a Python caller and a command-line user (the rule of
# ktriage.errors.option); a library caller was told only of the flag.
ALLOW_PRECISION_MISMATCH = option("allow_precision_mismatch", "--allow-precision-mismatch", True)


def run_precision(run: RunInfo) -> str | None:
    """The dtype a ktriage bench run timed (its plan's ``precision``); None where the run does not say
    (TritonBench's CSV and JSON, older results)."""
    plan = run.settings.get("plan") if isinstance(run.settings, dict) else None
    value = plan.get("precision") if isinstance(plan, dict) else None
    return str(value) if value else None


def check_precision(old: LoadedSide, new: LoadedSide, *, allow: bool = False) -> str | None:
    """Two runs of one operator in two dtypes share every cell key (cells are keyed by op, pass, input and
    backend), so a bf16 run against an fp16 run read as 72 improvements: the dtype's difference, not the
    compiler's. Refused where both runs say their precision and they differ, unless ``allow`` (the user
    compares the two dtypes on purpose: --allow-precision-mismatch); then the warning the report must
    carry is returned, so no reader takes its verdicts for the compiler's. None: nothing to warn of."""
    a, b = run_precision(old.run), run_precision(new.run)
    if a is None or b is None or a == b:
        return None
    if allow:
        return worded(
            lambda o: (
                f"cells of different dtypes are compared: {old.label} was measured in {a} and {new.label} in {b} "
                f"(on purpose: {spelled(ALLOW_PRECISION_MISMATCH, o)}), so every ratio is the dtype's difference as well as the "
                "compiler's"
            )
        )
    raise KtriageError(
        f"{old.label} was measured in {a} and {new.label} in {b}: their difference is the dtype's, not the compiler's",
        worded(
            lambda o: (
                f"compare two runs of one precision: bench both sides with {o('precision', '--precision', a)}; or "
                f"pass {spelled(ALLOW_PRECISION_MISMATCH, o)} to compare the two dtypes on purpose"
            )
        ),
    )
