"""Fix suggestions for explain's findings, each verified by compiling the change (no GPU).

Why verify: "try sem='relaxed'" or "try --register-usage-level=0" is advice anyone can give; what a
person needs is whether it works for THIS kernel with THIS toolchain. Every fix here is compiled with
the same spec (same specialization, same target) and the resources are compared, so the report says
"REDG returns: ATOMG 32 -> 0, REDG 0 -> 32" or "spills 3712 B -> 0 B", or that the change did not help.

Fixes, by finding:
- spills -> the nearest config without spills (ktriage.tune.suggest.nearest_spill_free, the tuner's
  search) and ptxas options (``--register-usage-level=N``) compiled and compared;
- registers/occupancy -> ``maxnreg`` at the count that admits one more CTA per SM, compiled (it may
  trade occupancy for spills: the effect says which);
- an atomic whose result is unused that ptxas lowers to ATOMG instead of REDG -> ``sem="relaxed"`` on
  that ``tl.atomic_add``, compiled from a rewritten copy of the kernel source; said to be unsafe when
  the result is used, or when the kernel orders other memory operations around the atomic;
- any regression -> the neighbouring toolchains the caller gives, compiled, kept if they do not regress.
Timing is out of scope here: a fix verified compile-side still needs `ktriage bench` to confirm speed.
"""

from __future__ import annotations

import ast
import hashlib
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypedDict

from ktriage import progress
from ktriage.analyze.occupancy import registers_for_ctas
from ktriage.compile.compiler import Artifact, CompileFailure, Compiler
from ktriage.errors import KtriageError, joined, option
from ktriage.explain.engine import (
    Explainer,
    ExplainResult,
    KernelResult,
    SpecExplain,
    toolchain_label,
)
from ktriage.explain.findings import Finding, group_findings
from ktriage.explain.labels import kernel_name
from ktriage.home import home_subdir
from ktriage.predict.model import DEFAULT_THRESHOLD, Params, Prediction, predict
from ktriage.schema.jsontypes import JSONObject
from ktriage.spec.model import KernelSpec, input_label
from ktriage.spec.sms import spec_sm_count
from ktriage.spec.source import kernel_def, resolve_source_file, split_source
from ktriage.toolchain.manager import Toolchain, ensure_toolchain

DEFAULT_USAGE_LEVELS = (0, 10)
_ATOMIC_NAMES = ("atomic_add",)
_ORDERING_CALLS = ("atomic_cas", "atomic_xchg", "debug_barrier")


@dataclass(frozen=True)
class FixPrediction:
    """The cost model on a fixed kernel: its ratio against the kernel as compiled (``vs_current``,
    the gain) and against the reference toolchain's (``vs_reference``), and the sentence that says both."""

    vs_current: Prediction
    vs_reference: Prediction
    text: str

    @property
    def gain(self) -> float:
        """The predicted new/current ratio as the JSON report rounds it (the fixes' ranking key)."""
        r = self.vs_current.ratio
        return round(r, 4) if math.isfinite(r) else math.inf

    @property
    def slower(self) -> bool:
        """The whole predicted interval is slower than the kernel as compiled (its low end above 1; a
        fixed kernel that cannot launch too). Why: a maxnreg that trades 2 -> 3 CTA/SM for 1.2 KB more
        spills, predicted +111 % [+104 %, +118 %], was listed among the fixes like one that helps."""
        return self.vs_current.low > 1.0

    def to_json(self) -> JSONObject:
        return {"vs_current": self.vs_current.to_json(), "vs_reference": self.vs_reference.to_json(), "text": self.text}


def fix_prediction(gain: Prediction, vs_ref: Prediction, new: KernelResult, ref: KernelResult) -> FixPrediction:
    """The cost model on a fixed kernel, in words: ``predicted -83 % [-84 %, -82 %] against the kernel
    as compiled with triton==3.3.1, -82 % against triton==3.6.0``; a fix predicted slower over its
    whole interval says so first and last (``predicted slower: +111 % [...] ...; not recommended``)."""
    against = (
        f"{gain.percent()} {gain.interval_text()} against the kernel as compiled with {toolchain_label(new.toolchain)}, "
        f"{vs_ref.percent()} against {toolchain_label(ref.toolchain)}"
    )
    words = f"predicted {against}"
    prediction = FixPrediction(gain, vs_ref, words)
    if prediction.slower:
        prediction = replace(prediction, text=f"predicted slower: {against}; not recommended")
    return prediction


