"""What one more wave of CTAs costs on the GPU: the fact behind the cost model's ``lambda_wave``.

The model charges each wave of resident CTAs a fixed latency (``lambda_wave``: a CTA's launch, its first
round trip to memory, its drain), fitted on the calibration cells to 3491 cycles (1.8 us at 1.98 GHz; 3951
since step 16). This measures it directly. A streaming kernel (each CTA loads ``bytes`` and stores them back, 1024 threads, so at
most 2 CTAs fit an SM) is launched with 1, 2, ... 12 full waves (grid = waves x SMs x 2), at several sizes a
CTA; for each size the time grows linearly with the waves, and a line through (bytes a wave, time a wave)
over the sizes has the fixed part as its intercept: what a wave costs beyond its bytes at the bandwidth.

    python3 benchmarks/calibration/wave_cost/wave_cost.py -o OUT.json     # on the GPU; prints a table

The launches are replayed from a CUDA graph, and the slope over the waves removes what each launch costs
whatever its grid."""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from collections.abc import Callable

import torch
import triton
import triton.language as tl


@triton.jit
def _stream(src, dst, PER_THREAD: tl.constexpr, BLOCK: tl.constexpr):
    """Each CTA copies BLOCK x PER_THREAD fp32 elements: its loads all issue before the first store waits."""
    base = tl.program_id(0).to(tl.int64) * BLOCK * PER_THREAD
    offs = base + tl.arange(0, BLOCK * PER_THREAD)
    tl.store(dst + offs, tl.load(src + offs))


def _launch(grid: tuple[int], src: torch.Tensor, dst: torch.Tensor, per_thread: int, block: int) -> None:
    _stream[grid](src, dst, PER_THREAD=per_thread, BLOCK=block, num_warps=32)


def _time_ms(fn: Callable[[], None], reps: int) -> float:
    """Median of ``reps`` replays of a CUDA graph of 20 back-to-back launches, in ms a launch (CUDA events).
    The graph takes the host out: launched from Python one by one, a small grid's launches come ~14 us apart
    and the GPU waits for the host, so the time would not grow with the waves at all."""
    for _ in range(3):  # compile and warm up outside the capture
        fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(20):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) / 20)
    return statistics.median(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", help="write the measurements as JSON")
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("wave_cost: no CUDA GPU", file=sys.stderr)
        return 2
    props = torch.cuda.get_device_properties(0)
    sms, block, per_cta_ctas = props.multi_processor_count, 1024, 2  # 1024 threads: 2 CTAs an SM at most
    waves = list(range(1, 13))
    rows = []
    started = time.time()
    for per_thread in (1, 2, 4, 8, 16, 32):  # 4 KB .. 128 KB a CTA
        cta_bytes = block * per_thread * 4
        n = max(waves) * sms * per_cta_ctas * block * per_thread
        src = torch.randn(n, device="cuda")
        dst = torch.empty_like(src)
        times = []
        for w in waves:
            grid = (w * sms * per_cta_ctas,)
            ms = _time_ms(functools.partial(_launch, grid, src, dst, per_thread, block), args.reps)
            times.append(ms)
        line = statistics.linear_regression(waves, times)
        slope_ms = line.slope  # ms a wave
        wave_bytes = 2 * cta_bytes * sms * per_cta_ctas  # loaded and stored
        rows.append(
            {
                "cta_bytes": cta_bytes,
                "wave_bytes": wave_bytes,
                "ms_by_waves": times,
                "us_per_wave": slope_ms * 1e3,
                "us_at_zero_waves": line.intercept * 1e3,  # what a launch costs whatever its grid
            }
        )
        print(
            f"{cta_bytes // 1024:4d} KB a CTA: {slope_ms * 1e3:7.2f} us a wave  ({', '.join(f'{t * 1e3:.1f}' for t in times)} us)"
        )
    fit = statistics.linear_regression([r["wave_bytes"] for r in rows], [r["us_per_wave"] for r in rows])
    fixed_us, gbps = fit.intercept, 1e-3 / fit.slope if fit.slope > 0 else float("nan")
    print(f"a wave: {fixed_us:.2f} us fixed + its bytes at {gbps:.0f} GB/s (line over the {len(rows)} sizes)")
    result = {
        "device": props.name,
        "sms": sms,
        "clock_note": "cycles = us x the SM clock (1.98 GHz on the H200 under load)",
        "rows": rows,
        "fixed_us_per_wave": fixed_us,
        "bandwidth_gbps": gbps,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "seconds": round(time.time() - started, 1),
    }
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
