"""TritonBench's result files, both ways: read its CSV and JSON into ktriage's cells, write its JSON.

Why: the regression reports users bring are TritonBench output (``run.py --csv --output F`` or
``--output-json F``), and TritonBench's dashboards read its JSON. Reading them as :class:`Cell`\\ s
lets ``compare`` and ``triage`` take them next to ktriage's own results files; writing the JSON lets
those dashboards read a ``ktriage bench`` run.

What TritonBench writes (tritonbench/utils/triton_op.py, ``BenchmarkOperatorResult``):

- **CSV** (``write_csv_to_file``): ``;``-separated; header ``x_val`` (or the op's input tuple,
  ``(M, H)``) then ``<backend>-<metric>``;
  one row per input (``x_val`` is the op's ``register_x_val``: ``1024`` for layer_norm's N,
  ``(32, 512, 768, 1024)`` for embedding), latency as the p50 in ms; a backend that failed has its
  error message in its first metric cell and empty cells after it; a last ``average`` row (empty for
  latency: TritonBench cannot average its Latency objects). The file does not say the op or the
  pass: they come from the file name (``layer_norm_bwd_run1.csv``) or from ``--op``/``--mode``.
- **JSON** (``write_json_to_file``, ``--output-json``): a flat object, key
  ``tritonbench_{op}_{mode}[x_{x_val}-{backend}]_{metric}`` (latency as a string of the p50),
  ``tritonbench_{op}_{mode}[{backend}]-{metric}-avg`` aggregates of numeric metrics. The nightly
  runner (benchmarks/nightly/run.py) wraps these in ``{"name", "env", "metrics"}``; ``env``
  (utils/run_utils.py ``get_run_env``) has ``benchmark_date``, ``cuda_version``, ``device``,
  ``conda_env`` and ``{pytorch,triton,tritonbench}_{commit,branch,commit_time}``. Both shapes are read.

One number per cell: TritonBench keeps no samples. Such a cell is ``samples_ms=[p50]`` with
``extra["single_value"] = True``; the verdicts then say "unsure: too few samples" (one value gives
no confidence), and ``triage`` ranks such cells by their ratio and says what it cannot decide.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ktriage.atomic import write_atomic
from ktriage.errors import FormatError, joined, option, spelled, worded
from ktriage.measure.cells import Cell, CellKey, RunInfo
from ktriage.ops import registry
from ktriage.schema.core import check_depth
from ktriage.schema.core import parse_json as parse_json_text
from ktriage.schema.jsontypes import JSONObject

SOURCE = "tritonbench"
# TritonBench's Mode values (utils/triton_op.py), the longest first: "x_fwd_bwd" must not read as "bwd".
MODES = ("fwd_no_grad", "fwd_bwd", "fwd", "bwd")
METRIC = "latency"
# the run's settings key of what a reader of the file must know (a backend left out: _backends_without_latency)
WARNINGS = "warnings"
_KEY = re.compile(r"^tritonbench_(?P<bench>.+?)\[x_(?P<x>.*)-(?P<backend>[0-9A-Za-z_]+)\]_(?P<metric>.+)$")
# get_run_env's keys: what a dashboard expects in "env" (unknown when ktriage does not know them)
ENV_KEYS = (
    "benchmark_date",
    "cuda_version",
    "device",
    "conda_env",
    "pytorch_commit",
    "triton_commit",
    "tritonbench_commit",
) + tuple(f"{r}_{k}" for r in ("triton", "pytorch", "tritonbench") for k in ("branch", "commit_time"))


# ------------------------------------------------------------------------------------------ names
def split_benchmark(name: str) -> tuple[str, str] | None:
    """``layer_norm_bwd`` -> (layer_norm, bwd): TritonBench's ``{op}_{mode}`` (None if no mode ends it)."""
    for mode in MODES:
        if name.endswith("_" + mode) and len(name) > len(mode) + 1:
            return name[: -len(mode) - 1], mode
    return None


def op_mode_from_name(stem: str) -> tuple[str | None, str | None]:
    """The op and pass a file name says: ``layer_norm_bwd_run1`` -> (layer_norm, bwd); ``op_rope_``
    (TritonBench's ``write_csv`` prefix) -> (rope, None). Known operators first, so that an op whose
    name contains ``_fwd`` is not cut there."""
    name = stem.lower().removeprefix("op_")
    for op in sorted((o.name for o in registry.OPERATORS), key=len, reverse=True):
        if name == op or name.startswith(op + "_"):
            rest = name[len(op) + 1 :]
            mode = next((m for m in MODES if rest == m or rest.startswith(m + "_") or rest.startswith(m + ".")), None)
            return op, mode
    match = re.match(r"^(.+?)_(fwd_no_grad|fwd_bwd|fwd|bwd)(?:_|$)", name)
    return (match.group(1), match.group(2)) if match else (None, None)


