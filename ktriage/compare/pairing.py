"""The pairing of two result sets: two runs, two result files, or two toolchains of one run.

Per (op, mode, input, backend) the reference cell and the new cell are paired and given a
``Verdict`` on their raw samples (the statistics themselves are ``ktriage.stats``: verdicts,
intervals, cliffs; what is paired with what is compare's). Around that: the baseline check (if the baseline backend itself
moved between two runs, speedups against it mean nothing, and the machine probably changed too),
the ranking of regressions worst first (by ratio, as TritonBench-style reports do), cliffs along
each op's input sweep, and wrong/failed cells reported as such, never compared.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ktriage.brief import brief
from ktriage.compare.not_compared import NotComparedCell, not_compared_json
from ktriage.errors import KtriageError, Worded, run_as, spelled, worded
from ktriage.measure.cells import Cell, RunInfo
from ktriage.measure.results_file import run_profile_notes
from ktriage.order import natural_key
from ktriage.schema.jsontypes import JSONObject, JSONValue
from ktriage.stats.cliffs import DEFAULT_CLIFF_CONFIG, Cliff, CliffConfig, find_cliffs
from ktriage.stats.verdict import (
    DEFAULT_CONFIG,
    SetStatsCache,
    Verdict,
    VerdictConfig,
    compare_samples_many,
)

PairStatus = Literal["compared", "error", "missing"]
BaselineStatus = Literal["unchanged", "moved", "unsure", "absent", "shared", "none"]


@dataclass
class PairResult:
    """One (op, mode, input, backend) with its reference and new cell, and what became of them."""

    op: str
    mode: str
    input_id: int
    input_label: str
    backend: str
    ref_toolchain: str | None
    new_toolchain: str | None
    status: PairStatus
    verdict: Verdict | None = None
    problem: str | None = None  # for error/missing: which side, its status and reason
    is_baseline: bool = False
    failed_side: str | None = None  # for error: "ref", "new" or "both" (``Comparison.reference_failed``)
    one_turn: bool = False  # both sides' samples came from one turn of back-to-back calls (``one_turn_verdicts``)
    # For a backend one side has no cell of at all (its toolchain is then None): the toolchain that side
    # lacks. Without it a missing side read as the host's ("K0@triton-3.6.0->host").
    ref_absent: str | None = None
    new_absent: str | None = None
    missing_side: Literal["ref", "new"] | None = None  # for missing: the side without the cell

    @property
    def missing_toolchain(self) -> str | None:
        """The toolchain the missing side has no cell of (``"host"``: a backend run without one), where
        that side has no cell of the backend at all and its ``*_toolchain`` is therefore None; None
        elsewhere (a side that lacks only an input still names its toolchain in ``*_toolchain``)."""
        return self.ref_absent or self.new_absent

    @property
    def backend_label(self) -> str:
        """The backend and its toolchain on each side: ``K0@triton-3.4.0`` when both sides ran one,
        ``K0@A->B`` across two, ``host`` for a backend run without a toolchain, and ``(no A cell)`` for a
        side that has no cell of the backend (so no side reads as a host run it never was)."""
        if self.ref_absent is None and self.new_absent is None and self.ref_toolchain == self.new_toolchain:
            return self.backend + (f"@{self.ref_toolchain}" if self.ref_toolchain else "")
        return (
            f"{self.backend}@{_side(self.ref_toolchain, self.ref_absent)}->{_side(self.new_toolchain, self.new_absent)}"
        )

    def label(self) -> str:
        return f"{self.op}.{self.mode}[{self.input_label}] {self.backend_label}"

    def backend_under(self, sides: tuple[str | None, str | None]) -> str:
        """The backend as a row under a heading that names ``sides``, the toolchain each side is (``compare
        --toolchains``: ``A -> B``): the backend alone where the pair's toolchains are those two, else
        ``backend_label``. Why: every row of a toolchains comparison read ``K0:kernel@A->B`` under the heading
        ``A -> B``, two long ids restated per row and folded over three lines of the terminal table."""
        if sides[0] is not None and sides[1] is not None and (self.ref_toolchain, self.new_toolchain) == sides:
            return self.backend
        return self.backend_label

    def label_under(self, sides: tuple[str | None, str | None]) -> str:
        """``label()`` with the backend as ``backend_under(sides)`` shows it (a report's rows and lists)."""
        return f"{self.op}.{self.mode}[{self.input_label}] {self.backend_under(sides)}"

    @property
    def kind(self) -> str:
        return self.verdict.verdict if self.verdict else self.status

    def to_json(self) -> JSONObject:
        return {
            "op": self.op,
            "mode": self.mode,
            "input_id": self.input_id,
            "input_label": self.input_label,
            "backend": self.backend,
            "ref_toolchain": self.ref_toolchain,
            "new_toolchain": self.new_toolchain,
            "status": self.status,
            "is_baseline": self.is_baseline,
            "problem": self.problem,
            "verdict": self.verdict.to_json() if self.verdict else None,
            "one_turn": self.one_turn,
            # added after the fields above, whose meaning is unchanged (a side with no cell: null toolchain)
            "missing_side": self.missing_side,
            "missing_toolchain": self.missing_toolchain,
            # added after those: the side whose cell failed, for an error pair ("ref", "new" or "both"; null for
            # two sides measured on two GPUs, and for every other status): the table's "ref error: ..." apart
            "failed_side": self.failed_side,
        }


def _side(toolchain: str | None, absent: str | None) -> str:
    """One side of a ``PairResult.backend_label``."""
    if absent is not None:
        return f"(no {absent} cell)"
    return toolchain or "host"


@dataclass
class BaselineCheck:
    """Did the baseline backend itself move between the two sides?"""

    backend: str | None
    status: BaselineStatus
    message: str
    counts: dict[str, int] = field(default_factory=dict)
    median_ratio: float = math.nan
    per_op: dict[str, str | None] = field(default_factory=dict)  # the baseline backend of each op

    @property
    def speedups_valid(self) -> bool:
        return self.status in ("unchanged", "shared")

    def to_json(self) -> JSONObject:
        return {
            "backend": self.backend,
            "status": self.status,
            "message": self.message,
            "counts": self.counts,
            "median_ratio": self.median_ratio if math.isfinite(self.median_ratio) else None,
            "speedups_valid": self.speedups_valid,
            "per_op": self.per_op,
        }


@dataclass
class CliffFinding:
    """A cliff along one op's sweep, with what series it was found in."""

    op: str
    mode: str
    backend: str
    toolchain: str | None
    side: str  # the side's label for "vs_baseline"; "new/ref" for the verdict ratios
    kind: Literal["vs_baseline", "new_vs_ref"]
    cliff: Cliff

    def describe(self) -> str:
        return f"{self.op}.{self.mode} {self.cliff.describe()} [{self.side}]"

    def to_json(self) -> JSONObject:
        return {
            "op": self.op,
            "mode": self.mode,
            "backend": self.backend,
            "toolchain": self.toolchain,
            "side": self.side,
            "kind": self.kind,
            "cliff": self.cliff.to_json(),
            "text": self.describe(),
        }


@dataclass
class Comparison:
    """One reference side against one new side: every pair, the baseline check, the cliffs.
    ``ref_cells``/``new_cells`` are kept for plots and the counters' quotes, not serialised.
    (A ``ktriage compare`` holds one, or one per toolchain: ``ktriage.compare.report.CompareReport``.)"""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    ref_label: str
    new_label: str
    pairs: list[PairResult]
    baseline: BaselineCheck
    cliffs: list[CliffFinding]
    config: VerdictConfig = DEFAULT_CONFIG
    ref_run: RunInfo | None = None
    new_run: RunInfo | None = None
    ref_cells: list[Cell] = field(default_factory=list, repr=False)
    new_cells: list[Cell] = field(default_factory=list, repr=False)
    # what a reader must know before taking any verdict of it for the compiler's (two dtypes compared on
    # purpose: ktriage.compare.sides.check_precision); the headline and the JSON carry each
    warnings: list[str] = field(default_factory=list)
    # the toolchain each side is, where each is one (``compare_toolchains``): the heading names them, so a
    # report's rows name the backend alone (``row_label``); (None, None) for two runs or files
    side_toolchains: tuple[str | None, str | None] = (None, None)

    def row_backend(self, p: PairResult) -> str:
        """``p``'s backend as this comparison's report rows show it (``PairResult.backend_under``)."""
        return p.backend_under(self.side_toolchains)

    def row_label(self, p: PairResult) -> str:
        """``p``'s label as this comparison's report lists show it, under its heading (``row_backend``)."""
        return p.label_under(self.side_toolchains)

    def _with(self, kind: str, *, include_baseline: bool = False) -> list[PairResult]:
        return [p for p in self.pairs if p.kind == kind and (include_baseline or not p.is_baseline)]

    def regressions(self) -> list[PairResult]:
        """Worst first: by ratio, descending (baseline backend excluded: see ``baseline``)."""
        return sorted(self._with("regression"), key=lambda p: -p.verdict.ratio)  # type: ignore[union-attr]

    def improvements(self) -> list[PairResult]:
        """Best first: by ratio, ascending."""
        return sorted(self._with("improvement"), key=lambda p: p.verdict.ratio)  # type: ignore[union-attr]

    def unsure(self) -> list[PairResult]:
        return self._with("unsure")

    def same(self) -> list[PairResult]:
        return self._with("same")

    def reference_failed(self) -> bool:
        """Every toolchain cell failed on the reference side alone (a toolchain that cannot compile
        the kernel, e.g. Triton 3.3.1 and a bf16 ``atomic_add``): the comparison says nothing of
        the new side, and another reference would (``compare(..., reference=)``)."""
        built = [p for p in self.pairs if p.ref_toolchain is not None and not p.is_baseline]
        return bool(built) and all(p.status == "error" and p.failed_side == "ref" for p in built)

    def new_failed(self) -> bool:
        """Every toolchain cell failed on the new side alone: nothing measured it, so "0 regressions" would
        read as a pass; the errors (a toolchain that cannot compile the kernel) are the finding."""
        built = [p for p in self.pairs if p.new_toolchain is not None and not p.is_baseline]
        return bool(built) and all(p.status == "error" and p.failed_side == "new" for p in built)

    def one_turn_verdicts(self) -> list[PairResult]:
        """Regressions and improvements whose two sides were each timed in a single turn (10 calls back
        to back): results written before ktriage's bench waited for three turns of every variant
        (``TimingOptions.min_rounds``), or where ``--max-time`` ended sampling after one. A whole turn
        can run slow on the GPU, and one such turn made the same cubin read +7.7 %, so these verdicts
        deserve a re-measurement before anyone acts on them."""
        return [p for p in self.regressions() + self.improvements() if p.one_turn]

    def problems(self) -> list[PairResult]:
        """Pairs not compared: a side errored, was wrong, timed out, or is missing."""
        return [p for p in self.pairs if p.status != "compared"]

    def not_compared_cells(self, *, rows: bool = False) -> list[NotComparedCell]:
        """Each pair not compared, its label and why (an input, backend or operator on one side only, a
        failed or wrong cell, a value that is no latency), the baseline backend's included: what compare
        and triage list (grouped by reason: ``ktriage.compare.not_compared``), so a user sees which cells
        no verdict covers (a count alone hid them). ``rows``: labelled as a report's section lists them
        under its heading (``row_label``); the JSON keeps the whole ``PairResult.label()``."""
        return [
            NotComparedCell(
                self.row_label(p) if rows else p.label(), p.problem or p.status, p.missing_side or p.failed_side
            )
            for p in self.problems()
        ]

    def not_compared(self) -> list[str]:
        """``not_compared_cells`` as the JSON lists them, one ``<cell>: <why>`` line each."""
        return [x.text for x in self.not_compared_cells()]

    def counts(self) -> dict[str, int]:
        out = {k: 0 for k in ("regression", "improvement", "same", "unsure", "error", "missing")}
        for p in self.pairs:
            if not p.is_baseline:
                out[p.kind] += 1
        return out

    @property
    def has_regressions(self) -> bool:
        return bool(self.regressions())

    def profile_notes(self) -> list[str]:
        """The runs' profile notes (one line per toolchain or input ncu could not profile), each once."""
        notes: list[str] = []
        for run in (self.ref_run, self.new_run):
            if run is not None:
                notes += [n for n in run_profile_notes(run) if n not in notes]
        return notes

    def to_json(self) -> JSONObject:
        return {
            "ref": self.ref_label,
            "new": self.new_label,
            "ref_run_id": self.ref_run.run_id if self.ref_run else None,
            "new_run_id": self.new_run.run_id if self.new_run else None,
            "settings": {
                "threshold": self.config.threshold,
                "confidence": self.config.confidence,
                "min_samples": self.config.min_samples,
                "max_noise": self.config.max_noise,
            },
            "counts": self.counts(),
            "reference_failed": self.reference_failed(),
            "new_failed": self.new_failed(),
            "one_turn_verdicts": len(self.one_turn_verdicts()),
            "not_compared_count": len(self.problems()),
            **not_compared_json(self.not_compared_cells()),  # "not_compared" and "not_compared_cells", as triage's
            "warnings": self.warnings,
            "baseline": self.baseline.to_json(),
            "regressions": [p.label() for p in self.regressions()],
            "cliffs": [c.to_json() for c in self.cliffs],
            "pairs": [p.to_json() for p in self.pairs],
        }


# --- pairing ------------------------------------------------------------------------------------

GroupKey = tuple[str, str, str]  # op, mode, backend
_ABSENT = "\0missing"  # a side's toolchain in ``_toolchain_map`` where the side has no cell of the backend
MergeKey = tuple[str, str, int, str, str | None]  # op, mode, input id, backend, toolchain


def _merge(cells: Iterable[Cell]) -> dict[MergeKey, Cell]:
    """One cell per key; repeated ok measurements of a key pool their samples (a re-run)."""
    out: dict[MergeKey, Cell] = {}
    for c in cells:
        k = (c.key.op, c.key.mode, c.key.input_id, c.key.backend, c.key.toolchain)
        old = out.get(k)
        if old is None:
            out[k] = c
        elif old.status == "ok" and c.status == "ok":
            out[k] = Cell(
                old.key,
                "ok",
                [*old.samples_ms, *c.samples_ms],
                None,
                old.accuracy,
                old.bytes_moved,
                old.flops,
                old.extra,
            )
        elif c.status != "ok":
            out[k] = c  # a failure on any attempt is what the user must see
    return out


def _toolchain_map(
    ref: dict[MergeKey, Cell], new: dict[MergeKey, Cell]
) -> list[tuple[GroupKey, str | None, str | None]]:
    """Which ref toolchain pairs with which new toolchain, per (op, mode, backend).

    Same toolchain sets: pair like with like. One toolchain on each side (two runs of different
    compilers, or two toolchains of one run): pair across. Otherwise pair the common ones.
    """
    tc_ref: dict[GroupKey, set[str | None]] = defaultdict(set)
    tc_new: dict[GroupKey, set[str | None]] = defaultdict(set)
    for op, mode, _i, be, tc in ref:
        tc_ref[(op, mode, be)].add(tc)
    for op, mode, _i, be, tc in new:
        tc_new[(op, mode, be)].add(tc)
    out: list[tuple[GroupKey, str | None, str | None]] = []
    for g in sorted(set(tc_ref) | set(tc_new), key=lambda g: natural_key(*g)):
        r, n = tc_ref.get(g, set()), tc_new.get(g, set())
        if r == n:
            out += [(g, t, t) for t in sorted(r, key=str)]
        elif len(r) == 1 and len(n) == 1:
            out.append((g, next(iter(r)), next(iter(n))))
        else:
            both = r & n
            out += [(g, t, t) for t in sorted(both, key=str)]
            out += [(g, t, _ABSENT) for t in sorted(r - both, key=str)]
            out += [(g, _ABSENT, t) for t in sorted(n - both, key=str)]
    return out


def _describe_failure(side: str, c: Cell) -> str:
    why = f": {c.error}" if c.error else ""
    if c.status == "wrong" and c.accuracy and not c.error:
        why = f": {c.accuracy}"
    return f"{side} {c.status}{why}"


def pick_baseline(
    cells: Sequence[Cell],
    run: RunInfo | None,
    op: str,
    explicit: str | None = None,
    defaults: Mapping[str, str] | None = None,
) -> str | None:
    """The op's baseline backend: --baseline, else the run's setting, else the op's default if present.

    ``defaults``: op -> its default baseline backend, from the caller (the operators' own,
    ``ktriage.ops.registry.default_baselines()``: TritonBench's registered baselines); statistics
    know no op names."""
    backends = {c.key.backend for c in cells if c.key.op == op}
    for cand in (explicit, (run.settings.get("baseline") if run else None), (defaults or {}).get(op)):
        if cand and cand in backends:
            return cand
    return None


def _two_gpus(a: Cell, b: Cell) -> tuple[int, int] | None:
    """The GPU indices of two cells measured on different GPUs of a multi-GPU run (``extra["gpu"]``),
    else None (same GPU, or a cell that does not say: every run before ``--gpus``)."""
    ga, gb = (c.extra.get("gpu") for c in (a, b))
    if not isinstance(ga, Mapping) or not isinstance(gb, Mapping) or ga.get("index") == gb.get("index"):
        return None
    return _gpu_index(ga.get("index", -1)), _gpu_index(gb.get("index", -1))


def _gpu_index(value: JSONValue) -> int:
    """A cell's ``extra["gpu"]["index"]`` (an int; -1 when it is not a number)."""
    return int(value) if isinstance(value, (int, float, str)) else -1


def _pairs(
    ref_cells: Sequence[Cell],
    new_cells: Sequence[Cell],
    config: VerdictConfig,
    baselines: dict[str, str | None],
    skip_native: bool,
    cache: SetStatsCache | None = None,
    side_toolchains: tuple[str | None, str | None] = (None, None),
) -> list[PairResult]:
    """Every pair of the two sides. ``side_toolchains``: the toolchain each side stands for, when each is
    one toolchain (``compare_toolchains``): it names what a side without a backend's cell lacks."""
    ref, new = _merge(ref_cells), _merge(new_cells)
    labels = {(c.key.op, c.key.mode, c.key.input_id): c.key.input_label for c in [*ref_cells, *new_cells]}
    inputs: dict[tuple[str, str], set[int]] = defaultdict(set)
    for op, mode, i, _be, _tc in [*ref, *new]:
        inputs[(op, mode)].add(i)
    out: list[PairResult] = []
    todo: list[tuple[PairResult, Cell, Cell]] = []  # compared pairs: their verdicts are computed together
    for (op, mode, be), t_ref, t_new in _toolchain_map(ref, new):
        if skip_native and t_ref is None and t_new is None:
            continue
        for i in sorted(inputs[(op, mode)]):
            rc = ref.get((op, mode, i, be, t_ref)) if t_ref != _ABSENT else None
            nc = new.get((op, mode, i, be, t_new)) if t_new != _ABSENT else None
            if rc is None and nc is None:
                continue
            pr = PairResult(
                op,
                mode,
                i,
                labels[(op, mode, i)],
                be,
                t_ref if t_ref != _ABSENT else None,
                t_new if t_new != _ABSENT else None,
                "compared",
                is_baseline=(be == baselines.get(op)),
            )
            if t_ref == _ABSENT:  # the reference has no cell of this backend: which toolchain it lacks
                pr.ref_absent = side_toolchains[0] or t_new or "host"
            if t_new == _ABSENT:
                pr.new_absent = side_toolchains[1] or t_ref or "host"
            if rc is None or nc is None:
                # an input, backend or operator one side has and the other does not
                pr.status = "missing"
                pr.missing_side = "ref" if rc is None else "new"
                pr.problem = f"on the {'new' if rc is None else 'reference'} side only (the other has no such cell)"
            elif rc.status != "ok" or nc.status != "ok":
                pr.status = "error"
                pr.problem = "; ".join(
                    _describe_failure(s, c) for s, c in (("ref", rc), ("new", nc)) if c.status != "ok"
                )
                pr.failed_side = "new" if rc.status == "ok" else "ref" if nc.status == "ok" else "both"
            elif (gpus := _two_gpus(rc, nc)) is not None:
                pr.status = "error"
                pr.problem = (
                    f"measured on GPU {gpus[0]} (ref) and GPU {gpus[1]} (new): a verdict never compares samples "
                    "of two GPUs; compare runs of one GPU (the GPU-to-GPU spread is an A/A across GPUs)"
                )
            else:
                pr.one_turn = _rounds(rc) == 1 and _rounds(nc) == 1
                todo.append((pr, rc, nc))
            out.append(pr)
    verdicts = compare_samples_many([(rc.samples_ms, nc.samples_ms) for _, rc, nc in todo], config, cache)
    for (pr, _, _), v in zip(todo, verdicts, strict=True):
        pr.verdict = v
    return out


def _rounds(c: Cell) -> int | None:
    """How many interleaved rounds (turns per variant) timed ``c``; None where the run did not say."""
    value = c.extra.get("rounds")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _baseline_check(
    pairs: list[PairResult], baselines: dict[str, str | None], shared: bool, threshold: float
) -> BaselineCheck:
    """Did the machine change between the runs? Asked of the baseline backend, which no compiler touches.
    "moved" only for a systematic shift: its median ratio beyond half the gate, or at least 2 inputs and a
    tenth of them called. One input of thirty called at 99 % confidence is what chance gives: in ten A/A
    pairs of real H200 runs (benchmarks/gpu/issue3/run2_layer_norm_aa, the same build five times) the
    rule "any input called" said "moved" six times, at median ratios 0.998..1.000."""
    names = sorted({b for b in baselines.values() if b})
    name = ", ".join(names) or None
    if shared:
        return BaselineCheck(
            name,
            "shared",
            "the baseline was measured once, in the same process, for both sides: speedups are comparable",
        )
    if not names:
        return BaselineCheck(
            None,
            "none",
            worded(
                lambda o: (
                    f"no baseline backend in the results: pass {o('baseline', '--baseline')} to check that the "
                    "machine did not change"
                )
            ),
        )
    base = [p for p in pairs if p.is_baseline and p.verdict is not None]
    if not base:
        return BaselineCheck(
            name,
            "absent",
            f"baseline {name} was not measured (ok) on both sides: the runs' environments cannot be cross-checked",
        )
    counts: dict[str, int] = defaultdict(int)
    for p in base:
        counts[p.verdict.verdict] += 1  # type: ignore[union-attr]
    med = float(np.median([p.verdict.ratio for p in base]))  # type: ignore[union-attr]
    moved = counts["regression"] + counts["improvement"]
    detail = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()) if v)
    shifted = abs(math.log(med)) >= math.log1p(threshold / 2) if med > 0 else True
    if moved and not shifted and (moved < 2 or moved < 0.1 * len(base)):
        return BaselineCheck(
            name,
            "unsure",
            (
                f"baseline {name} moved at {moved} of {len(base)} inputs only ({detail}; median ratio {med:.3f}): "
                "as often as chance calls a change, so the machine looks unchanged; that input's verdicts are the "
                "ones to doubt"
            ),
            dict(counts),
            med,
        )
    if moved:
        return BaselineCheck(
            name,
            "moved",
            (
                f"baseline {name} itself moved between the runs ({moved} of {len(base)} inputs: {detail}; median ratio {med:.3f}): "
                "speedup-based conclusions (backend vs baseline) are not valid, and latency verdicts may reflect the machine "
                "(clocks, driver, other load) rather than the compiler"
            ),
            dict(counts),
            med,
        )
    if counts["unsure"]:
        return BaselineCheck(
            name,
            "unsure",
            f"baseline {name} could not be confirmed unchanged ({detail}; median ratio {med:.3f})",
            dict(counts),
            med,
        )
    return BaselineCheck(
        name,
        "unchanged",
        f"baseline {name} unchanged on all {len(base)} inputs (median ratio {med:.3f})",
        dict(counts),
        med,
    )


