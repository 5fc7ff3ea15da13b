"""``ktriage bisect`` as a library call: options in, a ``BisectReport`` out.

Glues the parts: list the candidates (sources), make the predicate (compile metric, user command,
or GPU time), run the search stage by stage with the state file, expand a dependency pin bump into
the pinned repository (nested stage, as Pinpoint does with DEPS rolls), and explain the culprit
against its predecessor (registers, spills, SASS, frontend/ptxas attribution).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ktriage.bisect import gitrepo
from ktriage.bisect.candidate import Candidate, Observation, Predicate
from ktriage.bisect.cluster import ClusterCommandPredicate, ClusterMetricPredicate, NodeConfig
from ktriage.bisect.explained import EXPLAIN_METRICS, CulpritKernel, MetricMove, Metrics, OpcodeMove
from ktriage.bisect.improvement import improvement_note
from ktriage.bisect.predicates import (
    CommandPredicate,
    KernelMeasurer,
    KernelSource,
    MetricPredicate,
    check_metric,
)
from ktriage.bisect.search import StageResult, StateFile, run_search
from ktriage.bisect.source_change import (
    KERNEL_SOURCE,
    SourceChange,
    compare_kernel_files,
    kernel_files,
    source_file_of,
)
from ktriage.bisect.sources import (
    Source,
    git_candidates,
    parse_source,
    pin_change,
    ptxas_candidates,
    pypi_candidates,
    read_pin,
)
from ktriage.bisect.workspace import Workspace
from ktriage.compile.compiler import Compiler
from ktriage.errors import KtriageError, joined, option, run_as, separated, spelled, worded
from ktriage.execute.base import Executor, remote_label
from ktriage.execute.select import cluster_address, open_executor
from ktriage.home import home_subdir, portable_path
from ktriage.schema.jsontypes import JSONObject, JSONValue
from ktriage.stats.gate import gate_band
from ktriage.wording import agree, plural

if TYPE_CHECKING:
    from ktriage.explain.engine import KernelResult
    from ktriage.predict.model import Prediction

Say = Callable[[str], None]


@dataclass
class BisectOptions:
    """Everything ``ktriage bisect`` takes (see docs/bisect.md for each)."""

    source: str
    good: str
    bad: str
    metric: str | None = None  # a compile metric, or "latency"
    command: str | None = None
    op: str | None = None
    mode: str = "bwd"
    inputs: tuple[str, ...] = ()
    spec: str | None = None  # a spec TOML; for git sources a path inside the repository is read per commit
    toolchain: str | None = None
    build: str | None = None
    first_parent: bool = False
    pin_file: str | None = None
    pin_repo: Path | None = None
    workers: int = 1
    timeout_s: float | None = None  # per command run
    build_timeout_s: float | None = 3600.0
    state: Path | None = None
    resume: bool = False
    pre: bool = False
    arch: str = "sm_90"
    dtype: str | None = None
    sm_count: int | None = None
    jobs: int | None = None
    cache_dir: Path | None = None  # artifact cache (default: the ktriage home's)
    explain: bool = True
    keep_checkouts: bool = False
    # GPU time (--metric latency): a compile-here bundle, run on the GPU host
    bundle: Path | None = None
    backend: str | None = None
    artifact_timing: str = "kernel"  # kernel launches only: the library's host work is the same for every toolchain
    max_samples: int = 200  # per variant, before a candidate is called unsure
    threshold: float = 0.05  # the smallest relative change the verdicts count
    gpus: tuple[int, ...] = ()  # --gpus: a round's candidates spread over these GPUs (each group with both endpoints)
    cluster_gpus: str | None = (
        None  # --gpus with --cluster: all or a count of the cluster's GPUs (one pinned worker each)
    )
    cluster: str | None = None  # --cluster: where candidates are built and tested (not part of the question)


@dataclass
class BisectReport:
    """What a bisect found, stage by stage (stage 2+ are nested pin expansions)."""

    options: BisectOptions
    stages: list[StageResult]
    stage_names: list[str]
    explain: list[CulpritKernel] | None = None  # culprit vs predecessor per kernel, when found and asked
    explain_note: str | None = None
    notes: list[str] = field(default_factory=list)
    frontend_compiles: int = 0  # run by this run; a --resume's earlier runs: ``earlier_compiles``
    state_path: Path | None = None

    @property
    def earlier_compiles(self) -> int:
        """The frontend compiles of the observations a --resume read back from the state: run by earlier
        runs, counted in each stage's cost (the terminal's "N frontend compiles"), not in ``frontend_compiles``."""
        return sum(int(s.cost().get("compiles", 0) - s.cost(this_run=True).get("compiles", 0)) for s in self.stages)

    @property
    def final(self) -> StageResult:
        return self.stages[-1]

    @property
    def found(self) -> bool:
        return self.final.status == "culprit"


# --------------------------------------------------------------------------- setup


def _num_warps(value: JSONValue) -> int:
    """A bundle entry's ``launch["num_warps"]`` (an int; Triton's default 4 when it is not a number)."""
    return int(value) if isinstance(value, (int, float)) else 4


def _fingerprint(opts: BisectOptions) -> JSONObject:
    return {
        "source": opts.source,
        "good": opts.good,
        "bad": opts.bad,
        "metric": opts.metric,
        "command": opts.command,
        "op": opts.op,
        "mode": opts.mode,
        "inputs": list(opts.inputs),
        "spec": opts.spec,
        "toolchain": opts.toolchain,
        "build": opts.build,
        "first_parent": opts.first_parent,
        "pin_file": opts.pin_file,
        "pin_repo": str(opts.pin_repo) if opts.pin_repo else None,
        "arch": opts.arch,
        "dtype": opts.dtype,
        "bundle": str(opts.bundle) if opts.bundle else None,
        "backend": opts.backend,
    }


def _digest(opts: BisectOptions) -> str:
    return hashlib.sha256(json.dumps(_fingerprint(opts), sort_keys=True).encode()).hexdigest()[:16]


def default_state_path(opts: BisectOptions) -> Path:
    """``<home>/bisect/<hash of the question>.json``: the same command resumes the same state."""
    return home_subdir("bisect") / f"{_digest(opts)}.json"


def check_options(opts: BisectOptions) -> Source:
    """Reject contradictory or incomplete options before anything is built (exit 2)."""
    metric, command = option("metric", "--metric"), option("command", "--command")
    if opts.metric is None and opts.command is None:
        raise KtriageError(
            worded(lambda o: f"no predicate: give {spelled(metric, o)} or {spelled(command, o)}"),
            worded(
                lambda o: (
                    f"e.g. {o('metric', '--metric', 'spill_store_bytes')}, {o('metric', '--metric', 'latency')}, "
                    f"or {o('command', '--command', './test.sh')}"
                )
            ),
        )
    if opts.metric is not None and opts.command is not None:
        raise KtriageError(
            worded(lambda o: f"{spelled(metric, o)} and {spelled(command, o)} were both given"), "choose one predicate"
        )
    if opts.metric is not None and opts.metric != "latency":
        check_metric(opts.metric)
    if opts.workers < 1:  # kt.bisect refuses it first (api._args.WORKERS); BisectOptions built by hand
        raise KtriageError(
            worded(lambda o: f"{o('workers', '--workers', opts.workers)} must be >= 1"),
            worded(lambda o: f"e.g. {o('workers', '--workers', 3)} tests 3 candidates per round"),
        )
    source = parse_source(opts.source)
    needs_kernels = opts.metric is not None and opts.metric != "latency"  # latency: the bundle holds the kernels
    toolchain = option("toolchain", "-t/--toolchain")
    op, spec = option("op", "--op"), option("spec", "--spec")
    if needs_kernels and not (opts.op or opts.spec):
        raise KtriageError(
            worded(lambda o: f"{o('metric', '--metric', opts.metric)} needs kernels"),
            worded(lambda o: f"add {o('op', '--op', 'NAME')} (a catalog op) or {o('spec', '--spec', 'FILE.toml')}"),
        )
    if opts.op and opts.spec:
        raise KtriageError(
            worded(lambda o: f"{spelled(op, o)} and {spelled(spec, o)} were both given"),
            "choose one way to name the kernels",
        )
    if source.kind == "ptxas" and not opts.toolchain:
        raise KtriageError(
            worded(lambda o: f"{o('source', '--source', 'ptxas')} needs the fixed frontend"),
            worded(lambda o: f"add {o('toolchain', '--toolchain', 'triton==3.4.0')}"),
        )
    if source.kind == "git" and opts.metric == "latency":
        raise KtriageError(
            worded(lambda o: f"{o('metric', '--metric', 'latency')} bisects toolchains from a bundle, not commits"),
            worded(lambda o: f"for commits use a compile metric, or {spelled(command, o)} with a timing script"),
        )
    if source.kind == "git" and needs_kernels and not opts.toolchain:
        raise KtriageError(
            worded(lambda o: f"compiling commits needs a toolchain: no {spelled(toolchain, o)} given"),
            worded(
                lambda o: (
                    f"add {o('toolchain', '--toolchain', 'triton==3.4.0')} (or triton={{checkout}}/dist/*.whl after a wheel build)"
                )
            ),
        )
    _check_git_only(opts, source)
    if bool(opts.pin_file) != bool(opts.pin_repo):
        raise KtriageError(
            worded(lambda o: f"{o('pin_file', '--pin-file')} and {o('pin_repo', '--pin-repo')} go together"),
            worded(
                lambda o: (
                    f"e.g. {o('pin_file', '--pin-file', 'cmake/llvm-hash.txt')} with "
                    f"{o('pin_repo', '--pin-repo', '../llvm-project')}"
                )
            ),
        )
    if opts.metric == "latency" and not opts.bundle:
        raise KtriageError(
            worded(lambda o: f"{o('metric', '--metric', 'latency')} measures on the GPU from a compile-here bundle"),
            worded(
                lambda o: (
                    "build one for the candidate toolchains with "
                    + spelled(
                        run_as(
                            "kt.bench(op=..., toolchains=[...], compile_only=True, bundle='DIR')",
                            "ktriage bench --compile-only --bundle DIR -t ...",
                        ),
                        o,
                    )
                    + f" and pass {o('bundle', '--bundle', 'DIR')} with {o('backend', '--backend', 'NAME')}"
                )
            ),
        )
    if opts.metric == "latency":
        _check_timed(opts)
    else:
        _check_untimed(opts)
    if source.kind == "git" and opts.pin_file and opts.pin_repo:
        assert source.repo is not None
        _check_pin(source.repo, opts.bad, opts.pin_file, opts.pin_repo)
    return source


def _check_git_only(opts: BisectOptions, source: Source) -> None:
    """The options of commit bisects build, check out and walk a repository: a pypi or ptxas source has
    none, so each one given is refused by name (--keep-checkouts on pypi:triton was accepted and kept
    nothing: a release is installed, never checked out)."""
    if source.kind == "git":
        return
    given = [
        option(name, flag)
        for name, flag, value in (
            ("build", "--build", opts.build),
            ("pin_file", "--pin-file", opts.pin_file),
            ("first_parent", "--first-parent", opts.first_parent),
            ("keep_checkouts", "--keep-checkouts", opts.keep_checkouts),
        )
        if value
    ]
    if given:
        listed = separated(", ", given)
        raise KtriageError(
            worded(
                lambda o: (
                    f"{spelled(listed, o)} {agree(len(given), 'applies', 'apply')} to "
                    f"{o('source', '--source', 'git:PATH')} only (commits built in checkouts), not to "
                    f"{o('source', '--source', opts.source)}"
                )
            ),
            "drop " + listed + f": a {source.kind} candidate is a release, installed, never checked out or built",
        )


def _check_untimed(opts: BisectOptions) -> None:
    """The timed bisect's own options, given to a compile-only or command bisect, are refused as --gpus
    is: they were ignored without a word (--threshold 0.2 on --metric spill_store_bytes changed nothing)."""
    default = {f.name: f.default for f in fields(BisectOptions)}
    given = [
        option(name, flag)
        for flag, name in (
            ("--backend", "backend"),
            ("--artifact-timing", "artifact_timing"),
            ("--max-samples", "max_samples"),
            ("--threshold", "threshold"),
        )
        if getattr(opts, name) != default[name]
    ]
    if given:
        listed = separated(", ", given)
        what = option("metric", "--metric", opts.metric) if opts.metric else option("command", "--command")
        raise KtriageError(
            worded(
                lambda o: (
                    f"{spelled(listed, o)} {agree(len(given), 'applies', 'apply')} to a timed bisect "
                    f"({o('metric', '--metric', 'latency')}), not to {spelled(what, o)}"
                )
            ),
            "drop " + listed + f": the {'metric is exact' if opts.metric else 'command decides'}, nothing is sampled",
        )


def _check_pin(repo: Path, bad: str, pin_file: str, pin_repo: Path) -> None:
    """The nested bisect's pin file and repository, checked before anything is built: both were read
    only when the culprit was found, so a misspelt --pin-file (or one holding no hash) ended the bisect
    at the parent's culprit without a word, and a --pin-repo that is no repository was never looked at."""
    try:
        gitrepo.repo_root(pin_repo)
    except KtriageError as exc:
        raise KtriageError(
            joined(option("pin_repo", "--pin-repo"), ": ", exc.problem),
            worded(
                lambda o: (
                    f"give the local checkout of the pinned repository, e.g. {o('pin_repo', '--pin-repo', '../llvm-project')}"
                )
            ),
        ) from None
    if read_pin(gitrepo.file_at(repo, gitrepo.resolve_commit(repo, bad), pin_file)) is None:
        raise KtriageError(
            worded(
                lambda o: (
                    f"{o('pin_file', '--pin-file', pin_file)} holds no commit hash at {o('bad', '--bad', bad)} in "
                    f"{repo} (no such file, or no 7-40 digit hex word)"
                )
            ),
            "name the file that pins the other repository's commit, relative to the repository's top, e.g. cmake/llvm-hash.txt",
        )