class FixTarget(TypedDict):
    """The kernel and toolchain a fix is for (every Fix of one kernel's suggestions shares them)."""

    kernel: str
    toolchain: str


@dataclass(frozen=True)
class Fix:
    """One proposed change, verified compile-side. ``verified`` is True when the compile shows the
    intended effect; ``effect`` states the numbers either way; ``change`` is machine-readable."""

    kind: str  # spill-free-config | relaxed-atomic | ptxas-option | maxnreg | toolchain
    kernel: str
    toolchain: str
    description: str
    verified: bool
    effect: str
    caveats: tuple[str, ...] = ()
    change: dict[str, Any] = field(default_factory=dict)
    # the cost model on the fixed kernel: its ratio against the kernel as compiled (the gain) and
    # against the reference toolchain's (ktriage.predict); None where the fix has no compiled kernel
    prediction: FixPrediction | None = None

    @property
    def recommended(self) -> bool:
        """False for a fix the cost model predicts slower than the kernel as compiled over its whole
        interval (:attr:`FixPrediction.slower`): tried, and reported apart as not recommended, whether
        or not it had its compile-side effect. A fix the model cannot price stays recommended on its
        compile-side evidence."""
        return self.prediction is None or not self.prediction.slower

    def to_json(self) -> JSONObject:
        return {
            "kind": self.kind,
            "kernel": self.kernel,
            "toolchain": self.toolchain,
            "description": self.description,
            "verified": self.verified,
            "recommended": self.recommended,
            "effect": self.effect,
            "caveats": list(self.caveats),
            "change": self.change,
            "prediction": self.prediction.to_json() if self.prediction is not None else None,
        }


# --------------------------------------------------------------------------- relaxed atomics
RELAXED_ARGUMENT = 'sem="relaxed"'  # the machine-readable change of a relaxed-atomic fix (its "argument")


@dataclass(frozen=True)
class AtomicSite:
    """One ``tl.atomic_add`` call in the kernel function, and whether relaxing it is safe."""

    line: int
    result_used: bool
    has_sem: bool
    end: tuple[int, int]  # (line, col) of the closing parenthesis, 1-based line, 0-based col


@dataclass(frozen=True)
class RelaxPlan:
    """What a rewrite would change and why it may not be safe."""

    sites: tuple[AtomicSite, ...]
    ordering_hazards: tuple[str, ...]

    @property
    def rewritable(self) -> tuple[AtomicSite, ...]:
        return tuple(s for s in self.sites if not s.result_used and not s.has_sem)


def _call_name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        f = node.func
        if isinstance(f, ast.Attribute):
            return f.attr
        if isinstance(f, ast.Name):
            return f.id
    return ""


def _base_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def plan_relaxed_atomics(source_text: str, function: str) -> RelaxPlan:
    """Find the ``atomic_add`` calls of ``function`` and the hazards that make ``relaxed`` unsafe:
    a used result (the old value is read: ordering is part of the algorithm), a lock/flag pattern
    (atomic_cas/atomic_xchg, barriers), or a load from the pointer the atomic updates."""
    fn = kernel_def(ast.parse(source_text), function, "the kernel source")  # Class.kernel, a factory's result too
    bare_calls = {id(stmt.value) for stmt in ast.walk(fn) if isinstance(stmt, ast.Expr)}
    sites: list[AtomicSite] = []
    targets: set[str] = set()
    hazards: list[str] = []
    for node in ast.walk(fn):
        name = _call_name(node)
        if name in _ATOMIC_NAMES and isinstance(node, ast.Call):
            has_sem = any(k.arg == "sem" for k in node.keywords)
            assert node.end_lineno is not None and node.end_col_offset is not None
            sites.append(
                AtomicSite(node.lineno, id(node) not in bare_calls, has_sem, (node.end_lineno, node.end_col_offset - 1))
            )
            if node.args:
                targets |= _base_names(node.args[0])
        elif name in _ORDERING_CALLS:
            hazards.append(
                f"the kernel calls tl.{name} (line {getattr(node, 'lineno', 0)}): atomics may order other memory accesses"
            )
    for node in ast.walk(fn):
        if _call_name(node) == "load" and isinstance(node, ast.Call) and node.args:
            shared = _base_names(node.args[0]) & targets
            shared = {n for n in shared if n.endswith("ptr")}
            if shared:
                hazards.append(
                    f"the kernel loads from {', '.join(sorted(shared))} (line {node.lineno}), which it also updates atomically"
                )
    for s in sites:
        if s.result_used:
            hazards.append(
                f"the result of the atomic at line {s.line} is used: it stays acq_rel (relaxing it could change what it returns relative to other memory operations)"
            )
    sites.sort(key=lambda s: s.line)
    return RelaxPlan(tuple(sites), tuple(dict.fromkeys(hazards)))