# --- cliffs -------------------------------------------------------------------------------------


def _medians(cells: Sequence[Cell]) -> dict[MergeKey, float]:
    return {k: float(np.median(c.samples_ms)) for k, c in _merge(cells).items() if c.status == "ok" and c.samples_ms}


def _sweep_cliffs(
    cells: Sequence[Cell],
    side: str,
    baselines: dict[str, str | None],
    cfg: CliffConfig,
    labels: dict[tuple[str, str, int], str],
) -> list[CliffFinding]:
    """Cliffs in each backend's ratio to the baseline along each op's sweep, within one side."""
    med = _medians(cells)
    out: list[CliffFinding] = []
    series: dict[tuple[str, str, str, str | None], dict[int, float]] = defaultdict(dict)
    for (op, mode, i, be, tc), v in med.items():
        base = baselines.get(op)
        if not base or be == base:
            continue
        ref_v = med.get((op, mode, i, base, None))
        if ref_v is None:  # an artifact baseline: same toolchain
            ref_v = med.get((op, mode, i, base, tc))
        if ref_v:
            series[(op, mode, be, tc)][i] = v / ref_v
    for (op, mode, be, tc), pts in sorted(series.items(), key=lambda kv: natural_key(*kv[0])):
        ids = sorted(pts)
        # the toolchain once: "[triton-3.4.0]" closes the line where the side is that toolchain (--toolchains)
        name = f"{be}{'@' + tc if tc and tc != side else ''} / {baselines.get(op)}"
        for cl in find_cliffs([labels[(op, mode, i)] for i in ids], [pts[i] for i in ids], cfg, series=name):
            out.append(CliffFinding(op, mode, be, tc, side, "vs_baseline", cl))
    return out


