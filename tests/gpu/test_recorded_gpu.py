"""GPU host only: recorded workloads benched from bundles built on the CPU machine.

The bundles (benchmarks/record/bench_workloads_h200.sh builds and names them):
    ktriage bench benchmarks/record/h200/many_launches.workload.json.gz -t triton==3.6.0 -t triton==3.3.1 \
        --compile-only --bundle .bundles/wl-many_launches
    ktriage bench benchmarks/record/h200/tb_rms_norm_bwd.workload.json.gz -t ... --compile-only --bundle .bundles/wl-tb_rms_norm_bwd
then on the GPU host
    KTRIAGE_RECORDED_BUNDLES=.bundles/wl-many_launches:.bundles/wl-tb_rms_norm_bwd pytest -m gpu tests/gpu/test_recorded_gpu.py
(default: every .bundles/wl-* of the repository).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ktriage.cli import exit_codes

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[2]


def _bundles() -> list[Path]:
    text = os.environ.get("KTRIAGE_RECORDED_BUNDLES", "")
    found = [Path(p) for p in text.split(os.pathsep) if p] or sorted((REPO / ".bundles").glob("wl-*"))
    return [p for p in found if (p / "manifest.json").exists()]


def _bundle(name: str) -> Path:
    for b in _bundles():
        if b.name.endswith(name) or name in b.name:
            return b
    pytest.skip(f"no recorded bundle *{name}* (set KTRIAGE_RECORDED_BUNDLES; see the module docstring)")


@pytest.mark.parametrize("name", ["many_launches", "tb_rms_norm_bwd"])
def test_bench_a_recorded_bundle_gives_a_cell_per_entry_and_toolchain(name: str, tmp_path: Path) -> None:
    from ktriage.cli.app import main
    from ktriage.measure.results_file import read_results
    from ktriage.workload.bundles.format import BundleArtifact
    from ktriage.workload.recorded.bundle import load_recorded_bundle

    bundle = _bundle(name)
    rec = load_recorded_bundle(bundle)
    entries = rec.entries[:4]
    kernels = sorted({e.kernel for e in entries})
    results = tmp_path / "r.json"
    argv = [
        "bench",
        "--bundle",
        str(bundle),
        "--max-time",
        "0.5",
        "--min-samples",
        "5",
        "-o",
        str(results),
        "--db",
        f"sqlite:///{tmp_path / 'store.db'}",
    ]
    for k in kernels:
        argv += ["--kernel", k]
    assert main(argv) == exit_codes.OK
    _run, cells = read_results(results)
    want = {(e.id, tc) for e in rec.select(kernels, None) for tc in rec.bundle.toolchains}
    assert {(c.key.input_id, c.key.toolchain) for c in cells} == want
    for c in cells:
        e = rec.entry(c.key.input_id)
        compiled = isinstance(rec.bundle.artifact(e.spec_key, str(c.key.toolchain)), BundleArtifact)
        if not compiled:
            assert c.status == "error" and "did not compile" in str(c.error), c
            continue
        # a real toolchain disagreeing with the reference would be a finding: look at c.accuracy
        assert c.status == "ok", (c.key.label(), c.status, c.error)
        assert c.samples_ms and c.key.backend == e.backend and c.key.mode == "recorded"
        if c.accuracy.get("reference"):
            assert c.accuracy["deterministic"] in (True, False)
        else:
            assert c.accuracy["agreement"] in ("bitwise equal", "within tolerance")
    # cells that did not compile are not compared (exit 4 without --allow-failures): the run's verdicts still stand
    assert main(["compare", str(results), "--toolchains", "--allow-failures"]) in (exit_codes.OK, exit_codes.FINDING)


def test_the_replayed_rms_norm_forward_computes_rms_norm() -> None:
    """The replay passes the right arguments (not only the same wrong ones to every toolchain):
    liger's RMSNorm forward, launched from the bundle, against the formula in torch."""
    import torch

    from ktriage.measure.loader import runner_loader
    from ktriage.workload.bundles.launch import make_launcher
    from ktriage.workload.recorded.bundle import load_recorded_bundle
    from ktriage.workload.recorded.replay import RecordedKernel, allocate

    rec = load_recorded_bundle(_bundle("tb_rms_norm_bwd"))
    entry = next(e for e in rec.entries if e.function == "_rms_norm_forward_kernel")
    plan = entry.plan(rec.bundle.specs[entry.spec_key])
    buffers = allocate(plan, seed=0, device="cuda")
    tc = next(iter(rec.bundle.toolchains))
    RecordedKernel(make_launcher(rec.bundle, tc, runner_loader()), entry.spec_key, plan)(buffers)
    torch.cuda.synchronize()
    scalars = {a.name: getattr(a, "value", None) for a in plan.args}
    x, w = buffers.views["X_ptr"].double(), buffers.views["W_ptr"].double()
    want = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + scalars["eps"]) * (scalars["offset"] + w)
    torch.testing.assert_close(buffers.views["Y_ptr"].double(), want, rtol=1e-4, atol=1e-5)