# ------------------------------------------------------------------------------------------ inputs
_INT = re.compile(r"-?\d+")


def _ints(text: str) -> tuple[int, ...]:
    if text.isdigit():  # the common x_val, one number: no regex
        return (int(text),)
    return tuple(int(v) for v in _INT.findall(text))


class InputIndex:
    """An op's input cases by x_val, built once per file (a file of 200,000 rows must not rebuild
    the op's cases per row), and the ids of rows that match none.

    A row whose x_val is one of ktriage's inputs gets that input's id (``matched``: the catalog's
    kernels of that input are the row's); any other row gets an id past every catalog input, in
    row order, so that an unmatched row never takes (and is never averaged with) a catalog
    input's id, and a triage never explains a catalog input the row did not run."""

    def __init__(self, op: str) -> None:
        operator = registry.operator(op)
        self.keys = len(operator.x_keys) if operator is not None else 0
        cases = operator.inputs() if operator is not None and operator.x_keys else []
        self.by_tail: dict[tuple[int, ...], list[tuple[int, str]]] = {}
        for case in cases:
            assert operator is not None
            full = operator.x_val(case)
            for n in range(1, len(full) + 1):  # layer_norm's x_val is N alone: the tail of (M, N)
                self.by_tail.setdefault(full[-n:], []).append((case.id, operator.x_val_text(case)))
        self.first_free = max((c.id for c in cases), default=-1) + 1

    def match(self, x_val: str, index: int) -> tuple[int, str, bool]:
        """(input id, label, matched) of the ``index``-th row's x_val."""
        values = _ints(x_val) if self.keys else ()
        hits = self.by_tail.get(values, []) if values and len(values) <= self.keys else []
        if len(hits) == 1:
            return hits[0][0], hits[0][1], True
        return self.first_free + index, x_val.strip(), False


def _no_latency(origin: str, what: str, metrics: Sequence[str]) -> FormatError:
    """A TritonBench file without the metric ktriage compares (latency: the p50 in ms), naming the
    metrics it does have, so the user sees whether latency was left out of ``--metrics`` or the file
    holds something else (it was "has no <backend>-latency column", or for a JSON "has no cells")."""
    held = sorted(set(metrics))
    has = f"the metrics it has: {', '.join(held)}" if held else "it has no metric"
    return FormatError(
        f"{origin} has no {METRIC} metric (no {what}), which ktriage compares (TritonBench's p50 in ms); {has}",
        f"run TritonBench again with {METRIC} among --metrics (e.g. --metrics {','.join([METRIC, *held[:2]])})",
    )


def _backends_without_latency(origin: str, metrics_of: dict[str, list[str]]) -> list[str]:
    """One warning per backend that has other metrics but no latency in a file where other backends have
    latency (``run.py --metrics latency,speedup`` where one backend reported only its speedup or
    accuracy): such a backend has no cell to compare, and was dropped without a word, so a reader took
    the comparison for one of every backend the file holds. The warnings travel in the run's
    ``settings["warnings"]`` (:data:`WARNINGS`) to the comparison that reads the file. ``metrics_of``:
    backend -> the metrics it has (none of them latency)."""
    out = []
    for backend, metrics in sorted(metrics_of.items()):
        held = sorted(set(metrics))
        out.append(
            f"{origin}: backend {backend} has no {METRIC} (only {', '.join(held)}), so it is not compared; "
            f"run TritonBench again with {METRIC} among --metrics (e.g. --metrics {','.join([METRIC, *held[:2]])})"
        )
    return out


def _duplicate(origin: str, what: str, first: str, again: str) -> FormatError:
    return FormatError(
        f"{origin}: {what} appears twice ({first} and {again}): one input has two latencies, and "
        "ktriage will not average them into a number neither run measured",
        "keep one row per input (TritonBench writes one): remove the repeated row, or compare the two "
        "runs it came from separately",
    )