def site_words(site: AtomicSite, compiled_at: Collection[int]) -> str:
    """A call's line for the fix's text: its first line, where ``sem=`` is added. Why more for a call
    over several lines: the line evidence cites the line the cubin's line table gives the atomic
    (``compiled_at``, :func:`atomic_lines`), and Triton may put a call's instructions at one of its
    arguments (3.2 to 3.5 at the last one visited: Liger's embedding bwd call opens at line 69, its
    REDG/ATOMG are at :71, ``grad_output,``). Both are right; the text says why they differ, so the
    fix and the evidence are read as one call."""
    first, last = site.line, site.end[0]
    if first == last:
        return str(first)
    elsewhere = sorted(line for line in set(compiled_at) if first < line <= last)
    if not elsewhere:
        return f"{first} (the call on lines {first}-{last})"
    cited = ", ".join(f":{line}" for line in elsewhere)
    return f"{first} (the call on lines {first}-{last}; the line table puts its atomics at {cited}, an argument's line, as the line evidence says)"


def atomic_lines(result: KernelResult, file_name: str) -> set[int]:
    """The lines of the kernel file ``file_name`` (the line table's path, compared by name) that the cubin's
    line table gives atomic instructions, not counting those of inlined callees."""
    return {
        stats.line
        for stats in result.resources.source_lines
        if stats.atomic and not stats.inlined_at and Path(stats.path or stats.file).name == file_name
    }


def relax_source(source_text: str, plan: RelaxPlan) -> str:
    """Add ``sem="relaxed"`` to each rewritable call, just before its closing parenthesis."""
    lines = source_text.splitlines(keepends=True)
    for site in sorted(plan.rewritable, key=lambda s: s.end, reverse=True):
        row, col = site.end[0] - 1, site.end[1]
        line = lines[row]
        assert line[col] == ")", f"expected ')' at {site.end}, got {line[col]!r}"
        before = "".join(lines[:row]) + line[:col]
        sep = " " if before.rstrip().endswith(",") else ", "
        lines[row] = line[:col] + f'{sep}sem="relaxed"' + line[col:]
    return "".join(lines)


def relaxed_atomic_spec(spec: KernelSpec) -> tuple[KernelSpec | None, RelaxPlan]:
    """The spec pointed at a copy of its kernel with ``sem="relaxed"`` on every unused-result
    ``tl.atomic_add`` (None when there is none), and the plan with the hazards found. One home for
    the rewrite: ``explain --fixes`` verifies it compile-side, benchmarks time it."""
    path = resolve_source_file(spec.source, spec.package)
    _, function = split_source(spec.source)
    text = path.read_text()
    plan = plan_relaxed_atomics(text, function)
    if not plan.rewritable:
        return None, plan
    return _rewritten_spec(spec, relax_source(text, plan), "relaxed"), plan


def _rewritten_spec(spec: KernelSpec, new_text: str, tag: str) -> KernelSpec:
    """The spec pointed at a rewritten copy of its source file (content-addressed under the home),
    keeping the package so the copy's absolute imports still resolve."""
    original = resolve_source_file(spec.source, spec.package)
    digest = hashlib.sha256(new_text.encode()).hexdigest()[:16]
    folder = home_subdir("fixes") / f"{tag}-{digest}"
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / original.name
    if not copy.exists() or copy.read_text() != new_text:
        copy.write_text(new_text)
    _, function = split_source(spec.source)
    return spec.replace(source=f"{copy}:{function}", name=spec.name + f" [{tag}]")


