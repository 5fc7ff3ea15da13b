"""``ktriage bisect`` over real commits with a real build command per commit, on a real Ray cluster:
the same culprit as locally with fewer rounds (``--workers 3``), a worker node SIGKILLed mid-run
changes nothing, and a killed driver resumes on the cluster (``--resume``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from ray_test_cluster import REPO, _descendants, load_bisect_fixtures

from ktriage.bisect.run import BisectOptions, run_bisect

pytestmark = pytest.mark.slow
TOOLCHAIN = "triton==3.4.0"
fixtures = load_bisect_fixtures()


def _build(log: Path, seconds: int = 3) -> str:
    """A real build per commit that takes a few seconds; each run appends its commit to ``log``."""
    return f'echo "$KTRIAGE_COMMIT" >> {log} && sleep {seconds} && sh build.sh'


def _opts(repo, tmp: Path, **kw) -> BisectOptions:  # type: ignore[no-untyped-def]
    base: dict = {
        "source": f"git:{repo.path}",
        "good": repo.good,
        "bad": repo.bad,
        "metric": "spill_store_bytes",
        "spec": "spec.toml",
        "toolchain": TOOLCHAIN,
        "build": _build(tmp / "builds.log"),
        "state": tmp / "state.json",
        "cache_dir": tmp / "artifacts",
        "explain": False,
    }
    base.update(kw)
    return BisectOptions(**base)


def _decisions(report) -> dict[str, tuple]:  # type: ignore[no-untyped-def]
    """What was measured and decided per candidate (not where, not the compile count: caches differ)."""
    return {
        o.candidate.id: (o.outcome, o.reason, json.dumps(o.measurements, sort_keys=True), o.confidence)
        for o in report.final.observations
    }


@pytest.fixture(scope="module")
def repo(tmp_path_factory):  # type: ignore[no-untyped-def]
    return fixtures.make_kernel_repo(tmp_path_factory.mktemp("repo") / "r", n=24, culprit_at=9, salt=uuid.uuid4().hex)


@pytest.fixture(scope="module")
def local_run(repo, tmp_path_factory, toolchain):  # type: ignore[no-untyped-def]
    toolchain(TOOLCHAIN)
    tmp = tmp_path_factory.mktemp("local")
    return run_bisect(_opts(repo, tmp, cache_dir=tmp / "artifacts"))


def test_workers_3_on_the_cluster_names_the_local_culprit_in_fewer_rounds(
    ray_cluster, repo, local_run, tmp_path: Path
) -> None:
    said: list[str] = []
    report = run_bisect(_opts(repo, tmp_path, cluster=ray_cluster.address, workers=3), say=said.append)
    # the stage's first line says where its candidates go (nothing else did, for minutes of builds)
    port = ray_cluster.address.rsplit(":", 1)[1]
    assert "; tested on the Ray cluster at " in said[0] and f":{port} (" in said[0], said[0]
    assert local_run.final.culprit is not None and local_run.final.culprit.id == repo.culprit
    assert report.final.culprit is not None and report.final.culprit.id == repo.culprit
    assert report.final.predecessor is not None and report.final.predecessor.id == repo.commits[8]
    assert report.final.rounds < local_run.final.rounds
    state = json.loads((tmp_path / "state.json").read_text())
    assert max(len(r) for r in state["stages"][0]["rounds"]) == 3
    # every candidate the cluster tested was decided as the local run decided it
    local = _decisions(local_run)
    assert all(local[k] == v for k, v in _decisions(report).items() if k in local)
    built = (tmp_path / "builds.log").read_text().split()
    assert len(built) == len(set(built))  # each commit built once in the cluster


def _building_node(cluster, names: tuple[str, ...], timeout: float = 120.0) -> str | None:  # type: ignore[no-untyped-def]
    """The first of worker nodes ``names`` found running a build (its ``sleep``), waiting up to ``timeout``.
    Why any of them: each node offers one CPU, and Ray places the three concurrent builds on the head and
    two of the three workers at random, so a test waiting for one named worker failed whenever Ray left it out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name in names:
            for pid in _descendants(cluster.raylet_pid(name)):
                try:
                    if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"sleep"):
                        return name
                except OSError:
                    pass
        time.sleep(0.2)
    return None


