"""Helpers of the cluster tests (conftest.py starts the cluster): processes, ports, the test repository.

A module with its own name, so the tests import it unambiguously (every conftest is ``conftest``)."""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RAY = Path(sys.executable).with_name("ray")


WORKER_PORTS = 40
"""How many ports past ``--min-worker-port`` a test node's Ray workers may use (``--max-worker-port``)."""

# The ports ``ray start`` opens besides the GCS (``--port``, the head only) and the worker range.
_NODE_PORT_OPTIONS = (
    "--node-manager-port",
    "--object-manager-port",
    "--metrics-export-port",
    "--runtime-env-agent-port",
    "--dashboard-agent-listen-port",
    "--dashboard-agent-grpc-port",
)


def _free_ports(n: int, worker_range_at: int | None = None, width: int = WORKER_PORTS) -> list[int]:
    """``n`` free ports; if ``worker_range_at`` is given, that port starts Ray's worker port range
    (``--min-worker-port``, ``--max-worker-port`` = it + ``width``), and no other chosen port falls inside
    that range: Ray refuses to start a node whose worker ports overlap its other ports ("trying to use a port
    number ... that is used by other components"), which a random draw does about once in a hundred starts."""
    while True:
        socks, ports = [], []
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
        for s in socks:
            s.close()
        if worker_range_at is None:
            return ports
        lo = ports[worker_range_at]
        others = ports[:worker_range_at] + ports[worker_range_at + 1 :]
        if all(not lo <= p <= lo + width for p in others):
            return ports


@dataclass(frozen=True)
class NodePorts:
    """The ports of one Ray node on 127.0.0.1, drawn free, none inside its worker port range."""

    args: tuple[str, ...]
    """The port options of ``ray start`` (``--port`` for a head, each component's, the worker range)."""
    node_manager: int
    gcs: int | None = None
    """A head's GCS port (``--port``): the cluster's address is ``127.0.0.1:<gcs>``."""


def node_ports(*, head: bool = False) -> NodePorts:
    """Free ports for one ``ray start`` (the tests' nodes and benchmarks/cluster's head use this one draw)."""
    options = (("--port",) if head else ()) + _NODE_PORT_OPTIONS
    *ports, lo = _free_ports(len(options) + 1, worker_range_at=len(options))
    named = dict(zip(options, ports))
    args = [w for option, port in named.items() for w in (option, str(port))]
    args += ["--min-worker-port", str(lo), "--max-worker-port", str(lo + WORKER_PORTS)]
    return NodePorts(tuple(args), named["--node-manager-port"], named.get("--port"))


def _pids_with(text: str) -> list[int]:
    """Processes whose command line mentions ``text`` (this cluster's temp dir or port)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmd:
            found.append(int(proc.name))
    return found


def _children() -> dict[int, list[int]]:
    """Every process's children (by ``/proc/<pid>/stat``'s parent pid)."""
    children: dict[int, list[int]] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(proc.name))
    return children


def _descendants(pid: int) -> list[int]:
    children = _children()
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def _kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _started(pid: int) -> str | None:
    """A process's state and start time (``/proc/<pid>/stat``), or None once it is gone: with the pid, the
    start time names one process (a pid freed by a killed one may be reused by another)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return f"{fields[0]} {fields[19]}"


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()[:120]
    except OSError:
        return "?"


def stop_processes(roots: list[int], timeout_s: float = 15.0) -> list[str]:
    """Stop ``roots`` and every process under them, leaving nothing behind; returns the ones still running
    after ``timeout_s`` (pid and command line), none when all are gone.

    Why not the processes whose command line names the cluster's temp dir: a raylet's agents retitle
    themselves (``ray::DashboardAgent``, ``ray::RuntimeEnvAgent``, ``ray::IDLE``), so the name no longer says
    which cluster they serve, and once their raylet is SIGKILLed they are the children of init, found by
    nothing. They log the raylet's death at once but exit only a minute or so later (seen with Ray 2.60; their
    last step reports to the GCS, killed too), so every test session left eight of them behind for that long. Why freeze first (SIGSTOP, the tree walked again until
    no new process appears): a running raylet starts workers and agents while its tree is walked, and one
    started between the walk and the kill would be orphaned the same way. A stopped process starts none,
    and SIGKILL ends it stopped. (``ray stop`` is no way out: it kills every Ray process of the machine,
    other test sessions' clusters too.)"""
    frozen: dict[int, str] = {}
    todo = [p for p in roots if p != os.getpid()]
    while todo:
        for pid in todo:
            started = _started(pid)
            if started is None:
                continue
            frozen[pid] = started
            try:
                os.kill(pid, signal.SIGSTOP)
            except (ProcessLookupError, PermissionError):
                pass
        children = _children()
        todo = [c for pid in todo for c in children.get(pid, []) if c not in frozen and c != os.getpid()]
    _kill(list(frozen))
    deadline = time.monotonic() + timeout_s
    while True:
        alive = [p for p, started in frozen.items() if _running(p, started)]
        if not alive or time.monotonic() > deadline:
            return [f"{p} {_name(p)}" for p in alive]
        time.sleep(0.1)


def _running(pid: int, started: str) -> bool:
    """Whether the process ``pid`` that started at ``started`` runs still (a zombie has ended: its parent,
    init or another reaper, has only not read its status yet)."""
    now = _started(pid)
    return now is not None and now.split()[1] == started.split()[1] and not now.startswith(("Z", "X"))