def _check_timed(opts: BisectOptions) -> None:
    """A timed bisect's backend, input and timing target, checked here on the CPU: on the GPU host a
    wrong one surfaced only when the good endpoint was prepared, after the GPU worker had started."""
    from ktriage.ops.registry import replays
    from ktriage.workload.bundles.format import load_bundle
    from ktriage.workload.ops.artifacts import TIMINGS

    assert opts.bundle is not None
    bundle = load_bundle(opts.bundle)
    held = [b for b in bundle.backends if b in replays()]
    example = held[0] if held else "liger_layer_norm"
    if not opts.backend or len(opts.inputs) != 1 or not opts.inputs[0].isdigit():
        raise KtriageError(
            worded(
                lambda o: (
                    f"{o('metric', '--metric', 'latency')} needs one {o('backend', '--backend')} and one numeric "
                    f"{o('inputs', '--input')} id"
                )
            ),
            worded(lambda o: f"e.g. {o('backend', '--backend', example)} and {o('inputs', '--input', ['7'])}"),
        )
    if opts.backend not in held:
        raise KtriageError(
            worded(
                lambda o: (
                    f"{o('backend', '--backend', opts.backend)} is not an artifact backend of bundle {opts.bundle} "
                    f"({bundle.op})"
                )
            ),
            f"use one it holds: {', '.join(held)}"
            if held
            else f"build a bundle of an op with a replayed backend ({', '.join(replays())})",
        )
    if opts.artifact_timing not in TIMINGS:
        raise KtriageError(
            worded(
                lambda o: f"{o('artifact_timing', '--artifact-timing', opts.artifact_timing)} is not a timing target"
            ),
            f"use one of: {', '.join(TIMINGS)}",
        )


