"""The launch hook's cost per launch on a GPU host, A/B inside one process (issue 17's overhead target).

Whole-process timings (many_launches.py plain vs under ``ktriage record``) move by +-30% between
processes on a shared host, more than the effect measured. Here one process times the same 20,000
launches (4 shapes, real CUDA tensors) with ``JITFunction.run`` plain and hooked, alternating
rounds, so both see the same machine state. Prints per-launch medians and the ratio.
Usage (repo root): python3 benchmarks/record/programs/overhead_inprocess.py [ROUNDS]
"""

import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import triton
import triton.language as tl
from triton.runtime.jit import JITFunction

ROOT = Path(__file__).resolve().parents[3]


@triton.jit
def add(x, y, o, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(o + i, tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)


def loop(xs: dict, sizes: list[int], n: int) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    for k in range(n):
        size = sizes[k % 4]
        x, y, o = xs[size]
        add[(triton.cdiv(size, 1024),)](x, y, o, size, BLOCK=1024)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    sizes = [4096, 8192, 16384, 65536]
    xs = {s: (torch.randn(s, device="cuda"), torch.randn(s, device="cuda"), torch.empty(s, device="cuda")) for s in sizes}
    loop(xs, sizes, 400)  # compile and warm up, unhooked
    plain_run = JITFunction.run
    spec = importlib.util.spec_from_file_location("_ktr_hook", ROOT / "ktriage" / "insitu" / "record_hook.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    rec = hook.install(str(Path(tempfile.mkdtemp()) / "journal"))
    hooked_run = JITFunction.run
    assert hooked_run is not plain_run, "the hook did not patch JITFunction.run"
    loop(xs, sizes, 400)  # the hook sees each shape once (new launches), then counts
    plain, hooked = [], []
    for _ in range(rounds):
        JITFunction.run = plain_run
        plain.append(loop(xs, sizes, 20000))
        JITFunction.run = hooked_run
        hooked.append(loop(xs, sizes, 20000))
    p, h = statistics.median(plain), statistics.median(hooked)
    print(f"plain  us/launch: {' '.join(f'{v:.2f}' for v in plain)}")
    print(f"hooked us/launch: {' '.join(f'{v:.2f}' for v in hooked)}")
    print(f"median plain {p:.2f} us, hooked {h:.2f} us: +{h - p:.2f} us per launch, ratio {h / p:.3f}; "
          f"{sum(rec.counts.values())} launches counted in {len(rec.launches)} distinct launches")


if __name__ == "__main__":
    main()