@dataclass
class Cluster:
    """The running test cluster: its address, environment and worker nodes (by node-manager port)."""

    address: str
    tmp: Path
    env: dict[str, str]
    workers: dict[str, int] = field(default_factory=dict)  # name -> node manager port
    worker_args: dict[str, list[str]] = field(default_factory=dict)
    head_ports: NodePorts | None = None

    @classmethod
    def private(cls) -> Cluster:
        """A cluster to start on free ports in a private temp dir (RAY_TMPDIR), with the test settings: its
        nodes see this repository's ktriage, and notice a killed node within seconds."""
        tmp = Path(tempfile.mkdtemp(prefix="ktr-ray-"))  # short: Ray's socket paths must fit 107 bytes
        env = {
            **os.environ,
            "RAY_TMPDIR": str(tmp),
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
            "RAY_USAGE_STATS_ENABLED": "0",
            "RAY_health_check_period_ms": "1000",
            "RAY_health_check_timeout_ms": "1000",
            "RAY_health_check_failure_threshold": "3",
            "RAY_health_check_initial_delay_ms": "1000",
        }
        env.pop("KTRIAGE_CLUSTER", None)
        ports = node_ports(head=True)
        return cls(f"127.0.0.1:{ports.gcs}", tmp, env, head_ports=ports)

    def start_head(self) -> None:
        """``ray start --head`` with one CPU and no dashboard, on the ports :meth:`private` drew."""
        assert self.head_ports is not None
        args = ["start", "--head", "--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--temp-dir", str(self.tmp)]
        _run_ray([*args, "--include-dashboard", "false", "--disable-usage-stats", *self.head_ports.args], self.env)

    def start_worker(self, name: str, *extra: str, attempts: int = 3) -> None:
        """``ray start`` a worker node. Ray gives a starting raylet a fixed 30 s to register with the GCS; on a
        2-core CI machine whose other test worker is compiling, one start missed it ("The current node timed
        out during startup") and every cluster test errored at setup. A missed start's processes are killed
        (they could register later as a node nobody counts) and the node starts again on fresh ports."""
        failures = []
        for _ in range(attempts):
            ports = node_ports()
            args = ["start", "--address", self.address, "--num-cpus", "1", *ports.args, "--disable-usage-stats", *extra]
            proc = _ray(args, self.env)
            if proc.returncode == 0:
                self.workers[name] = ports.node_manager
                self.worker_args[name] = list(extra)
                return
            failures.append(_failure(args, proc))
            stop_processes(_pids_with(f"--node_manager_port={ports.node_manager}"))
        raise AssertionError(f"worker {name}: {attempts} starts failed; the last:\n{failures[-1]}")

    def raylet_pid(self, name: str) -> int:
        port = self.workers[name]
        pids = [
            p
            for p in _pids_with(f"--node_manager_port={port}")
            if "raylet" in Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace")
        ]
        assert pids, f"no raylet for worker {name} (port {port})"
        return pids[0]

    def kill_worker(self, name: str) -> None:
        """SIGKILL a worker node: its raylet and every process under it (its Ray workers, their builds)."""
        survivors = stop_processes([self.raylet_pid(name)])
        assert not survivors, f"processes of worker {name} survived SIGKILL: {survivors}"

    def processes(self) -> list[int]:
        """The processes this cluster started (its head's and each worker node's, found by the temp dir and
        the worker raylets' ports): with every process under them, all of the cluster (:func:`stop_processes`)."""
        found = _pids_with(str(self.tmp))
        for port in self.workers.values():
            found += [p for p in _pids_with(f"--node_manager_port={port}") if p not in found]
        return found

    def stop(self) -> None:
        """Stop every process of the cluster; fail, naming them, if any survives (a leak the next test session,
        or the developer's machine, would have kept)."""
        survivors = stop_processes(self.processes())
        survivors += [f"{p} {_name(p)}" for p in self.processes()]  # started after the freeze by no process of it?
        assert not survivors, f"processes of the test cluster in {self.tmp} survived its teardown: {survivors}"

    def node_ids(self) -> dict[str, str]:
        """name -> Ray node id of the live workers ("head" for the head)."""
        import ray

        out = {}
        for node in ray.nodes():
            if not node.get("Alive"):
                continue
            port = node.get("NodeManagerPort")
            names = [n for n, p in self.workers.items() if p == port]
            out[names[0] if names else "head"] = node["NodeID"]
        return out


def _ray(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(RAY), *args], env=env, capture_output=True, text=True, timeout=180)


def _failure(args: list[str], proc: subprocess.CompletedProcess[str]) -> str:
    return f"ray {' '.join(args[:3])} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"


def _run_ray(args: list[str], env: dict[str, str]) -> None:
    proc = _ray(args, env)
    assert proc.returncode == 0, _failure(args, proc)


def load_bisect_fixtures():  # type: ignore[no-untyped-def]
    """tests/bisect/repos.py (the synthetic kernel repository), loaded by path: tests/bisect is not a
    package (it would shadow the standard library's bisect, see tests/conftest.py)."""
    path = REPO / "tests" / "bisect" / "repos.py"
    spec = importlib.util.spec_from_file_location("_bisect_repos_for_cluster", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the file runs
    spec.loader.exec_module(mod)
    return mod