# --------------------------------------------------------------------------- helpers


def _opcount(result: KernelResult, op: str) -> int:
    return int(result.resources.sass_opcodes.get(op, 0))


def _spills(result: KernelResult) -> int:
    return int(result.resources.spill_store_bytes or 0)


def _summary(result: KernelResult) -> str:
    return f"{result.resources.registers} regs, spill {_spills(result)} B, {result.occupancy.ctas_per_sm} CTA/SM"


class FixFinder:
    """Proposes and verifies fixes for the findings of one explain run (same compiler and cache)."""

    def __init__(
        self,
        compiler: Compiler,
        *,
        neighbours: Sequence[Toolchain] = (),
        usage_levels: Sequence[int] = DEFAULT_USAGE_LEVELS,
        sm_count: int | None = None,
        params: Params | None = None,
        threshold: float = DEFAULT_THRESHOLD,
    ) -> None:
        """``threshold``: the gate the findings were judged at (explain's ``--threshold``, triage's gate), so
        that a fix's predictions say their kind at the report's one gate. ``sm_count``: explain's ``--sm-count``, the SMs the spill-free config search prices waves
        for (None: the spec's own ``meta.sm_count``, else the target's usual part). ``params``: the cost
        model that priced the findings (``--model``), so that a fix is priced, and recommended or not, by
        the same model, and the spill-free config search ranks its candidates with it (its estimates and
        its tie tolerance) (None: $KTRIAGE_MODEL, else the shipped fit)."""
        self.compiler = compiler
        self.sm_count = sm_count
        self.explainer = Explainer(compiler, params=params, threshold=threshold)
        self.neighbours = list(neighbours)
        self.usage_levels = tuple(usage_levels)

    def _result(self, spec: KernelSpec, toolchain: Toolchain) -> KernelResult | str:
        outcome = self.compiler.compile(spec, toolchain)
        if isinstance(outcome, CompileFailure):
            return outcome.message.strip().splitlines()[0] if outcome.message.strip() else outcome.kind
        assert isinstance(outcome, Artifact)
        try:
            return self.explainer.result_for(outcome)
        except KtriageError as exc:
            return exc.problem

    # -- per finding ----------------------------------------------------------------------------

    def for_findings(self, result: ExplainResult, findings: Sequence[Finding]) -> list[Fix]:
        """Fixes for the worst kernel of each finding that is a regression (deduplicated)."""
        fixes: list[Fix] = []
        done: set[tuple[str, str, str]] = set()
        with progress.task("fixes: findings tried", total=len(findings)) as step:  # each fix compiles: minutes
            for finding in findings:
                item, ref, new = self._worst(result, finding)
                if item is None or ref is None or new is None:
                    step.advance()
                    continue
                for kind in self._kinds(finding):
                    key = (item.spec.name, new.toolchain.id, kind)
                    if key in done:
                        continue
                    done.add(key)
                    step.say(f"{kind} for {item.spec.name} ({len(fixes)} found)")
                    fixes.extend(self._dispatch(kind, item.spec, ref, new))
                step.advance()
        return fixes

    def _worst(
        self, result: ExplainResult, finding: Finding
    ) -> tuple[SpecExplain | None, KernelResult | None, KernelResult | None]:
        worst = max(finding.examples, key=lambda c: abs(c.new - c.ref))
        label = finding.inputs[finding.examples.index(worst)]
        for item in result.specs:
            if input_label(item.spec.meta, item.spec.name) != label:
                continue
            if finding.kernel and kernel_name(item.spec) != finding.kernel:  # the label of another kernel's input
                continue
            for comparison in item.comparisons:
                if toolchain_label(comparison.new.toolchain) == finding.toolchain:
                    return item, comparison.ref, comparison.new
        return None, None, None

    @staticmethod
    def _kinds(finding: Finding) -> list[str]:
        m, up = finding.metric, finding.direction == "up"
        if m == "spill_store_bytes" and up:
            return ["spill-free-config", "ptxas-option", "toolchain"]
        if m in ("registers", "stack_bytes", "shared_bytes") and up or m == "ctas_per_sm" and not up:
            return ["ptxas-option", "maxnreg", "toolchain"]
        if m == "ATOMG" and up or m == "REDG" and not up:
            return ["relaxed-atomic", "toolchain"]
        return []

    def _dispatch(self, kind: str, spec: KernelSpec, ref: KernelResult, new: KernelResult) -> list[Fix]:
        """The fixes of one kind, each with what the cost model predicts it gains."""
        return [self._predicted(fix, spec, ref, new) for fix in self._fixes_of(kind, spec, ref, new)]

    def _fixed_kernel(self, fix: Fix, spec: KernelSpec, new: KernelResult) -> KernelResult | None:
        """The compiled kernel a fix proposes (cached compiles), where the fix names one."""
        target: tuple[KernelSpec, Toolchain] | None = None
        if fix.kind == "spill-free-config" and "spec" in fix.change:
            target = (KernelSpec.from_json(fix.change["spec"]), new.toolchain)
        elif fix.kind == "relaxed-atomic" and "argument" in fix.change:
            relaxed, _ = relaxed_atomic_spec(spec)  # the rewrite the fix compiled (content-addressed copy)
            target = (relaxed, new.toolchain) if relaxed is not None else None
        elif fix.kind == "maxnreg" and "maxnreg" in fix.change:
            target = (spec.replace(maxnreg=int(fix.change["maxnreg"])), new.toolchain)
        elif fix.kind == "toolchain":
            tc = next((t for t in self.neighbours if str(t.spec) == fix.change.get("toolchain")), None)
            target = (spec, tc) if tc is not None else None
        elif fix.kind == "ptxas-option" and "toolchain" in fix.change:
            # the toolchain the fix assembled with (built by ptxas_options: no build here); priced like
            # the others, so a level that adds spills ranks after one that removes them
            try:
                target = (spec, ensure_toolchain(str(fix.change["toolchain"])))
            except KtriageError:
                target = None
        if target is None:
            return None
        res = self._result(*target)
        return res if isinstance(res, KernelResult) else None

    def _predicted(self, fix: Fix, spec: KernelSpec, ref: KernelResult, new: KernelResult) -> Fix:
        """The fix with what the cost model predicts it gains (docs/model.md)."""
        fixed = self._fixed_kernel(fix, spec, new)
        if fixed is None:
            return fix
        at = self.explainer.threshold
        gain = predict(new.facts(), fixed.facts(), self.explainer.params, threshold=at)
        vs_ref = predict(ref.facts(), fixed.facts(), self.explainer.params, threshold=at)
        prediction = fix_prediction(gain, vs_ref, new, ref)
        return replace(fix, effect=f"{fix.effect}; {prediction.text}", prediction=prediction)

    def _fixes_of(self, kind: str, spec: KernelSpec, ref: KernelResult, new: KernelResult) -> list[Fix]:
        if kind == "spill-free-config":
            return self.spill_free_config(spec, new)
        if kind == "ptxas-option":
            return self.ptxas_options(spec, new)
        if kind == "maxnreg":
            return self.maxnreg(spec, new)
        if kind == "relaxed-atomic":
            return self.relaxed_atomic(spec, new)
        if kind == "toolchain":
            return self.toolchains(spec, ref, new)
        return []

    # -- the fixes ------------------------------------------------------------------------------

    def relaxed_atomic(self, spec: KernelSpec, new: KernelResult) -> list[Fix]:
        """Rewrite a copy of the kernel with ``sem="relaxed"`` on unused-result atomics; compile it."""
        tc = new.toolchain
        path = resolve_source_file(spec.source, spec.package)
        _, function = split_source(spec.source)
        relaxed, plan = relaxed_atomic_spec(spec)
        base: FixTarget = {"kernel": spec.name, "toolchain": toolchain_label(tc)}
        if relaxed is None:
            why = "no tl.atomic_add with an unused result and no sem= in the kernel function"
            return [
                Fix(
                    "relaxed-atomic",
                    description='sem="relaxed" on tl.atomic_add: not applicable',
                    verified=False,
                    effect=why,
                    caveats=plan.ordering_hazards,
                    **base,
                )
            ]
        fixed = self._result(relaxed, tc)
        compiled_at = atomic_lines(new, path.name)
        lines = ", ".join(site_words(s, compiled_at) for s in plan.rewritable)
        description = f'add sem="relaxed" to tl.atomic_add at {path.name} line {lines} (result unused)'
        safe_when = (
            "safe when the atomics only accumulate values read after the kernel ends (no other thread "
            "reads or orders on them during the kernel); relaxed keeps atomicity, drops acq_rel ordering"
        )
        caveats = list(plan.ordering_hazards) or [safe_when]
        change = {
            "source": str(path),
            "function": function,
            "lines": [s.line for s in plan.rewritable],
            "argument": RELAXED_ARGUMENT,
        }
        if isinstance(fixed, str):
            return [
                Fix(
                    "relaxed-atomic",
                    description=description,
                    verified=False,
                    effect=f"the rewritten kernel did not compile: {fixed}",
                    caveats=tuple(caveats),
                    change=change,
                    **base,
                )
            ]
        a0, a1, r0, r1 = (
            _opcount(new, "ATOMG"),
            _opcount(fixed, "ATOMG"),
            _opcount(new, "REDG"),
            _opcount(fixed, "REDG"),
        )
        verified = r1 > r0 and a1 < a0
        effect = (
            f"{'REDG returns' if verified else 'no REDG change'}: ATOMG {a0} -> {a1}, REDG {r0} -> {r1} "
            f"({_summary(fixed)})"
        )
        if plan.ordering_hazards:
            caveats.insert(0, "NOT known to be safe: check the hazards below before applying")
        return [
            Fix(
                "relaxed-atomic",
                description=description,
                verified=verified,
                effect=effect,
                caveats=tuple(caveats),
                change=change,
                **base,
            )
        ]

    def spill_free_config(self, spec: KernelSpec, new: KernelResult) -> list[Fix]:
        """The nearest config without spills, found by the tuner (ktriage.tune.suggest)."""
        base: FixTarget = {"kernel": spec.name, "toolchain": toolchain_label(new.toolchain)}
        # explain sits above tune and uses its search; tune never imports explain
        # (docs/architecture.md). Imported here: only a spilling kernel needs the tuner.
        from ktriage.tune.suggest import nearest_spill_free

        sm_count = spec_sm_count(spec, self.sm_count)
        # ranked by the model that priced the findings (--model): its estimates and its tie tolerance
        # a spec by values: searched from what this toolchain's JIT compiles (an autotuned kernel's config,
        # not the preview's Triton defaults), so the fix's "num_warps 4 -> 8" is the change it makes
        suggestion = nearest_spill_free(
            self.compiler.decide(spec, new.toolchain),
            new.toolchain,
            self.compiler,
            sm_count=sm_count,
            params=self.explainer.params,
        )
        if suggestion is None:
            return [
                Fix(
                    "spill-free-config",
                    description="nearest config without spills: none found",
                    verified=False,
                    effect="no config in the searched space compiles without spills",
                    **base,
                )
            ]
        return [self._from_suggestion(suggestion, new, base)]

    @staticmethod
    def _from_suggestion(suggestion: Any, new: KernelResult, base: FixTarget) -> Fix:
        """Turn the tuner's Suggestion (ktriage.tune.suggest) into a Fix; its numbers are compiled ones."""
        after = int(suggestion.spill_store_bytes_after)
        effect = (
            f"spill stores {suggestion.spill_store_bytes_before} B -> {after} B, registers "
            f"{suggestion.registers_before} -> {suggestion.registers_after}, CTA/SM "
            f"{suggestion.ctas_per_sm_before} -> {suggestion.ctas_per_sm_after}"
        )
        return Fix(
            "spill-free-config",
            description=suggestion.sentence,
            verified=after == 0,
            effect=effect,
            caveats=("a different tile or warp count changes the work per CTA: time it (ktriage tune / bench)",),
            change={
                "config": suggestion.config.to_json(),
                "suggestion": suggestion.to_json(),
                "spec": suggestion.spec.to_json(),
            },
            **base,
        )

    def ptxas_options(self, spec: KernelSpec, new: KernelResult) -> list[Fix]:
        """``--register-usage-level=N`` for each level, the same PTX through the same ptxas."""
        tc = new.toolchain
        fixes: list[Fix] = []
        for level in self.usage_levels:
            option = f"--register-usage-level={level}"
            if option in tc.ptxas_options:
                continue
            try:
                alt = ensure_toolchain(replace(tc.spec, ptxas_options=(*tc.ptxas_options, option)))
            except KtriageError as exc:
                fixes.append(
                    Fix(
                        "ptxas-option",
                        spec.name,
                        toolchain_label(tc),
                        f"ptxas {option}",
                        False,
                        f"toolchain not built: {exc.problem}",
                    )
                )
                continue
            res = self._result(spec, alt)
            if isinstance(res, str):
                fixes.append(
                    Fix(
                        "ptxas-option",
                        spec.name,
                        toolchain_label(tc),
                        f"ptxas {option}",
                        False,
                        f"did not assemble: {res}",
                        change={"ptxas_options": option},
                    )
                )
                continue
            # A few bytes either way is ptxas noise, not a fix: ask for a tenth fewer spill bytes.
            better = (
                _spills(res) <= 0.9 * _spills(new)
                and _spills(new) > 0
                or (_spills(res) <= _spills(new) and res.occupancy.ctas_per_sm > new.occupancy.ctas_per_sm)
            )
            fixes.append(
                Fix(
                    "ptxas-option",
                    spec.name,
                    toolchain_label(tc),
                    f"pass ptxas {option} (Triton 3.4+: options={{'ptx_options': '{option}'}})",
                    better,
                    f"{_summary(new)} -> {_summary(res)}",
                    (
                        "--register-usage-level is a BETA ptxas option; its effect may change between ptxas releases",
                        "Triton 3.3 has no ptx_options: set it through a ptxas wrapper (TRITON_PTXAS_PATH)",
                    ),
                    {"ptxas_options": option, "toolchain": str(alt.spec)},
                )
            )
        return fixes

    def maxnreg(self, spec: KernelSpec, new: KernelResult) -> list[Fix]:
        """``maxnreg`` at the register count that admits one more CTA per SM (a frontend recompile)."""
        occ = new.occupancy
        if occ.limiter != "registers":
            return []
        regs = registers_for_ctas(spec.target, spec.num_warps, occ.ctas_per_sm + 1)
        if regs is None or regs >= new.resources.registers:
            return []
        res = self._result(spec.replace(maxnreg=regs), new.toolchain)
        base: FixTarget = {"kernel": spec.name, "toolchain": toolchain_label(new.toolchain)}
        if isinstance(res, str):
            return [
                Fix("maxnreg", description=f"maxnreg={regs}", verified=False, effect=f"did not compile: {res}", **base)
            ]
        verified = res.occupancy.ctas_per_sm > occ.ctas_per_sm and _spills(res) <= _spills(new)
        return [
            Fix(
                "maxnreg",
                description=f"launch with maxnreg={regs} (one more CTA per SM)",
                verified=verified,
                effect=f"{_summary(new)} -> {_summary(res)}",
                caveats=("a register cap that adds spills can be slower than the lower occupancy: time it",),
                change={"maxnreg": regs},
                **base,
            )
        ]

    def toolchains(self, spec: KernelSpec, ref: KernelResult, new: KernelResult) -> list[Fix]:
        """The neighbouring toolchains the caller gave: kept if they do not regress against the reference."""
        fixes: list[Fix] = []
        for tc in self.neighbours:
            if tc.id in (ref.toolchain.id, new.toolchain.id):
                continue
            res = self._result(spec, tc)
            label = toolchain_label(tc)
            if isinstance(res, str):
                fixes.append(
                    Fix(
                        "toolchain",
                        spec.name,
                        toolchain_label(new.toolchain),
                        f"use {label}",
                        False,
                        f"did not compile: {res}",
                        change={"toolchain": str(tc.spec)},
                    )
                )
                continue
            regress = []
            if _spills(res) > _spills(ref):
                regress.append(f"spills {_spills(ref)} -> {_spills(res)} B")
            if res.occupancy.ctas_per_sm < ref.occupancy.ctas_per_sm:
                regress.append(f"CTA/SM {ref.occupancy.ctas_per_sm} -> {res.occupancy.ctas_per_sm}")
            if _opcount(res, "ATOMG") > _opcount(ref, "ATOMG") and _opcount(res, "REDG") < _opcount(ref, "REDG"):
                regress.append(f"REDG {_opcount(ref, 'REDG')} -> {_opcount(res, 'REDG')}")
            effect = f"{_summary(new)} -> {_summary(res)}" + (
                f" (still regresses: {'; '.join(regress)})" if regress else " (no regression vs the reference)"
            )
            fixes.append(
                Fix(
                    "toolchain",
                    spec.name,
                    toolchain_label(new.toolchain),
                    f"use {label}",
                    not regress,
                    effect,
                    change={"toolchain": str(tc.spec)},
                )
            )
        return fixes