# ------------------------------------------------------------------------------------------ cells
def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def _cell(
    op: str,
    mode: str,
    input_id: int,
    label: str,
    x_val: str,
    backend: str,
    value: Any,
    metrics: JSONObject,
    origin: str,
    matched: bool,
) -> Cell:
    """``matched``: the x_val is one of ktriage's inputs of the op (``InputIndex``); a row that is
    not has no catalog kernels of its own (``extra["x_val_matched"]``: triage does not explain it)."""
    key = CellKey(op, mode, input_id, label, backend, None)
    extra: JSONObject = {
        "source": SOURCE,
        "single_value": True,
        "x_val": x_val,
        "file": origin,
        "tritonbench_metrics": metrics,
        "x_val_matched": matched,
    }
    number = _number(value)
    if number is not None and number > 0:
        return Cell(key, "ok", [number], extra=extra)
    if value is None or (isinstance(value, str) and not value.strip()):
        return Cell(key, "skipped", [], error=f"no {METRIC} in {origin}", extra=extra)
    return Cell(key, "error", [], error=_not_a_latency(value), extra=extra)


def _not_a_latency(value: Any) -> str:
    """Why a cell's value is no latency: a number that is not one (NaN, inf, zero, negative: the
    run measured nothing usable), another JSON type, or TritonBench's error text for the backend."""
    try:
        number = float(value) if not isinstance(value, (bool, dict, list)) else None
    except (TypeError, ValueError):
        number = None
    if number is not None:
        return f"{METRIC} {str(value).strip()[:40]!r} is not a positive, finite number of ms"
    if not isinstance(value, str):
        return f"{METRIC} is a JSON {type(value).__name__}, not a number of ms: {json.dumps(value)[:60]}"
    return value.strip()


def _said(env: JSONObject, key: str) -> str:
    """``env[key]`` where the file says it: empty where it is missing or TritonBench's ``unknown``."""
    value = str(env.get(key) or "").strip()
    return "" if value.lower() == "unknown" else value


def is_tritonbench_run(run: RunInfo) -> bool:
    """A run read from a TritonBench file (``_run``), whose date and GPU are only what the file says."""
    return run.settings.get("source") == SOURCE


def _run(origin: str, op: str, mode: str, env: JSONObject | None, kind: str, warnings: Sequence[str] = ()) -> RunInfo:
    """The run a file describes, from what it says: the nightly JSON's ``env`` has the date
    (``benchmark_date``) and the GPU (``device``); a CSV and a flat ``--output-json`` say neither, and
    their run's ``created`` and ``gpu`` stay empty (the reports say "not in the file"). Why not the time
    of reading or the file's mtime: compare printed either as the run's date, which no run had."""
    env = dict(env or {})
    run = RunInfo(command=f"tritonbench {kind} {origin}", host=str(env.get("device", "")), status="finished")
    run.created = _said(env, "benchmark_date")
    run.settings = {
        "source": SOURCE,
        "format": kind,
        "file": origin,
        "op": op,
        "mode": mode,
        "metric": METRIC,
        "single_value": True,
        "env": env,
    }
    if warnings:
        run.settings[WARNINGS] = list(warnings)
    for package in ("triton", "torch", "pytorch"):
        if env.get(f"{package}_version"):
            run.packages[package] = str(env[f"{package}_version"])
    if env.get("ktriage_toolchain"):
        run.toolchains = [
            {
                "spec": str(env["ktriage_toolchain"]),
                "id": str(env.get("ktriage_toolchain_id") or env["ktriage_toolchain"]),
                "triton_version": env.get("triton_version"),
                "ptxas_version": env.get("ptxas_version"),
            }
        ]
    if _said(env, "device"):
        run.gpu = {"name": _said(env, "device"), "cuda": env.get("cuda_version")}
    return run


def _check_not_contradicted(
    op: str | None, mode: str | None, named_op: str | None, named_mode: str | None, origin: str
) -> None:
    """--op/--mode are for a CSV whose name does not say them: where the name says a known operator
    (and its pass) otherwise, one of the two is wrong, and taking --op silently would compare or
    triage the cells as another operator's. The messages name the keyword and the flag (``op='x' (--op
    x)``): kt.compare and kt.triage reach them as the commands do."""
    if named_op not in {o.name for o in registry.OPERATORS}:
        return
    for name, given, named in (("op", op, named_op), ("mode", mode, named_mode)):
        if given and named and given != named:
            raise FormatError(
                joined(
                    option(name, "--" + name, given),
                    f" contradicts the file name {Path(origin).name}, which says {named}",
                ),
                joined(
                    "drop ", option(name, "--" + name), " (the name says it), or rename the file if the name is wrong"
                ),
            )


