"""TritonBench's way of comparing two compilers, for the GPU-time comparison of issue 3.

One process per toolchain, run one after another (as TritonBench is run once per Triton build): in
each, every input's baseline (torch) and the Liger kernel (that toolchain's artifact, replayed from
the bundle) are timed with TritonBench's method: ``triton.testing.do_bench(fn, warmup=25, rep=100,
grad_to_none=...)`` (256 MB L2 clear before every call), IQR outlier removal, ``median_low``.
Prints one JSON line with the process's wall time and per-input medians.

    python3 benchmarks/gpu/tritonbench_style.py --bundle .bundles/ln-bwd-all --toolchain ID
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

T0 = time.perf_counter()


def iqr_median_low(times: list[float]) -> float:
    if len(times) > 3:
        q = statistics.quantiles(times, n=4)
        lo, hi = q[0] - 1.5 * (q[2] - q[0]), q[2] + 1.5 * (q[2] - q[0])
        times = [t for t in times if lo <= t <= hi]
    return statistics.median_low(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--toolchain", required=True)
    ap.add_argument("--backend", default="liger_layer_norm")
    ap.add_argument("--baseline", default="torch_layer_norm")
    args = ap.parse_args()

    import torch
    import triton

    from ktriage.measure.loader import runner_loader
    from ktriage.workload.bundles.format import load_bundle
    from ktriage.workload.bundles.launch import make_launcher
    from ktriage.workload.ops.backends import get_backend, make_input
    from ktriage.workload.ops.replay import artifact_backend

    bundle = load_bundle(args.bundle)
    launch = make_launcher(bundle, args.toolchain, runner_loader())
    out = {}
    for case in bundle.input_cases():
        inp = make_input(bundle.op, case, precision=bundle.precision)
        row = {}
        for name, backend in (
            (args.baseline, get_backend(bundle.op, args.baseline)),
            (
                args.backend,
                artifact_backend(args.backend, launch=launch, specs=bundle.spec_source(), sm_count=bundle.sm_count),
            ),
        ):
            fn = backend.prepare(inp, bundle.mode)
            backend.outputs()  # TritonBench checks accuracy once too
            times = triton.testing.do_bench(
                fn, warmup=25, rep=100, grad_to_none=backend.grad_to_none(), return_mode="all"
            )
            row[name] = iqr_median_low(list(times))
        out[str(case.id)] = row
        torch.cuda.synchronize()
    print(json.dumps({"toolchain": args.toolchain, "wall_s": time.perf_counter() - T0, "medians_ms": out}))


if __name__ == "__main__":
    main()
