"""Helpers of the cluster tests (conftest.py starts the cluster): processes, ports, the test repository.

A module with its own name, so the tests import it unambiguously (every conftest is ``conftest``)."""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
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


def _descendants(pid: int) -> list[int]:
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


@dataclass
class Cluster:
    """The running test cluster: its address, environment and worker nodes (by node-manager port)."""

    address: str
    tmp: Path
    env: dict[str, str]
    workers: dict[str, int] = field(default_factory=dict)  # name -> node manager port
    worker_args: dict[str, list[str]] = field(default_factory=dict)

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
            _kill([d for pid in _pids_with(f"--node_manager_port={ports.node_manager}") for d in _descendants(pid)])
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
        _kill(_descendants(self.raylet_pid(name)))

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