def _check_backends(op: str, mode: str, backends: Sequence[str], origin: str, flagged: bool) -> None:
    """A CSV whose backends are all another known operator's (``torch_layer_norm``, ``liger_layer_norm``
    in ``my_layer_norm_bwd.csv`` or ``embedding_bwd.csv``) was read as the operator its name (or --op)
    says: an unknown op, whose cells no catalog explains ("liger_layer_norm has no kernels in ktriage's
    catalog"), or the wrong one. ``flagged``: the op came from --op, not from the file name."""
    owners = registry.backend_operators()
    theirs = {owners[b] for b in backends if b in owners}
    if len(theirs) != 1 or op in theirs:
        return
    (other,) = theirs
    said = option("op", "--op", op) if flagged else f"the file name says operator {op}"
    rename = f"name the file after the operator it measured (e.g. {other}_{mode}_old.csv)"
    passed = worded(lambda o: f"pass {o('op', '--op', other)}")
    fix = (
        passed
        if flagged
        else rename
        if registry.operator(op) is not None
        else worded(lambda o: f"{rename} or {spelled(passed, o)}")
    )
    raise FormatError(
        worded(
            lambda o: f"{origin}: {spelled(said, o)}, but its backends ({', '.join(sorted(backends))}) are {other}'s"
        ),
        fix,
    )


# the pass a file does not say, as kt.compare/kt.triage and their commands take it
_MODE_GIVEN = worded(lambda o: f"{o('mode', '--mode')} as fwd, bwd or fwd_bwd")


def _need(op: str | None, mode: str | None, origin: str) -> tuple[str, str]:
    if not op or not mode:
        missing = " and ".join(n for n, v in (("operator", op), ("pass", mode)) if not v)
        raise FormatError(
            f"{origin}: the {missing} of this TritonBench CSV is not in its name",
            worded(
                lambda o: (
                    f"name the file <op>_<mode>[...].csv (e.g. layer_norm_bwd.csv) or pass {o('op', '--op', 'NAME')} "
                    f"and {spelled(_MODE_GIVEN, o)}"
                )
            ),
        )
    return op, mode


def _refuse_comma_table(text: str, origin: str) -> None:
    """TritonBench's layout comma-separated is ktriage bench's own table (``-o F.csv``): medians, no samples.
    It was refused as "not a TritonBench CSV" with the fix to run TritonBench; this names it and the file to use.
    TritonBench's own CSV re-saved with commas (pandas' default, a spreadsheet's) looks the same: the message
    says so, and how to give that copy (its original, its JSON, or ';' again), not only ktriage bench's fix."""
    semi = next(csv.reader(io.StringIO(text), delimiter=";"), [])
    comma = next(csv.reader(io.StringIO(text)), [])
    if len(semi) < 2 and len(comma) >= 2 and "-" not in comma[0] and all("-" in h for h in comma[1:]):
        raise FormatError(
            f"{origin} is a comma-separated results table (ktriage bench -o F.csv writes one; TritonBench's "
            "run.py --csv writes ';', so this is no file of it as written, perhaps one re-saved by pandas or a "
            "spreadsheet): ktriage bench's table holds one median per cell, not the samples a verdict needs",
            "compare the results files of the same runs (ktriage bench -o R.json: every cell's samples); for "
            "TritonBench, give the file `python run.py ... --csv --output F` wrote, or its JSON (--output-json F), "
            "or save the copy with ';' between columns (pandas: to_csv(F, sep=';', index=False))",
        )


