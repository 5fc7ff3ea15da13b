"""A job's own KtriageError, raised on a node, reaches the bisect's user as if the job had run here: its class,
its problem (naming the node) and its fix, not a wrapper "... failed on the cluster: <problem and fix>" under
the wrapper's generic fix (real Ray cluster on 127.0.0.1; the jobs are real, their errors FAKE or cheap)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ktriage.bisect.cluster import ClusterCommandPredicate, NodeConfig, RemoteMeasure
from ktriage.bisect.workspace import Workspace
from ktriage.errors import KtriageError
from ktriage.execute.ray_backend import RayExecutor
from ktriage.testing import fake_candidates, fake_raising_job


def test_a_timing_jobs_error_on_the_gpu_node_is_raised_as_its_own_naming_the_node(ray_cluster) -> None:
    """A time bisect's measurement raising ``CudaError`` on its GPU node (a FAKE factory raising the real
    class): the user was told "the timing job failed on the cluster: CudaError: ... fix: <CUDA's fix>",
    fix: "check the GPU node (ray status) ...", a ``MeasureError`` where the measurement raised a
    ``DeviceError``. Now the CudaError itself, its fix the user's to act on, the GPU node named."""
    from ktriage.measure.driver import CudaError

    error = CudaError("cuLaunchKernel", "CUDA_ERROR_OUT_OF_MEMORY", 2)
    with RayExecutor(ray_cluster.address) as ex:
        measure = RemoteMeasure(ex, fake_raising_job, (error,))
        try:
            with pytest.raises(CudaError) as raised:
                measure(["a", "b"], 4)
            where = measure.where
        finally:
            measure.close()
    assert raised.value.fix == error.fix and raised.value.fix
    assert raised.value.problem.startswith(f"{error.problem} (on node {where['gpu_node']} on {where['gpu_host']})")
    assert "failed on the cluster" not in str(raised.value)


def test_a_command_bisect_jobs_error_on_a_node_is_raised_as_its_own(ray_cluster, tmp_path: Path) -> None:
    """A command bisect's candidate the node's workspace cannot prepare (a FAKE candidate of no known kind:
    the workspace raises a KtriageError, "this is a ktriage bug; report it"): it reached the user as "bisect
    job for c1 failed on the cluster: KtriageError: ... fix: this is a ktriage bug; report it" under the fix
    "run without --cluster to see it". Now the workspace's own error, its fix, the node named."""
    candidate = fake_candidates(2)[1]
    cfg = NodeConfig(key=f"job-errors-{tmp_path.name}", command="true")
    with RayExecutor(ray_cluster.address) as ex:
        nodes = set(ray_cluster.node_ids().values())
        pred = ClusterCommandPredicate(cfg, Workspace(work_dir=tmp_path / "work"), ex)
        with pytest.raises(KtriageError) as raised:
            pred.test([candidate])
    problem = raised.value.problem
    assert problem.startswith("candidate c1 has no known kind (None) (on node "), problem
    assert any(f"(on node {n[:12]} on " in problem for n in nodes), problem
    assert raised.value.fix == "this is a ktriage bug; report it"


def test_a_command_that_aborts_the_bisect_on_a_node_comes_back_as_bisect_abort_naming_the_node(
    ray_cluster, toolchain, tmp_path: Path
) -> None:
    """``bisect --command`` on the cluster, the command exiting 130 (>= 128 aborts the bisect, as in git bisect
    run): the node's job sent the abort back as a dict of two strings, which the driver turned back into a
    ``BisectAbort`` without the node it ran on. Now the job raises it there and it comes back whole (the job's
    ``exception``, of its class), raised as the job's own with its fix, its problem naming the node."""
    from ktriage.bisect.candidate import Candidate
    from ktriage.bisect.cluster import command_job
    from ktriage.bisect.predicates import BisectAbort
    from ktriage.execute import Job

    release = "triton==3.4.0"
    toolchain(release)
    candidate = Candidate(0, "c0", "c0", {"kind": "pypi", "toolchain": release})
    cfg = NodeConfig(key=f"abort-{tmp_path.name}", command="exit 130", cwd=str(tmp_path))
    with RayExecutor(ray_cluster.address) as ex:
        nodes = set(ray_cluster.node_ids().values())
        (result,) = ex.run([Job("build", command_job, (cfg, candidate))])
        with pytest.raises(BisectAbort) as raised:
            ClusterCommandPredicate(cfg, Workspace(work_dir=tmp_path / "work"), ex).test([candidate])
    assert not result.ok and isinstance(result.exception, BisectAbort), (result.value, result.error)
    problem = raised.value.problem
    said = "the command exited 130 at c0 (>= 128 aborts the bisect, as in git bisect run) (on node "
    assert problem.startswith(said) and any(f"(on node {n[:12]} on " in problem for n in nodes), problem
    assert raised.value.fix == result.exception.fix and "exit 125 to skip" in str(raised.value.fix)
    assert "--resume" in str(raised.value.fix)
