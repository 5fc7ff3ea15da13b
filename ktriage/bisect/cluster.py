"""Bisect rounds on a remote executor (``ktriage bisect --cluster``): each candidate is one job.

A job checks the commit out on the node, runs the build command there (cached by commit and build
command: ``workspace.BUILD_MARKER``), and compiles and analyzes the candidate's kernels (or runs the
user's command); what comes back is the same ``Observation`` a local round makes, decided here by
the same rule against the endpoints. So ``--workers k`` is k candidates built and tested at once
across the cluster, the search and its state file are the driver's (written after every round, as
locally: kill the driver and ``--resume`` loses nothing), and a node that dies mid-build has its job
run again elsewhere by the executor; the answer does not depend on where a candidate ran.

A time bisect (``--metric latency``) keeps its predicate here and sends each measurement, every
variant of one comparison together, to a worker that holds one GPU of the cluster for the whole
bisect (``RemoteMeasure``); with ``--gpus N`` there are N such workers and each takes its own
group of a round's candidates, with both endpoints, as on one host with several GPUs.

Where a node works: ``<its ktriage home>/cluster/bisect/<the bisect's fingerprint>/checkouts``. The
repository path must exist on every node (one host, or shared storage); docs/cluster.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ktriage.bisect.candidate import Candidate, Observation, empty_cost
from ktriage.bisect.decide import MeasureFn
from ktriage.bisect.predicates import (
    CommandPredicate,
    KernelMeasurer,
    KernelSource,
    Measured,
    MetricPredicate,
)
from ktriage.bisect.workspace import Prepared, ToolchainUnavailable, Workspace
from ktriage.errors import KtriageError, MeasureError, worded
from ktriage.execute.base import Executor, Job, JobResult, NodeUnfit, PinnedWorker, Placement
from ktriage.home import home_subdir
from ktriage.schema.jsontypes import JSONObject

R = TypeVar("R")


@dataclass(frozen=True)
class NodeConfig:
    """What a node needs to test a candidate (picklable: it travels with every job)."""

    key: str  # the bisect's fingerprint digest: names the node's work dir
    toolchain: str | None = None
    build: str | None = None
    build_timeout_s: float | None = 3600.0
    pin_repo: str | None = None
    metric: str | None = None
    kernels: KernelSource | None = None
    command: str | None = None
    timeout_s: float | None = None
    cwd: str | None = None
    cache_dir: str | None = None  # None: the node's own artifact cache


def node_workspace(cfg: NodeConfig) -> Workspace:
    return Workspace(
        work_dir=home_subdir("cluster") / "bisect" / cfg.key,
        toolchain=cfg.toolchain,
        build=cfg.build,
        build_timeout_s=cfg.build_timeout_s,
        pin_repo=Path(cfg.pin_repo) if cfg.pin_repo else None,
        keep_checkouts=True,
    )


def metric_job(cfg: NodeConfig, candidate: Candidate) -> tuple[Observation, dict[str, float] | None]:
    """On a node: build and compile one candidate; the observation is decided by the driver."""
    from ktriage.compile.remote import node_compiler

    assert cfg.metric is not None and cfg.kernels is not None
    measurer = _NodeMeasurer(cfg.kernels, node_compiler(cfg.cache_dir))
    return MetricPredicate(cfg.metric, measurer, node_workspace(cfg))._measure(candidate)


def job_needs(cfg: NodeConfig, candidate: Candidate) -> str | None:
    """What a candidate's job needs of its node (``Job.needs``): the toolchain installed there. A toolchain
    candidate's own spec; for a commit, the toolchain spec as the user gave it (``-t``): its ``{checkout}``
    wheel differs per commit, but a node that could not install one (no package index there for the
    wheel's dependencies) cannot install the next, and each would be built there first."""
    if candidate.meta.get("kind") in ("pypi", "ptxas"):
        return str(candidate.meta["toolchain"])
    return cfg.toolchain


def _node_unfit(exc: ToolchainUnavailable) -> NodeUnfit:
    """A candidate toolchain this node cannot install: the node is unfit for the job (the executor tries
    another node), where on the user's own machine it is a skip."""
    why = " ".join(line.strip() for line in exc.reason.splitlines() if line.strip())
    return NodeUnfit(
        f"{why[:300]} (on this node)",
        "make the toolchain installable on that node (its package index, network, disk), or start the "
        "cluster without it (docs/cluster.md)",
    )


class _NodeMeasurer(KernelMeasurer):
    """A node's measurer: a candidate toolchain this node cannot install makes the node unfit for the job
    (``NodeUnfit``: the executor tries another node) instead of a skip. One node without a package index
    for the wheel's dependencies aborted the whole bisect when it drew an endpoint ("the bad endpoint
    could not be tested"), and skipped any other candidate it drew: the answer depended on the node."""

    def measure(self, prepared: Prepared) -> Measured:
        try:
            return super().measure(prepared)
        except ToolchainUnavailable as exc:
            raise _node_unfit(exc) from None


class _NodeCommandPredicate(CommandPredicate):
    """A node's command predicate: a toolchain candidate this node cannot install (for ``KTRIAGE_PYTHON``)
    makes the node unfit, as :class:`_NodeMeasurer` does, before the user's command runs. The candidate
    was a skip wherever such a node drew it, and the bisect stopped when it drew an endpoint."""

    def _python(self, toolchain: str) -> str:
        try:
            return super()._python(toolchain)
        except ToolchainUnavailable as exc:
            raise _node_unfit(exc) from None


def command_job(cfg: NodeConfig, candidate: Candidate) -> Observation:
    """On a node: build one candidate and run the user's command in its checkout (``NodeUnfit`` where this
    node cannot install a toolchain candidate: the executor moves the job). A command that exits >= 128
    raises ``BisectAbort`` here, and it comes back whole (a ``KtriageError`` pickles whole): the driver raises
    it as the job's own, naming the node (``JobResult.job_error``). It came back as a dict of two strings
    that the driver rebuilt, which lost the node it ran on (and would have turned a missing fix into "None")."""
    assert cfg.command is not None
    pred = _NodeCommandPredicate(
        cfg.command, node_workspace(cfg), timeout_s=cfg.timeout_s, cwd=Path(cfg.cwd) if cfg.cwd else None
    )
    return pred._run(candidate)


def _job(fn: Callable[[NodeConfig, Candidate], R], cfg: NodeConfig, candidate: Candidate) -> Job[R]:
    """One candidate's build job (its key: the candidate, so a round never sends one twice)."""
    label = f"bisect {candidate.label}"[:60]
    return Job("build", fn, (cfg, candidate), key=candidate.id, label=label, needs=job_needs(cfg, candidate))


SKIP_REASON_CHARS = 1000
"""How much of a cluster failure a skip's reason keeps; the whole text goes to its ``log``. At 400 the
reason of a job no node could install stopped mid-path, before the node's reason ended and its fix."""


def _lost(candidate: Candidate, result: JobResult[Any]) -> Observation:
    """A job the cluster could not finish (its node died more often than the retries allow, or no node
    could install its toolchain): skip it."""
    reason = f"not tested: {result.error}"
    cut: JSONObject = {"log": result.error} if len(reason) > SKIP_REASON_CHARS else {}
    shown = reason if not cut else reason[: SKIP_REASON_CHARS - 1] + "…"
    return Observation(candidate, "skip", shown, cut, empty_cost(), None)


class ClusterMetricPredicate(MetricPredicate):
    """``MetricPredicate`` whose rounds run on ``executor``, one build job per candidate."""

    def __init__(
        self, cfg: NodeConfig, measurer: KernelMeasurer, workspace: Workspace, executor: Executor, *, workers: int = 1
    ) -> None:
        assert cfg.metric is not None
        super().__init__(cfg.metric, measurer, workspace, workers=workers)
        self.cfg = cfg
        self.executor = executor

    def _measure_many(self, candidates: list[Candidate]) -> list[tuple[Observation, dict[str, float] | None]]:
        jobs = [_job(metric_job, self.cfg, c) for c in candidates]
        out: list[tuple[Observation, dict[str, float] | None]] = []
        for cand, result in zip(candidates, self.executor.run(jobs)):
            if result.ok and result.value is not None:
                out.append(result.value)
            elif result.lost or result.unfit:  # no node could install its toolchain: a skip, as locally
                out.append((_lost(cand, result), None))
            else:
                raise result.job_error() or KtriageError(
                    f"bisect job for {cand.label} failed on the cluster: {result.error}",
                    worded(
                        lambda o: (
                            f"the same candidate fails locally too? run without {o('cluster', '--cluster')} to see it"
                        )
                    ),
                )
        return out


class ClusterCommandPredicate(CommandPredicate):
    """``CommandPredicate`` whose rounds run on ``executor``, one build job per candidate."""

    def __init__(self, cfg: NodeConfig, workspace: Workspace, executor: Executor, *, workers: int = 1) -> None:
        assert cfg.command is not None
        super().__init__(
            cfg.command, workspace, timeout_s=cfg.timeout_s, workers=workers, cwd=Path(cfg.cwd) if cfg.cwd else None
        )
        self.cfg = cfg
        self.executor = executor

    def _run_many(self, candidates: list[Candidate]) -> list[Observation]:
        jobs = [_job(command_job, self.cfg, c) for c in candidates]
        out: list[Observation] = []
        for cand, result in zip(candidates, self.executor.run(jobs)):
            if result.ok and result.value is not None:
                out.append(result.value)
            elif result.lost or result.unfit:  # no node could install its toolchain: a skip, as locally
                out.append(_lost(cand, result))
            else:
                raise result.job_error() or KtriageError(  # BisectAbort too: the command's own, naming the node
                    f"bisect job for {cand.label} failed on the cluster: {result.error}",
                    worded(lambda o: f"run without {o('cluster', '--cluster')} to see it"),
                )
        return out


# --------------------------------------------------------------------------- timing on the GPU node

_MEASURES: dict[str, MeasureFn] = {}  # per process: the measure of each (factory, args), built once


def timing_job(
    factory: Callable[..., Any], args: tuple[Any, ...], variants: list[Any], n: int
) -> tuple[dict[str, list[float]], dict[str, str]]:
    """On the GPU node: ``n`` samples of every variant of one comparison, interleaved in this process.

    The measure is built once per process from ``factory(*args)`` (for a time bisect
    ``bench_measure_job``: the bundle's replays, prepared once and reused by later rounds) and kept."""
    key = f"{getattr(factory, '__module__', '')}.{getattr(factory, '__qualname__', repr(factory))}{args!r}"
    if key not in _MEASURES:
        _MEASURES[key] = factory(*args)
    measure = _MEASURES[key]
    got = measure(variants, n)
    errors = getattr(measure, "errors", None)
    return dict(got), dict(errors) if isinstance(errors, dict) else {}


def bench_measure_job(bundle: str, backend: str, input_id: int, mode: str | None, artifact_timing: str) -> Any:
    """The time bisect's GPU measure (``gpu_measure.bench_measure``) built on the GPU node; the bundle
    directory must be at that path there (shared storage, or copied before)."""
    from ktriage.bisect.gpu_measure import bench_measure

    return bench_measure(bundle, backend=backend, input_id=input_id, mode=mode, artifact_timing=artifact_timing)


@dataclass
class RemoteMeasure:
    """A time bisect's ``MeasureFn`` on ONE GPU of the cluster: a pinned worker (a Ray actor holding
    that GPU, ``RayExecutor.pinned_worker``) runs every call, so the endpoints and a round's
    candidates, and the later sampling rounds of the same comparison, are all timed in one process
    on one GPU, wherever Ray placed it. (One plain task per call could land on another GPU node in
    a later sampling round, and the verdict would pool samples of two GPUs.) ``--gpus N`` on the
    cluster is N of these (``gpu`` = the position in that pool), each given its own group of a
    round. ``errors`` and ``placements`` gather what the calls reported; ``where`` says where it runs."""

    executor: Any  # a RayExecutor (anything with ``pinned_worker``)
    factory: Callable[..., Any]
    args: tuple[Any, ...]
    gpu: int | None = None
    errors: dict[str, str] = field(default_factory=dict)
    placements: list[Placement] = field(default_factory=list)
    _worker: PinnedWorker | None = None

    @property
    def where(self) -> JSONObject:
        """The GPU's host and node once the worker runs (observations record it): empty before."""
        w = self._worker.where if self._worker is not None else {}
        if not w:
            return {}
        ids = w.get("gpu_ids", [])  # the worker's GPU ids, as strings (ray_backend)
        return {
            "gpu_host": str(w["hostname"]),
            "gpu_node": str(w["node_id"])[:12],
            "gpu_ids": [str(g) for g in ids] if isinstance(ids, list) else [],
        }

    def __call__(self, variants: list[Any], n: int) -> dict[str, list[float]]:
        if self._worker is None:
            self._worker = self.executor.pinned_worker(
                "timing", label="timing" if self.gpu is None else f"timing gpu {self.gpu}"
            )
        result = self._worker.call(timing_job, (self.factory, self.args, list(variants), n))
        if not result.ok or result.value is None:
            raise result.job_error() or MeasureError(
                f"the timing job failed on the cluster: {result.error}",
                worded(
                    lambda o: (
                        "check the GPU node (ray status) and that the bundle is at the same path there; "
                        f"a lost GPU worker is not replaced mid-bisect: {o('resume', '--resume', True)} continues "
                        "from the saved rounds"
                    )
                ),
            )
        samples, errors = result.value
        self.errors.update(errors)
        if result.placement is not None:
            self.placements.append(result.placement)
        return samples

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