def test_a_worker_node_killed_mid_build_changes_nothing(ray_cluster, repo, local_run, tmp_path: Path) -> None:
    done: dict = {}
    opts = _opts(repo, tmp_path, cluster=ray_cluster.address, workers=3, build=_build(tmp_path / "builds.log", 5))
    thread = threading.Thread(target=lambda: done.setdefault("report", run_bisect(opts)), daemon=True)
    thread.start()
    victim = None
    try:
        victim = _building_node(ray_cluster, ("cpu", "gpu", "gpu2"))
        assert victim is not None, "no build ever ran on a worker node to kill"
        ray_cluster.kill_worker(victim)  # SIGKILL: its raylet, its Ray workers and the build under them
        thread.join(timeout=480)
        assert not thread.is_alive(), "the bisect did not finish after the node died"
    finally:
        if victim is not None:  # give the later tests their cluster back
            ray_cluster.start_worker(victim, *ray_cluster.worker_args.get(victim, []))
    report = done["report"]
    assert report.final.culprit is not None and report.final.culprit.id == repo.culprit
    obs = report.final.observations
    assert not [o for o in obs if o.outcome == "skip"]  # the killed node's job ran again elsewhere: nothing lost
    local = _decisions(local_run)
    assert all(local[k] == v for k, v in _decisions(report).items() if k in local)
    state = json.loads((tmp_path / "state.json").read_text())
    saved = [o["candidate"]["id"] for r in state["stages"][0]["rounds"] for o in r]
    assert sorted(saved) == sorted(o.candidate.id for o in obs[2:])  # every measurement is in the state file


def _cli(args: list[str], **kw) -> subprocess.Popen:  # type: ignore[type-arg]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "ktriage", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        **kw,
    )


def test_a_killed_driver_resumes_on_the_cluster(ray_cluster, repo, local_run, tmp_path: Path) -> None:
    state = tmp_path / "s.json"
    args = [
        "bisect",
        "--source",
        f"git:{repo.path}",
        "--good",
        repo.good,
        "--bad",
        repo.bad,
        "--spec",
        "spec.toml",
        "--metric",
        "spill_store_bytes",
        "-t",
        TOOLCHAIN,
        "--build",
        _build(tmp_path / "builds.log"),
        "--state",
        str(state),
        "--workers",
        "2",
        "--no-explain",
        "--cluster",
        ray_cluster.address,
        "--json",
        str(tmp_path / "r.json"),
    ]
    first = _cli(args)
    deadline = time.monotonic() + 300
    rounds: list = []
    while time.monotonic() < deadline and first.poll() is None:
        if state.exists():
            try:
                rounds = json.loads(state.read_text())["stages"][0]["rounds"]
            except (ValueError, KeyError, IndexError):
                rounds = []
            if rounds:
                break
        time.sleep(0.3)
    assert rounds and first.poll() is None, "the driver finished or never saved a round"
    os.killpg(first.pid, signal.SIGKILL)  # the driver dies between rounds or mid-round
    first.communicate()
    saved = json.loads(state.read_text())["stages"][0]
    second = _cli([*args, "--resume"])
    out, _ = second.communicate(timeout=480)
    assert second.returncode == 0, out
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["culprit"]["id"] == repo.culprit
    final = json.loads(state.read_text())["stages"][0]
    assert final["preflight"] == saved["preflight"]
    assert final["rounds"][: len(saved["rounds"])] == saved["rounds"]  # nothing saved was lost or redone


def test_a_node_that_cannot_install_a_candidates_toolchain_moves_the_job_and_skips_only_where_none_can(
    tmp_path: Path,
) -> None:
    """A node without a package index for the built wheel's dependencies drew the bad endpoint: the whole
    bisect stopped ("the bad endpoint could not be tested"), and any other candidate it drew was skipped,
    so the answer depended on the node. On a node the install failure (real: ensure_toolchain on a wheel
    that is not there) makes the node unfit (the executor tries another), where locally it stays a skip;
    a job no node could take is a skip naming every node (the executor here is a FAKE that reports it)."""
    from ktriage.bisect.cluster import ClusterMetricPredicate, NodeConfig, _NodeMeasurer
    from ktriage.bisect.predicates import KernelMeasurer, KernelSource
    from ktriage.bisect.workspace import CandidateFailed, Prepared, Workspace
    from ktriage.compile.compiler import Compiler
    from ktriage.execute.base import JobResult, NodeUnfit
    from ktriage.testing import fake_candidates

    cand = fake_candidates(1)[0]
    prepared = Prepared(cand, toolchain=f"triton={tmp_path}/dist/triton-3.4.0-cp311-cp311-linux_x86_64.whl")
    with Compiler(cache_dir=tmp_path / "artifacts") as compiler:
        with pytest.raises(NodeUnfit) as unfit:
            _NodeMeasurer(KernelSource(specs=[]), compiler).measure(prepared)
        with pytest.raises(CandidateFailed) as skipped:  # this machine's own measurer: a skip, as before
            KernelMeasurer(KernelSource(specs=[]), compiler).measure(prepared)
        assert unfit.value.problem.startswith(f"toolchain {prepared.toolchain} is not available: ")
        assert unfit.value.problem.endswith("(on this node)") and "\n" not in unfit.value.problem
        assert skipped.value.reason.startswith(f"toolchain {prepared.toolchain} is not available: ")

        class FakeNoFitNodeExecutor:
            name, remote = "fake-no-fit-node", True

            def slots(self, kind):  # type: ignore[no-untyped-def]
                return 1

            def run(self, jobs, *, on_done=None):  # type: ignore[no-untyped-def]
                error = "no node of the cluster can run it (node 0123456789ab on h: toolchain ... (on this node))"
                return [JobResult(j, False, error=error, unfit=True) for j in jobs]

            def close(self) -> None:
                pass

        cfg = NodeConfig(key="k", metric="spill_store_bytes", kernels=KernelSource(specs=[]))
        measurer = KernelMeasurer(KernelSource(specs=[]), compiler)
        predicate = ClusterMetricPredicate(cfg, measurer, Workspace(work_dir=tmp_path / "w"), FakeNoFitNodeExecutor())
        ((obs, values),) = predicate._measure_many([cand])
    assert obs.outcome == "skip" and values is None
    assert obs.reason.startswith("not tested: no node of the cluster can run it (node 0123456789ab")