def list_candidates(opts: BisectOptions, source: Source) -> list[Candidate]:
    """Stage 1's candidates for the options' source."""
    if source.kind == "pypi":
        assert source.package is not None
        if opts.bundle is not None:
            return _bundle_candidates(opts, "triton")
        return pypi_candidates(source.package, opts.good, opts.bad, toolchain=opts.toolchain, pre=opts.pre)
    if source.kind == "ptxas":
        assert opts.toolchain is not None
        if opts.bundle is not None:
            return _bundle_candidates(opts, "ptxas")
        return ptxas_candidates(opts.good, opts.bad, toolchain=opts.toolchain, pre=opts.pre)
    assert source.repo is not None
    return git_candidates(source.repo, opts.good, opts.bad, first_parent=opts.first_parent)


def _bundle_candidates(opts: BisectOptions, key: str) -> list[Candidate]:
    """Toolchain candidates from a bundle's toolchains (the GPU host cannot reach the index)."""
    from packaging.version import Version

    from ktriage.bisect.sources import versions_between
    from ktriage.workload.bundles.format import load_bundle

    assert opts.bundle is not None
    bun = load_bundle(opts.bundle)
    by_version: dict[str, tuple[str, str]] = {}
    for tc_id, tc in bun.toolchains.items():
        if tc.get("variant_of"):  # a tune config or source fix of a toolchain, not a release
            continue
        version = str(tc["triton_version"] if key == "triton" else tc["ptxas_version"])
        by_version[version] = (tc_id, str(tc["spec"]))
    chosen = versions_between(
        list(by_version), opts.good, opts.bad, pre=True, what=key, where=f"in bundle {opts.bundle}"
    )
    chosen.sort(key=Version)
    return [
        Candidate(
            i,
            v,
            by_version[v][1],
            {
                "kind": "pypi" if key == "triton" else "ptxas",
                "version": v,
                "toolchain": by_version[v][1],
                "toolchain_id": by_version[v][0],
            },
        )
        for i, v in enumerate(chosen)
    ]


