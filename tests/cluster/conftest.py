"""A REAL Ray cluster on 127.0.0.1 for the cluster tests: a head and three worker nodes, one CPU each,
the second and third declaring the GPU stand-in resource ``gpu_slot`` (CI has no GPU): two "GPU
nodes", so a timed bisect over the cluster's GPUs has one worker on each.

Each pytest process starts its own cluster in a private RAY_TMPDIR on free ports, so parallel test
workers never share or stop each other's cluster (with ``--dist loadgroup`` the ``xdist_group``
marker keeps every cluster test on one worker and one cluster). Teardown kills exactly the
processes this cluster started (found by its private temp dir and ports) and every process under them
(``Cluster.stop``: a raylet's agents retitle themselves, so no name says whose they are), never other Ray
processes on the machine, and fails if any of them survives. Without Ray the tests skip with the reason; in CI (``KTRIAGE_REQUIRE_RAY=1``, .ci/run) a
missing Ray fails them instead.
"""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ray_test_cluster import Cluster


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.xdist_group("ray_cluster"))


@pytest.fixture(scope="session")
def ray_installed() -> None:
    """Skips a test without Ray, saying why; fails it instead in CI (``KTRIAGE_REQUIRE_RAY=1``)."""
    if importlib.util.find_spec("ray") is None:
        if os.environ.get("KTRIAGE_REQUIRE_RAY", "").strip() in ("1", "true", "yes"):
            pytest.fail(
                "Ray is not installed, and KTRIAGE_REQUIRE_RAY=1 (CI) says the cluster tests must run: pip install -e '.[test]'"
            )
        pytest.skip("Ray is not installed here (pip install 'ktriage[cluster]'); CI installs it and runs these tests")


@pytest.fixture(scope="session")
def ray_cluster(ray_installed: None) -> Iterator[Cluster]:
    cluster = Cluster.private()
    try:
        cluster.start_head()
        cluster.start_worker("cpu")
        cluster.start_worker("gpu", "--resources", '{"gpu_slot": 1}')
        cluster.start_worker("gpu2", "--resources", '{"gpu_slot": 1}')
        os.environ["RAY_TMPDIR"] = str(cluster.tmp)  # the driver (this test process) too
        _wait_nodes(cluster, 4)
        yield cluster
    finally:
        try:
            import ray

            ray.shutdown()
        except ImportError:
            pass
        cluster.stop()  # fails the session if a process of the cluster survives


def _wait_nodes(cluster: Cluster, n: int, timeout: float = 60.0) -> None:
    import ray

    ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if sum(1 for x in ray.nodes() if x.get("Alive")) >= n:
                return
            time.sleep(0.5)
        raise AssertionError(f"the test cluster has fewer than {n} live nodes")
    finally:
        ray.shutdown()