def parse_csv(
    text: str, *, op: str | None = None, mode: str | None = None, origin: str = "the CSV"
) -> tuple[RunInfo, list[Cell]]:
    """The cells of ``run.py --csv --output F``: one per (row, backend) with a latency column; the
    ``average`` row is TritonBench's summary, not an input, and is dropped."""
    from ktriage.measure.results_file import refuse_csv_export, results_name

    refuse_csv_export(text, origin)
    _refuse_comma_table(text, origin)
    reader = csv.reader(io.StringIO(text), delimiter=";")
    rows = [(reader.line_num, r) for r in reader if r]  # (the line the row ends on, the row)
    # The first column names the input: ``x_val``, or the op's input tuple (``(M, H)`` for rms_norm,
    # ``(B, T, V)`` for cross_entropy: TritonBench's x_val label); the others are <backend>-<metric>.
    # Checked before the name: a file that is no TritonBench CSV is told so, not to rename it.
    if not rows or len(rows[0][1]) < 2 or "-" in rows[0][1][0]:
        raise FormatError(
            f"{origin} is not a TritonBench CSV (an input column, then <backend>-<metric> columns)",
            "give the file of `python run.py ... --csv --output F` (';'-separated)",
        )
    named_op, named_mode = op_mode_from_name(results_name(origin).stem)
    _check_not_contradicted(op, mode, named_op, named_mode, origin)
    flagged = op is not None
    op, mode = _need(op or named_op, mode or named_mode, origin)
    header = [h.strip() for h in rows[0][1]]
    columns: dict[str, dict[str, int]] = {}  # backend -> metric -> column
    for i, name in enumerate(header[1:], start=1):
        backend, _, metric = name.partition("-")
        if metric:
            columns.setdefault(backend, {})[metric] = i
    if not any(METRIC in m for m in columns.values()):
        raise _no_latency(origin, f"<backend>-{METRIC} column", [m for ms in columns.values() for m in ms])
    # per backend with a latency: its latency column, its first column (where TritonBench writes a
    # backend's error message) and its other metrics' columns, worked out once for all rows
    latency = [
        (backend, metrics[METRIC], min(metrics.values()), [(m, c) for m, c in metrics.items() if m != METRIC])
        for backend, metrics in columns.items()
        if METRIC in metrics
    ]
    _check_backends(op, mode, [b for b, *_ in latency], origin, flagged)
    left_out = _backends_without_latency(origin, {b: list(ms) for b, ms in columns.items() if METRIC not in ms})
    cells: list[Cell] = []
    index = 0
    inputs = InputIndex(op)
    seen: dict[str, int] = {}  # x_val -> its line
    ids: dict[int, str] = {}  # input id -> the x_val that took it
    # TritonBench's csv.writer writes every row whole and ends it with a newline: a row with fewer
    # columns than the header, or a last row without its newline, is where the file was cut (a copy or
    # a run that died mid-write). Its last value may be a cut number ("0.1" of "0.1552..."), so none of
    # its values is a latency; the rows before it keep theirs.
    last = len(rows) - 1 if not text.endswith(("\n", "\r")) else -1
    for i, (line, row) in enumerate(rows[1:], start=1):
        x_val = row[0].strip()
        if x_val == "average" or x_val == "hashes":
            continue
        cut = len(row) < len(header) or i == last
        if cut and len(row) < 2:
            continue  # cut in its x_val: which input it was is unknown
        if x_val in seen:
            raise _duplicate(origin, f"x_val {x_val[:60]!r}", f"line {seen[x_val]}", f"line {line}")
        seen[x_val] = line
        input_id, label, matched = inputs.match(x_val, index)
        if input_id in ids:
            raise _duplicate(
                origin, f"input {label!r}", f"x_val {ids[input_id]!r}", f"x_val {x_val[:60]!r} on line {line}"
            )
        ids[input_id] = x_val
        index += 1
        n = len(row)
        for backend, col, first, others in latency:
            value: Any = row[col] if col < n else ""
            if _number(value) is None and first < n and row[first].strip() and _number(row[first]) is None:
                value = row[first]
            if cut:
                value = (
                    f"line {line} of {origin} is cut short ({n} of {len(header)} columns"
                    f"{'' if n < len(header) else ', no end of line'}): the file looks truncated, so its "
                    "values are not latencies"
                )
            cells.append(
                _cell(
                    op,
                    mode,
                    input_id,
                    label,
                    x_val,
                    backend,
                    value,
                    {m: (row[c] if c < n else "") for m, c in others},
                    origin,
                    matched,
                )
            )
    return _run(origin, op, mode, None, "csv", left_out), cells