def _ratio_cliffs(
    pairs: list[PairResult], cfg: CliffConfig, sides: tuple[str | None, str | None] = (None, None)
) -> list[CliffFinding]:
    """Cliffs in the new/ref ratio along the sweep: where along the inputs a regression starts. ``sides``: the
    comparison's ``side_toolchains``, which its heading names (the series then names the backend alone)."""
    groups: dict[tuple[str, str, str, str | None, str | None], list[PairResult]] = defaultdict(list)
    for p in pairs:
        if p.verdict is not None and math.isfinite(p.verdict.ratio) and not p.is_baseline:
            groups[(p.op, p.mode, p.backend, p.ref_toolchain, p.new_toolchain)].append(p)
    out: list[CliffFinding] = []
    for (op, mode, be, _tr, tn), ps in sorted(groups.items(), key=lambda kv: natural_key(*kv[0])):
        ps.sort(key=lambda p: p.input_id)
        name = f"{ps[0].backend_under(sides)} new/ref"
        for cl in find_cliffs([p.input_label for p in ps], [p.verdict.ratio for p in ps], cfg, series=name):  # type: ignore[union-attr]
            out.append(CliffFinding(op, mode, be, tn, "new/ref", "new_vs_ref", cl))
    return out


# --- entry points -------------------------------------------------------------------------------