def kernel_source(opts: BisectOptions, source: Source) -> KernelSource | None:
    """The kernels the predicate compiles (None for a command without kernels)."""
    if opts.op:
        from ktriage.catalog import expand_op

        specs = expand_op(
            opts.op,
            mode=opts.mode,
            target=opts.arch,
            dtype=opts.dtype,
            inputs=list(opts.inputs) or None,
            sm_count=opts.sm_count,
        )
        return KernelSource(specs=specs)
    if opts.spec:
        if source.kind == "git":
            assert source.repo is not None
            rel = Path(opts.spec)
            if not rel.is_absolute() and gitrepo.file_at(source.repo, opts.bad, rel.as_posix()) is not None:
                return KernelSource(repo_spec=rel.as_posix(), inputs=tuple(opts.inputs))
        from ktriage.catalog.resolve import resolve_specs

        # --precision/--sm-count are refused for a spec file; --arch other than the default replaces its target
        return KernelSource(
            specs=resolve_specs(
                opts.spec,
                inputs=list(opts.inputs) or None,
                dtype=opts.dtype,
                sm_count=opts.sm_count,
                target_arch=opts.arch if opts.arch != "sm_90" else None,
            )
        )
    return None


# --------------------------------------------------------------------------- running


class _Run:
    def __init__(self, opts: BisectOptions, say: Say) -> None:
        self.opts = opts
        self.say = say
        self.source = check_options(opts)
        self.state_path = opts.state or default_state_path(opts)
        fp = _fingerprint(opts)
        if opts.resume:
            self.state = StateFile.resume(self.state_path, fp)
        elif opts.state is not None:  # a path the user named may hold another bisect's rounds: not replaced
            self.state = StateFile.start(self.state_path, fp)
        else:  # the default path is named after the question: only this bisect's state, started over
            self.state = StateFile(self.state_path, fp)
        self.kernels = kernel_source(opts, self.source)  # after the state's checks: it may resolve a catalog op
        work = self.state_path.with_suffix("")
        self.workspace = Workspace(
            work_dir=Path(str(work) + ".work"),
            toolchain=opts.toolchain,
            build=opts.build,
            build_timeout_s=opts.build_timeout_s,
            pin_repo=opts.pin_repo,
            keep_checkouts=True,
        )
        self.compiler = Compiler(jobs=max(opts.jobs or 1, opts.workers), cache_dir=opts.cache_dir)
        self.measurer = KernelMeasurer(self.kernels, self.compiler) if self.kernels is not None else None
        self.executor: Executor | None = None
        self.gpu_workers: list[
            Any
        ] = []  # the time predicate's pinned GPU workers (cluster or --gpus), closed with the run
        if cluster_address(opts.cluster) is not None:
            self.executor = open_executor(opts.cluster)

    def _node_config(self) -> NodeConfig:
        opts = self.opts
        return NodeConfig(
            key=_digest(opts),
            toolchain=opts.toolchain,
            build=opts.build,
            build_timeout_s=opts.build_timeout_s,
            pin_repo=str(opts.pin_repo) if opts.pin_repo else None,
            metric=opts.metric,
            kernels=self.kernels,
            command=opts.command,
            timeout_s=opts.timeout_s,
            cwd=str(Path.cwd()),
            cache_dir=None,
        )

    def predicate(self) -> Predicate:
        opts = self.opts
        if self.executor is not None and opts.metric != "latency":
            if opts.command is not None:
                return ClusterCommandPredicate(self._node_config(), self.workspace, self.executor, workers=opts.workers)
            assert self.measurer is not None
            return ClusterMetricPredicate(
                self._node_config(), self.measurer, self.workspace, self.executor, workers=opts.workers
            )
        if opts.command is not None:
            return CommandPredicate(opts.command, self.workspace, timeout_s=opts.timeout_s, workers=opts.workers)
        if opts.metric == "latency":
            return self._time_predicate()
        assert self.measurer is not None and opts.metric is not None
        return MetricPredicate(opts.metric, self.measurer, self.workspace, workers=opts.workers)

    def _time_predicate(self) -> Predicate:
        """The GPU-time predicate (ktriage.bisect.time_predicate), used only through the Predicate protocol."""
        from ktriage.bisect.time_predicate import TimePredicate

        opts = self.opts
        assert opts.backend is not None  # check_options: one --backend of the bundle, one numeric --input
        from ktriage.bisect.cluster import bench_measure_job
        from ktriage.stats.verdict import DEFAULT_CONFIG

        args = (str(opts.bundle), opts.backend, int(opts.inputs[0]), opts.mode, opts.artifact_timing)
        measures: list[Any]
        if self.executor is not None:  # timed on the cluster: one worker holding one GPU per --gpus
            from ktriage.bisect.cluster import RemoteMeasure
            from ktriage.measure.gpus import select_gpu_count

            count = select_gpu_count(opts.cluster_gpus, self.executor.slots("timing"))
            measures = [
                RemoteMeasure(self.executor, bench_measure_job, args, gpu=i if count > 1 else None)
                for i in range(count)
            ]
            self.gpu_workers.extend(measures)
        elif len(opts.gpus) > 1:  # one pinned worker per GPU; each group of a round with both endpoints on its GPU
            from ktriage.bisect.gpu_pool import GpuWorkerMeasure

            measures = [GpuWorkerMeasure(g, bench_measure_job, args) for g in opts.gpus]
            self.gpu_workers.extend(measures)
        else:
            try:
                measures = [bench_measure_job(*args)]
            except KtriageError:
                raise
            except Exception as exc:
                raise KtriageError(
                    f"--metric latency cannot measure here: {type(exc).__name__}: {str(exc)[:200]}",
                    "run it on the GPU host (torch + cuda.bindings); compile the bundle here first",
                ) from None
        return TimePredicate(
            measures[0],
            config=replace(DEFAULT_CONFIG, threshold=opts.threshold),
            max_samples=opts.max_samples,
            more_gpus=measures[1:],
        )

    def run_stage(self, number: int, name: str, candidates: list[Candidate]) -> StageResult:
        record = self.state.stage(number, name, candidates)
        where = remote_label(self.executor)  # the cluster the candidates go to, as explain's progress names it
        self.say(
            f"{name}: {plural(len(candidates), 'candidate')}, {candidates[0].label} .. {candidates[-1].label}"
            + (f"; tested on {where}" if where else "")
        )

        def on_round(r: int, batch: list[Observation]) -> None:
            for o in batch:
                self.say(f"  {'preflight' if r == 0 else f'round {r}'}: {o.candidate.label}: {o.outcome} ({o.reason})")

        return run_search(
            candidates,
            self.predicate(),
            workers=self.opts.workers,
            record=record,
            save=self.state.save,
            on_round=on_round,
        )

    def nested(self, result: StageResult) -> tuple[str, list[Candidate]] | None:
        """Stage 2's candidates when the culprit commit moves the pin file, else None."""
        opts = self.opts
        if not (opts.pin_file and opts.pin_repo and result.culprit and result.predecessor):
            return None
        repo = Path(str(result.culprit.meta["repo"]))
        change = pin_change(repo, result.predecessor.id, result.culprit.id, opts.pin_file)
        if change is None:
            return None
        old, new = change
        child = gitrepo.repo_root(opts.pin_repo)
        shas = gitrepo.commit_range(child, old, new, first_parent=opts.first_parent)
        subj = gitrepo.subjects(child, shas)
        meta_base = {
            "kind": "git",
            "repo": str(repo),
            "commit": result.culprit.id,
            "pin_file": opts.pin_file,
            "pin_old": old,
            "pin_repo": str(child),
        }
        cands = [
            Candidate(i, sha, f"{sha[:12]} {subj.get(sha, '')}".rstrip(), {**meta_base, "pin_value": sha})
            for i, sha in enumerate(shas)
        ]
        name = f"{opts.pin_file} {old[:12]}..{new[:12]} in {child.name} (pinned by {result.culprit.id[:12]})"
        return name, cands

    def close(self, report: BisectReport) -> None:
        self.compiler.close()
        for worker in self.gpu_workers:
            worker.close()
        if self.executor is not None:
            self.executor.close()
        if self.opts.keep_checkouts:
            return
        keep: set[Path] = set()
        if report.stages:
            for c in (report.final.culprit, report.final.predecessor):
                if c is not None and c.meta.get("kind") == "git":
                    keep.add(self.workspace.checkout_dir(c))
        root = self.workspace.work_dir / "checkouts"
        if root.exists():
            for stage in report.stages:
                for c in stage.candidates:
                    if c.meta.get("kind") != "git":
                        continue
                    where = self.workspace.checkout_dir(c)
                    if where.exists() and where not in keep:
                        gitrepo.remove_worktree(Path(str(c.meta["repo"])), where)