def parse_json(
    data: Any, *, op: str | None = None, mode: str | None = None, origin: str = "the JSON"
) -> tuple[RunInfo, list[Cell]]:
    """The cells of ``--output-json`` (flat) or of the nightly's ``{"name", "env", "metrics"}``."""
    if not isinstance(data, dict):
        raise FormatError(f"{origin} is not a TritonBench JSON object", "give the file of `run.py --output-json F`")
    metrics: JSONObject = data["metrics"] if isinstance(data.get("metrics"), dict) else data
    env = data.get("env") if isinstance(data.get("env"), dict) else None
    per_key: dict[tuple[str, str, str, str], JSONObject] = {}  # (op, mode, x, backend) -> metric -> value
    for key, value in metrics.items():
        m = _KEY.match(str(key))
        if m is None:
            continue  # aggregates ([backend]-metric-avg), -pass, -target keys
        split = split_benchmark(m["bench"])
        k_op, k_mode = split if split is not None else (m["bench"], None)
        k_op, k_mode = op or k_op, mode or k_mode
        if not k_mode:
            raise FormatError(
                f"{origin}: cannot tell the pass of key {key!r}", worded(lambda o: f"pass {spelled(_MODE_GIVEN, o)}")
            )
        if m["x"] in ("average", "hashes"):
            continue
        per_key.setdefault((k_op, k_mode, m["x"], m["backend"]), {})[m["metric"]] = value
    if not per_key:
        raise FormatError(
            f"{origin} has no tritonbench_<op>_<mode>[x_<input>-<backend>]_<metric> keys",
            "give the file of `run.py --output-json F` (or the nightly's result.json)",
        )
    if not any(METRIC in values for values in per_key.values()):
        raise _no_latency(
            origin,
            f"tritonbench_<op>_<mode>[x_<input>-<backend>]_{METRIC} key",
            [m for values in per_key.values() for m in values],
        )
    # (op, mode, backend) -> its metrics, of the backends with no latency at any input
    held: dict[tuple[str, str, str], set[str]] = {}
    timed = {(k_op, k_mode, b) for (k_op, k_mode, _x, b), values in per_key.items() if METRIC in values}
    for (k_op, k_mode, _x, backend), values in per_key.items():
        if (k_op, k_mode, backend) not in timed:
            held.setdefault((k_op, k_mode, backend), set()).update(values)
    benches = {(k_op, k_mode) for k_op, k_mode, _x, _b in per_key}
    left_out = _backends_without_latency(
        origin,
        {(b if len(benches) == 1 else f"{b} of {o}_{m}"): sorted(ms) for (o, m, b), ms in held.items()},
    )
    cells: list[Cell] = []
    order: dict[tuple[str, str], list[str]] = {}
    for k_op, k_mode, x, _b in per_key:
        xs = order.setdefault((k_op, k_mode), [])
        if x not in xs:
            xs.append(x)
    indexes = {k: InputIndex(k[0]) for k in order}
    positions = {k: {x: i for i, x in enumerate(xs)} for k, xs in order.items()}
    ids: dict[tuple[str, str, int, str], str] = {}  # (op, mode, input id, backend) -> the x that took it
    for (k_op, k_mode, x, backend), values in per_key.items():
        if METRIC not in values:
            continue
        input_id, label, matched = indexes[(k_op, k_mode)].match(x, positions[(k_op, k_mode)][x])
        taken = ids.setdefault((k_op, k_mode, input_id, backend), x)
        if taken != x:
            raise _duplicate(origin, f"{k_op}_{k_mode} input {label!r} of {backend}", f"x_{taken}", f"x_{x}")
        cells.append(
            _cell(
                k_op,
                k_mode,
                input_id,
                label,
                x,
                backend,
                values[METRIC],
                {k: v for k, v in values.items() if k != METRIC},
                origin,
                matched,
            )
        )
    ops = sorted({c.key.op for c in cells})
    modes = sorted({c.key.mode for c in cells})
    return _run(origin, ",".join(ops), ",".join(modes), env, "json", left_out), cells


def looks_like_tritonbench_json(data: Any) -> bool:
    """A TritonBench JSON (flat or nightly) rather than a ktriage results file."""
    if not isinstance(data, dict) or "cells" in data:
        return False
    if isinstance(data.get("metrics"), dict) and "run" not in data:
        return True  # the nightly's wrapper, even with no metric in it: not "a ktriage file without 'run'"
    metrics: JSONObject = data["metrics"] if isinstance(data.get("metrics"), dict) else data
    return any(str(k).startswith("tritonbench_") for k in metrics)


def read_tritonbench(path: str | Path, *, op: str | None = None, mode: str | None = None) -> tuple[RunInfo, list[Cell]]:
    """A TritonBench CSV (``.csv``) or JSON file, either of them plain or gzipped, as a run and its cells."""
    path = Path(path)
    text = _read(path)
    if _is_csv(path):
        return parse_csv(text, op=op, mode=mode, origin=str(path))
    data = _parse_json(text, str(path), "give a TritonBench --output-json file")
    check_depth(data, origin=str(path))
    return parse_json(data, op=op, mode=mode, origin=str(path))


def _parse_json(text: str, origin: str, fix: str) -> Any:
    """JSON text whose objects must not repeat a key: Python's parser keeps the last of two equal
    keys, and a TritonBench key is a cell, so a repeated one would drop a latency silently. Bad
    JSON is left to the schema layer's parser, which words its error."""

    def unique(pairs: list[tuple[str, Any]]) -> JSONObject:
        out: JSONObject = {}
        for key, value in pairs:
            if key in out:
                raise _duplicate(origin, f"key {key[:80]!r}", repr(out[key])[:40], repr(value)[:40])
            out[key] = value
        return out

    try:
        return json.loads(text, object_pairs_hook=unique)
    except FormatError:
        raise
    except (ValueError, RecursionError):
        return parse_json_text(text, origin=origin, fix=fix)


def _is_csv(path: Path) -> bool:
    """A CSV by its name, a ``.gz`` after it left out (``layer_norm_bwd_run1.csv.gz``)."""
    from ktriage.measure.results_file import results_name

    return results_name(path).suffix.lower() == ".csv"


