"""``explain``: compile specs with several toolchains, compare resources, and attribute each change.

The first toolchain is the reference. For every spec and every other toolchain the engine builds the
2x2 cross matrix (each PTX through each ptxas), analyzes the four cubins, and reports what changed
(registers, spills, stack, shared memory, occupancy, SASS opcodes) with who is responsible. A spec
that fails to compile with one toolchain is reported as such; the other specs and toolchains go on.
When the reference itself fails on a spec (a kernel that uses an API the old release lacks), that
spec is compared against the first toolchain that compiled it, and the spec says so: comparing
nothing would read as "no change".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial

from ktriage.analyze.artifact import analyze_cubin
from ktriage.analyze.lines import LineDelta, diff_lines
from ktriage.analyze.occupancy import Occupancy
from ktriage.analyze.resources import Resources
from ktriage.compile.compiler import Artifact, AssembledCubin, CompileFailure, Compiler
from ktriage.compile.pool import InFlight
from ktriage.errors import KtriageError
from ktriage.explain.attribution import Attribution, CrossCells, attribute, sentence
from ktriage.explain.failures import NOT_LOADED, fallback_reason
from ktriage.explain.sass_detail import SassDetail, compare_sass_detail
from ktriage.predict.facts import KernelFacts, facts_for_launch, spec_launch_inputs
from ktriage.predict.model import DEFAULT_THRESHOLD, Params, Prediction, load_params, predict
from ktriage.predict.model_used import ModelUsed
from ktriage.schema.jsontypes import JSONObject
from ktriage.spec.model import KernelSpec
from ktriage.spec.toml_file import Loaded, UnloadedKernel
from ktriage.toolchain.manager import Toolchain

# (metric, unit, where it comes from). Exact comparison: these are counts the compiler decides.
METRICS: tuple[tuple[str, str], ...] = (
    ("registers", ""),
    ("spill_store_bytes", " B"),
    ("spill_load_bytes", " B"),
    ("stack_bytes", " B"),
    ("shared_bytes", " B"),
    ("ctas_per_sm", ""),
    ("warps_per_sm", ""),
)
# Opcode counts wobble by a few instructions between releases without meaning anything.
OPCODE_MIN_DELTA = 2
OPCODE_REL_TOL = 0.05


@dataclass(frozen=True)
class KernelResult:
    """One spec compiled by one toolchain: resources, occupancy and where the files are."""

    toolchain: Toolchain
    artifact: Artifact
    resources: Resources
    occupancy: Occupancy

    def metric(self, name: str) -> float | None:
        return _metric(self.resources, self.occupancy, name)

    def facts(self) -> KernelFacts:
        """What the cost model reads (``ktriage.predict``): these resources at the spec's launch."""
        return facts_for_launch(self.resources, self.occupancy, self.artifact.spec)


@dataclass(frozen=True)
class Change:
    """One metric that differs between the reference and a new toolchain, and who caused it."""

    metric: str
    ref: float
    new: float
    attribution: Attribution
    cells: CrossCells
    sentence: str

    def to_json(self) -> JSONObject:
        return {
            "metric": self.metric,
            "ref": self.ref,
            "new": self.new,
            "delta": self.new - self.ref,
            "attribution": self.attribution,
            "cross": {
                "new_ptx_ref_ptxas": self.cells.new_ptx_ref_ptxas,
                "ref_ptx_new_ptxas": self.cells.ref_ptx_new_ptxas,
            },
            "sentence": self.sentence,
        }


@dataclass
class CompileDiff:
    """What the compile of one spec changed from the reference toolchain to one other: resources,
    opcodes, lines, the cost model's prediction (compile facts; compare's ``Comparison`` pairs measured
    result sets)."""

    ref: KernelResult
    new: KernelResult
    changes: list[Change] = field(default_factory=list)
    opcode_changes: list[Change] = field(default_factory=list)
    cross_errors: list[str] = field(default_factory=list)
    # modifier-level memory/tensor/sync changes and the main loop (what base opcodes hide)
    sass_detail: SassDetail = field(default_factory=SassDetail)
    # the cost model's new/ref time ratio with its interval and contributors (ktriage.predict)
    prediction: Prediction | None = None
    # the source lines whose counts moved, highest predicted impact first (analyze/lines.py)
    lines: list[LineDelta] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.changes or self.opcode_changes)

    def attribution(self) -> Attribution:
        """The overall blame: the attribution of the resource changes (opcodes only if nothing else moved)."""
        whos = {c.attribution for c in (self.changes or self.opcode_changes)}
        whos.discard("none")
        if not whos:
            return "none"
        if len(whos) == 1:
            return next(iter(whos))
        return "both" if whos <= {"frontend", "ptxas", "both"} else "unknown"