def compare_cells(
    ref_cells: Sequence[Cell],
    new_cells: Sequence[Cell],
    *,
    ref_label: str = "ref",
    new_label: str = "new",
    ref_run: RunInfo | None = None,
    new_run: RunInfo | None = None,
    baseline: str | None = None,
    config: VerdictConfig = DEFAULT_CONFIG,
    cliff_config: CliffConfig = DEFAULT_CLIFF_CONFIG,
    same_run: bool = False,
    default_baselines: Mapping[str, str] | None = None,
    stats_cache: SetStatsCache | None = None,
    cliffs: bool = True,
    side_toolchains: tuple[str | None, str | None] = (None, None),
) -> Comparison:
    """Compare two result sets. ``same_run``: both sides come from one process (toolchains of a run):
    native cells are shared, so they are not paired and the baseline check is "shared".
    ``default_baselines``: op -> baseline backend used when neither ``baseline`` nor the run names one.
    ``stats_cache``: per-sample-set statistics shared between comparisons of the same cells
    (``compare_toolchains`` passes one). ``cliffs``: False for a caller that shows none (triage):
    the sweep segmentation is quadratic in a sweep's length. ``side_toolchains``: the toolchain each side
    is, when each is one (``compare_toolchains``), named where a side has no cell of a backend."""
    ops = {c.key.op for c in [*ref_cells, *new_cells]}
    baselines = {
        op: pick_baseline([*ref_cells, *new_cells], new_run or ref_run, op, baseline, default_baselines)
        for op in sorted(ops)
    }
    pairs = _pairs(
        ref_cells,
        new_cells,
        config,
        baselines,
        skip_native=same_run,
        cache=stats_cache,
        side_toolchains=side_toolchains,
    )
    labels = {(c.key.op, c.key.mode, c.key.input_id): c.key.input_label for c in [*ref_cells, *new_cells]}
    found = (
        _cliffs(
            pairs,
            ref_cells,
            new_cells,
            ref_label,
            new_label,
            baselines,
            cliff_config,
            labels,
            same_run,
            side_toolchains,
        )
        if cliffs
        else []
    )
    check = _baseline_check(pairs, baselines, same_run, config.threshold)
    check.per_op = dict(baselines)
    return Comparison(
        ref_label,
        new_label,
        pairs,
        check,
        found,
        config,
        ref_run,
        new_run,
        list(ref_cells),
        list(new_cells),
        side_toolchains=side_toolchains,
    )