def run_bisect(opts: BisectOptions, say: Say | None = None) -> BisectReport:
    """Run a whole bisect (all stages, explain) and return the report; the state file is kept."""
    speak = say or (lambda _m: None)
    run = _Run(opts, speak)
    stages: list[StageResult] = []
    names: list[str] = []
    report = BisectReport(opts, stages, names, state_path=run.state_path)
    try:
        candidates = list_candidates(opts, run.source)
        name = f"{run.source} {opts.good}..{opts.bad}"
        stages.append(run.run_stage(0, name, candidates))
        names.append(name)
        nested = run.nested(stages[-1]) if stages[-1].status == "culprit" else None
        if nested is not None:
            nested_name, nested_cands = nested
            try:
                stages.append(run.run_stage(1, nested_name, nested_cands))
                names.append(nested_name)
            except KtriageError as exc:
                if "endpoints do not differ" not in exc.problem:
                    raise
                report.notes.append(
                    f"the pin bump of {stages[0].culprit.label if stages[0].culprit else ''} does not "
                    f"change the result on its own ({exc.problem}); the culprit is the commit itself"
                )
        # this run's, from the observations it measured, as the terminal's stage line counts them: the
        # compiler's own count matched it before a --resume, whose stage lines added the earlier runs'
        report.frontend_compiles = sum(int(s.cost(this_run=True).get("compiles", 0)) for s in stages)
        if opts.explain and report.found and opts.bundle is not None:
            _explain_from_bundle(opts, report)
        elif opts.explain and report.found and run.measurer is not None:
            _explain(run, report)
        if note := improvement_note(
            report.final, opts.metric, [e.prediction for e in report.explain or () if e.prediction is not None]
        ):
            report.notes.append(note)
        run.state.data["result"] = {
            "found": report.found,
            "stage": len(stages) - 1,
            "culprit": report.final.culprit.to_json() if report.final.culprit else None,
        }
        run.state.save()
    except KeyboardInterrupt:
        # Ctrl-C ended the bisect with exit 130 and not a word: nothing said that the rounds done are
        # kept, nor that only --resume reads them (the same command without it starts over)
        speak(interrupted_text(run.state))
        raise
    finally:
        run.close(report)
    return report


