"""Timing jobs go only to the node that declares a GPU; compile/build jobs to CPU slots (real Ray cluster)."""

from __future__ import annotations

import os

import pytest

from ktriage.execute import Job
from ktriage.execute.ray_backend import RayExecutor
from ktriage.testing import fake_timing_job


def test_timing_jobs_run_only_on_the_gpu_node_in_one_process(ray_cluster) -> None:
    with RayExecutor(ray_cluster.address) as ex:
        nodes = {n["node_id"]: n["resources"] for n in ex.nodes()}
        gpu_nodes = [nid for nid, res in nodes.items() if res.get("gpu_slot")]
        assert len(gpu_nodes) == 2 and len(nodes) >= 4
        assert ex.slots("timing") == 2 and ex.slots("compile") >= 4
        jobs = [Job("timing", fake_timing_job, (["triton==3.3.1", "triton==3.4.0"], 6, seed)) for seed in range(4)]
        results = ex.run(jobs)
    assert all(r.ok for r in results), [r.error for r in results]
    for r in results:
        assert r.placement is not None and r.value is not None
        assert r.placement.node_id in gpu_nodes  # placed only on a node that declares gpu_slot
        assert r.placement.pid != os.getpid() and r.placement.hostname
        assert r.value["pid"] == r.placement.pid  # every variant of the comparison timed in that one process
        assert set(r.value["samples"]) == {"triton==3.3.1", "triton==3.4.0"}


def test_jobs_with_one_key_run_once_and_failures_come_back_as_results(ray_cluster) -> None:
    with RayExecutor(ray_cluster.address) as ex:
        jobs = [
            Job("compile", os.getpid, (), key="same"),
            Job("compile", os.getpid, (), key="same"),
            Job("build", int, ("not a number",)),
        ]
        a, b, bad = ex.run(jobs)
    assert a.ok and b.ok and a.value == b.value and a.placement == b.placement
    assert not bad.ok and not bad.lost and "ValueError" in bad.error


def test_the_executor_names_the_cluster_ray_joined(ray_cluster) -> None:
    """``--cluster auto`` joins whatever cluster Ray finds on the machine; the compile step's progress line
    says which one (the address Ray resolved) and how many nodes it has."""
    from ktriage.explain.session import compiling_label

    with RayExecutor(ray_cluster.address) as ex:
        label = compiling_label(ex)
        nodes = len(ex.nodes())
    port = ray_cluster.address.rsplit(":", 1)[1]
    assert label.startswith("compiling on the Ray cluster at ") and port in label, label
    assert f"({nodes} nodes)" in label and nodes >= 2
    assert compiling_label(None) == "compiling"


def test_a_timing_job_without_a_gpu_node_is_refused_with_the_fix(ray_cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    from ktriage.errors import KtriageError

    with RayExecutor(ray_cluster.address) as ex:
        monkeypatch.setattr(ex, "resources", lambda: {"CPU": 3.0})
        with pytest.raises(KtriageError, match="no GPU node"):
            ex.gpu_request()