def _cliffs(
    pairs: list[PairResult],
    ref_cells: Sequence[Cell],
    new_cells: Sequence[Cell],
    ref_label: str,
    new_label: str,
    baselines: dict[str, str | None],
    cliff_config: CliffConfig,
    labels: dict[tuple[str, str, int], str],
    same_run: bool,
    sides: tuple[str | None, str | None] = (None, None),
) -> list[CliffFinding]:
    """Both sides' cliffs against the baseline, and the new/ref ratio's, of one comparison."""
    cliffs = _sweep_cliffs(new_cells, new_label, baselines, cliff_config, labels)
    cliffs += _sweep_cliffs(ref_cells, ref_label, baselines, cliff_config, labels)
    if same_run:  # the shared native backends would be reported twice
        seen: set[tuple[str, str, str, str]] = set()
        unique = []
        for f in cliffs:
            k = (f.op, f.mode, f.backend + str(f.toolchain), f.cliff.x_after)
            if k not in seen:
                seen.add(k)
                unique.append(f)
        cliffs = unique
    return cliffs + _ratio_cliffs(pairs, cliff_config, sides)


def run_toolchains(run: RunInfo | None, cells: Sequence[Cell]) -> list[str]:
    """The toolchain ids of a run in its declared order (then any others in order of appearance)."""
    seen: list[str] = []
    for tc in run.toolchains if run else []:
        tid = tc.get("id") or tc.get("spec") or tc.get("name")
        if tid and tid not in seen:
            seen.append(str(tid))
    present = []
    for c in cells:
        if c.key.toolchain and c.key.toolchain not in present:
            present.append(c.key.toolchain)
    ordered = [t for t in seen if t in present]
    return ordered + [t for t in present if t not in ordered]


