"""The calibration dataset: one line per GPU-measured cell, with the compile-side facts of both sides.

Why a file format: the fit must reproduce on a CPU machine from committed data alone
(``benchmarks/calibration/cells.jsonl``), and every team's own bench runs must be able to add to it
(``ktriage calibrate``). So a cell carries everything the fit reads: the measured ratio with its
confidence interval and the GPU verdict at the gate (from ktriage's own compare, the same
statistics as ``ktriage compare``), and the ``KernelFacts`` of the reference and the new kernel
(from an explain report of the same kernels: the fit never compiles).

A cell is made from a bench results file (one run that timed several toolchains side by side)
and an explain JSON report of the same kernels with the same toolchains. The pairing:

- catalog ops (``bench --op layer_norm --bwd``): the results cell's ``input_id`` is the explain
  spec's ``meta.input_id``, for the one backend named (``liger_layer_norm``);
- recorded workloads (``bench --bundle`` of a ``ktriage record`` workload): the cell's
  ``extra.kernel``/``extra.recorded_input`` are the spec's ``meta.workload_kernel``/``meta.input_id``.

Toolchains are matched by their spec string (``triton==3.4.0,ptxas==12.9.86``): two machines build
the same toolchain under different ids.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ktriage.atomic import write_atomic
from ktriage.compare.pairing import compare_toolchains, run_toolchains
from ktriage.errors import FormatError, KtriageError, check_format_version, worded
from ktriage.measure.cells import Cell, RunInfo
from ktriage.predict.facts import KernelFacts, facts_from_explain_json
from ktriage.schema.core import read_text, size_limit
from ktriage.schema.jsontypes import JSONObject, JSONValue
from ktriage.stats.verdict import VerdictConfig
from ktriage.wording import plural

DATASET_VERSION = 1
MAX_CELLS_MB = 512  # a cell is about 2 KB: millions of cells; KTRIAGE_MAX_INPUT_MB sets it
VERDICTS = ("regression", "improvement", "same", "unsure")


@dataclass(frozen=True)
class Measured:
    """The GPU's answer for one cell: new/ref time ratio, its CI and verdict at ``threshold``."""

    ratio: float
    ci_low: float
    ci_high: float
    verdict: str  # regression | improvement | same | unsure
    p_value: float | None = None
    threshold: float = 0.05
    confidence: float = 0.99

    def to_json(self) -> JSONObject:
        def num(v: float | None) -> float | None:
            return None if v is None or not math.isfinite(v) else round(v, 6)

        return {
            "ratio": num(self.ratio),
            "ci_low": num(self.ci_low),
            "ci_high": num(self.ci_high),
            "verdict": self.verdict,
            "p_value": num(self.p_value),
            "threshold": self.threshold,
            "confidence": self.confidence,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Measured:
        def num(v: Any) -> float:
            return math.nan if v is None else float(v)

        return cls(
            num(data.get("ratio")),
            num(data.get("ci_low")),
            num(data.get("ci_high")),
            str(data["verdict"]),
            None if data.get("p_value") is None else float(data["p_value"]),
            float(data.get("threshold", 0.05)),
            float(data.get("confidence", 0.99)),
        )


@dataclass(frozen=True)
class CalibrationCell:
    """One line of cells.jsonl (see the module docstring)."""

    operator: str
    kernel: str
    input: str
    toolchain: str
    reference: str
    measured: Measured
    ref: KernelFacts
    new: KernelFacts
    source: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return (self.operator, self.kernel, self.input, self.reference, self.toolchain)

    def to_json(self) -> JSONObject:
        return {
            "version": DATASET_VERSION,
            "operator": self.operator,
            "kernel": self.kernel,
            "input": self.input,
            "toolchain": self.toolchain,
            "reference": self.reference,
            "source": self.source,
            "measured": self.measured.to_json(),
            "extra": self.extra,
            "ref_facts": self.ref.to_json(),
            "new_facts": self.new.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CalibrationCell:
        return cls(
            str(data["operator"]),
            str(data["kernel"]),
            str(data["input"]),
            str(data["toolchain"]),
            str(data["reference"]),
            Measured.from_json(data["measured"]),
            KernelFacts.from_json(data["ref_facts"]),
            KernelFacts.from_json(data["new_facts"]),
            str(data.get("source", "")),
            dict(data.get("extra") or {}),
        )


EXPLAIN_REPORT = "an explain report"
RESULTS_FILE = "a results file"
CALIBRATION_CELL = "a calibration cell (a line of cells.jsonl)"


def document_kind(data: object) -> str | None:
    """Which ktriage JSON document ``data`` (parsed) is, by the keys its writer puts in it: "an explain
    report", "a results file", compare's or triage's JSON, another verb's report, a model file;
    None for anything else. Why: calibrate reads three kinds of file (cells.jsonl, results files, explain
    reports), and each given in another's place was refused as a malformed file of the kind expected
    ("line 1 is not a calibration cell ... regenerate the file"), when the file was right and its
    keyword was not; both of calibrate's readers name what they were given with this one table."""
    if not isinstance(data, dict):
        return None
    tool = data.get("tool")
    if tool == "ktriage explain":
        return EXPLAIN_REPORT
    if "run" in data and "cells" in data:
        return RESULTS_FILE
    if "comparisons" in data and "not_compared_count" in data:
        return "the JSON of `ktriage compare` (its verdicts)"
    if {"old", "new", "headline", "not_compared_cells"} <= data.keys():
        return "the JSON of `ktriage triage` (its report)"
    if isinstance(tool, str) and tool.startswith("ktriage "):
        return f"the report of `{tool}`"
    if "params" in data and "format" in data:
        return "a ktriage model file (what calibrate writes)"
    if {"measured", "ref_facts", "new_facts"} <= data.keys():
        return CALIBRATION_CELL
    return None


def first_line_kind(text: str) -> str | None:
    """:func:`document_kind` of the first non-empty line of ``text``, for a file that is not one JSON
    document. Why: a cells.jsonl (one JSON cell a line) given where one document goes read "not valid
    JSON: Extra data: line 2 column 1", which says nothing of what the file is; its first line does.
    Only on the failure path: one line is parsed."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    try:
        return document_kind(json.loads(first))
    except (ValueError, RecursionError):
        return None


def _refuse_other_document(path: Path, text: str) -> None:
    """A results file or an explain report given where a cells.jsonl goes (``calibrate(from_cells=R.json)``):
    named, with where it goes, rather than "line 1 is not a calibration cell ... regenerate the file"."""
    try:
        data = json.loads(text)
    except ValueError:
        return
    kind = document_kind(data)
    if kind == EXPLAIN_REPORT:
        fix = worded(lambda o: f"pass it as {o('explain', '--explain')}, one per {o('results', '--results')}")
    elif kind == RESULTS_FILE:
        fix = worded(
            lambda o: f"pass it as {o('results', '--results')} with its explain report as {o('explain', '--explain')}"
        )
    else:
        return
    raise FormatError(f"{path} is {kind}, not a calibration dataset (cells.jsonl, one cell per line)", fix)


def read_cells(path: str | Path) -> list[CalibrationCell]:
    """cells.jsonl -> cells; a malformed line is a FormatError naming the file and line."""
    out: list[CalibrationCell] = []
    p = Path(path)
    # through the schema layer: a file that was not UTF-8 (a .gz) was an internal error (UnicodeDecodeError)
    text = read_text(
        p,
        what="calibration cells",
        limit=size_limit(MAX_CELLS_MB),
        fix="pass a cells.jsonl written by `ktriage calibrate` or benchmarks/calibration/build.py",
    )
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            check_format_version(
                data,
                DATASET_VERSION,
                what=f"{p}:{n} (a calibration cell)",
                fix="upgrade ktriage, or rebuild the cells with this one (`ktriage calibrate --from` the results)",
                legacy_keys=("version",),
                missing_means=DATASET_VERSION,
            )
            if not all(isinstance(data.get(k), dict) for k in ("measured", "ref_facts", "new_facts")):
                raise TypeError("measured, ref_facts and new_facts must each be a JSON object")
            out.append(CalibrationCell.from_json(data))
        except (ValueError, KeyError, TypeError) as exc:
            _refuse_other_document(p, text)
            raise FormatError(
                f"{p}:{n} is not a calibration cell ({type(exc).__name__}: {exc})",
                "regenerate the file with `ktriage calibrate` or benchmarks/calibration/build.py",
            ) from exc
    return out


def write_cells(path: str | Path, cells: Iterable[CalibrationCell]) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(p, "".join(json.dumps(c.to_json(), sort_keys=True) + "\n" for c in cells))
    return p


# --------------------------------------------------------------------------- what the pairing skipped


@dataclass(frozen=True)
class Skipped:
    """A measured pair (or a whole comparison) of a results file that made no calibration cell, and why.

    Why a type, not a line of text: an explain report of fewer inputs than the results skips one input
    after another for the same reason, and 26 notes of one line each buried the one thing to know. The
    pairing records each (``reason``: one phrase per kind of mismatch, what ``skipped_summary`` groups
    by); calibrate prints the groups and keeps every record (``CalibrateReport.skipped``, the model
    file's ``"skipped"``)."""

    operator: str
    reason: str  # the kind of mismatch: "no kernel of the explain report matches"
    noun: str  # what one record is, to count them: "input", "comparison", "kernel"
    label: str  # which one: "(4096, 3072)", "triton==3.4.0 against triton==3.3.1"
    where: str = ""  # what the label is of, when the noun alone does not say: the backend "liger_layer_norm"
    detail: str = ""  # what the reason does not say: what the report has
    fix: str = ""  # how to make these pairs cells
    source: str = ""  # the results file or run

    def text(self) -> str:
        """The record as one line: "layer_norm liger_layer_norm input (4096, 3072): no kernel of ... matches"."""
        subject = " ".join(x for x in (self.operator, self.where, self.noun, self.label) if x)
        return f"{subject}: {self.reason}" + (f" ({self.detail})" if self.detail else "")

    def to_json(self) -> JSONObject:
        return {
            "source": self.source,
            "operator": self.operator,
            "reason": self.reason,
            "noun": self.noun,
            "label": self.label,
            "where": self.where,
            "detail": self.detail,
            "fix": self.fix,
        }


def skipped_summary(skipped: Sequence[Skipped], shown: int = 3) -> list[str]:
    """One line per kind of mismatch (an operator's ``where``, ``noun`` and ``reason``), in the order first
    met: how many, the first ``shown`` labels, and the fix. A label met twice (one input of two comparisons)
    counts once; a detail all of a kind share is said once."""
    groups: dict[tuple[str, str, str, str], list[Skipped]] = {}
    for s in skipped:
        groups.setdefault((s.operator, s.where, s.noun, s.reason), []).append(s)
    out = []
    for (operator, where, noun, reason), members in groups.items():
        labels = list(dict.fromkeys(m.label for m in members))
        head = f"{plural(len(labels), noun)} of {' '.join(x for x in (operator, where) if x)} skipped ({reason})"
        listed = ", ".join(labels[:shown]) + (f" and {len(labels) - shown} more" if len(labels) > shown else "")
        details = {m.detail for m in members}
        line = f"{head}: {listed}"
        if len(details) == 1 and members[0].detail:
            line += f" ({members[0].detail})"
        if members[0].fix:
            line += f"; {members[0].fix}"
        out.append(line)
    return out


# --------------------------------------------------------------------------- building from bench + explain


def _recorded_input(value: JSONValue, default: int) -> int:
    """A recorded cell's ``extra["recorded_input"]`` (the recorded input's id), else ``default``."""
    if value is None:
        return default
    return int(value) if isinstance(value, (int, float, str)) else default


def _spec_of_toolchain(run: RunInfo) -> dict[str, str]:
    """toolchain id -> its spec string, as the run wrote them."""
    return {str(t.get("id")): str(t.get("spec")) for t in run.toolchains if t.get("id")}


def cells_from_results(
    run: RunInfo,
    cells: Sequence[Cell],
    explain: Mapping[str, Any],
    *,
    operator: str,
    backend: str | None = None,
    source: str = "",
    config: VerdictConfig | None = None,
) -> tuple[list[CalibrationCell], list[Skipped]]:
    """Calibration cells of one results file paired with one explain report of the same kernels.

    ``backend``: for a catalog op, the artifact backend whose kernels the report compiled (None:
    a recorded bundle, matched by kernel and recorded input). Every toolchain of the run is
    compared against the run's first (its reference). Returns (cells, what was skipped: each distinct
    mismatch once, in the order met)."""
    notes: list[Skipped] = []
    tc_spec = _spec_of_toolchain(run)
    explain_tc = {str(t["spec"]): str(t["id"]) for t in explain.get("toolchains", ())}
    by_key = {(c.key.op, c.key.mode, c.key.input_id, c.key.backend, c.key.toolchain): c for c in cells}
    catalog: dict[int, Mapping[str, Any]] = {}
    recorded: dict[tuple[str, int], Mapping[str, Any]] = {}
    for k in explain.get("kernels", ()):
        meta = dict(k.get("spec", {}).get("meta") or {})
        if meta.get("workload_kernel") is not None:
            recorded[(str(meta["workload_kernel"]), int(meta.get("input_id", 0)))] = k
        elif meta.get("input_id") is not None:
            catalog[int(meta["input_id"])] = k
    timed = run_toolchains(run, cells)
    if len(timed) < 2:  # no pair to compare: "no calibration cells", with no note, said the sources were wrong
        raise KtriageError(
            f"{source or 'the results'}: the run timed {plural(len(timed), 'toolchain')}"
            + (f" ({', '.join(timed)})" if timed else "")
            + ", and a calibration cell is a toolchain measured against another in the same run",
            worded(
                lambda o: (
                    "pass the results of a bench that timed two or more toolchains side by side "
                    f"(ktriage bench ... -t OLD -t NEW), or a dataset with {o('from_cells', '--from')}"
                )
            ),
        )
    artifact = sorted({c.key.backend for c in cells if c.key.toolchain is not None})
    if backend is not None and backend not in artifact:  # every pair would be skipped without a word
        raise KtriageError(
            worded(
                lambda o: (
                    f"{source or 'the results'}: {o('backends', '--backend', backend)} is no artifact backend of the run"
                )
            ),
            f"use one of: {', '.join(artifact) or 'none (the run timed no toolchain)'}",
        )
    if backend is None and catalog and not recorded:  # matched by input id only under a named backend
        raise KtriageError(
            worded(
                lambda o: (
                    f"{source or 'the results'}: the explain report is of a catalog op (its kernels are matched by input id), "
                    f"and no {o('backends', '--backend')} says which of the run's backends it compiled"
                )
            ),
            worded(lambda o: f"add {o('backends', '--backend', artifact[0] if len(artifact) == 1 else 'NAME')}")
            + (f" (the run's artifact backends: {', '.join(artifact)})" if len(artifact) > 1 else ""),
        )
    out: list[CalibrationCell] = []
    for comparison in compare_toolchains(cells, run=run, config=config or VerdictConfig()):
        ref_spec, new_spec = tc_spec.get(comparison.ref_label), tc_spec.get(comparison.new_label)
        if ref_spec is None or new_spec is None:
            notes.append(
                Skipped(
                    operator,
                    "a toolchain has no spec in the run",
                    "comparison",
                    f"{comparison.new_label} against {comparison.ref_label}",
                    fix="bench again with this ktriage (its results files name each toolchain's spec)",
                    source=source,
                )
            )
            continue
        missing = [s for s in (ref_spec, new_spec) if s not in explain_tc]
        if missing:  # named, with what the report has: "lacks A or B" left the reader to find which
            notes.append(
                Skipped(
                    operator,
                    f"the explain report lacks {' and '.join(missing)}",
                    "comparison",
                    f"{new_spec} against {ref_spec}",
                    detail=f"it has {', '.join(explain_tc) or 'none'}",
                    fix="explain with every toolchain of the run (-t)",
                    source=source,
                )
            )
            continue
        # the dataset's lines in one fixed order, (op, mode, backend) as text, then compare's order within: the
        # committed datasets rebuild byte for byte however compare lists its rows for people (K0, K1, ..., K10)
        for pair in sorted(comparison.pairs, key=lambda p: (p.op, p.mode, p.backend)):
            if pair.is_baseline or pair.verdict is None or (backend is not None and pair.backend != backend):
                continue
            if pair.ref_toolchain is None:
                continue
            cell = by_key.get((pair.op, pair.mode, pair.input_id, pair.backend, pair.ref_toolchain))
            kernel_json: Mapping[str, Any] | None
            if backend is not None:
                kernel_json = catalog.get(pair.input_id)
            else:
                extra = cell.extra if cell is not None else {}
                kernel_json = recorded.get(
                    (
                        str(extra.get("kernel", pair.backend.split(":", 1)[0])),
                        _recorded_input(extra.get("recorded_input"), pair.input_id),
                    )
                )
            if kernel_json is None:
                notes.append(
                    Skipped(
                        operator,
                        "no kernel of the explain report matches",
                        "input",
                        pair.input_label,
                        where=pair.backend,
                        fix="to fit on them, explain them too (explain -i covers only the inputs it names)",
                        source=source,
                    )
                )
                continue
            results = kernel_json.get("results", {})
            ref_res, new_res = results.get(explain_tc[ref_spec]), results.get(explain_tc[new_spec])
            if (
                not isinstance(ref_res, Mapping)
                or not isinstance(new_res, Mapping)
                or "error" in ref_res
                or "error" in new_res
            ):
                notes.append(
                    Skipped(
                        operator,
                        "a side failed to compile in the explain report",
                        "kernel",
                        str(kernel_json.get("name")),
                        fix="the explain report names the compile error",
                        source=source,
                    )
                )
                continue
            function = pair.backend.split(":", 1)[1] if backend is None and ":" in pair.backend else None
            if function is not None and function != str(ref_res.get("kernel_name")):
                notes.append(
                    Skipped(
                        operator,
                        "the explain report's kernel there is another function",
                        "kernel",
                        pair.backend,
                        detail=f"the report has {ref_res.get('kernel_name')}",
                        fix="explain the workload the run benched (another recording of it?)",
                        source=source,
                    )
                )
                continue
            spec = kernel_json.get("spec", {})
            if not spec.get("grid") and cell is not None and cell.extra.get("grid"):
                # a recorded launch whose report has no grid (a grid callable): the run's launch grid
                spec = {**spec, "grid": cell.extra["grid"]}
            v = pair.verdict
            label = str(kernel_json.get("input") or pair.input_label)
            out.append(
                CalibrationCell(
                    operator=operator,
                    kernel=str(ref_res.get("kernel_name")),
                    input=label,
                    toolchain=new_spec,
                    reference=ref_spec,
                    source=source,
                    measured=Measured(v.ratio, v.ci_low, v.ci_high, v.verdict, v.p_value, v.threshold, v.confidence),
                    ref=facts_from_explain_json(ref_res, spec),
                    new=facts_from_explain_json(new_res, spec),
                    extra={
                        "backend": pair.backend,
                        "input_id": pair.input_id,
                        "median_ref_ms": None if not math.isfinite(v.median_ref) else round(v.median_ref, 6),
                    },
                )
            )
    return out, list(dict.fromkeys(notes))