@dataclass
class SpecExplain:
    """Everything explain learned about one spec.

    ``reference`` is the id of the toolchain the comparisons are against: the first toolchain whose
    result is a KernelResult (None when none compiled). ``reference_fallback`` says why it is not the
    first toolchain given (None when it is), so that no report passes a fallback off as the plan."""

    spec: KernelSpec
    results: dict[str, KernelResult | CompileFailure]
    comparisons: list[CompileDiff] = field(default_factory=list)
    reference: str | None = None
    reference_fallback: str | None = None

    @property
    def failures(self) -> list[CompileFailure]:
        """The cells of this spec that produced no resources (compile, assemble, analyze, import, timeout;
        stage ``spec``: a spec file's kernel that did not load)."""
        return [r for r in self.results.values() if isinstance(r, CompileFailure)]


@dataclass
class ExplainResult:
    toolchains: list[Toolchain]
    specs: list[SpecExplain]
    threshold: float = DEFAULT_THRESHOLD  # the gate the predictions were classified at
    # the model that made the predictions, which every report names (None: a caller of the engine that did
    # not say; explain_specs always does)
    model: ModelUsed | None = None

    @property
    def failures(self) -> list[CompileFailure]:
        return [f for item in self.specs for f in item.failures]

    @property
    def complete(self) -> bool:
        """True when every (spec, toolchain) cell has resources: only then may "no change" be claimed."""
        return not self.failures


def _metric(resources: Resources, occupancy: Occupancy, name: str) -> float | None:
    if hasattr(occupancy, name) and name in ("ctas_per_sm", "warps_per_sm"):
        return float(getattr(occupancy, name))
    value = getattr(resources, name, None)
    return None if value is None else float(value)


def opcode_delta_text(comparison: CompileDiff, limit: int = 6) -> str:
    """``REDG -32, ATOMG +32`` for the largest opcode changes."""
    parts = [f"{c.metric} {int(c.new - c.ref):+d}" for c in comparison.opcode_changes[:limit]]
    return ", ".join(parts)


def _ptx_size(artifact: Artifact) -> int:
    """A cost estimate for scheduling (ptxas and SASS analysis grow with the kernel)."""
    try:
        return artifact.frontend.ptx_path.stat().st_size
    except OSError:
        return 0


def toolchain_label(toolchain: Toolchain) -> str:
    """A short human name: the spec string the user wrote."""
    return str(toolchain.spec)


Facts = tuple[Resources, Occupancy]


