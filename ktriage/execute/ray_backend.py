"""The Ray backend: the same jobs on a Ray cluster (docs/cluster.md).

Placement: ``compile`` and ``build`` jobs ask for one CPU each, so a node runs as many at once as it
declared with ``ray start --num-cpus``; a ``timing`` job asks for one GPU (``num_gpus=1`` when the
cluster has GPUs, else the custom resource ``gpu_slot`` a node declares with
``--resources '{"gpu_slot": 1}'``) and no CPU, so it never waits behind compiles and runs only on a
node that declares a GPU. Values (artifact files, observations, samples) come back through Ray's
object store. A node that dies mid-job: Ray runs the job again elsewhere (``max_retries``, system
failures only: a job that raises is not retried, it failed; a :class:`KtriageError` it raised comes
back whole, with the node, for the caller to raise as its own: ``JobResult.job_error``). Jobs with the
same ``key`` run once.
A job that finds its node unfit (``NodeUnfit``: the node cannot build its toolchain) is sent
again to a node not yet found unfit for it (Ray's node-id label), and fails with every node's reason
when none is left. A node that refused a job another node then ran is remembered for the job's
``needs`` (its toolchain spec) as long as the executor lives: later jobs with those needs are not sent
there (a bisect candidate built there first, then failed the same install, round after round), and a
warning says once which node refused what and why; jobs with other needs still go there. Within one
``run``, at most as many jobs of a kind are in flight as the cluster has slots for; those sent after a
node's first refusal avoid it at once (it drew the round's queued jobs one by one, each refused once).

A :class:`RayPinnedWorker` is a Ray actor holding one GPU (or ``gpu_slot``) for its life: the calls
of one measurement that spans several jobs (a time bisect's sampling rounds) all run in its one
process on its one GPU, on whichever node Ray placed it. It is not restarted: a lost worker fails
its call, and the caller decides (a bisect stops and can be resumed; it never mixes two GPUs).

Ray is imported here only, and only when a cluster is asked for: ``pip install 'ktriage[cluster]'``.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict, TypeVar

from ktriage.errors import KtriageError
from ktriage.execute.base import Job, JobKind, JobResult, NodeUnfit, OnDone, Placement, call_job
from ktriage.wording import plural

R = TypeVar("R")
GPU_RESOURCE = "gpu_slot"
"""The custom resource a GPU node declares when Ray does not see its GPU (or in CI, which has none)."""
DEFAULT_RETRIES = 3
NODE_ID_LABEL = "ray.io/node-id"
"""The label Ray gives every node (its id): a job sent again after :class:`NodeUnfit` selects ``!in(...)``."""
_REMOTE: Any = None
_PINNED: Any = None
log = logging.getLogger("ktriage.execute")


@dataclass(frozen=True)
class _Unfit:
    """What a node sends back instead of a value when its job raised :class:`NodeUnfit` there."""

    problem: str
    fix: str | None


@dataclass(frozen=True)
class _Raised:
    """What a node sends back instead of a value when its job raised a :class:`KtriageError` there: the error
    itself (it pickles whole), with the placement beside it, so the driver can raise it as the job's own,
    naming the node (``JobResult.job_error``). Through Ray's ``RayTaskError`` only the node's IP came back."""

    error: KtriageError


def _node_call(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, Placement]:
    """Runs on the node: the job, and where it ran (Ray's node id, host, pid). A job that finds this
    node unfit comes back as :class:`_Unfit` (a value, so Ray neither retries it nor wraps it), one that
    raised a KtriageError as :class:`_Raised`; any other exception is raised to Ray."""
    import ray

    from ktriage.execute.base import here

    try:
        value, where = call_job(fn, args)
    except NodeUnfit as exc:
        value, where = _Unfit(exc.problem, exc.fix), here()
    except KtriageError as exc:
        value, where = _Raised(exc), here()
    return value, Placement(ray.get_runtime_context().get_node_id(), where.hostname, where.pid)


def _raised(job: Job[R], raised: _Raised, placement: Placement) -> JobResult[R]:
    """The failed result of a job that raised a KtriageError on its node: the error whole, and its text."""
    error = raised.error
    return JobResult(job, False, error=f"{type(error).__name__}: {error}", placement=placement, exception=error)


@dataclass
class _Task:
    """One submitted job of :meth:`RayExecutor.run` and the jobs it serves (those with its key), with
    the nodes found unfit for it so far (each with its host and reason)."""

    first: int
    indices: list[int]
    unfit: list[tuple[Placement, _Unfit]] = field(default_factory=list)

    def avoid(self) -> tuple[str, ...]:
        return tuple(p.node_id for p, _ in self.unfit)

    def add(self, refusals: Sequence[tuple[Placement, _Unfit]]) -> None:
        """Nodes found unfit elsewhere (by an earlier job with the same needs) join this task's."""
        known = set(self.avoid())
        self.unfit += [(p, u) for p, u in refusals if p.node_id not in known]

    def error(self) -> str:
        """The failure once no node is left: every node's reason (said once for the nodes that gave the same
        one: on a cluster of like nodes the line named one wheel path per node), and the first fix."""
        nodes: dict[str, list[str]] = {}
        for p, u in self.unfit:
            nodes.setdefault(u.problem, []).append(f"node {p.node_id[:12]} on {p.hostname}")
        reasons = "; ".join(f"{', '.join(names)}: {problem}" for problem, names in nodes.items())
        fix = next((u.fix for _, u in self.unfit if u.fix), None)
        said = f"no node of the cluster can run it ({reasons})"
        return f"{said} (fix: {fix})" if fix else said


class _Suspects:
    """The nodes that refused a job of one :meth:`RayExecutor.run` with some needs, not yet known to be the
    node's fault: a job with those needs sent after that is sent elsewhere, while another node is left. A
    node is no suspect for those needs once it ran one of them; the refusals of a job every node refused are
    forgotten (the job's own failure: a candidate's broken wheel). Those of a job another node then ran are
    remembered for the executor's life (``RayExecutor._remember``); a suspicion lasts one ``run``."""

    def __init__(self) -> None:
        self._by: dict[str, dict[str, set[int]]] = {}  # needs -> node id -> the tasks it refused (first index)

    def nodes(self, needs: str | None) -> tuple[str, ...]:
        return tuple(self._by.get(needs, {})) if needs is not None else ()

    def add(self, needs: str | None, node: str, task: int) -> None:
        if needs is not None:
            self._by.setdefault(needs, {}).setdefault(node, set()).add(task)

    def cleared(self, needs: str, node: str) -> None:
        self._by.get(needs, {}).pop(node, None)

    def forget(self, needs: str | None, task: int) -> None:
        nodes = self._by.get(needs, {}) if needs is not None else {}
        for node, tasks in list(nodes.items()):
            tasks.discard(task)
            if not tasks:
                del nodes[node]


class _PinnedActor:
    """The body of a pinned worker (a Ray actor class: module-level, so nodes import it by name)."""

    def call(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, Placement, list[str]]:
        import ray

        value, placement = _node_call(fn, args)
        return value, placement, [str(g) for g in ray.get_gpu_ids()]


def _remote() -> Any:
    global _REMOTE
    if _REMOTE is None:
        import ray

        _REMOTE = ray.remote(_node_call)
    return _REMOTE


def _pinned_actor_class() -> Any:
    global _PINNED
    if _PINNED is None:
        import ray

        _PINNED = ray.remote(_PinnedActor)
    return _PINNED


def _code_root() -> str:
    """The directory that holds this ``ktriage`` package: put first on the nodes' PYTHONPATH, so a node
    on this host (or one that sees this path on shared storage) runs the driver's code."""
    return str(Path(__file__).resolve().parents[2])


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise KtriageError(
            "--cluster needs Ray, which is not installed", "pip install 'ktriage[cluster]' (or pip install ray)"
        ) from None
    return ray


def require_ray_client(address: str) -> None:
    """A ``ray://`` address goes through Ray Client, which needs grpcio (``ray[client]``); plain ``pip install
    ray`` has none, and ``ray.init`` said so only after the reachability probe, under the fix "start one with
    `ray start --head`" (a running head changed nothing). Checked first, with the install or the GCS port."""
    if address.startswith("ray://") and importlib.util.find_spec("grpc") is None:
        raise KtriageError(
            f"--cluster {address}: a ray:// address goes through Ray Client, which needs the package ray[client] "
            "(grpcio), not installed here",
            "pip install 'ray[client]', or give the head's GCS port without ray:// (--cluster HOST:PORT, the port of "
            "`ray start --head --port PORT`; docs/cluster.md)",
        )


CONNECT_TIMEOUT_S = 5.0
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # + empty SETTINGS


def check_reachable(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Refuse a ``HOST:PORT`` (or ``ray://HOST:PORT``) where nothing accepts a connection, within
    ``timeout_s``, before ``ray.init``: Ray itself retries a closed port for minutes (and on this
    machine's other addresses), which looked like a hang. ``auto`` is Ray's own lookup."""
    import socket

    if address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        number = int(port)
        if not 0 < number < 65536:
            raise ValueError(port)
    except ValueError:
        raise KtriageError(
            f"--cluster {address!r}: the port {port!r} is no TCP port", "give HOST:PORT, e.g. 10.0.0.5:6379"
        ) from None
    try:
        with socket.create_connection((host.strip("[]"), number), timeout=timeout_s) as sock:
            # Ray's GCS and Ray Client speak gRPC (HTTP/2): a server answers the client preface with
            # its SETTINGS frame at once. A port that accepts and never answers is no Ray head.
            sock.sendall(_HTTP2_PREFACE)
            if not sock.recv(9):
                raise ConnectionResetError(104, "the port closed the connection: it is no Ray head")
    except OSError as exc:
        why = (
            "it accepts connections but does not answer like a Ray head (gRPC)"
            if isinstance(exc, TimeoutError)
            else (exc.strerror or str(exc))
        )
        raise KtriageError(
            f"cannot connect to the Ray cluster at {address}: {why} (within {timeout_s:.0f} s)",
            "start the head with `ray start --head --port PORT` there and check host, port and firewall "
            "(docs/cluster.md), or leave --cluster / KTRIAGE_CLUSTER out to run locally",
        ) from None
    if not address.startswith("ray://"):
        check_gcs(address)


def check_gcs(address: str) -> None:
    """Refuse a ``HOST:PORT`` that answers gRPC but is no Ray head's GCS port: another port of a Ray node
    (its raylet's, its object manager's) or another gRPC or HTTP server. ``ray.init`` retried such a port
    for 20 s, printed Ray's C++ warnings ("gcs_client.cc: Failed to get cluster ID") and ended on the fix
    "start one with `ray start --head`", while a head ran. One GCS client connection tells at once;
    its own warning, on file descriptor 2, is hidden under the one-line error."""
    try:
        from ray._raylet import GcsClient  # type: ignore[attr-defined]  # compiled, no stub
        from ray.exceptions import RpcError
    except ImportError:  # no Ray, or another Ray layout: ray.init decides (import_ray names the install)
        return
    try:
        with _stderr_hidden():
            GcsClient(address=address)
    except RpcError as exc:
        detail = str(exc).strip().removeprefix("RPC error:").strip()
        code = getattr(exc, "rpc_code", None)
        said = detail or (f"gRPC status {code}" + (", no such service there" if code == 12 else "") if code else "")
        raise KtriageError(
            f"cannot connect to the Ray cluster at {address}: the port answers, but it is no Ray head's GCS port"
            + (f" ({said})" if said else ""),
            "give the head's GCS port: the --port of `ray start --head` (default 6379), which `ray start --head` "
            "prints as --address='HOST:PORT', not a node's other ports nor the dashboard's (docs/cluster.md)",
        ) from None


@contextmanager
def _stderr_hidden() -> Iterator[None]:
    """File descriptor 2 points to /dev/null inside (Ray's C++ logging writes there, not to sys.stderr)."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


class RayExecutor:
    """Jobs as Ray tasks on the cluster at ``address`` (``auto``, ``HOST:PORT`` or ``ray://HOST:PORT``)."""

    name = "ray"
    remote = True

    def __init__(self, address: str, *, max_retries: int = DEFAULT_RETRIES) -> None:
        require_ray_client(address)
        check_reachable(address)
        ray = import_ray()
        self.address = address
        self.max_retries = max_retries
        path = os.pathsep.join(p for p in (_code_root(), os.environ.get("PYTHONPATH", "")) if p)
        try:
            self._ctx = ray.init(
                address=address,
                runtime_env={"env_vars": {"PYTHONPATH": path}},
                log_to_driver=False,
                configure_logging=False,
                ignore_reinit_error=True,
            )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise KtriageError(
                f"cannot connect to the Ray cluster at {address}: {str(exc)[:300]}",
                "start one with `ray start --head` (docs/cluster.md), or check --cluster / KTRIAGE_CLUSTER",
            ) from None
        self._ray = ray
        self._refused: dict[str, dict[str, tuple[Placement, _Unfit]]] = {}
        """``Job.needs`` -> node id -> where and why that node refused a job with those needs, which another
        node then ran: the node gets no more jobs with them (for this executor's life, one run)."""

    @property
    def label(self) -> str:
        """Which cluster the jobs go to, for progress lines: ``auto`` joins whatever cluster Ray finds on
        this machine, so the address Ray resolved (and its size) is what tells the user where they run."""
        info = getattr(self._ctx, "address_info", None)
        gcs = info.get("gcs_address") if isinstance(info, dict) else None
        try:
            nodes = len(self.nodes())
        except Exception:  # a label must never fail the run it describes
            nodes = 0
        where = f"the Ray cluster at {gcs or self.address}"
        return f"{where} ({plural(nodes, 'node')})" if nodes else where

    # -- capacity -------------------------------------------------------------------------------

    def resources(self) -> dict[str, float]:
        return {k: float(v) for k, v in self._ray.cluster_resources().items()}

    def gpu_request(self) -> dict[str, object]:
        """The options of a timing task: a GPU if Ray sees one, else the ``gpu_slot`` resource."""
        res = self.resources()
        if res.get("GPU", 0) >= 1:
            return {"num_cpus": 0, "num_gpus": 1}
        if res.get(GPU_RESOURCE, 0) >= 1:
            return {"num_cpus": 0, "resources": {GPU_RESOURCE: 1}}
        raise KtriageError(
            f"the Ray cluster at {self.address} has no GPU node for a timing job",
            f"start a node with --num-gpus 1 or --resources '{{\"{GPU_RESOURCE}\": 1}}' (docs/cluster.md)",
        )

    def slots(self, kind: JobKind) -> int:
        res = self.resources()
        if kind == "timing":
            return max(1, int(res.get("GPU", 0) or res.get(GPU_RESOURCE, 0)))
        return max(1, int(res.get("CPU", 1)))

    def nodes(self) -> list[RayNode]:
        """The live nodes: id and declared resources (for placement checks and reports)."""
        return [
            {"node_id": n["NodeID"], "resources": dict(n.get("Resources") or {})}
            for n in self._ray.nodes()
            if n.get("Alive")
        ]

    # -- running --------------------------------------------------------------------------------

    def _options(self, kind: JobKind) -> dict[str, object]:
        base: dict[str, object] = {"max_retries": self.max_retries, "retry_exceptions": False}
        if kind == "timing":
            return {**base, **self.gpu_request()}
        return {**base, "num_cpus": 1}

    def pinned_worker(self, kind: JobKind, label: str = "") -> RayPinnedWorker:
        """A worker that holds one ``kind`` slot (a GPU for ``timing``) until closed: see the module doc."""
        return RayPinnedWorker(self, kind, label)

    def _submit(self, job: Job[Any], avoid: tuple[str, ...] = ()) -> Any:
        options = self._options(job.kind)
        if avoid:  # nodes found unfit for this job (NodeUnfit): any other node
            options["label_selector"] = {NODE_ID_LABEL: f"!in({','.join(avoid)})"}
        return _remote().options(**options, name=(job.label or job.kind)[:60]).remote(job.fn, job.args)

    def _fit_nodes_left(self, kind: JobKind, avoid: tuple[str, ...], nodes: Sequence[RayNode] | None = None) -> bool:
        """Whether a live node outside ``avoid`` declares what a ``kind`` job asks for: a job sent with
        no such node would wait for one forever. ``nodes``: the live nodes, if just looked up."""
        wanted = ("GPU", GPU_RESOURCE) if kind == "timing" else ("CPU",)
        return any(
            n["node_id"] not in avoid and any(n["resources"].get(r, 0) >= 1 for r in wanted)
            for n in (self.nodes() if nodes is None else nodes)
        )

    def run(self, jobs: Sequence[Job[R]], *, on_done: OnDone | None = None) -> list[JobResult[R]]:
        """Every job as a Ray task, at most as many of a kind at once as the cluster has slots for, the rest
        held here until one ends. Why held: Ray gives a task it holds to whichever node comes free first, and
        a node that refused a job comes free at once, so it drew the round's next queued job, and the next,
        each built there first and refused (the round was sent whole before its first refusal came back).
        A job sent after a node refused its needs is sent away from that node (:class:`_Suspects`)."""
        ray = self._ray
        firsts: dict[str, _Task] = {}  # key -> the task that serves every job with that key
        held: list[_Task] = []  # not sent yet, in order
        for i, job in enumerate(jobs):
            if job.key is not None and job.key in firsts:
                firsts[job.key].indices.append(i)
                continue
            task = _Task(i, [i])
            held.append(task)
            if job.key is not None:
                firsts[job.key] = task
        width = {kind: self.slots(kind) for kind in {jobs[t.first].kind for t in held}}
        flying: dict[Any, _Task] = {}
        suspects = _Suspects()
        results: list[JobResult[R] | None] = [None] * len(jobs)

        def finish(task: _Task, outcome: JobResult[Any]) -> None:
            for i in task.indices:
                result = results[i] = JobResult(
                    jobs[i], outcome.ok, outcome.value, outcome.error, outcome.lost, outcome.placement
                )
                result.exception = outcome.exception
                result.unfit = outcome.unfit
                if on_done is not None:
                    on_done(i, result)

        def send(task: _Task, nodes: Sequence[RayNode] | None, placement: Placement | None = None) -> None:
            """Submit ``task`` away from the nodes that refused it or its needs, or fail it where no node is left
            (sent with a selector no node matches, it would wait for one forever). ``placement``: its last
            refusal; ``nodes``: the live nodes, if just looked up."""
            job = jobs[task.first]
            task.add(self._remembered(job))  # found by this round's other jobs meanwhile, or an earlier round's
            avoid = task.avoid()
            suspect = tuple(n for n in suspects.nodes(job.needs) if n not in avoid)
            if not avoid and not suspect:
                flying[self._submit(job)] = task
                return
            nodes = self.nodes() if nodes is None else nodes
            if suspect and self._fit_nodes_left(job.kind, avoid + suspect, nodes):
                flying[self._submit(job, avoid + suspect)] = task
            elif not avoid or self._fit_nodes_left(job.kind, avoid, nodes):  # only suspects left: tried for real
                flying[self._submit(job, avoid)] = task
            else:
                suspects.forget(job.needs, task.first)  # every node refused it: the job's own failure, not theirs
                finish(task, JobResult(job, False, error=task.error(), placement=placement, unfit=True))

        def send_held() -> None:
            room = dict(width)
            for t in flying.values():
                room[jobs[t.first].kind] -= 1
            going = []
            for task in held:
                if room[jobs[task.first].kind] > 0:
                    room[jobs[task.first].kind] -= 1
                    going.append(task)
            nodes: list[RayNode] | None = None  # looked up once for them all, where one avoids a node
            for task in going:
                held.remove(task)
                job = jobs[task.first]
                if nodes is None and (suspects.nodes(job.needs) or self._remembered(job)):
                    nodes = self.nodes()
                send(task, nodes)

        send_held()
        while flying:
            ready, _ = ray.wait(list(flying), num_returns=1)
            for ref in ready:
                task = flying.pop(ref)
                outcome = self._collect(ref)
                job = jobs[task.first]
                if isinstance(outcome.value, _Unfit) and outcome.placement is not None:
                    task.unfit.append((outcome.placement, outcome.value))
                    suspects.add(job.needs, outcome.placement.node_id, task.first)
                    send(task, None, outcome.placement)
                    continue
                if outcome.ok and job.needs is not None and outcome.placement is not None:
                    suspects.cleared(job.needs, outcome.placement.node_id)  # it ran one: it can
                    if task.unfit:
                        self._remember(job.needs, task.unfit)
                finish(task, outcome)
            send_held()
        return [r for r in results if r is not None]

    def _remembered(self, job: Job[Any]) -> list[tuple[Placement, _Unfit]]:
        """The nodes remembered unfit for ``job.needs``, each with the refusal it gave an earlier job."""
        if job.needs is None:
            return []
        return [
            (p, _Unfit(f"refused an earlier job of this run: {u.problem}", u.fix))
            for p, u in self._refused.get(job.needs, {}).values()
        ]

    def _remember(self, needs: str, refusals: Sequence[tuple[Placement, _Unfit]]) -> None:
        """Remember the nodes that refused a job with ``needs`` that another node then ran (so the refusal
        was the node's, not the job's: a job every node refuses, e.g. a candidate's broken wheel, leaves
        none remembered), and say once per node what it refused and why, and that only those needs: a node
        that cannot install triton==3.3.1 may well install 3.6.0, and still gets the jobs that need it."""
        known = self._refused.setdefault(needs, {})
        for placement, unfit in refusals:
            if placement.node_id in known:
                continue
            known[placement.node_id] = (placement, unfit)
            log.warning(
                f"node {placement.node_id[:12]} on {placement.hostname} refused a job needing {needs}: "
                f"{unfit.problem}; another node ran it, and this run sends that node no more jobs needing "
                f"{needs} (jobs needing another toolchain still go there)"
                + (f" (fix: {unfit.fix})" if unfit.fix else "")
            )

    def _collect(self, ref: Any) -> JobResult[Any]:
        ray = self._ray
        dummy: Job[Any] = Job("compile", _node_call)
        try:
            value, where = ray.get(ref)
            if isinstance(value, _Raised):
                return _raised(dummy, value, where)
            return JobResult(dummy, True, value, placement=where)
        except ray.exceptions.RayTaskError as exc:  # the job itself raised: not retried
            cause = exc.cause if getattr(exc, "cause", None) is not None else exc
            return JobResult(dummy, False, error=f"{type(cause).__name__}: {cause}")
        except ray.exceptions.RayError as exc:  # node or worker lost after max_retries
            return JobResult(
                dummy,
                False,
                error=f"lost on the cluster after {self.max_retries} retries: {type(exc).__name__}: {str(exc)[:300]}",
                lost=True,
            )

    def close(self) -> None:
        """Disconnect this driver (the cluster keeps running)."""
        self._ray.shutdown()

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RayNode(TypedDict):
    """A live node of the cluster, as :meth:`RayExecutor.nodes` reports it."""

    node_id: str
    resources: dict[str, float]


class RayPinnedWorker:
    """One Ray actor holding one slot of ``kind`` (GPU: ``num_gpus=1`` or ``gpu_slot``) for its life.

    Started on the first call (so a pool of them places itself as Ray finds free GPUs), never
    restarted (``max_restarts=0``): after a loss every later call fails too, naming the node, so a
    measurement is never continued on another GPU."""

    def __init__(self, executor: RayExecutor, kind: JobKind, label: str = "") -> None:
        self.executor, self.kind, self.label = executor, kind, label
        self.where: dict[str, object] = {}
        self._actor: Any = None
        self._lost = ""

    def call(self, fn: Callable[..., R], args: tuple[Any, ...]) -> JobResult[R]:
        ray = self.executor._ray
        job: Job[R] = Job(self.kind, fn, args, label=self.label)
        if self._lost:
            return JobResult(job, False, error=self._lost, lost=True)
        if self._actor is None:
            options = {
                k: v
                for k, v in self.executor._options(self.kind).items()
                if k not in ("max_retries", "retry_exceptions")
            }
            self._actor = _pinned_actor_class().options(max_restarts=0, max_task_retries=0, **options).remote()
        try:
            value, placement, gpu_ids = ray.get(self._actor.call.remote(fn, args))
        except ray.exceptions.RayTaskError as exc:  # the job raised in the worker: the worker lives on
            cause = exc.cause if getattr(exc, "cause", None) is not None else exc
            return JobResult(job, False, error=f"{type(cause).__name__}: {cause}")
        except ray.exceptions.RayError as exc:  # the worker (or its node) is gone
            where = f" on {self.where['hostname']} (node {str(self.where['node_id'])[:12]})" if self.where else ""
            self._lost = f"the pinned {self.kind} worker{where} was lost: {type(exc).__name__}: {str(exc)[:300]}"
            return JobResult(job, False, error=self._lost, lost=True)
        self.where = {**placement.to_json(), "gpu_ids": gpu_ids}
        if isinstance(value, _Raised):  # the job raised in the worker: the worker lives on
            return _raised(job, value, placement)
        if isinstance(value, _Unfit):  # pinned: it is never moved to another node
            error = value.problem if not value.fix else f"{value.problem} (fix: {value.fix})"
            return JobResult(job, False, error=error, placement=placement)
        return JobResult(job, True, value, placement=placement)

    def close(self) -> None:
        if self._actor is not None:
            try:
                self.executor._ray.kill(self._actor)
            except Exception:
                pass
            self._actor = None