def _read(path: Path) -> str:
    """The file's text through the results file's one reader (size limit, gzip, UTF-8, a clear error)."""
    from ktriage.measure.results_file import read_results_text

    text = read_results_text(path)
    if not text.strip():  # not "not valid JSON: Expecting value" or "not a TritonBench CSV"
        raise FormatError(
            f"results file {path} is empty",
            "give the file the run wrote (`python run.py ... --csv --output F`, --output-json F, or "
            "ktriage bench -o R.json); a run that died before writing leaves an empty file",
        )
    return text


def is_single_value(cell: Cell) -> bool:
    """A cell with one number and no samples (TritonBench's p50)."""
    return bool(cell.extra.get("single_value")) or len(cell.samples_ms) == 1


# ------------------------------------------------------------------------------------------ writing
def run_toolchain_ids(run: RunInfo, cells: Sequence[Cell]) -> list[str]:
    """The toolchains that have cells, in the run's order."""
    declared = [str(t.get("id")) for t in run.toolchains if t.get("id")]
    present = {c.key.toolchain for c in cells if c.key.toolchain}
    return [t for t in declared if t in present] + sorted(t for t in present if t not in declared)


def _toolchain_record(run: RunInfo, toolchain: str | None) -> JSONObject:
    for t in run.toolchains:
        if toolchain is not None and t.get("id") == toolchain:
            return t
    return run.toolchains[0] if toolchain is None and len(run.toolchains) == 1 else {}


def tritonbench_env(run: RunInfo, toolchain: str | None) -> JSONObject:
    """``get_run_env``'s keys (``unknown`` where ktriage does not know them) plus ktriage's own:
    the toolchain (spec, id, Triton and ptxas versions) and the run id, for the way back."""
    env: JSONObject = {k: "unknown" for k in ENV_KEYS}
    env["benchmark_date"] = run.created or "unknown"  # a TritonBench CSV's run: no date in its file
    env["device"] = str(run.gpu.get("name") or "unknown")
    env["cuda_version"] = str(run.gpu.get("cuda") or run.gpu.get("cuda_driver") or "unknown")
    record = _toolchain_record(run, toolchain)
    if record:
        env["ktriage_toolchain"] = str(record.get("spec") or record.get("id"))
        env["ktriage_toolchain_id"] = str(record.get("id") or record.get("spec"))
        env["triton_version"] = record.get("triton_version") or "unknown"
        env["ptxas_version"] = record.get("ptxas_version") or "unknown"
    elif run.packages.get("triton"):
        env["triton_version"] = run.packages["triton"]
    if run.packages.get("torch"):
        env["pytorch_version"] = run.packages["torch"]
    env["ktriage_run_id"] = run.run_id
    return env


def _p50(samples: Sequence[float]) -> float:
    return float(statistics.median(samples))


def tritonbench_metrics(cells: Sequence[Cell], baselines: dict[str, str] | None = None) -> JSONObject:
    """The ``--output-json`` object of these cells (one toolchain: backend names must be unique per
    input): latency (the median, as a string, as TritonBench writes its p50), speedup against the
    op's baseline (a number), the ``x_average`` row and the ``-avg`` aggregates of numeric metrics."""
    bases = baselines if baselines is not None else registry.default_baselines()
    ok = {(c.key.op, c.key.mode, c.key.input_id, c.key.backend): c for c in cells if c.status == "ok" and c.samples_ms}
    out: JSONObject = {}
    agg: dict[str, list[float]] = {}
    groups: dict[tuple[str, str], list[Cell]] = {}
    for c in sorted(cells, key=lambda c: (c.key.op, c.key.mode, c.key.input_id)):
        groups.setdefault((c.key.op, c.key.mode), []).append(c)
    for (op, mode), group in groups.items():
        bench = f"{op}_{mode}"
        backends: list[str] = []
        for c in group:
            if c.key.backend not in backends:
                backends.append(c.key.backend)
        base = bases.get(op)
        for c in group:
            x, be = c.key.input_label, c.key.backend
            if c.status == "ok" and c.samples_ms:
                out[f"tritonbench_{bench}[x_{x}-{be}]_latency"] = str(_p50(c.samples_ms))
            else:
                out[f"tritonbench_{bench}[x_{x}-{be}]_latency"] = c.error or c.status
            ref = ok.get((op, mode, c.key.input_id, base)) if base else None
            if base and be != base and ref is not None and c.status == "ok" and c.samples_ms:
                speedup = _p50(ref.samples_ms) / _p50(c.samples_ms)
                out[f"tritonbench_{bench}[x_{x}-{be}]_speedup"] = speedup
                agg.setdefault(f"tritonbench_{bench}[{be}]-speedup-avg", []).append(speedup)
        for be in backends:  # TritonBench's "average" row: empty for latency (a Latency does not add up)
            out[f"tritonbench_{bench}[x_average-{be}]_latency"] = None
    out.update({k: sum(v) / len(v) for k, v in agg.items()})
    return out