def pick_reference(toolchains: Sequence[str], wanted: str) -> str:
    """The run's toolchain id that ``wanted`` names: the id itself, or a unique one it is part of,
    spelled as given or as a spec (``triton==3.4.0`` names ``triton-3.4.0.ptxas-12.8.93.da4345e0``).
    Anything else is a ``KtriageError`` listing the run's toolchains."""
    if wanted in toolchains:
        return wanted
    spelled = {wanted, wanted.replace("==", "-"), wanted.replace("==", "-").replace(",", ".")}
    found = [t for t in toolchains if any(s and s in t for s in spelled)]
    if len(found) == 1:
        return found[0]
    listed = ", ".join(toolchains) or "none"
    if found:
        raise KtriageError(
            worded(
                lambda o: (
                    f"{o('reference', '--reference', wanted)} names {len(found)} toolchains of the run: {', '.join(found)}"
                )
            ),
            "give more of the toolchain id, e.g. the whole id as compare prints it",
        )
    raise KtriageError(
        worded(lambda o: f"{o('reference', '--reference', wanted)} is not a toolchain of the run (it has: {listed})"),
        "give one of those ids, or a unique part of one (e.g. triton==3.4.0)",
    )


def compare_toolchains(
    cells: Sequence[Cell],
    *,
    run: RunInfo | None = None,
    toolchains: Sequence[str] | None = None,
    reference: str | None = None,
    baseline: str | None = None,
    config: VerdictConfig = DEFAULT_CONFIG,
    cliff_config: CliffConfig = DEFAULT_CLIFF_CONFIG,
    default_baselines: Mapping[str, str] | None = None,
) -> list[Comparison]:
    """The toolchains within one run, each against the reference: ``reference`` (a toolchain id of
    the run, ``pick_reference``), else the first."""
    tcs = list(toolchains) if toolchains else run_toolchains(run, cells)
    if reference is not None:
        first = pick_reference(tcs, reference)
        tcs = [first] + [t for t in tcs if t != first]
    # Native cells are shared by both sides (the baseline, other libraries); the host's own copy of
    # a backend that also runs as per-toolchain artifacts is left out, or it would pair with them.
    artifact_backends = {c.key.backend for c in cells if c.key.toolchain is not None}
    native = [c for c in cells if c.key.toolchain is None and c.key.backend not in artifact_backends]
    by_tc = {t: [c for c in cells if c.key.toolchain == t] for t in tcs}
    cache: SetStatsCache = {}  # the reference toolchain's cells are in every comparison
    return [
        compare_cells(
            native + by_tc[tcs[0]],
            native + by_tc[t],
            ref_label=tcs[0],
            new_label=t,
            ref_run=run,
            new_run=run,
            baseline=baseline,
            config=config,
            cliff_config=cliff_config,
            same_run=True,
            default_baselines=default_baselines,
            stats_cache=cache,
            side_toolchains=(tcs[0], t),
        )
        for t in tcs[1:]
    ]


