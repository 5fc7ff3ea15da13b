"""A time bisect whose measurements run on the cluster's GPU nodes (FAKE timings: CI has no GPU).

Every measure is a pinned worker (a Ray actor holding one ``gpu_slot``): all its calls, the
endpoints with a round's candidates and the later sampling rounds, run in one process on one
"GPU", so no verdict pools samples of two GPUs. With ``--gpus 2`` there are two such workers, one
on each GPU node, each timing its own group of a round with both endpoints; the culprit is the one
the local run names."""

from __future__ import annotations

import pytest

from ktriage.bisect.cluster import RemoteMeasure
from ktriage.bisect.search import run_search
from ktriage.bisect.time_predicate import TimePredicate
from ktriage.errors import KtriageError
from ktriage.execute.ray_backend import RayExecutor
from ktriage.testing import FakeNoisyTimings, fake_candidates

FAKE = (17, 0.30, 0.02)  # culprit, effect, cv: FakeNoisyTimings' first three fields


def _gpu_nodes(ex: RayExecutor) -> set[str]:
    return {n["node_id"] for n in ex.nodes() if n["resources"].get("gpu_slot")}


def test_time_bisect_on_a_gpu_node_names_the_local_culprit(ray_cluster) -> None:
    cands = fake_candidates(24)
    local = run_search(cands, TimePredicate(FakeNoisyTimings(*FAKE)), workers=3)
    with RayExecutor(ray_cluster.address) as ex:
        remote = RemoteMeasure(ex, FakeNoisyTimings, FAKE)
        result = run_search(cands, TimePredicate(remote), workers=3)
        gpu = _gpu_nodes(ex)
        remote.close()
    assert local.culprit is not None and result.culprit is not None
    assert result.culprit.index == local.culprit.index == 17
    # every call (the endpoints and a round's candidates, together, and every later sampling round)
    # ran in the one pinned process, on one GPU node
    assert len(remote.placements) >= 1 + result.rounds
    assert len({(p.node_id, p.pid) for p in remote.placements}) == 1 and remote.placements[0].node_id in gpu
    assert result.rounds == local.rounds


def test_time_bisect_over_the_clusters_gpus_keeps_each_group_on_its_gpu(ray_cluster) -> None:
    """``bisect --cluster ... --gpus 2``'s predicate: one pinned worker per GPU node; a round's
    candidates split between them, each group measured with both endpoints on its own GPU."""
    cands = fake_candidates(24)
    local = run_search(cands, TimePredicate(FakeNoisyTimings(*FAKE)), workers=4)
    with RayExecutor(ray_cluster.address) as ex:
        pool = [RemoteMeasure(ex, FakeNoisyTimings, FAKE, gpu=i) for i in range(2)]
        result = run_search(cands, TimePredicate(pool[0], more_gpus=pool[1:]), workers=4)
        gpu = _gpu_nodes(ex)
        where = [m.where for m in pool]
        for m in pool:
            m.close()
    assert (
        result.culprit is not None and local.culprit is not None and result.culprit.index == local.culprit.index == 17
    )
    pinned = [{(p.node_id, p.pid) for p in m.placements} for m in pool]
    assert all(len(p) == 1 for p in pinned), pinned  # each worker: one process for all its calls
    assert {next(iter(p))[0] for p in pinned} == gpu  # the two workers on the two GPU nodes
    timed = [o for o in result.observations if "gpu" in o.measurements]
    assert {o.measurements["gpu"] for o in timed} == {0, 1}  # both GPUs took candidates
    for o in timed:  # an observation names the GPU it was timed on: its worker's host and node
        assert o.measurements["gpu_node"] == where[o.measurements["gpu"]]["gpu_node"]
        assert o.measurements["gpu_host"] == where[o.measurements["gpu"]]["gpu_host"]


def test_more_cluster_gpus_than_the_cluster_has_is_refused(ray_cluster) -> None:
    from ktriage.measure.gpus import select_gpu_count

    with RayExecutor(ray_cluster.address) as ex:
        slots = ex.slots("timing")
    assert select_gpu_count("all", slots) == slots == 2
    with pytest.raises(KtriageError, match="the cluster has 2 GPU"):
        select_gpu_count("3", slots)


def test_a_lost_gpu_worker_fails_its_calls_and_is_never_moved_to_another_gpu(ray_cluster) -> None:
    """SIGKILL the node of a pinned worker: its next calls fail as lost, naming where it ran, even
    though the other GPU node is free (a comparison is never continued on another GPU)."""
    from ktriage.testing import fake_timing_job

    with RayExecutor(ray_cluster.address) as ex:
        worker = ex.pinned_worker("timing")
        first = worker.call(fake_timing_job, (["a", "b"], 4, 0))
        assert first.ok and first.placement is not None, first.error
        node = first.placement.node_id
        name = {v: k for k, v in ray_cluster.node_ids().items()}[node]
        assert name in ("gpu", "gpu2")
        ray_cluster.kill_worker(name)
        try:
            lost = worker.call(fake_timing_job, (["a", "b"], 4, 1))
            again = worker.call(fake_timing_job, (["a", "b"], 4, 2))
        finally:
            ray_cluster.start_worker(name, *ray_cluster.worker_args[name])  # give the later tests their cluster back
    assert not lost.ok and lost.lost and "was lost" in lost.error and node[:12] in lost.error
    assert not again.ok and again.lost and again.error == lost.error  # not restarted elsewhere
    assert worker.where["node_id"] == node
