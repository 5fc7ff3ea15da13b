"""A time bisect whose measurements are timing jobs on the cluster's GPU node (FAKE timings: CI has no
GPU): every comparison is one job placed on the node that declares ``gpu_slot``, and the culprit is
the one the local run names."""

from __future__ import annotations

from ktriage.bisect.cluster import RemoteMeasure
from ktriage.bisect.search import run_search
from ktriage.bisect.time_predicate import TimePredicate
from ktriage.execute.ray_backend import RayExecutor
from ktriage.testing import FakeNoisyTimings, fake_candidates

FAKE = (17, 0.30, 0.02)  # culprit, effect, cv: FakeNoisyTimings' first three fields


def test_time_bisect_on_the_gpu_node_names_the_local_culprit(ray_cluster) -> None:
    cands = fake_candidates(24)
    local = run_search(cands, TimePredicate(FakeNoisyTimings(*FAKE)), workers=3)
    with RayExecutor(ray_cluster.address) as ex:
        gpu = [n["node_id"] for n in ex.nodes() if n["resources"].get("gpu_slot")]
        remote = RemoteMeasure(ex, FakeNoisyTimings, FAKE)
        result = run_search(cands, TimePredicate(remote), workers=3)
    assert local.culprit is not None and result.culprit is not None
    assert result.culprit.index == local.culprit.index == 17
    assert remote.placements and {p.node_id for p in remote.placements} == set(gpu)  # only the GPU node
    # each measure call (the endpoints and a round's candidates, together) was one job in one process
    assert len(remote.placements) >= 1 + result.rounds and all(p.pid > 0 for p in remote.placements)
    assert result.rounds == local.rounds