def to_tritonbench_json(
    run: RunInfo, cells: Sequence[Cell], *, toolchain: str | None = None, name: str = "ktriage"
) -> JSONObject:
    """One toolchain's view of a run as TritonBench's nightly JSON ``{"name", "env", "metrics"}``: the
    native backends, and the artifact backends of ``toolchain`` in place of the host's own copy."""
    artifact = {c.key.backend for c in cells if c.key.toolchain is not None}
    chosen = [
        c
        for c in cells
        if (c.key.toolchain is None and c.key.backend not in artifact)
        or (toolchain is not None and c.key.toolchain == toolchain)
    ]
    if toolchain is None and artifact:
        chosen = [c for c in cells if c.key.toolchain is None]
    return {"name": name, "env": tritonbench_env(run, toolchain), "metrics": tritonbench_metrics(chosen)}


def _slug(text: str) -> str:
    return re.sub(r"[^0-9A-Za-z.]+", "-", text).strip("-")


def tritonbench_paths(path: Path, run: RunInfo, cells: Sequence[Cell]) -> list[tuple[Path, str | None]]:
    """Where each toolchain's document goes: ``path`` when the run has at most one toolchain, else
    ``<stem>.<toolchain id>.tritonbench.json`` per toolchain (TritonBench has one build per file)."""
    tcs = run_toolchain_ids(run, cells)
    if len(tcs) <= 1:
        return [(path, tcs[0] if tcs else None)]
    stem = path.name.removesuffix(".json").removesuffix(".tritonbench")
    return [(path.with_name(f"{stem}.{_slug(t)}.tritonbench.json"), t) for t in tcs]


def write_tritonbench_json(path: str | Path, run: RunInfo, cells: Sequence[Cell]) -> list[Path]:
    """Write the run as TritonBench JSON (one file per toolchain, see :func:`tritonbench_paths`)."""
    written: list[Path] = []
    for target, toolchain in tritonbench_paths(Path(path), run, cells):
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, json.dumps(to_tritonbench_json(run, cells, toolchain=toolchain), indent=4) + "\n")
        written.append(target)
    return written


# A ktriage results file opens with one of its own keys (write_results); TritonBench's JSON opens with
# a metric key or "name"/"env"/"metrics". Anything else is parsed in full and told apart by content.
_KTRIAGE_RESULTS = re.compile(r'\s*\{\s*"(run|cells|format_version)"\s*:')


def tritonbench_kind(text: str) -> str | None:
    """``"CSV"`` or ``"JSON"`` when ``text`` is one of TritonBench's files (by its header row, or its
    ``tritonbench_*`` metrics), else None. Why: ``runs import`` takes ktriage's results files only, and a
    TritonBench CSV given to it was "not valid JSON: Expecting value", which names neither what the file
    is nor that compare and triage read it as it is."""
    if _KTRIAGE_RESULTS.match(text):
        return None
    header = next(csv.reader(io.StringIO(text[:65536].lstrip("\ufeff")), delimiter=";"), [])
    if len(header) >= 2 and "-" not in header[0] and all("-" in h for h in header[1:]):
        return "CSV"
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return "JSON" if looks_like_tritonbench_json(data) else None


def read_run_file(path: str | Path, *, op: str | None = None, mode: str | None = None) -> tuple[RunInfo, list[Cell]]:
    """Any results file a comparison takes: a TritonBench CSV, a TritonBench JSON, or ktriage's own
    results file (``{"run", "cells"}``), told apart by suffix and content."""
    from ktriage.measure.results_file import parse_results

    path = Path(path)
    if _is_csv(path):
        return read_tritonbench(path, op=op, mode=mode)
    text = _read(path)
    if _KTRIAGE_RESULTS.match(text):  # ktriage's own file: straight to its schema (one parse of a large file)
        return parse_results(text, origin=str(path))
    data = _parse_json(
        text, str(path), "give a results file (ktriage bench --output-json) or TritonBench's --output-json"
    )
    check_depth(data, origin=str(path))
    if looks_like_tritonbench_json(data):
        return parse_json(data, op=op, mode=mode, origin=str(path))
    return parse_results(text, origin=str(path))