def interrupted_text(state: StateFile) -> str:
    """What Ctrl-C leaves, as the line says it: the rounds done, kept for --resume; or, where it came
    before the preflight had measured both endpoints, nothing (it said "the rounds done are kept" there
    too, and a --resume then found nothing to continue: the same command starts again)."""
    measured, rounds = state.measured()
    if measured == 0:
        return (
            "interrupted during the preflight, before any candidate was measured: nothing was done yet; "
            "run the same command again to start"
        )
    if rounds == 0:
        return (
            f"interrupted: the endpoints the preflight measured are kept in {state.path}; "
            "run the same command with --resume to continue from them"
        )
    return f"interrupted: the rounds done are kept in {state.path}; run the same command with --resume to continue from them"


def _explain_from_bundle(opts: BisectOptions, report: BisectReport) -> None:
    """A time bisect over a bundle runs on the GPU host, which cannot compile: explain culprit vs
    predecessor from the resources the bundle recorded for their kernels (registers, spills, stack,
    SASS opcode counts). The PTX-level attribution needs the toolchains: the note gives the
    ``ktriage explain`` command for the compile machine. A ptxas bisect holds the frontend fixed,
    so its PTX is the same on both sides: ptxas is responsible by construction."""
    from ktriage.analyze.occupancy import compute_occupancy
    from ktriage.workload.bundles.format import BundleArtifact, load_bundle

    final = report.final
    assert final.culprit is not None and final.predecessor is not None and opts.bundle is not None
    bun = load_bundle(opts.bundle)
    ids = [str(c.meta.get("toolchain_id", c.id)) for c in (final.predecessor, final.culprit)]

    def metrics(art: BundleArtifact) -> Metrics:
        res = art.resources or {}
        out: Metrics = {m: res.get(m) for m in EXPLAIN_METRICS if m != "ctas_per_sm"}
        try:
            occ = compute_occupancy(
                bun.target,
                int(res["registers"]),
                _num_warps(art.launch.get("num_warps", 4)),
                int(res["shared_bytes"]),
                barriers=res.get("barriers") or 1,
            )
            out["ctas_per_sm"] = occ.ctas_per_sm
        except (KeyError, TypeError, ValueError, KtriageError):
            out["ctas_per_sm"] = None
        return out

    attribution = "ptxas" if opts.source == "ptxas" else "unknown (needs the PTX: run the command below)"
    out = []
    for key, spec in bun.specs.items():
        arts = [bun.artifacts.get((key, tc_id)) for tc_id in ids]
        if not all(isinstance(a, BundleArtifact) for a in arts):
            continue
        p_art, c_art = arts
        assert isinstance(p_art, BundleArtifact) and isinstance(c_art, BundleArtifact)
        p_ops = (p_art.resources or {}).get("sass_opcodes") or {}
        c_ops = (c_art.resources or {}).get("sass_opcodes") or {}
        delta = {op: c_ops.get(op, 0) - p_ops.get(op, 0) for op in set(p_ops) | set(c_ops)}
        delta = {op: d for op, d in sorted(delta.items(), key=lambda kv: (-abs(kv[1]), kv[0])) if d}
        pm, cm = metrics(p_art), metrics(c_art)
        changes = [
            MetricMove(m, pm[m], cm[m], f"{m.replace('_', ' ')}: {pm[m]} -> {cm[m]}")
            for m in EXPLAIN_METRICS
            if pm[m] != cm[m]
        ]
        out.append(
            CulpritKernel(
                "bundle",
                spec.name,
                pm,
                cm,
                attribution,
                changes,
                [OpcodeMove(op, d) for op, d in delta.items()],
                ", ".join(f"{op} {d:+d}" for op, d in list(delta.items())[:8]) or "no SASS opcode change",
                {
                    "predecessor_cubin": portable_path(p_art.cubin_path),
                    "culprit_cubin": portable_path(c_art.cubin_path),
                },
            )
        )
    report.explain = out
    inputs = " ".join(f"--input {i}" for i in opts.inputs)
    pred, cul = (str(c.meta.get("toolchain", c.label)) for c in (final.predecessor, final.culprit))
    report.explain_note = (
        f"explained from the bundle's recorded resources; for the PTX/SASS diff and the frontend-vs-ptxas "
        f"attribution run on the compile machine: ktriage explain {opts.op or opts.spec} "
        f"--{opts.mode} {inputs} -t '{pred}' -t '{cul}'"
    )


