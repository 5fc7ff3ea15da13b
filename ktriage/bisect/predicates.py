"""Compile-only and command predicates: good/bad by comparison with the measured endpoints.

Compile-only: a resource metric of one or more kernels, compiled per candidate with no GPU. The rule
(see docs/bisect.md): for every kernel whose value differs between the good and the bad endpoint,
a candidate value equal to the good one is good; otherwise it is bad when it is strictly closer to
the bad endpoint's value than to the good one's, good when strictly closer to the good one's, and
``unsure`` when exactly half-way. Kernels that disagree make the candidate ``unsure`` (two changes
in the range pull different ways; naming a culprit would be a guess). Kernels equal at both
endpoints carry no signal and are ignored.

Command: a user script with ``git bisect run`` exit codes (0 good, 125 skip, 1-127 bad, >= 128 abort);
a timeout makes that candidate ``skip``, not the bisect fail.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from ktriage import progress
from ktriage.bisect.candidate import Candidate, Observation, Outcome, empty_cost
from ktriage.bisect.outside import outside_endpoints, outside_text, saved_values
from ktriage.bisect.workspace import (
    CandidateFailed,
    Prepared,
    ToolchainUnavailable,
    Workspace,
    run_shell,
    tail,
)
from ktriage.compile.compiler import Artifact, Compiler
from ktriage.errors import KtriageError, joined, option, spelled, worded
from ktriage.schema.jsontypes import JSONObject
from ktriage.spec.model import KernelSpec
from ktriage.wording import agree, plural

if TYPE_CHECKING:
    from ktriage.explain.engine import Explainer, KernelResult
    from ktriage.spec.toml_file import UnloadedKernel
    from ktriage.toolchain.manager import Toolchain

T = TypeVar("T")
log = logging.getLogger("ktriage.bisect")

# The ends as the predicates' refusals name them: kt.bisect(good=..., bad=...) meets them too (ktriage.errors.option)
_GOOD, _BAD = option("good", "--good"), option("bad", "--bad")
R = TypeVar("R")

RESOURCE_METRICS = (
    "spill_store_bytes",
    "spill_load_bytes",
    "stack_bytes",
    "registers",
    "shared_bytes",
    "ctas_per_sm",
    "warps_per_sm",
    "local_loads",
    "local_stores",
    "sass_instructions",
)
"""Metrics a compile-only predicate can read (plus ``sass:OPCODE``, e.g. ``sass:ATOMG``)."""

SUMMARY_FIELDS = ("registers", "spill_store_bytes", "stack_bytes", "ctas_per_sm")


def check_metric(metric: str, *, timed: bool = True) -> str:
    """Validate a compile metric name; a typo is a KtriageError naming the nearest known one and listing
    them all. ``timed``: whether the caller also takes ``latency`` (``bisect`` does, from a bundle;
    ``bisect-step`` compiles the checkout and cannot time it, so its error must not offer it)."""
    if metric == "latency" and not timed:
        raise KtriageError(
            worded(
                lambda o: (
                    f"{o('metric', '--metric', metric)} is a timed bisect's metric: bisect-step compiles the "
                    "checked-out kernels and judges a compile metric"
                )
            ),
            f"use a compile metric ({', '.join(RESOURCE_METRICS[:4])}, sass:OPCODE ...), or time toolchains with "
            "`ktriage bisect --metric latency --bundle DIR` (docs/bisect_timing.md)",
        )
    if metric.startswith("sass:") and len(metric) > 5 and metric[5:].replace(".", "").replace("_", "").isalnum():
        base, dot, modifiers = metric[5:].partition(".")
        # opcodes are upper case: sass:atomg counted 0 everywhere (modifiers may not be: F32x4)
        if base != base.upper():
            raise KtriageError(
                worded(lambda o: f"{o('metric', '--metric', metric)}: SASS opcodes are written in upper case"),
                worded(lambda o: f"write {o('metric', '--metric', f'sass:{base.upper()}{dot}{modifiers}')}"),
            )
        return metric
    if metric in RESOURCE_METRICS:
        return metric
    import difflib

    near = difflib.get_close_matches(metric, [*RESOURCE_METRICS, *(["latency"] if timed else [])], n=1, cutoff=0.6)
    known = f"{', '.join(RESOURCE_METRICS)}, sass:OPCODE (e.g. sass:ATOMG, sass:STL)" + (
        ", or latency (GPU time)" if timed else ""
    )
    raise KtriageError(
        f"unknown metric {metric!r}" + (f" (did you mean {near[0]}?)" if near else ""),
        f"use one of {known}",
    )


def metric_value(result: KernelResult, metric: str) -> float | None:
    """Read a metric from an explain ``KernelResult`` (resources + occupancy)."""
    if metric.startswith("sass:"):
        op = metric[5:]
        table = result.resources.sass_opcodes_detailed if "." in op else result.resources.sass_opcodes
        return float(table.get(op, 0))
    if metric in ("local_loads", "local_stores", "sass_instructions"):
        return float(getattr(result.resources, metric))
    return result.metric(metric)


NO_METRIC_VALUE = "its analysis does not give one"
"""The end of :func:`no_metric_value`'s line: how a note tells a kernel with no value for the metric
from one that failed, in ``failed`` as measured or as read back from a state or baseline file."""


def no_metric_value(kernel: str, metric: str) -> str:
    """Why ``kernel`` has no value though it compiled: one line naming it and the metric (``failed``'s
    form, as :func:`no_value` and a baseline's ``left_out`` show it)."""
    return f"{kernel} has no {metric} value: {NO_METRIC_VALUE}"


def metric_values(results: Mapping[str, KernelResult], metric: str) -> tuple[dict[str, float], dict[str, str]]:
    """Each kernel's ``metric`` (:func:`metric_value`), and why each kernel whose analysis gives none
    has no value (one line naming the kernel and the metric, as :class:`Measured`'s ``failed``), so
    that a baseline leaving it out says so (``left_out`` and a warning) instead of dropping it without
    a word: e.g. spill bytes come only from ptxas's ``-v`` log."""
    values: dict[str, float] = {}
    missing: dict[str, str] = {}
    for key, result in results.items():
        v = metric_value(result, metric)
        if v is None:
            missing[key] = no_metric_value(key, metric)
        else:
            values[key] = v
    return values, missing


def saved_failures(obs: Observation) -> dict[str, str]:
    """Why each kernel that did not compile at the observation's candidate has no value (its ``failed``)."""
    failed = obs.measurements.get("failed")
    return {k: str(v) for k, v in failed.items()} if isinstance(failed, Mapping) else {}


def _lacks_metric(kernel: str, error: str) -> bool:
    """Whether ``error`` is :func:`no_metric_value`'s line for ``kernel`` (it compiled; no value)."""
    return error.startswith(f"{kernel} has no ") and error.endswith(f": {NO_METRIC_VALUE}")


def left_out_here(failed: Mapping[str, str]) -> str:
    """The kernels of ``failed`` as a decision's reason names them, by what happened here: "a, b did not
    compile here" (they did not load or compile: their errors are in ``failed``), "c has no M value
    here" (it compiled, but its analysis gives no value for the metric M: :func:`no_metric_value`).
    Why not "did not compile" for all: it sends the user to fix a kernel that compiles, when the fix
    is another metric."""
    lacking = {k: e for k, e in failed.items() if _lacks_metric(k, e)}
    broken = [k for k in failed if k not in lacking]
    parts = [", ".join(broken) + " did not compile here"] if broken else []
    parts += [e.removesuffix(f": {NO_METRIC_VALUE}") + " here" for e in lacking.values()]
    return " and ".join(parts)


def no_value(kernel: str, failed: Mapping[str, str]) -> str:
    """Why ``kernel`` has no value here, as a skip's reason says it: its error from ``failed`` (one
    line that names the kernel: ``K: frontend failed: ...``, ``K does not load: ...``), so that the
    skip shows what to fix; without one (the kernel is not in this commit's spec file, or its metric
    has no value) the kernel is named alone. ``bisect`` and ``bisect-step`` both word it here."""
    return failed.get(kernel) or f"kernel {kernel} has no value"


def decide_values(
    values: dict[str, float],
    good: dict[str, float],
    bad: dict[str, float],
    failed: Mapping[str, str] | None = None,
    *,
    good_failed: Mapping[str, str] | None = None,
    bad_failed: Mapping[str, str] | None = None,
) -> tuple[Outcome, str, float]:
    """The compile-only rule (module docstring) for several kernels: (outcome, reason, confidence).

    Confidence for one kernel is ``max(dg, db) / (dg + db)``: 1.0 at an endpoint, 0.5 half-way.
    A value outside the endpoints' range is judged by the same rule, and the reason says so
    (:mod:`ktriage.bisect.outside`): such a "bad" is no step between good and bad.
    ``failed``: why a kernel has no value here (it did not compile): the reason of a skip it causes,
    and said after the decision it does not take part in, with why it takes none
    (:func:`_not_bisected`), so that a commit judged without it still shows it failed.
    ``good_failed``/``bad_failed``: why a kernel has no value at that endpoint (the endpoint's
    ``failed``), the cause given for a kernel that failed there.
    """
    failed = failed or {}
    outcome, reason, conf = _decide(values, good, bad, failed)
    if outcome != "skip" and (outside := outside_endpoints(values, good, bad)):
        reason += "; " + outside_text(outside, good, bad)
    if outcome != "skip" and failed:
        reason += "; " + _not_bisected(failed, good, bad, good_failed or {}, bad_failed or {})
    return outcome, reason, conf


def _not_bisected(
    failed: Mapping[str, str],
    good: Mapping[str, float],
    bad: Mapping[str, float],
    good_failed: Mapping[str, str],
    bad_failed: Mapping[str, str],
) -> str:
    """Why each kernel of ``failed`` (no value here, and the decision was taken) is not bisected: it
    has a value at both endpoints, the same one (else the candidate is a skip), or it has none at an
    endpoint, whose error is given (it failed there too) or, with none recorded, the endpoint is
    named. Why not "it does not differ between the endpoints" for all: a kernel that failed at an
    endpoint was never compared, and that note sent the user looking for a change that is not there."""
    same = {k: e for k, e in failed.items() if k in good and k in bad}
    notes = (
        [
            f"{left_out_here(same)} (not bisected: {agree(len(same), 'it does', 'they do')} not differ between the endpoints)"
        ]
        if same
        else []
    )
    for kernel, error in failed.items():
        if kernel in same:
            continue
        which, errors = ("good", good_failed) if kernel not in good else ("bad", bad_failed)
        if kernel not in errors:
            why = f"the {which} endpoint has no value for it"
        elif _lacks_metric(kernel, errors[kernel]):  # it compiled there too: "failed" would be wrong
            why = f"the {which} endpoint has no value for it either"
        else:
            why = f"it failed at the {which} endpoint: {errors[kernel]}"
        notes.append(f"{left_out_here({kernel: error})} (not bisected: {why})")
    return "; ".join(notes)


def _decide(
    values: dict[str, float], good: dict[str, float], bad: dict[str, float], failed: Mapping[str, str]
) -> tuple[Outcome, str, float]:
    votes: list[tuple[str, Outcome, float]] = []
    for kernel, g in good.items():
        b = bad.get(kernel)
        if b is None or b == g:
            continue
        v = values.get(kernel)
        if v is None:
            return "skip", no_value(kernel, failed), 0.0
        dg, db = abs(v - g), abs(v - b)
        if v == g:
            votes.append((kernel, "good", 1.0))
        elif db < dg:
            votes.append((kernel, "bad", max(dg, db) / (dg + db)))
        elif dg < db:
            votes.append((kernel, "good", max(dg, db) / (dg + db)))
        else:
            votes.append((kernel, "unsure", 0.5))
    if not votes:
        return "unsure", "no kernel differs between the endpoints", 0.0
    outcomes = {o for _, o, _ in votes}
    if len(outcomes) == 1:
        outcome = next(iter(outcomes))
        conf = min(c for _, _, c in votes)
        if outcome == "unsure":
            return "unsure", "half-way between the endpoints", conf
        where = "the bad" if outcome == "bad" else "the good"
        return outcome, f"closer to {where} endpoint ({plural(len(votes), 'kernel')})", conf
    detail = ", ".join(f"{k}: {o}" for k, o, _ in votes)
    return "unsure", f"kernels disagree ({detail})", 0.0


def map_parallel(fn: Callable[[T], R], items: Sequence[T], workers: int) -> list[R]:
    """``fn`` over items with up to ``workers`` threads, results in order (a k-ary round)."""
    if workers <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        return list(pool.map(fn, items))


# --------------------------------------------------------------------------- compile counting

# --------------------------------------------------------------------------- kernels per candidate


@dataclass
class KernelSource:
    """Where a candidate's kernels come from: fixed specs (catalog op, spec file outside the repo)
    or a spec file inside the repository, read from each candidate's checkout."""

    specs: list[KernelSpec] | None = None
    repo_spec: str | None = None  # path relative to the checkout root
    inputs: tuple[str, ...] = ()

    def specs_for(self, prepared: Prepared) -> list[KernelSpec]:
        """The candidate's kernels that load (:meth:`loaded_for` without the others' errors)."""
        return self.loaded_for(prepared)[0]

    def loaded_for(self, prepared: Prepared) -> tuple[list[KernelSpec], dict[str, str]]:
        """The candidate's kernels that load, and the error of each kernel of the checkout's spec file
        left out because it does not load (by name: ``K does not load: ...``), so that a commit judged
        without it still says why it has no value (:class:`Measured`'s ``failed``)."""
        unloaded: dict[str, str] = {}
        if self.repo_spec is not None:
            if prepared.checkout is None:
                raise KtriageError(
                    "a spec path inside the repository needs a git source",
                    worded(
                        lambda o: (
                            f"use {o('spec', '--spec')} with a file path, or {o('source', '--source', 'git:PATH')}"
                        )
                    ),
                )
            path = prepared.checkout / self.repo_spec
            if not path.exists():
                raise CandidateFailed(f"{self.repo_spec} does not exist at this commit")
            specs, unloaded = self._checkout_specs(path)
        else:
            specs = list(self.specs or [])
        if prepared.package:
            specs = [s.replace(package=prepared.package) for s in specs]
        if not specs:  # a spec file none of whose kernels loads failed in _checkout_specs, naming each
            raise CandidateFailed("no kernel selected")
        return specs, unloaded

    def _checkout_specs(self, path: Path) -> tuple[list[KernelSpec], dict[str, str]]:
        """The kernels of the spec file at this commit that the bisect judges: those ``inputs`` selects
        (every one without ``inputs``). Why not the whole file: a kernel of the file that does not load
        at this commit (another kernel's typo, since fixed) says nothing of the bisected one, so the
        candidate is judged on the kernels that load; only a *selected* kernel that does not load fails
        it (with ``inputs``; without, one left out has no value, and the rule skips the candidate only
        where that kernel differs between the endpoints). No kernel that loads fails it too.

        ``inputs`` select as ``--input`` does on any spec file (``spec.select.select_kernels``: exact
        names first, a part only where it names one kernel, short labels, ranges), but per commit: a
        selector that names nothing here (its kernel not yet added, or renamed), or that is a part of
        several names here, fails this candidate (a skip; at an endpoint the bisect stops, since an
        endpoint must be measured) with the selector's error and fix, rather than refusing the whole
        bisect. A commit where a selected kernel is missing cannot be judged on it, as one where it
        does not load; the same selector may name it at the next commit.

        Also returned: the error of each kernel left out because it does not load, by name."""
        from ktriage.spec.select import select_kernels
        from ktriage.spec.toml_file import Loaded, NothingLoads, UnloadedKernel, read_spec_file

        kernels: list[Loaded]
        try:
            kernels = list(read_spec_file(path).kernels)
        except NothingLoads as exc:  # each kernel's error is said below, not only the first one's
            kernels = list(exc.unloaded)
        except KtriageError as exc:
            raise CandidateFailed(f"spec file does not load: {exc.problem}") from None
        if self.inputs:
            try:
                kernels = select_kernels(kernels, self.inputs, f"{self.repo_spec} at this commit")
            except KtriageError as exc:
                raise CandidateFailed(f"{exc.problem} — fix: {exc.fix}" if exc.fix else exc.problem) from None
            bad = [k for k in kernels if isinstance(k, UnloadedKernel)]
            if len(bad) == 1:
                raise CandidateFailed(
                    f"selected kernel {bad[0].spec.name} does not load: {bad[0].error.problem}", _errors_log(bad)
                )
            if bad:
                raise CandidateFailed(
                    "selected kernels do not load: " + "; ".join(_unloaded_lines(bad).values()), _errors_log(bad)
                )
        loaded = [k for k in kernels if isinstance(k, KernelSpec)]
        unloaded = _unloaded_lines([k for k in kernels if isinstance(k, UnloadedKernel)], kernel_keys(loaded))
        if not loaded:
            raise CandidateFailed(
                f"no kernel of {self.repo_spec} loads: " + "; ".join(unloaded.values()),
                _errors_log([k for k in kernels if isinstance(k, UnloadedKernel)]),
            )
        return loaded, unloaded

    @property
    def each_kernel_bisected(self) -> bool:
        """Whether one kernel that does not compile fails the candidate: only for the kernels ``inputs``
        selects in the repository's spec file (each was chosen by name in a file that changes with the
        history, as one that does not load). Otherwise the kernels are measured one by one, and one
        that does not compile only has no value there: without ``inputs`` the repository's file gives
        all its kernels, and fixed specs (a catalog op, a spec file outside the repository) are the
        same kernels at every candidate, where one that a release cannot compile (an API it lacks, a
        bug it has) says nothing of the others. The compile-only rule (:func:`decide_values`) then
        skips the candidate only where that kernel differs between the endpoints, and judges it on the
        others where not; a candidate where none compiles is a skip."""
        return self.repo_spec is not None and bool(self.inputs)


def _unloaded_lines(kernels: Sequence[UnloadedKernel], taken: Sequence[str] = ()) -> dict[str, str]:
    """Each kernel that does not load by name (``(unloaded)`` added where a kernel that loads, or one
    before it, has the name), with one line of its error naming it: ``K does not load: <first line>``."""
    lines: dict[str, str] = {}
    for k in kernels:
        key = k.spec.name if k.spec.name not in {*taken, *lines} else f"{k.spec.name} (unloaded)"
        first = (k.error.problem.strip().splitlines() or ["(no message)"])[0]
        lines[key] = f"{key} does not load: {first}"
    return lines


def _errors_log(kernels: Sequence[UnloadedKernel]) -> str:
    """The failure record of kernels that do not load: each one's whole error with its fix, one after
    another (the reason gives one line of each)."""
    return "\n".join(f"{k.spec.name}: {k.error}" for k in kernels)


def kernel_keys(specs: Sequence[KernelSpec]) -> list[str]:
    """Stable names for kernels across candidates (spec names, ``#2`` on duplicates)."""
    seen: dict[str, int] = {}
    keys = []
    for s in specs:
        seen[s.name] = seen.get(s.name, 0) + 1
        keys.append(s.name if seen[s.name] == 1 else f"{s.name}#{seen[s.name]}")
    return keys


class Measured(NamedTuple):
    """A candidate's kernels as :meth:`KernelMeasurer.measure` found them: the analysis of each that
    compiled, why each of the others did not load or compile, by name (only where that does not fail
    the candidate: :attr:`KernelSource.each_kernel_bisected`; one line each, naming the kernel, as a
    skip's reason says it: :func:`no_value`), and the frontend compiles it ran."""

    results: dict[str, KernelResult]
    failed: dict[str, str]
    compiles: int


class KernelMeasurer:
    """Compiles a candidate's kernels with its toolchain and analyzes them (explain's KernelResult).

    Results are kept in memory per candidate id for the closing ``explain``; the artifact cache makes
    a second measurement of a candidate (after ``--resume``) cost no compile.
    """

    def __init__(self, kernels: KernelSource, compiler: Compiler) -> None:
        self.kernels = kernels
        self.compiler = compiler
        self.results: dict[str, dict[str, KernelResult]] = {}

    def measure(self, prepared: Prepared) -> Measured:
        """The candidate's kernels compiled and analyzed; CandidateFailed to skip it: a kernel the bisect
        judges does not compile (or none does)."""
        from ktriage.explain.engine import Explainer
        from ktriage.toolchain.manager import ensure_toolchain

        if not prepared.toolchain:
            raise KtriageError(
                "compiling a candidate needs a toolchain",
                worded(
                    lambda o: (
                        f"add {o('toolchain', '--toolchain')}, e.g. {o('toolchain', '--toolchain', 'triton==3.4.0')}"
                    )
                ),
            )
        before = self.compiler.thread_compiles()
        try:
            # a release not built yet is downloaded and installed here (minutes): its steps are progress
            with progress.task(f"toolchain {prepared.toolchain}") as step:
                toolchain = ensure_toolchain(prepared.toolchain, progress=step.say)
        except KtriageError as exc:
            raise ToolchainUnavailable(f"toolchain {prepared.toolchain} is not available: {exc.problem}") from None
        specs, unloaded = self.kernels.loaded_for(prepared)
        explainer = Explainer(self.compiler)
        results: dict[str, KernelResult] = {}
        failed: dict[str, str] = dict(unloaded)
        for key, spec in zip(kernel_keys(specs), specs):
            try:
                results[key] = self._analyzed(key, spec, toolchain, explainer)
            except CandidateFailed as exc:
                if self.kernels.each_kernel_bisected:
                    raise
                failed[key] = exc.reason
        if not results:  # one kernel's error alone is already the reason, as a bisected kernel's is
            raise CandidateFailed(
                next(iter(failed.values())) if len(failed) == 1 else "no kernel compiled: " + "; ".join(failed.values())
            )
        self.results[prepared.candidate.id] = results
        return Measured(results, failed, self.compiler.thread_compiles() - before)

    def _analyzed(self, key: str, spec: KernelSpec, toolchain: Toolchain, explainer: Explainer) -> KernelResult:
        """One kernel compiled and analyzed; CandidateFailed (named by ``key``) when it cannot be."""
        outcome = self.compiler.compile(spec, toolchain)
        if not isinstance(outcome, Artifact):
            first = (outcome.message.strip().splitlines() or [outcome.kind])[-1]
            raise CandidateFailed(f"{key}: {outcome.stage} failed: {first}")
        try:
            return explainer.result_for(outcome)
        except KtriageError as exc:
            raise CandidateFailed(f"{key}: analysis failed: {exc.problem}") from None


# --------------------------------------------------------------------------- compile-only predicate


class MetricPredicate:
    """Compile-only predicate on one resource metric (see the module docstring for the rule)."""

    def __init__(
        self,
        metric: str,
        measurer: KernelMeasurer,
        workspace: Workspace,
        *,
        workers: int = 1,
        on_event: Callable[[str], None] | None = None,
    ) -> None:
        self.metric = check_metric(metric)
        self.name = f"metric:{self.metric}"
        self.measurer = measurer
        self.workspace = workspace
        self.workers = max(1, workers)
        self.good_values: dict[str, float] = {}
        self.bad_values: dict[str, float] = {}
        self.good_failed: dict[str, str] = {}  # why a kernel has no value at that endpoint (its ``failed``)
        self.bad_failed: dict[str, str] = {}
        self._say = on_event or (lambda _m: None)
        self._warned: set[str] = set()  # kernels already warned of having no value for the metric

    def _measure(self, candidate: Candidate) -> tuple[Observation, dict[str, float] | None]:
        cost = empty_cost()
        before = self.measurer.compiler.thread_compiles()
        try:
            prepared = self.workspace.prepare(candidate)
            results, failed, _ = self.measurer.measure(prepared)
        except CandidateFailed as exc:
            cost["compiles"] = self.measurer.compiler.thread_compiles() - before
            return Observation(candidate, "skip", exc.reason, {"log": exc.log} if exc.log else {}, cost, None), None
        cost["compiles"] = self.measurer.compiler.thread_compiles() - before
        values, no_metric = metric_values(results, self.metric)
        failed = {**failed, **no_metric}  # left out with why, as bisect-step's measure_here does
        kernels: dict[str, JSONObject] = {}
        for key, result in results.items():
            kernels[key] = {f: result.metric(f) for f in SUMMARY_FIELDS}
            kernels[key][self.metric] = values.get(key)
        meas: JSONObject = {
            "metric": self.metric,
            "values": values,
            "kernels": kernels,
            "toolchain": prepared.toolchain,
        }
        if failed:
            meas["failed"] = dict(failed)
        return Observation(candidate, "unsure", "measured", meas, cost, None), values

    def _measure_many(self, candidates: list[Candidate]) -> list[tuple[Observation, dict[str, float] | None]]:
        """Measure a round's candidates, ``workers`` at a time here (``bisect.cluster`` sends them out)."""
        return map_parallel(self._measure, candidates, self.workers)

    def _warn_no_value(self, observations: Sequence[Observation]) -> None:
        """Warn once per kernel the first time its analysis gives no value for the metric: it is left
        out wherever it has none (the observation's ``measurements.failed`` and reason say so each
        time), and the user believes every kernel is judged unless told. Once, because a kernel that
        gives none at one candidate mostly gives none at every one (the value comes from a log that
        is not there), and a line per candidate would bury the rounds. In the caller's thread: the
        measurements may run on worker threads or a cluster."""
        for obs in observations:
            for kernel, error in saved_failures(obs).items():
                if _lacks_metric(kernel, error) and kernel not in self._warned:
                    self._warned.add(kernel)
                    log.warning(
                        joined(
                            f"{error} (at {obs.candidate.label}): the bisect leaves {kernel} out wherever it has none (each observation's measurements.failed names it); to judge it, pick another ",
                            option("metric", "--metric"),
                            f" (e.g. {('registers' if self.metric != 'registers' else 'stack_bytes')})",
                        )
                    )

    def preflight(self, good: Candidate, bad: Candidate) -> list[Observation]:
        (g_obs, g_vals), (b_obs, b_vals) = self._measure_many([good, bad])
        self._warn_no_value([g_obs, b_obs])
        for obs, vals, which in ((g_obs, g_vals, "good"), (b_obs, b_vals, "bad")):
            if vals is None:
                raise KtriageError(
                    f"the {which} endpoint {obs.candidate.label} could not be tested: {obs.reason}",
                    "fix the endpoint (toolchain, build, spec) or pick another one",
                )
        assert g_vals is not None and b_vals is not None
        self.good_values, self.bad_values = g_vals, b_vals
        self.good_failed, self.bad_failed = saved_failures(g_obs), saved_failures(b_obs)
        differing = [k for k in g_vals if k in b_vals and g_vals[k] != b_vals[k]]
        failed = {**saved_failures(g_obs), **saved_failures(b_obs)}
        if not differing:
            shown = ", ".join(f"{k}={g_vals[k]:g}" for k in list(g_vals)[:4])
            absent = ""
            if self.metric.startswith("sass:") and not any([*g_vals.values(), *b_vals.values()]):
                # an opcode neither endpoint issues is more often a misspelling than a real non-change
                absent = f"; neither endpoint's SASS has {self.metric[5:]} in any kernel"
            others = ", ".join([m for m in ("registers", "stack_bytes", "sass:STL") if m != self.metric][:2])
            if failed:  # a kernel that did not compile at an endpoint may be the one that changed
                absent += f"; not compared: {'; '.join(failed.values())}"
            raise KtriageError(
                f"endpoints do not differ: {self.metric} is the same at {good.label} and {bad.label} ({shown}){absent}",
                ("check the opcode's spelling (the SASS opcodes explain lists), " if absent else "")
                + worded(
                    lambda o: (
                        f"check {spelled(_GOOD, o)} and {spelled(_BAD, o)}, pick another {o('metric', '--metric')} (e.g. {others}) or other kernels"
                    )
                ),
            )
        for obs, which in ((g_obs, "good"), (b_obs, "bad")):
            here = saved_failures(obs)
            obs.reason = f"{which} endpoint (measured)" + (f"; {left_out_here(here)} (not bisected)" if here else "")
        g_obs.outcome, g_obs.confidence = "good", 1.0
        b_obs.outcome, b_obs.confidence = "bad", 1.0
        return [g_obs, b_obs]

    def restore(self, good: Observation, bad: Observation) -> None:
        """Restore the endpoint values from a saved state (``--resume``) without re-measuring."""
        self.good_values, self.bad_values = saved_values(good), saved_values(bad)
        self.good_failed, self.bad_failed = saved_failures(good), saved_failures(bad)

    def test(self, candidates: Sequence[Candidate]) -> list[Observation]:
        if not self.good_values:
            raise RuntimeError("MetricPredicate.test before preflight")
        out = []
        measured = self._measure_many(list(candidates))
        self._warn_no_value([obs for obs, _ in measured])
        for obs, values in measured:
            if values is not None:
                obs.outcome, obs.reason, obs.confidence = decide_values(
                    values,
                    self.good_values,
                    self.bad_values,
                    saved_failures(obs),
                    good_failed=self.good_failed,
                    bad_failed=self.bad_failed,
                )
            out.append(obs)
        return out


# --------------------------------------------------------------------------- command predicate


class BisectAbort(KtriageError):
    """The user command exited >= 128: stop the whole bisect (git bisect run does the same)."""


def classify_exit(code: int) -> Outcome | None:
    """``git bisect run`` semantics: 0 good, 125 skip, 1-127 bad, anything else None (= abort)."""
    if code == 0:
        return "good"
    if code == 125:
        return "skip"
    if 1 <= code <= 127:
        return "bad"
    return None


class CommandPredicate:
    """A user command per candidate, run in its checkout (git) or the current directory.

    The command sees ``KTRIAGE_CANDIDATE``, ``KTRIAGE_TOOLCHAIN`` and ``KTRIAGE_PYTHON`` (the
    candidate toolchain's interpreter, when the candidate is a toolchain), ``KTRIAGE_COMMIT`` and
    ``KTRIAGE_CHECKOUT`` for commits.
    """

    def __init__(
        self,
        command: str,
        workspace: Workspace,
        *,
        timeout_s: float | None = None,
        workers: int = 1,
        cwd: Path | None = None,
    ) -> None:
        self.command = command
        self.name = "command"
        self.workspace = workspace
        self.timeout_s = timeout_s
        self.workers = max(1, workers)
        self.cwd = cwd or Path(os.getcwd())

    def _run(self, candidate: Candidate) -> Observation:
        try:
            prepared = self.workspace.prepare(candidate)
            env = dict(prepared.env)
            if prepared.toolchain and prepared.candidate.meta.get("kind") in ("pypi", "ptxas"):
                env["KTRIAGE_PYTHON"] = self._python(prepared.toolchain)
        except CandidateFailed as exc:
            return Observation(candidate, "skip", exc.reason, {"log": exc.log} if exc.log else {}, empty_cost(), None)
        result = run_shell(self.command, cwd=prepared.checkout or self.cwd, env=env, timeout_s=self.timeout_s)
        meas: JSONObject = {
            "exit": result.returncode,
            "seconds": round(result.seconds, 3),
            "output": tail(result.output, 8),
        }
        if result.timed_out:
            return Observation(
                candidate, "skip", f"command timed out after {self.timeout_s:g} s", meas, empty_cost(), None
            )
        outcome = classify_exit(result.returncode or 0)
        if outcome is None:
            raise BisectAbort(
                f"the command exited {result.returncode} at {candidate.label} (>= 128 aborts the bisect, as in git bisect run)",
                worded(
                    lambda o: (
                        "fix the command (exit 125 to skip a candidate it cannot test); "
                        f"{o('resume', '--resume', True)} continues where it stopped"
                    )
                ),
            )
        reason = {"good": "exit 0", "skip": "exit 125 (skip)", "bad": f"exit {result.returncode}"}[outcome]
        return Observation(candidate, outcome, reason, meas, empty_cost(), 1.0 if outcome != "skip" else None)

    def _python(self, toolchain: str) -> str:
        """The interpreter of a toolchain candidate (installed here first: minutes for a release not built
        yet); ``ToolchainUnavailable`` (a skip here; on a cluster node, the node is unfit) when it cannot be."""
        from ktriage.toolchain.manager import ensure_toolchain

        try:
            return str(ensure_toolchain(toolchain).python)
        except KtriageError as exc:
            raise ToolchainUnavailable(f"toolchain {toolchain} is not available: {exc.problem}") from None

    def preflight(self, good: Candidate, bad: Candidate) -> list[Observation]:
        g, b = self._run_many([good, bad])
        if g.outcome != "good" or b.outcome != "bad":
            if g.outcome == b.outcome:
                raise KtriageError(
                    f"endpoints do not differ: the command says {g.outcome} ({g.reason}) at both {good.label} and {bad.label}",
                    worded(
                        lambda o: (
                            f"check {spelled(_GOOD, o)}, {spelled(_BAD, o)} and the command (it must exit 0 at the good endpoint and 1-127 at the bad one)"
                        )
                    ),
                )
            raise KtriageError(
                f"the endpoints are not good/bad for the command: {good.label}: {g.outcome} ({g.reason}); {bad.label}: {b.outcome} ({b.reason})",
                worded(
                    lambda o: (
                        f"the command must exit 0 at {spelled(_GOOD, o)} and 1-127 (not 125) at {spelled(_BAD, o)}; swap them if they are reversed"
                    )
                ),
            )
        return [g, b]

    def restore(self, good: Observation, bad: Observation) -> None:
        """Nothing to restore: a command decides on its own."""

    def _run_many(self, candidates: list[Candidate]) -> list[Observation]:
        """Run the command for a round's candidates, ``workers`` at a time here (``bisect.cluster`` sends them out)."""
        return map_parallel(self._run, candidates, self.workers)

    def test(self, candidates: Sequence[Candidate]) -> list[Observation]:
        return self._run_many(list(candidates))