class Explainer:
    """Runs explain over specs and toolchains with one compiler (one cache, one worker pool).

    Each cubin is analyzed once per run, whichever spec asks first: the inputs of a sweep that share a
    kernel share its artifacts (``Compiler`` compiles a key once), and they share its facts here
    (``_facts``), so that a 30-input sweep of 5 kernels runs cuobjdump for 5 kernels, not 30."""

    def __init__(
        self, compiler: Compiler, *, params: Params | None = None, threshold: float = DEFAULT_THRESHOLD
    ) -> None:
        self.compiler = compiler
        self.params = params or load_params()
        self.threshold = threshold
        self._predictions: dict[tuple[object, ...], Prediction] = {}
        self._facts_memo: dict[tuple[str, ...], Facts | KtriageError] = {}
        self._inflight = InFlight()

    def _facts(self, artifact: Artifact, cubin: AssembledCubin, toolchain: Toolchain) -> Facts:
        """``analyze_cubin`` once per (PTX entry, cubin, cuobjdump, launch shape) in this run; threads
        asking for one that another thread is analyzing wait for it instead of running cuobjdump too.
        A failure is remembered too: the same cubin fails the same way. Raises KtriageError."""
        key = (
            str(artifact.frontend.dir),
            str(cubin.cubin_path),
            str(toolchain.cuobjdump),
            artifact.spec.target,
            str(artifact.spec.num_warps),
        )
        name = "\0".join(key)
        with self._inflight.hold(name):
            memo = self._facts_memo.get(key)
            if memo is None:
                try:
                    memo = analyze_cubin(artifact, cubin, toolchain)
                except KtriageError as exc:
                    memo = exc
                self._facts_memo[key] = memo
        if isinstance(memo, KtriageError):
            raise memo
        return memo

    def result_for(self, artifact: Artifact) -> KernelResult:
        resources, occupancy = self._facts(artifact, artifact.cubin, artifact.toolchain)
        return KernelResult(artifact.toolchain, artifact, resources, occupancy)

    def _cross(self, ptx_from: Artifact, asm_of: Artifact) -> Facts | str:
        """Assemble one artifact's PTX the way the other artifact was assembled (its ptxas, and the
        command line its Triton used for this spec); a failure is returned as text."""
        ptx = ptx_from.frontend.text("ptx")
        template = asm_of.frontend.ptxas_argv  # Triton's own; assemble() adds the toolchain's extra options
        try:
            cubin = self.compiler.assemble(ptx, asm_of.toolchain, ptx_from.spec.target, template)
        except KtriageError as exc:
            return f"{toolchain_label(ptx_from.toolchain)} PTX with ptxas {asm_of.cubin.ptxas_version}: {exc.problem}"
        return self._facts(ptx_from, cubin, asm_of.toolchain)

    def compare(self, ref: KernelResult, new: KernelResult) -> CompileDiff:
        comparison = CompileDiff(ref, new)
        swap_front = self._cross(new.artifact, ref.artifact)  # new PTX, reference ptxas
        swap_asm = self._cross(ref.artifact, new.artifact)  # reference PTX, new ptxas
        for swap in (swap_front, swap_asm):
            if isinstance(swap, str):
                comparison.cross_errors.append(swap)

        def cell(swap: tuple[Resources, Occupancy] | str, name: str) -> float | None:
            return None if isinstance(swap, str) else _metric(swap[0], swap[1], name)

        ref_name, new_name = toolchain_label(ref.toolchain), toolchain_label(new.toolchain)
        for name, unit in METRICS:
            a, b = ref.metric(name), new.metric(name)
            if a is None or b is None or a == b:
                continue
            cells = CrossCells(a, b, cell(swap_front, name), cell(swap_asm, name))
            who = attribute(cells)
            comparison.changes.append(
                Change(
                    name,
                    a,
                    b,
                    who,
                    cells,
                    sentence(
                        name,
                        cells,
                        who,
                        ref_name,
                        new_name,
                        ref.artifact.cubin.ptxas_version,
                        new.artifact.cubin.ptxas_version,
                        unit,
                    ),
                )
            )
        ops_a, ops_b = ref.resources.sass_opcodes, new.resources.sass_opcodes
        for op in sorted(set(ops_a) | set(ops_b)):
            a, b = float(ops_a.get(op, 0)), float(ops_b.get(op, 0))
            if abs(a - b) < OPCODE_MIN_DELTA or abs(a - b) <= OPCODE_REL_TOL * max(a, b):
                continue
            fa = None if isinstance(swap_front, str) else float(swap_front[0].sass_opcodes.get(op, 0))
            fb = None if isinstance(swap_asm, str) else float(swap_asm[0].sass_opcodes.get(op, 0))
            cells = CrossCells(a, b, fa, fb)
            who = attribute(cells, rel_tol=OPCODE_REL_TOL, abs_tol=OPCODE_MIN_DELTA - 1)
            comparison.opcode_changes.append(
                Change(
                    op,
                    a,
                    b,
                    who,
                    cells,
                    sentence(
                        op,
                        cells,
                        who,
                        ref_name,
                        new_name,
                        ref.artifact.cubin.ptxas_version,
                        new.artifact.cubin.ptxas_version,
                    ),
                )
            )
        comparison.opcode_changes.sort(key=lambda c: -abs(c.new - c.ref))
        comparison.sass_detail = compare_sass_detail(
            ref.resources,
            new.resources,
            None if isinstance(swap_front, str) else swap_front[0],
            None if isinstance(swap_asm, str) else swap_asm[0],
        )
        comparison.lines = diff_lines(ref.resources.source_lines, new.resources.source_lines)
        comparison.prediction = self._predict(ref, new)
        return comparison

    def _predict(self, ref: KernelResult, new: KernelResult) -> Prediction:
        """The cost model's prediction, once per (cubin pair, launch) in this run: the inputs of a
        sweep that share a kernel and its launch share it (30 layer_norm inputs, 5 kernels)."""
        spec = new.artifact.spec
        key = (
            str(ref.artifact.cubin.cubin_path),
            str(new.artifact.cubin.cubin_path),
            str(spec.grid),
            spec.num_warps,
            str(spec.meta.get("sm_count")),
            spec.target,
            spec_launch_inputs(spec),  # the data size: inputs sharing a cubin still differ
        )
        hit = self._predictions.get(key)
        if hit is None:
            hit = self._predictions[key] = predict(ref.facts(), new.facts(), self.params, threshold=self.threshold)
        return hit

    def _prefetch(self, per_spec: Sequence[Sequence[object]]) -> None:
        """Analyze every distinct cubin of the run once (each spec's own, and the cross matrix against
        its first compiled toolchain), the costliest first, ``jobs`` at a time. Spec by spec, the
        threads mostly waited on each other: the inputs that share a kernel asked for the same cubins
        in turn. What this computes is only remembered (``_facts``, the compiler's memos); the specs
        are then explained exactly as before, from the memos. A failure here is remembered and
        reported by the spec that meets it."""
        work: dict[tuple[str, ...], tuple[int, Callable[[], object]]] = {}
        for outcomes in per_spec:
            arts = [o for o in outcomes if isinstance(o, Artifact)]
            for art in arts:
                work.setdefault(
                    ("own", str(art.cubin.cubin_path), str(art.frontend.dir), art.toolchain.id),
                    (_ptx_size(art), partial(self.result_for, art)),
                )
            for new in arts[1:]:
                ref = arts[0]
                if new.toolchain.id == ref.toolchain.id:
                    continue
                for ptx_from, asm_of in ((new, ref), (ref, new)):
                    work.setdefault(
                        ("cross", str(ptx_from.frontend.dir), str(asm_of.frontend.dir), asm_of.toolchain.id),
                        (2 * _ptx_size(ptx_from), partial(self._cross, ptx_from, asm_of)),
                    )

        def attempt(job: Callable[[], object]) -> None:
            try:
                job()
            except KtriageError:
                pass  # remembered by _facts / the compiler; the spec that needs it reports it

        ordered = [job for _cost, job in sorted(work.values(), key=lambda w: -w[0])]
        if len(ordered) > 1:
            with ThreadPoolExecutor(max_workers=self.compiler.jobs) as executor:
                list(executor.map(attempt, ordered))

    def run(
        self,
        specs: Sequence[Loaded],
        toolchains: Sequence[Toolchain],
        *,
        on_compiled: Callable[[object], None] | None = None,
        on_explained: Callable[[SpecExplain], None] | None = None,
    ) -> ExplainResult:
        """Explain every spec with every toolchain, in the order given. A kernel of a spec file that did
        not load (:class:`UnloadedKernel`) keeps its place, as a kernel no toolchain compiled
        (:func:`unloaded_explain`): the reports list the kernels as the file does."""
        loaded = [s for s in specs if isinstance(s, KernelSpec)]
        outcomes = self.compiler.compile_many(loaded, toolchains, on_done=on_compiled)
        n = len(toolchains)
        per_spec = [outcomes[i * n : (i + 1) * n] for i in range(len(loaded))]
        self._prefetch(per_spec)

        def explain_one(index: int) -> SpecExplain:
            spec = loaded[index]
            results: dict[str, KernelResult | CompileFailure] = {}
            for toolchain, outcome in zip(toolchains, per_spec[index]):
                if isinstance(outcome, CompileFailure):
                    results[toolchain.id] = outcome
                    continue
                try:
                    results[toolchain.id] = self.result_for(outcome)
                except KtriageError as exc:
                    results[toolchain.id] = CompileFailure(spec, toolchain, "analyze", "analyze", str(exc))
            item = SpecExplain(spec, results)
            # The reference is the first toolchain, in the order given, that compiled the spec.
            ordered = [results[t.id] for t in toolchains]
            first_ok = next((i for i, r in enumerate(ordered) if isinstance(r, KernelResult)), len(ordered))
            ref = ordered[first_ok] if first_ok < len(ordered) else None
            before = [r for r in ordered[:first_ok] if isinstance(r, CompileFailure)]
            if isinstance(ref, KernelResult):
                item.reference = ref.toolchain.id
                for new in ordered[first_ok + 1 :]:
                    if isinstance(new, KernelResult) and new.toolchain.id != ref.toolchain.id:
                        item.comparisons.append(self.compare(ref, new))
            if before:
                item.reference_fallback = fallback_reason(
                    before, ref.toolchain if isinstance(ref, KernelResult) else None
                )
            if on_explained is not None:
                on_explained(item)
            return item

        with ThreadPoolExecutor(max_workers=self.compiler.jobs) as executor:
            explained = iter(list(executor.map(explain_one, range(len(loaded)))))
        return ExplainResult(
            list(toolchains),
            [next(explained) if isinstance(s, KernelSpec) else unloaded_explain(s, toolchains) for s in specs],
            self.threshold,
        )


def unloaded_explain(kernel: UnloadedKernel, toolchains: Sequence[Toolchain]) -> SpecExplain:
    """A kernel of a spec file that did not load, as explain shows a kernel that no toolchain compiled:
    a failed cell per toolchain (stage ``spec``, :data:`~ktriage.explain.failures.NOT_LOADED`) with its
    load error and fix, nothing compared. Why cells and not a line of its own: every report (table,
    findings, markdown, HTML, JSON) and the exit status (INCOMPLETE) already say what a failed cell
    means, and the other kernels' results stand; the Failures say the error once, as the file's."""
    message = str(kernel.error)  # the problem, then "fix: ..." (failures.fix_for reads it)
    failed = [CompileFailure(kernel.spec, t, NOT_LOADED, NOT_LOADED, message) for t in toolchains]
    return SpecExplain(
        kernel.spec,
        {f.toolchain.id: f for f in failed},
        # said once (the error is the file's, not a toolchain's): the Failures name it with its fix
        reference_fallback="not loaded from its spec file: no toolchain compiled it, nothing is compared",
    )
