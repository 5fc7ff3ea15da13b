"""`ktriage tune --compile-only --cluster` on a real Ray cluster ranks the same candidates as locally: the
candidates' compiles go to the nodes, the screening and the report stay on the driver."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


def test_tune_on_the_cluster_equals_the_local_one(ray_cluster, toolchain, ktriage_home, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from ray_test_cluster import REPO

    toolchain("triton==3.4.0")
    # Each run gets an empty artifact cache (the toolchains and packages are the test home's), so the
    # cluster run's candidates really are compiled on the nodes and the local run's in the local pool.
    homes = []
    for name in ("local", "cluster"):
        home = tmp_path / name
        home.mkdir()
        for entry in ktriage_home.iterdir():
            if entry.name != "artifacts":
                (home / entry.name).symlink_to(entry)
        homes.append(home)
    base = [
        sys.executable,
        "-m",
        "ktriage",
        "tune",
        "liger.layer_norm",
        "-t",
        "triton==3.4.0",
        "-i",
        "N=4608",
        "--compile-only",
        "-f",
        "json",
    ]
    env = {**__import__("os").environ, "PYTHONPATH": str(REPO)}
    reports = []
    for home, extra in zip(homes, ([], ["--cluster", ray_cluster.address]), strict=True):
        proc = subprocess.run(
            base + extra, capture_output=True, text=True, env={**env, "KTRIAGE_HOME": str(home)}, timeout=900
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        data = json.loads(proc.stdout)
        report = data["inputs"][0] if "inputs" in data else data
        reports.append(
            [
                (c["label"], c["rank"], c["status"], c["resources"] and c["resources"].get("registers"))
                for c in report["candidates"]
            ]
            + [report["recommended"]]
        )
    assert reports[0] == reports[1]
    assert len(reports[0]) > 2
    # the cluster run's artifacts came back from the nodes into its own (empty before) cache
    assert any((homes[1] / "artifacts" / "frontend").iterdir())
