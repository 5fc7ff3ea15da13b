"""Does the way L2 is flushed before a timed call explain why the bench and ncu disagree? (README.md, "Second
pass": the bench times Triton 3.6.0's int4 gemm at 1x8192 by 4096x1280 at 105..108 us in four processes, ncu at
95.0; the inductor layer_norm at N=1536 changes by -7.5 % in the bench and -3.5 % under ncu.)

The bench flushes as TritonBench does, zeroing a 256 MB buffer before each call, which leaves L2 full of dirty
lines that the timed kernel's first loads must write back; ncu's ``--cache-control all`` invalidates the caches.
This times each toolchain's kernel of the given recorded entries after three kinds of flush, interleaved, one
CUDA-event pair around the kernel alone: ``memset`` (the bench's), ``read`` (summing the same 256 MB: L2 full of
clean lines), ``none`` (the previous call's data still in L2). GPU host, repo root, with ktriage importable::

    python3 benchmarks/calibration/misses/flush_kind.py BUNDLE ENTRY [ENTRY ...] [--calls 40] -o OUT.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

FLUSH_BYTES = 256 << 20


def main() -> int:
    import torch

    from ktriage.measure.loader import runner_loader
    from ktriage.workload.bundles.format import BundleArtifact, load_bundle
    from ktriage.workload.bundles.launch import make_launcher
    from ktriage.workload.recorded.bundle import recorded_view
    from ktriage.workload.recorded.replay import RecordedKernel, allocate

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bundle")
    ap.add_argument("entries", nargs="+", type=int)
    ap.add_argument("--calls", type=int, default=40, help="timed calls per toolchain and kind of flush")
    ap.add_argument("-o", "--out", required=True)
    args = ap.parse_args()
    bundle = load_bundle(args.bundle)
    view = recorded_view(bundle)
    flush_buffer = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    flushes = {"memset": flush_buffer.zero_, "read": lambda: flush_buffer.sum(), "none": lambda: None}
    loader = runner_loader()
    launchers = {tc: make_launcher(bundle, tc, loader) for tc in bundle.toolchain_ids()}
    out: list[dict[str, Any]] = []
    for entry_id in args.entries:
        entry = view.entry(entry_id)
        plan = entry.plan(bundle.specs[entry.spec_key])
        buffers = allocate(plan, seed=entry.id, device="cuda")
        kernels = {
            tc: RecordedKernel(launch, entry.spec_key, plan)
            for tc, launch in launchers.items()
            if isinstance(bundle.artifacts.get((entry.spec_key, tc)), BundleArtifact)
        }
        samples: dict[str, dict[str, list[float]]] = {kind: {tc: [] for tc in kernels} for kind in flushes}
        for kernel in kernels.values():  # warm up each (module load, first launch)
            for _ in range(3):
                kernel(buffers)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for i in range(args.calls):
            for kind, flush in flushes.items():
                order = list(kernels) if i % 2 == 0 else list(reversed(kernels))
                for tc in order:
                    flush()
                    start.record()
                    kernels[tc](buffers)
                    end.record()
                    end.synchronize()
                    samples[kind][tc].append(start.elapsed_time(end) * 1e3)
        row: dict[str, Any] = {"entry": entry_id, "label": entry.recorded_label, "us": {}}
        for kind, by_tc in samples.items():
            row["us"][kind] = {tc: statistics.median(v) for tc, v in by_tc.items()}
        out.append(row)
        ref = next((tc for tc in kernels if tc.startswith("triton-3.6.0")), next(iter(kernels)))
        for kind, med in row["us"].items():
            ratios = ", ".join(f"{tc.split('.ptxas')[0]} {med[tc] / med[ref]:.3f}" for tc in med if tc != ref)
            print(f"entry {entry_id} {kind:6s}: {ref.split('.ptxas')[0]} {med[ref]:.1f} us; {ratios}", flush=True)
    with open(args.out, "w") as fh:
        json.dump({"device": torch.cuda.get_device_name(), "calls": args.calls, "entries": out}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