def check_fix_toolchains(
    toolchains: Sequence[Toolchain], neighbours: Sequence[Toolchain], texts: Sequence[str]
) -> None:
    """Refuse a ``--fix-toolchain`` that :meth:`FixFinder.toolchains` would never try: the reference
    (``toolchains[0]``, what every finding compares with) or the one toolchain judged. Why refuse:
    such a neighbour is skipped for every finding, so the report said nothing of a fix that was asked
    for. One judged among several is kept: it is tried for the others' findings."""
    if len(toolchains) < 2:
        return
    reference, judged = toolchains[0], {t.id for t in toolchains[1:]}
    for text, tc in zip(texts, neighbours, strict=True):
        if tc.id == reference.id:
            role = f"the reference toolchain (the first -t, {reference.spec}): the findings are measured against it"
        elif judged == {tc.id}:
            role = f"the toolchain judged (-t {toolchains[1].spec}): its regressions are what the fixes are for"
        else:
            continue
        raise KtriageError(
            joined(option("fix_toolchains", "--fix-toolchain", [text]), f" is {role}, so it is never tried as a fix"),
            "drop it, or name a toolchain that is neither (another triton== release, ptxas== or ptxas-options=)",
        )


def suggest_fixes(
    result: ExplainResult,
    findings: Sequence[Finding],
    compiler: Compiler,
    *,
    neighbours: Sequence[Toolchain] = (),
    usage_levels: Sequence[int] = DEFAULT_USAGE_LEVELS,
    sm_count: int | None = None,
    params: Params | None = None,
    threshold: float = DEFAULT_THRESHOLD,
) -> list[Fix]:
    """Verified fixes for the regressions among ``findings`` (see the module docstring), ranked by
    :func:`rank_fixes`: by the cost model's predicted gain (largest first); fixes it cannot price
    keep their order, after; last, those it predicts slower than the kernel as compiled
    (:attr:`Fix.recommended` False). Why last and not among the unpriced: "+111 %" is a finding against the fix.

    A regression is what the report calls one: a bullet the cost model predicts slower past the gate
    (``FindingGroup.kind``), not any metric that rose. Why: registers 39 -> 40 on a kernel predicted
    neutral, or registers up on one predicted 14 % faster, would otherwise get maxnreg and ptxas-option
    "fixes" (each compiled, minutes on a workload) for a change the report says needs none."""
    regressing = [f for g in group_findings(list(findings)) if g.kind == "regression" for f in g.findings]
    finder = FixFinder(
        compiler,
        neighbours=neighbours,
        usage_levels=usage_levels,
        sm_count=sm_count,
        params=params,
        threshold=threshold,
    )
    return rank_fixes(finder.for_findings(result, regressing))


def rank_fixes(fixes: Sequence[Fix]) -> list[Fix]:
    """The recommended fixes by predicted gain (largest first), then those the model cannot price (in
    their order), then those predicted slower than the kernel as compiled (least slower first)."""
    return sorted(fixes, key=lambda f: (not f.recommended, f.prediction.gain if f.prediction else math.inf))