def _explain(run: _Run, report: BisectReport) -> None:
    """Explain culprit vs predecessor per kernel (ktriage.explain's comparison, with attribution)."""
    from ktriage.explain.engine import Explainer, opcode_delta_text

    assert run.measurer is not None
    final = report.final
    assert final.culprit is not None and final.predecessor is not None
    try:
        results = []
        for cand in (final.predecessor, final.culprit):
            got = run.measurer.results.get(cand.id)
            if got is None:
                got = run.measurer.measure(run.workspace.prepare(cand)).results
            results.append(got)
    except Exception as exc:
        report.explain_note = (
            f"explain not available: {getattr(exc, 'problem', None) or getattr(exc, 'reason', None) or exc}"
        )
        return
    explainer = Explainer(run.compiler)
    out = []
    for kernel, ref in results[0].items():
        new = results[1].get(kernel)
        if new is None:
            continue
        cmp = explainer.compare(ref, new)
        try:
            source = _source_change(run, final.predecessor, final.culprit, ref, new)
        except (KtriageError, OSError, ValueError):  # the explain goes on without the kernel's lines
            source = None
        out.append(
            CulpritKernel(
                "compiled",
                kernel,
                {m: ref.metric(m) for m in EXPLAIN_METRICS},
                {m: new.metric(m) for m in EXPLAIN_METRICS},
                KERNEL_SOURCE if source is not None and source.same_toolchain else cmp.attribution(),
                list(cmp.changes),
                list(cmp.opcode_changes),
                opcode_delta_text(cmp),
                {
                    "predecessor_ptx": portable_path(ref.artifact.frontend.ptx_path),
                    "culprit_ptx": portable_path(new.artifact.frontend.ptx_path),
                },
                cmp.cross_errors,
                cmp.prediction,
                source,
            )
        )
    report.explain = out
    note = neutral_culprit_note([e.prediction for e in out if e.prediction is not None])
    if note:
        report.notes.append(note)


