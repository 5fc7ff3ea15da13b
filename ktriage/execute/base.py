"""The executor model: a job is a module-level function with picklable arguments and a kind.

Why kinds and not resource numbers: the caller says *what* a job is, the backend decides *where*:
``compile`` and ``build`` jobs go to CPU slots, a ``timing`` job to a GPU (the whole comparison in
one job, so every variant of it is timed in one process on one GPU, on every backend). Results come
back as ``JobResult`` with the ``Placement`` that ran them, so tests and reports can say where work
ran. A job that raises, or whose node is lost after the backend's retries, is a failed
``JobResult``, never an exception out of ``run``: a sweep or a bisect round goes on without it.
"""

from __future__ import annotations

import copy
import os
import socket
import threading
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar

from ktriage.errors import KtriageError, joined

R = TypeVar("R")
JobKind = Literal["compile", "build", "timing"]
KINDS: tuple[JobKind, ...] = ("compile", "build", "timing")


@dataclass(frozen=True)
class Placement:
    """Where a job ran: the backend's node id (``local`` for the embedded pool), host and process."""

    node_id: str
    hostname: str
    pid: int

    def to_json(self) -> dict[str, str | int]:
        return {"node_id": self.node_id, "hostname": self.hostname, "pid": self.pid}


@dataclass(frozen=True)
class Job(Generic[R]):
    """One unit of work. ``fn`` must be importable by name on every node (a module-level function),
    ``args`` picklable. ``key``: jobs with the same key are the same work (the driver runs it once)."""

    kind: JobKind
    fn: Callable[..., R]
    args: tuple[Any, ...] = ()
    key: str | None = None
    label: str = ""
    needs: str | None = None
    """What the job needs of its node, as the user wrote it (a toolchain spec, e.g. the ``-t`` of a bisect
    whose candidates build wheels). A node found unfit for one job with these needs (``NodeUnfit``), while
    another node then ran that job, gets no other job with them while the executor lives (one run): it
    would pay the same failed install again, after building each candidate first."""


@dataclass
class JobResult(Generic[R]):
    """A finished job: ``value`` when ``ok``, else ``error`` (the exception text) and ``lost``: True when
    the backend gave up on the node rather than the job failing on its own."""

    job: Job[R]
    ok: bool
    value: R | None = None
    error: str = ""
    lost: bool = False
    placement: Placement | None = None
    unfit: bool = False
    """True when every node the job tried was unfit for it (``NodeUnfit``); ``error`` names each."""
    attempts: int = 1
    extra: dict[str, object] = field(default_factory=dict)
    exception: KtriageError | None = None
    """The :class:`KtriageError` the job raised, whole (its class, problem, fix, details), when it raised one;
    ``error`` is its text. Raise :meth:`job_error`, which names the node, rather than wrapping ``error``."""

    def job_error(self) -> KtriageError | None:
        """The job's own error to raise where it was collected, as if the job had run here: the error it
        raised, of its class, with its fix, its problem naming the node it ran on (``(on node 1a2b3c4d5e6f on
        gpu-host)``; nothing added for this machine's pool); None when the job raised no KtriageError.

        Why not a wrapper error over ``error``: the cluster's callers raised "the timing job failed on the
        cluster: <the job's problem and fix>" under their own generic fix, so the job's fix (``CudaError``'s,
        a spec's) was read as part of the problem and the fix shown was the wrapper's, and a caller catching
        the job's class (``BisectAbort``, ``MeasureError``) no longer caught it."""
        error = self.exception
        if error is None or self.placement is None or self.placement.node_id == "local":
            return error
        named = copy.copy(error)  # KtriageError.__reduce__: the same class and attributes, nothing shared changed
        named.problem = joined(error.problem, f" (on node {self.placement.node_id[:12]} on {self.placement.hostname})")
        if error.args and error.args[0] == error.problem:  # Exception's text too, where it is the problem
            named.args = (named.problem, *error.args[1:])
        return named


OnDone = Callable[[int, "JobResult[Any]"], None]


