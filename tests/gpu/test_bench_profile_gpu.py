"""GPU host only: `ktriage bench --bundle B --profile` end to end: time, run ncu on every toolchain,
counters into the results file and the store, quoted by compare.

Needs torch with CUDA, ncu on PATH, and a bundle compiled on the CPU machine, e.g.
    ktriage bench --op layer_norm --bwd --only liger_layer_norm,torch_layer_norm -i N=4608 \
        -t triton==3.3.1 -t triton==3.4.0 --compile-only --bundle .bundles/prof-ln-bwd
then on the GPU host
    KTRIAGE_PROFILE_BUNDLE=.bundles/prof-ln-bwd pytest -m gpu tests/gpu/test_bench_profile_gpu.py
Where ncu has no permission to the counters the test still passes if every profiled cell says so in
one line and keeps its timings (that is the feature too); benchmarks/profile/results_h200.sh is the
same run with its outputs kept.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu


def test_bench_profile_end_to_end(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from ktriage.measure.results_file import cell_profile, read_results
    from ktriage.store import open_store

    source = os.environ.get("KTRIAGE_PROFILE_BUNDLE")
    if not source:
        pytest.skip("set KTRIAGE_PROFILE_BUNDLE to a bundle built with --compile-only (see the module docstring)")
    bundle = tmp_path / "bundle"
    shutil.copytree(source, bundle)  # the raw ncu files are written into the bundle: a copy
    results, db = tmp_path / "results.json", f"sqlite:///{tmp_path / 'store.db'}"
    res = run_cli(
        [
            "bench",
            "--bundle",
            str(bundle),
            "--only",
            "liger_layer_norm,torch_layer_norm",
            "--artifacts-only",
            "--artifact-timing",
            "kernel",
            "--max-time",
            "3",
            "--profile",
            "-o",
            str(results),
            "--db",
            db,
        ]
    )
    assert res.exit_code == 0, res.stderr
    run, cells = read_results(results)
    profiled = [c for c in cells if c.key.toolchain is not None]
    assert len(profiled) >= 2 and all(c.status == "ok" and c.samples_ms for c in profiled)
    for c in profiled:
        section = cell_profile(c)
        assert section is not None and section["toolchain"] == c.key.toolchain
        if section["status"] == "ok":
            assert section["launches"] and section["launches"][0]["registers_per_thread"] > 0
        else:
            assert section["error"] and "\n" not in section["error"]
    with open_store(db) as store:
        _, stored = store.load_run(run.run_id)
    assert {c.key.toolchain: cell_profile(c) for c in stored if c.key.toolchain} == {
        c.key.toolchain: cell_profile(c) for c in profiled
    }
    res = run_cli(["compare", str(results), "--toolchains", "--format", "markdown"])
    assert "Counters (Nsight Compute) next to the verdicts" in res.stdout
    ok = all(cell_profile(c)["status"] == "ok" for c in profiled)  # type: ignore[index]
    assert ("registers/thread" if ok else "counters: ") in res.stdout
