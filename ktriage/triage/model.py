"""What a triage decides, as data: options in, a :class:`TriageReport` (with its JSON form) out.

Kept apart from the pipeline (``ktriage.triage.pipeline``) so that readers of the report (the
renderers in ``ktriage.report.triage``, a history or CI layer on top) load it without the compiler.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from ktriage.compare.not_compared import not_compared_json
from ktriage.exit_status import ExitStatus, outcome
from ktriage.schema.jsontypes import JSONObject
from ktriage.stats.gate import gate_band
from ktriage.wording import plural

if TYPE_CHECKING:
    from ktriage.compare.not_compared import NotComparedCell
    from ktriage.compare.pairing import BaselineCheck
    from ktriage.explain.fixes import Fix
    from ktriage.measure.cells import Cell
    from ktriage.predict.model import Prediction
    from ktriage.predict.model_used import ModelUsed
    from ktriage.triage.pricing import Pricing

# The verdict of one flagged cell, in report order (see docs/triage.md):
#   regression        slower, and the compiler changed the kernel for the worse (cause, culprit, fix)
#   not_compile_side  slower in repeated samples, but the artifacts show no compile-side change:
#                     noise, the baseline or the environment
#   unsure_no_gpu     slower or faster by one number a side (TritonBench), and no compile-side change
#                     predicts it: only a side-by-side GPU re-run can decide
#   unexplained       past the gate, and nothing was compiled for it: a backend without Triton kernels in
#                     ktriage's catalog or the workloads (torch, inductor...), or toolchains the files do not name
#   improvement       faster, with a compile-side change (with one value a side: one predicted an improvement)
# After a side-by-side GPU re-run (``--measure`` / ``--measured``, ktriage.triage.measure):
#   measured_regression  slower when both toolchains are timed side by side, no compile-side cause found
#   noise                measured side by side: no difference, the original gap was noise or the environment
#   unsure_measured      measured side by side, and still unsure (the interval straddles the gate, or it failed)
#   unsure_no_replay     ktriage cannot bench this op/backend (no replay): unsure, and it says why
CellVerdict = Literal[
    "regression",
    "not_compile_side",
    "unsure_no_gpu",
    "unexplained",
    "improvement",
    "measured_regression",
    "noise",
    "unsure_measured",
    "unsure_no_replay",
]
ORDER: tuple[CellVerdict, ...] = (
    "regression",
    "measured_regression",
    "not_compile_side",
    "noise",
    "unsure_measured",
    "unsure_no_gpu",
    "unsure_no_replay",
    "unexplained",
    "improvement",
)
# verdicts that fail a CI job (exit 1)
REGRESSIONS: tuple[CellVerdict, ...] = ("regression", "measured_regression")

WORDS: dict[str, str] = {
    "regression": "regression (compile-side change)",
    "not_compile_side": "no compile-side change: noise, the baseline, or the environment",
    "unsure_no_gpu": "unsure without a GPU re-run (no compile-side change predicts it; one value per side)",
    "unexplained": "not explained: nothing was compiled for it (its notes say why)",
    "improvement": "improvement",
    "measured_regression": "regression (measured side by side on the GPU; no compile-side cause found)",
    "noise": "measured side by side: no difference, the original gap was noise or the environment",
    "unsure_measured": "unsure after a side-by-side GPU re-run",
    "unsure_no_replay": "unsure: ktriage cannot bench this cell (no replay)",
}
# The op's baseline (torch_layer_norm, ...) is no toolchain's: neither compiles it, so "no compile-side change
# predicts it" says nothing of it. What it is, moved, is the machine or the environment (docs/triage.md, step 3).
BASELINE_WORDS: dict[str, str] = {
    "not_compile_side": "the baseline moved: the machine or the environment (no toolchain compiles it)",
    "unsure_no_gpu": "the baseline moved: the machine or the environment, or noise (no toolchain compiles it; "
    "one value per side)",
}
# The lines of ``gpu_needed`` that a side-by-side re-run settles (the GPU step and ``triage --run`` take them out)
SETTLED_BY_A_RERUN = ("TritonBench files give", "cells left unsure")
# a compiled cell's kernels changed, none for the worse: said once under the report's table, each row refers to it
CHANGES_PREFIX = "compile-side changes, none worse"


@dataclass
class TriageOptions:
    """Everything ``ktriage triage`` takes (docs/triage.md).

    ``old_toolchain``/``new_toolchain``: toolchain specs (``triton==3.3.1``); None: from the files
    (a ktriage results file's single toolchain, or the ``env`` of a TritonBench JSON ktriage wrote).
    ``threshold``: the gate as a fraction (0.10 = 10%). ``op``/``mode``: for a TritonBench CSV whose
    name does not say them. ``bisect``/``fixes``: the compile-only bisect and ``explain --fixes``.
    ``model``: the cost model's file that prices the predictions (``--model``). ``sm_count``: the SMs
    the flagged cells are priced and bundled for (``--sm-count``; None: the GPU the results were
    recorded on, else the target's usual part: ``ktriage.triage.pricing``)."""

    old_toolchain: str | None = None
    new_toolchain: str | None = None
    threshold: float = 0.10
    confidence: float = 0.99
    arch: str = "sm_90"
    op: str | None = None
    mode: str | None = None
    bisect: bool = True
    fixes: bool = True
    jobs: int | None = None
    # the GPU step (ktriage.triage.measure): write a bench bundle of the flagged cells here (the CPU
    # machine), and/or bench it in-process (``measure``: a GPU host), or read results back
    # (``measured``: results files or bundle folders); ``limit``: bundle at most this many flagged
    # cells, worst first; ``max_time_s``: sampling per input on the GPU; ``db``: the results store
    bundle: str | None = None
    measure: bool = False
    measured: list[str] = field(default_factory=list)
    limit: int | None = None
    max_time_s: float = 5.0
    db: str | None = None
    # recorded workloads (``ktriage record`` of TritonBench runs, ``--workload W.json``): the kernels of
    # flagged cells whose backend has no catalog kernels, matched to the cell by shape
    # (``ktriage.triage.recorded_match``), explained compile-side and bundled like catalog kernels
    workloads: list[str] = field(default_factory=list)
    # the cost model's parameters (``--model FILE``); None: $KTRIAGE_MODEL, else the fit shipped with ktriage
    model: str | None = None
    sm_count: int | None = None

    def to_json(self) -> JSONObject:
        return dict(self.__dict__)


@dataclass
class Cause:
    """Why the kernel changed, compile-side: the evidence kind (spills, REDG→ATOMG, occupancy...),
    who is responsible (frontend, ptxas, both) and the explain sentence."""

    kind: str
    attribution: str
    summary: str
    metrics: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return f"{self.kind}, {self.attribution}"

    def to_json(self) -> JSONObject:
        return {
            "kind": self.kind,
            "attribution": self.attribution,
            "text": self.text,
            "summary": self.summary,
            "metrics": self.metrics,
        }


@dataclass
class Culprit:
    """The compile-only bisect of one regression: the first bad release and its predecessor."""

    source: str
    good: str
    bad: str
    metric: str
    input: str
    found: bool
    culprit: str | None = None
    predecessor: str | None = None
    tested: int = 0
    candidates: int = 0
    summary: str = ""
    error: str | None = None

    def to_json(self) -> JSONObject:
        return dict(self.__dict__)


@dataclass
class FixSide:
    """The proposed fix's kernels timed against one toolchain's (``vs_old``: does it recover the
    regression? ``vs_new``: does it help at all?): the statistics' verdict and interval."""

    verdict: str
    ratio: float | None
    ci_low: float | None
    ci_high: float | None

    def to_json(self) -> JSONObject:
        return {"verdict": self.verdict, "ratio": self.ratio, "ci_low": self.ci_low, "ci_high": self.ci_high}


@dataclass
class MeasuredFix:
    """The proposed fix re-measured side by side (the ``<new toolchain>+fix`` variant of the bundle)."""

    description: str
    vs_old: FixSide | None = None
    vs_new: FixSide | None = None
    text: str = ""

    def to_json(self) -> JSONObject:
        out: JSONObject = {"description": self.description}
        for name, side in (("vs_old", self.vs_old), ("vs_new", self.vs_new)):
            if side is not None:
                out[name] = side.to_json()
        out["text"] = self.text
        return out


@dataclass
class Measured:
    """A flagged cell re-measured on the GPU, both toolchains side by side in one process.

    ``verdict``: the statistics' verdict (regression, same, improvement, unsure) on the side-by-side
    samples, or ``failed`` (the cell errored or was wrong on the GPU) / ``not_measured`` (no replay,
    left out of the bundle, absent from the results): ``text`` says why. ``how``: ``side_by_side``
    (the old and new toolchain's kernels interleaved), ``baseline`` (the op's baseline: one host copy
    serves both toolchains; its interval is the first half of its samples against the second)."""

    verdict: str
    text: str
    how: str = "side_by_side"
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    confidence: float | None = None
    p_value: float | None = None
    n_old: int = 0
    n_new: int = 0
    old_ms: float | None = None
    new_ms: float | None = None
    source: str | None = None  # the results file
    # the proposed fix re-measured with them (the "<new toolchain>+fix" variant of the bundle)
    fix: MeasuredFix | None = None

    def to_json(self) -> JSONObject:
        out: JSONObject = {
            k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in self.__dict__.items()
            if k != "fix"
        }
        out["fix"] = self.fix.to_json() if self.fix is not None else None
        return out


@dataclass
class RecordedKernel:
    """One recorded (kernel, input) of a workload that a flagged cell's TritonBench input launched."""

    kernel: str  # the workload's kernel id, "K7"
    function: str
    input: int  # the recorded input's id within its kernel
    label: str  # the recorded input's label (its argument shapes)
    launches: int
    module: str  # the kernel's module on the recording host (liger_kernel.ops.rms_norm)
    package: str | None  # the distribution it came from (liger-kernel==0.5.10)
    spec_name: str
    spec_key: str
    entry: int  # its number in a recorded bundle of the workload (the results cells' input_id)

    @property
    def backend(self) -> str:
        """The recorded bench's cells' backend (``K7:_rms_norm_backward_kernel``)."""
        return f"{self.kernel}:{self.function}"

    def to_json(self) -> JSONObject:
        return dict(self.__dict__)


@dataclass
class RecordedMatch:
    """The recorded kernels of a flagged cell: which workload file, by which rule, which kernels."""

    workload: str  # the file given with --workload
    name: str  # the workload's name (the recorded bench's op: tb_rms_norm_bwd)
    rule: str  # how the kernels were matched ("matched by shape: dY_ptr 2048x8192 = x_val (2048, 8192)")
    kernels: list[RecordedKernel]
    left_out: list[str] = field(default_factory=list)  # matched, but not the timed pass's (and why)

    def to_json(self) -> JSONObject:
        return {
            "workload": self.workload,
            "name": self.name,
            "rule": self.rule,
            "kernels": [k.to_json() for k in self.kernels],
            "left_out": self.left_out,
        }


@dataclass
class CellTriage:
    """One flagged (op, mode, input, backend) cell and what triage made of it."""

    op: str
    mode: str
    input_id: int
    input_label: str
    backend: str
    old_ms: float
    new_ms: float
    ratio: float
    verdict: CellVerdict
    stats_verdict: str  # compare's verdict on the samples (a single value: "unsure", too few samples)
    single_value: bool
    catalog: str | None = None  # the catalog op of the backend's kernels (liger.layer_norm)
    compile_change: bool | None = None  # None: not compiled (no kernels, or failed)
    cause: Cause | None = None
    culprit: Culprit | None = None
    fixes: list[Fix] = field(default_factory=list)  # explain --fixes' proposals for its kernels
    baseline_moved: bool = False
    notes: list[str] = field(default_factory=list)
    is_baseline: bool = False  # the op's baseline backend (torch_layer_norm): no toolchain compiles it
    # what changed compile-side when none of it is worse (explain's finding groups covering the cell, or "SASS
    # instruction counts only"): cells of one explain share it, so the report says it once and the rows refer to it
    changes: str | None = None
    # the Nsight Compute counters of this cell's two sides, quoted in one line next to the compile-side
    # finding (ktriage.compare.quote), when the results carry them (bench --profile, profile --results)
    counters: str | None = None
    measured: Measured | None = None  # the GPU re-run (ktriage.triage.measure); None: not re-measured
    recorded: RecordedMatch | None = None  # its kernels from a recorded workload (--workload), when matched
    # the cost model's new/old ratio for its kernels (the worst of them: ktriage.predict), next to the measured one
    predicted: Prediction | None = None

    @property
    def change_pct(self) -> float:
        return (self.ratio - 1.0) * 100.0

    def label(self) -> str:
        return f"{self.op}.{self.mode}[{self.input_label}] {self.backend}"

    @property
    def verdict_text(self) -> str:
        """The verdict in words: the baseline's own where the generic words would blame no compile-side change."""
        return (BASELINE_WORDS.get(self.verdict) if self.is_baseline else None) or WORDS[self.verdict]

    def to_json(self) -> JSONObject:
        return {
            "op": self.op,
            "mode": self.mode,
            "input_id": self.input_id,
            "input": self.input_label,
            "backend": self.backend,
            "old_ms": self.old_ms,
            "new_ms": self.new_ms,
            "ratio": self.ratio if math.isfinite(self.ratio) else None,
            "change_pct": round(self.change_pct, 2) if math.isfinite(self.ratio) else None,
            "verdict": self.verdict,
            "verdict_text": self.verdict_text,
            "stats_verdict": self.stats_verdict,
            "single_value": self.single_value,
            "catalog": self.catalog,
            "compile_change": self.compile_change,
            "cause": self.cause.to_json() if self.cause else None,
            "culprit": self.culprit.to_json() if self.culprit else None,
            "fixes": [f.to_json() for f in self.fixes],
            "baseline_moved": self.baseline_moved,
            "is_baseline": self.is_baseline,
            "notes": self.notes,
            "changes": f"{CHANGES_PREFIX}: {self.changes}" if self.changes else None,
            "counters": self.counters,
            "measured": self.measured.to_json() if self.measured else None,
            "recorded": self.recorded.to_json() if self.recorded else None,
            "predicted": self.predicted.to_json() if self.predicted is not None else None,
        }


def changes_said(cells: Sequence[CellTriage]) -> list[str]:
    """The distinct compile-side-changes sentences of ``cells`` in their order: the report says each once and
    numbers it ([1], [2] ...), and each row refers to its number."""
    return list(dict.fromkeys(f"{CHANGES_PREFIX}: {c.changes}" for c in cells if c.changes))


def attach_counters(cells: Sequence[CellTriage], old_cells: Sequence[Cell], new_cells: Sequence[Cell]) -> int:
    """Fill each flagged cell's ``counters`` from the two sides' results cells (their profile
    sections); returns how many got a quote. The pipeline's hook: one call once the flagged cells
    exist (``attach_counters(flagged, cells_a, cells_b)``); a side without counters changes nothing."""
    from ktriage.compare.quote import cell_quote

    # The results cells indexed once by (op, mode, input, backend): each flagged cell's quote reads
    # its own few cells, so the step is linear in the cells (a scan per flagged cell was quadratic).
    wanted = {(c.op, c.mode, c.input_id, c.backend) for c in cells}
    index: dict[tuple[str, str, int, str], tuple[list[Cell], list[Cell]]] = {}
    for side, results in enumerate((old_cells, new_cells)):
        for r in results:
            k = (r.key.op, r.key.mode, r.key.input_id, r.key.backend)
            if k in wanted:
                index.setdefault(k, ([], []))[side].append(r)
    n = 0
    for c in cells:
        old, new = index.get((c.op, c.mode, c.input_id, c.backend), ([], []))
        c.counters = cell_quote(old, new, op=c.op, mode=c.mode, input_id=c.input_id, backend=c.backend)
        n += c.counters is not None
    return n


@dataclass
class BaselineMove:
    """One input at which the op's baseline moved past the gate."""

    input_id: int
    input: str  # the input's label
    ratio: float

    @property
    def change_pct(self) -> float:
        return (self.ratio - 1.0) * 100.0

    def to_json(self) -> JSONObject:
        return {
            "input_id": self.input_id,
            "input": self.input,
            "ratio": self.ratio,
            "change_pct": round(self.change_pct, 2),
        }


@dataclass
class BaselineMoves:
    """Where the op's baseline itself moved past the gate, by triage's rule for flagging a cell (one number a side
    counts: TritonBench's p50), and how many of the other flagged cells are at those inputs. compare's baseline
    check asks whether the baseline shifted systematically, by its statistics, and with one value a side it can
    only say "unsure"; a baseline that moved +51 % at one input is still the strongest evidence a pair has that
    the machine or the environment changed, so the report leads with it when flagged cells share its inputs."""

    backend: str
    op: str
    mode: str
    inputs: int  # the baseline's inputs compared
    moved: list[BaselineMove]  # largest change first
    flagged: int  # the other flagged cells of (op, mode)
    flagged_here: int  # of them, at an input where the baseline moved
    same_way: int  # of those, moved the same way as the baseline
    threshold: float

    @property
    def leads(self) -> bool:
        """The report leads with it: flagged cells are where the baseline moved."""
        return self.flagged_here > 0

    SHOWN = 6  # inputs named in the sentence at most

    @property
    def text(self) -> str:
        shown = ", ".join(f"{m.change_pct:+.1f}% at {m.input}" for m in self.moved[: self.SHOWN])
        more = f" and {len(self.moved) - self.SHOWN} more" if len(self.moved) > self.SHOWN else ""
        head = (
            f"the baseline moved: {self.backend} ({self.op} {self.mode}), which no toolchain compiles, changed past "
            f"the {gate_band(self.threshold)} gate at {len(self.moved)} of {self.inputs} inputs ({shown}{more}): "
            "the machine or the environment changed between the runs"
        )
        if not self.flagged_here:
            return f"{head}; none of the other flagged cells is at those inputs"
        return (
            f"{head}; {self.flagged_here} of the {plural(self.flagged, 'other flagged cell')} "
            f"{'is' if self.flagged_here == 1 else 'are'} at those inputs ({self.same_way} moved the same way), so "
            "their change may be the machine's, not the compiler's"
        )

    def to_json(self) -> JSONObject:
        return {
            "backend": self.backend,
            "op": self.op,
            "mode": self.mode,
            "inputs": self.inputs,
            "moved": [m.to_json() for m in self.moved],
            "flagged": self.flagged,
            "flagged_here": self.flagged_here,
            "same_way": self.same_way,
            "leads": self.leads,
            "text": self.text,
        }


@dataclass(slots=True)
class SweepRow:
    """One compared cell, flagged or not: the sweep the HTML plots (new/old ratio along the inputs).
    Slots: a sweep can hold 200,000 rows."""

    op: str
    mode: str
    input_id: int
    input: str  # the input's label
    backend: str
    old_ms: float
    new_ms: float
    ratio: float | None  # None: not a finite ratio
    stats_verdict: str  # compare's verdict on the samples
    verdict: CellVerdict | None  # the triage verdict if flagged, else None

    def to_json(self) -> JSONObject:
        return {
            "op": self.op,
            "mode": self.mode,
            "input_id": self.input_id,
            "input": self.input,
            "backend": self.backend,
            "old_ms": self.old_ms,
            "new_ms": self.new_ms,
            "ratio": self.ratio,
            "stats_verdict": self.stats_verdict,
            "verdict": self.verdict,
        }


# What the GPU step did (``ktriage.triage.measure``), one JSON shape each:
#   nothing       asked, but no flagged cell can be re-measured: ``note`` says why
#   bundled       a bench bundle written for the GPU host: ``bundle``, the ``commands`` to run there, ``bench``
#   measured      results read back (``--measured``) or benched here (``--measure``: ``bundle`` and ``commands`` too)
#   side_by_side  ``triage --run``: the two sides are one run's interleaved samples (``results``, ``note``)
class Bundled(Protocol):
    """A bundle of the GPU step's plan (``ktriage.triage.measure_plan``: BenchGroup, RecordedGroup),
    as the report names it; a protocol so that the report's model does not import the plan (no cycle)."""

    def to_json(self) -> JSONObject: ...


GpuStepKind = Literal["nothing", "bundled", "measured", "side_by_side"]


@dataclass
class GpuStep:
    """The GPU step of a triage: the bundle for the GPU host, the results read back, and what the
    re-run says of the baseline. ``results`` non-empty: the flagged cells were re-measured."""

    kind: GpuStepKind
    token: str | None = None  # the plan's token (its bundle names and results carry it)
    bundle: str | None = None  # the bundle folder
    commands: list[str] = field(default_factory=list)  # to run on the GPU host
    results: list[str] = field(default_factory=list)  # the results files read
    bench: list[str] = field(default_factory=list)  # the bench command of each bundle
    bundles: list[Bundled] = field(default_factory=list)  # the bundles whose results were read
    baseline: list[str] = field(default_factory=list)  # what the re-run says of the baseline
    note: str | None = None

    @property
    def remeasured(self) -> bool:
        return bool(self.results)

    def to_json(self) -> JSONObject:
        """The step's JSON, keys as each shape always wrote them (reports compare byte for byte)."""
        if self.kind == "side_by_side":
            return {"results": self.results, "note": self.note}
        if self.kind == "measured":
            out: JSONObject = {
                "token": self.token,
                "results": self.results,
                "bundles": [g.to_json() for g in self.bundles],
                "baseline": self.baseline,
            }
            if self.bundle is not None:  # benched here (--measure): the bundle it benched
                out.update(bundle=self.bundle, commands=self.commands)
            return out
        out = {"bundle": self.bundle, "token": self.token, "commands": self.commands, "results": self.results}
        if self.kind == "bundled":
            out["bench"] = self.bench
        out["baseline"] = self.baseline
        if self.kind == "nothing":
            out["note"] = self.note
        return out


@dataclass
class TriageReport:
    """The whole triage: the flagged cells worst first within each verdict, what could not be
    decided without a GPU, what failed, and the exit code it gives."""

    old: str
    new: str
    old_toolchain: str | None
    new_toolchain: str | None
    options: TriageOptions
    cells: list[CellTriage]
    compared: int  # cells compared (both sides ok)
    # cells missing or failed on a side, each with why (``Comparison.not_compared_cells``): every output
    # groups them by reason (``ktriage.compare.not_compared``), the JSON lists every one
    not_compared: list[NotComparedCell] = field(default_factory=list)
    baseline: BaselineCheck | None = None  # compare's baseline check (None: none made)
    # where the baseline itself moved past the gate, per (op, mode): the report leads with it (BaselineMoves)
    baseline_moves: list[BaselineMoves] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # what went wrong (explain, bisect, toolchains)
    notes: list[str] = field(default_factory=list)
    gpu_needed: list[str] = field(default_factory=list)  # what only a GPU re-run can decide
    sweep: list[SweepRow] = field(default_factory=list)  # every compared cell, flagged or not
    measured: GpuStep | None = None  # the GPU step (ktriage.triage.measure); None: no GPU step asked
    # the cost model that priced the compile-side predictions ($KTRIAGE_MODEL or the shipped fit), which
    # every form names with its intervals' coverage (None: a report built without saying)
    model: ModelUsed | None = None
    # the SMs the cells were priced (and bundled) for, and why that count (None: a report built without saying)
    pricing: Pricing | None = None

    def of(self, verdict: CellVerdict) -> list[CellTriage]:
        return [c for c in self.cells if c.verdict == verdict]

    @property
    def regressions(self) -> list[CellTriage]:
        """Compile-side regressions, and (after a GPU re-run) measured ones: what fails a CI job."""
        return [c for c in self.cells if c.verdict in REGRESSIONS]

    @property
    def complete(self) -> bool:
        """Nothing failed and every cell was compared: a cell that could not be (NaN, inf, zero or
        negative latency, a backend's error, a cell on one side only) makes the report incomplete,
        so a CI job never passes on cells nobody compared."""
        return not self.failures and not self.not_compared

    def counts(self) -> dict[str, int]:
        return {v: len(self.of(v)) for v in ORDER}

    def exit_code(self, allow_failures: bool = False) -> ExitStatus:
        """FINDING a compile-side regression, OK none, INCOMPLETE something failed or some cell was not
        compared (unless ``allow_failures``: then the status the rest gives); ``ktriage.exit_status``."""
        return outcome(finding=bool(self.regressions), complete=self.complete, allow_failures=allow_failures)

    def headline(self) -> str:
        n = self.counts()
        flagged = len(self.cells)
        if self.measured is not None and self.measured.remeasured:
            m = [c.measured.verdict if c.measured else "not_measured" for c in self.cells]
            return (
                f"{plural(len(self.regressions), 'regression')} after the GPU re-run; {plural(flagged, 'cell')} of {self.compared} past the "
                f"{gate_band(self.options.threshold)} gate, measured side by side: {m.count('regression')} slower, "
                f"{m.count('same')} noise (no difference), {m.count('unsure')} unsure, {m.count('improvement')} faster, "
                f"{m.count('failed')} failed, {m.count('not_measured')} not measured; {n['regression']} with a "
                f"compile-side cause" + self._not_compared_text()
            )
        base = sum(1 for c in self.cells if c.is_baseline)
        base_text = f" ({base} of them the baseline's)" if base else ""
        return (
            f"{plural(n['regression'], 'compile-side regression')}; {plural(flagged, 'cell')} of {self.compared} past the "
            f"{gate_band(self.options.threshold)} gate{base_text}: {n['not_compile_side']} no compile-side change, "
            f"{n['unsure_no_gpu']} unsure without a GPU re-run, {n['unexplained']} not explained, "
            f"{plural(n['improvement'], 'improvement')}" + self._not_compared_text()
        )

    def _not_compared_text(self) -> str:
        return f"; {plural(len(self.not_compared), 'cell')} NOT compared (see the list)" if self.not_compared else ""

    def to_json(self) -> JSONObject:
        """The report's JSON: the one encoder of a triage (``ktriage.report.triage`` writes it)."""
        return {
            "old": self.old,
            "new": self.new,
            "old_toolchain": self.old_toolchain,
            "new_toolchain": self.new_toolchain,
            "options": self.options.to_json(),
            "headline": self.headline(),
            "counts": self.counts(),
            "compared": self.compared,
            "not_compared_count": len(self.not_compared),
            "complete": self.complete,
            "exit_code": int(self.exit_code()),
            "cells": [c.to_json() for c in self.cells],
            **not_compared_json(self.not_compared),  # "not_compared" and "not_compared_cells", as compare's JSON
            "baseline": self.baseline.to_json() if self.baseline is not None else {},
            "baseline_moves": [m.to_json() for m in self.baseline_moves],
            "changes": changes_said(self.cells),
            "failures": self.failures,
            "notes": self.notes,
            "gpu_needed": self.gpu_needed,
            "sweep": [r.to_json() for r in self.sweep],
            "measured": self.measured.to_json() if self.measured is not None else None,
            "model": self.model.to_json() if self.model is not None else None,
            "sm_count": self.pricing.sm_count if self.pricing is not None else None,
            "pricing": self.pricing.to_json() if self.pricing is not None else None,
        }