def test_a_refusal_is_remembered_per_toolchain_a_node_that_cannot_install_one_release_still_gets_another() -> None:
    """What a node that refused a job is remembered unfit for (``Job.needs``): a toolchain candidate's own
    spec, so a node that cannot install triton==3.3.1 is still sent the candidate triton==3.6.0 (the executor
    keys its memory by needs: test_cluster_placement.py); a commit's, the ``-t`` spec as given, whose
    ``{checkout}`` wheel differs per commit while the node's missing package index does not."""
    from ktriage.bisect.candidate import Candidate
    from ktriage.bisect.cluster import NodeConfig, job_needs

    cfg = NodeConfig(key="k", toolchain="triton={checkout}/dist/*.whl")
    old, new = (
        Candidate(i, t, t, {"kind": "pypi", "toolchain": t}) for i, t in enumerate(("triton==3.3.1", "triton==3.6.0"))
    )
    ptxas = Candidate(2, "p", "p", {"kind": "ptxas", "toolchain": "triton==3.4.0,ptxas=/opt/ptxas-12.8"})
    commits = [Candidate(i, c, c, {"kind": "git", "commit": c}) for i, c in ((3, "abc123"), (4, "def456"))]
    assert (job_needs(cfg, old), job_needs(cfg, new)) == ("triton==3.3.1", "triton==3.6.0")
    assert job_needs(cfg, ptxas) == "triton==3.4.0,ptxas=/opt/ptxas-12.8"
    assert {job_needs(cfg, c) for c in commits} == {"triton={checkout}/dist/*.whl"}


def test_a_command_job_whose_node_cannot_install_the_toolchain_moves_and_skips_only_where_none_can(
    ray_cluster, toolchain, tmp_path: Path
) -> None:
    """``bisect --command`` on the cluster: a toolchain candidate the node could not install (for
    ``KTRIAGE_PYTHON``) was a skip on whichever node drew it, never tried elsewhere, unlike a metric job;
    an endpoint drawn there stopped the bisect. Now the node is unfit for the job, which moves; where no
    node can install it (real: a wheel that is not there), the skip names every node. A candidate every
    node can install runs the user's command there, with its interpreter. Locally it stays a skip."""
    from ktriage.bisect.candidate import Candidate
    from ktriage.bisect.cluster import ClusterCommandPredicate, NodeConfig
    from ktriage.bisect.predicates import CommandPredicate
    from ktriage.bisect.workspace import Workspace
    from ktriage.execute.ray_backend import RayExecutor

    toolchain(TOOLCHAIN)
    missing = f"triton={tmp_path}/dist/triton-3.4.0-cp311-cp311-linux_x86_64.whl"
    fine, broken = (
        Candidate(i, f"c{i}", f"c{i}", {"kind": "pypi", "toolchain": t}) for i, t in ((0, TOOLCHAIN), (1, missing))
    )
    command = 'echo "python=$KTRIAGE_PYTHON"'
    cfg = NodeConfig(key="command-unfit", command=command, cwd=str(tmp_path))
    workspace = Workspace(work_dir=tmp_path / "w")
    with RayExecutor(ray_cluster.address) as ex:
        nodes = [n["node_id"] for n in ex.nodes() if n["resources"].get("CPU", 0) >= 1]
        ran, skipped = ClusterCommandPredicate(cfg, workspace, ex, workers=2).test([fine, broken])
    assert ran.outcome == "good" and ran.reason == "exit 0", (ran.outcome, ran.reason)
    assert "python=/" in str(ran.measurements["output"])
    assert skipped.outcome == "skip" and skipped.reason.startswith("not tested: no node of the cluster can run it ("), (
        skipped.reason
    )
    assert all(f"node {n[:12]} on " in skipped.reason for n in nodes), skipped.reason
    assert f"toolchain {missing} is not available: " in skipped.reason and "(on this node)" in skipped.reason
    assert skipped.reason.count(f"toolchain {missing}") == 1  # one reason for the like nodes, then the fix
    assert skipped.reason.endswith(
        "(fix: make the toolchain installable on that node (its package index, network, disk), or start the cluster without it (docs/cluster.md))"
    ), skipped.reason
    (local,) = CommandPredicate(command, workspace, cwd=tmp_path).test([broken])  # this machine: a skip, as before
    assert local.outcome == "skip" and local.reason.startswith(f"toolchain {missing} is not available: ")
