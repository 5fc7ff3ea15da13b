"""What a second pass over data a CTA has just read costs on the GPU: the fact behind ``kappa_reread``.

Multi-pass row kernels (inductor's layer_norm and welford reductions, Liger's cross-entropy, TritonBench's
``_layer_norm_fwd_fused``) read their row once per loop: mean, variance, normalize. Only the first pass comes
from DRAM; the later ones hit L1/L2. Each CTA here reads its row ``passes`` times, in ``passes`` loops that each
sum the row, and stores one number; the grid streams 512 MB. For each row size the time grows linearly with the
passes: the first pass costs the data at DRAM bandwidth, each further pass what a re-read costs. Their ratio is
how many times faster than the DRAM share a re-read is served (``kappa_reread`` in the cost model).

    python3 benchmarks/calibration/reread/reread.py -o OUT.json     # on the GPU; prints a table
"""

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
def _passes(src, dst, ROW: tl.constexpr, BLOCK: tl.constexpr, PASSES: tl.constexpr):
    """Each CTA sums its row PASSES times, one loop a pass (the loops are not merged: each loop's loads issue anew)."""
    row = tl.program_id(0) * ROW
    total = 0.0
    for p in tl.static_range(PASSES):
        # each pass starts where the previous one's sum says (0 unless it is NaN): like a variance pass after the
        # mean it waits for the pass before, and the compiler cannot merge the passes' loads into one (it did:
        # 3 passes over a 2 KB row compiled to the loads of one, in Triton 3.6.0 for sm_90)
        shift = (total != total).to(tl.int32) * ROW
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for start in range(0, ROW, BLOCK):
            offs = start + tl.arange(0, BLOCK) + shift
            acc += tl.load(src + row + offs).to(tl.float32)
        total += tl.sum(acc, axis=0) * (p + 1)
    tl.store(dst + tl.program_id(0), total)


def _launch(grid: int, src: torch.Tensor, dst: torch.Tensor, row: int, block: int, passes: int, warps: int) -> None:
    _passes[(grid,)](src, dst, ROW=row, BLOCK=block, PASSES=passes, num_warps=warps)


def _time_ms(fn: Callable[[], None], reps: int) -> float:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end))
    return statistics.median(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", help="write the measurements as JSON")
    ap.add_argument("--reps", type=int, default=21)
    ap.add_argument("--mbytes", type=int, default=512, help="the data the grid streams (MB)")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("reread: no CUDA GPU", file=sys.stderr)
        return 2
    props = torch.cuda.get_device_properties(0)
    started = time.time()
    n = args.mbytes * 1024 * 1024 // 2  # bf16 elements (int32 offsets: at most 2 GB)
    src = torch.randn(n + 16384, device="cuda", dtype=torch.bfloat16)  # room for a pass shifted by a NaN
    rows = []
    passes_list = [1, 2, 3, 4]
    for row_elems, warps in ((1024, 8), (1024, 4), (4096, 8), (16384, 8)):  # 2 KB (welford's row), 8 KB, 32 KB a CTA
        block = min(row_elems, 32 * warps * 8)  # 16 B a thread a load
        grid = n // row_elems
        dst = torch.empty(grid, device="cuda", dtype=torch.float32)
        times = []
        for passes in passes_list:
            run = functools.partial(_launch, grid, src, dst, row_elems, block, passes, warps)
            times.append(_time_ms(run, args.reps))
        line = statistics.linear_regression(passes_list, times)
        first_ms = times[0]
        extra_ms = line.slope
        bytes_ = n * 2
        rows.append(
            {
                "row_bytes": row_elems * 2,
                "num_warps": warps,
                "grid": grid,
                "ms_by_passes": times,
                "first_pass_gbps": bytes_ / first_ms / 1e6,
                "extra_pass_gbps": bytes_ / extra_ms / 1e6 if extra_ms > 0 else float("nan"),
                "kappa_reread": first_ms / extra_ms if extra_ms > 0 else float("nan"),
            }
        )
        r = rows[-1]
        print(
            f"row {row_elems * 2 // 1024:3d} KB, {warps} warps, grid {grid}: "
            f"{', '.join(f'{t * 1e3:.0f}' for t in times)} us for 1..4 passes; first pass {r['first_pass_gbps']:.0f} GB/s, "
            f"each further pass {r['extra_pass_gbps']:.0f} GB/s: a re-read is {r['kappa_reread']:.2f}x the first pass"
        )
    result = {
        "device": props.name,
        "sms": props.multi_processor_count,
        "data_mb": args.mbytes,
        "rows": rows,
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