class NodeUnfit(KtriageError):
    """A job raises this when the node it landed on cannot do it but another node might: the node
    could not build the job's toolchain (no package index or network there, a full disk). A cluster
    executor runs the job again on a node not yet found unfit for it, and fails it, naming every
    node's reason, only when no such node is left; the node is remembered as unfit for the job's
    ``Job.needs`` for the rest of the run. Why not Ray's own retries: they retry only lost
    nodes and workers, and could pick the same node again; a cell the rest of the cluster could
    compile was reported failed, under the node's "triton==3.4.0 is not on the package index"."""


class Executor(Protocol):
    """Runs jobs; ``run`` returns one result per job, in order, calling ``on_done(index, result)`` as
    each finishes (from the calling thread or a pool thread: callers lock what they share)."""

    name: str
    remote: bool
    """True when jobs may run on another machine: their files must come back by value."""

    def slots(self, kind: JobKind) -> int:
        """How many jobs of ``kind`` can run at once (a k-ary bisect round is sized to it)."""
        ...

    def run(self, jobs: Sequence[Job[R]], *, on_done: OnDone | None = None) -> list[JobResult[R]]: ...

    def close(self) -> None: ...


class PinnedWorker(Protocol):
    """One worker process that holds one slot of its kind (a GPU for ``timing``) for its whole life:
    every ``call`` runs in that process, on that GPU. What a measurement made of several calls needs
    (a time bisect's sampling rounds: samples of one comparison never come from two GPUs)."""

    where: dict[str, object]
    """Where it runs, once known (node, host, pid, the GPU ids it was given); empty before the first call."""

    def call(self, fn: Callable[..., R], args: tuple[Any, ...]) -> JobResult[R]: ...

    def close(self) -> None: ...


def here(node_id: str = "local") -> Placement:
    return Placement(node_id, socket.gethostname(), os.getpid())


def call_job(fn: Callable[..., R], args: tuple[Any, ...]) -> tuple[R, Placement]:
    """Run one job where it is, returning its value and this process's placement."""
    return fn(*args), here()


class LocalExecutor:
    """The embedded default: jobs run in threads of this process (each compile or build job starts its
    own subprocess: the compile worker pool, the build shell), ``workers`` at a time."""

    name = "local"
    remote = False

    def __init__(self, workers: int | None = None) -> None:
        self.workers = max(1, workers or (os.cpu_count() or 1))
        self._lock = threading.Lock()

    def slots(self, kind: JobKind) -> int:
        return 1 if kind == "timing" else self.workers  # one GPU process at a time on one host

    def run(self, jobs: Sequence[Job[R]], *, on_done: OnDone | None = None) -> list[JobResult[R]]:
        results: list[JobResult[R] | None] = [None] * len(jobs)

        def one(i: int) -> JobResult[R]:
            job = jobs[i]
            try:
                value, where = call_job(job.fn, job.args)
                return JobResult(job, True, value, placement=where)
            except NodeUnfit as exc:  # this machine is the only node: its reason is the job's failure
                error = exc.problem if not exc.fix else f"{exc.problem} (fix: {exc.fix})"
                return JobResult(job, False, error=error, placement=here())
            except KtriageError as exc:
                return JobResult(job, False, error=_error_text(exc), placement=here(), exception=exc)
            except Exception as exc:
                return JobResult(job, False, error=_error_text(exc), placement=here())

        if not jobs:
            return []
        width = min(len(jobs), self.workers)
        with ThreadPoolExecutor(max_workers=width) as pool:
            futures: dict[Future[JobResult[R]], int] = {pool.submit(one, i): i for i in range(len(jobs))}
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    i = futures[fut]
                    result = results[i] = fut.result()
                    if on_done is not None:
                        with self._lock:
                            on_done(i, result)
        return [r for r in results if r is not None]

    def close(self) -> None:
        pass

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _error_text(exc: BaseException) -> str:
    last = traceback.format_exception_only(type(exc), exc)
    return "".join(last).strip()


def remote_label(executor: Executor | None) -> str | None:
    """Where jobs go when they leave this machine, for progress lines (a cluster executor's ``label``,
    e.g. the Ray cluster ``--cluster auto`` joined); None for this machine's own pool."""
    if executor is None or not executor.remote:
        return None
    label = getattr(executor, "label", None)
    return str(label) if label else executor.name