def _source_change(
    run: _Run, before: Candidate, after: Candidate, ref: KernelResult, new: KernelResult
) -> SourceChange | None:
    """What the kernel's own files changed from ``before`` to ``after`` (:mod:`ktriage.bisect.source_change`):
    always given where one toolchain compiled both (the change is then the kernel's, not the compiler's),
    and where the toolchain changed too only when a line of the kernel changed (a Triton commit range
    whose spec lives in the repository). None for a release range of a fixed kernel."""
    same = ref.toolchain.id == new.toolchain.id
    sides = []
    for cand, result in ((before, ref), (after, new)):
        root, spec_file = None, None
        if cand.meta.get("kind") == "git":
            root = run.workspace.checkout_dir(cand)
            if run.kernels is not None and run.kernels.repo_spec is not None:
                spec_file = root / run.kernels.repo_spec
        package = result.artifact.spec.package
        source = source_file_of(result.artifact.spec.source, package)
        if package and source is not None and root is None:
            root = _package_root(package)
        files = kernel_files(source, spec_file) if source is not None else [p for p in (spec_file,) if p]
        sides.append((files, root))
    names, hunks, unreadable = compare_kernel_files(sides[0][0], sides[1][0], sides[0][1], sides[1][1])
    requirements = [str(c.meta.get("requirement") or "") for c in (before, after)]
    release = " -> ".join(requirements) if all(requirements) and requirements[0] != requirements[1] else None
    change = SourceChange(same, tuple(names), tuple(hunks), release, tuple(unreadable))
    return change if same or change.hunks else None


def _package_root(requirement: str) -> Path | None:
    """The folder a kernel package release is installed in (compiling it installed it), for naming its files."""
    from ktriage.spec.packages import ensure_package

    try:
        return ensure_package(requirement)
    except KtriageError:
        return None


def neutral_culprit_note(predictions: Sequence[Prediction]) -> str | None:
    """The note a compile-only bisect adds when the cost model predicts every change of its culprit neutral
    (docs/model.md): the change found may not be the slowdown. Where a point leans slower (beyond the gate,
    its interval not), it says so: weaker than a call, stronger than "within the gate"."""
    if not predictions or any(p.kind != "neutral" for p in predictions):
        return None
    gate = f"{gate_band(predictions[0].threshold)} gate"
    leaning = [p for p in predictions if p.lean == "regression"]
    where = (
        f"its point leans slower, {max(leaning, key=lambda p: p.ratio).percent()}, but the interval reaches "
        f"inside the {gate}"
        if leaning
        else f"within the {gate}"
    )
    return (
        f"the culprit's compile-side change is predicted neutral ({where}): if the slowdown is real, it may not "
        "be this change; bisect by timing (--metric latency --bundle ...)"
    )