# How the two sides get the same inputs, for both benches that write results files and for TritonBench.
# Why spelled out: the inputs were chosen by the runs measured earlier, with their own keywords and flags
# (kt.bench's inputs/input_id/num_inputs, kt.bench_recorded's inputs), not by an option of compare.
_BENCH_OP = Worded("kt.bench, `ktriage bench --op OP`", "`ktriage bench --op OP`")
_BENCH_RECORDED = Worded("kt.bench_recorded, `ktriage bench W.json`", "`ktriage bench W.json`")
SAME_INPUTS = worded(
    lambda o: (
        f"bench them with the same {o('inputs', '--input')}, or the same {o('input_id', '--input-id')} "
        f"and {o('num_inputs', '--num-inputs')} ({spelled(_BENCH_OP, o)}); a recorded workload with the "
        f"same {o('inputs', '--input')} ({spelled(_BENCH_RECORDED, o)}); TritonBench with the same x_vals"
    )
)


def check_shared(comparison: Comparison, old: str, new: str) -> None:
    """Two sides with no (op, pass, input, backend) in common compare nothing: refused (exit 2)
    rather than a report of "0 regressions" that a CI job would pass (compare and triage alike).
    The usual causes are two operators, fwd against bwd, a file name that does not say the op, or
    the same operator measured at other inputs; the error names what each side has."""
    if any(p.status != "missing" for p in comparison.pairs):
        return

    def listed(names: set[str]) -> str:
        shown = sorted(names)
        return ", ".join(shown[:5]) + (f" and {len(shown) - 5} more" if len(shown) > 5 else "") or "nothing"

    def groups(cells: Sequence[Cell]) -> set[str]:
        return {f"{c.key.op}.{c.key.mode}" for c in cells}

    old_groups, new_groups = groups(comparison.ref_cells), groups(comparison.new_cells)
    both = old_groups & new_groups
    if both:

        def inputs(cells: Sequence[Cell]) -> set[str]:
            return {c.key.input_label for c in cells if f"{c.key.op}.{c.key.mode}" in both}

        old_inputs, new_inputs = inputs(comparison.ref_cells), inputs(comparison.new_cells)
        if not old_inputs & new_inputs:
            raise KtriageError(
                f"{old} and {new} share no input: both measured {listed(both)}, the old side at "
                f"{listed(old_inputs)}, the new side at {listed(new_inputs)}; nothing can be compared",
                worded(lambda o: f"measure both sides at the same inputs: {spelled(SAME_INPUTS, o)}"),
            )
        old_backends = {c.key.backend for c in comparison.ref_cells}
        new_backends = {c.key.backend for c in comparison.new_cells}
        if not old_backends & new_backends:
            raise KtriageError(
                f"{old} and {new} share no backend: the old side ran {listed(old_backends)}, the new side "
                f"{listed(new_backends)}; nothing can be compared",
                worded(
                    lambda o: (
                        f"measure both sides with the same backends: the same {o('only', '--only')} in "
                        f"{spelled(run_as('kt.bench', 'ktriage bench --op'), o)}"
                    )
                ),
            )
    raise KtriageError(
        f"{old} and {new} share no cell: the old side has {listed(old_groups)}, the new side "
        f"{listed(new_groups)}; nothing can be compared",
        worded(
            lambda o: (
                "give two results of the same operator and pass (e.g. layer_norm_fwd_old.csv and "
                f"layer_norm_fwd_new.csv); {o('op', '--op')} and {o('mode', '--mode')} (fwd, bwd, fwd_bwd) only "
                "name TritonBench CSVs whose file names do not say them (a results file carries its own)"
            )
        ),
    )
