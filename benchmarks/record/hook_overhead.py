"""The launch hook's cost per launch on Triton's real launch path, with the GPU driver faked (CPU only).

Run inside a toolchain's interpreter:
    python benchmarks/record/hook_overhead.py [N]
It times N cached launches of a small kernel (the JIT's steady state: binder, cache lookup, the
fake launcher, which does nothing) without the hook, then with it installed (each launch reduced to
its key and counted). The difference is the hook's Python cost per launch; on a GPU host the
launch itself (cuLaunchKernel) comes on top of both. FakeTensor's data_ptr/stride are Python
methods, so this overstates the hook's cost for torch tensors a little.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "ktriage" / "insitu"))
import fakedriver

KERNEL = """
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)
"""


ROUNDS = 7


def _time(kernel, args, n: int) -> float:
    """Microseconds per launch: the best of ROUNDS rounds (the machine is shared; noise only adds)."""
    grid = (16,)
    for _ in range(100):
        kernel[grid](*args, BLOCK=256)
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(n):
            kernel[grid](*args, BLOCK=256)
        best = min(best, (time.perf_counter() - start) / n * 1e6)
    return best


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    fakedriver.install(90)
    tmp = Path(tempfile.mkdtemp())
    (tmp / "bench_kernel.py").write_text(KERNEL)
    sys.path.insert(0, str(tmp))
    import bench_kernel

    args = [fakedriver.FakeTensor("fp32", shape=(4096,)) for _ in range(3)] + [4096]
    plain = _time(bench_kernel.add_kernel, args, n)
    spec = importlib.util.spec_from_file_location("_hook", ROOT / "ktriage" / "insitu" / "launch_hook.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    rec = hook.install(str(tmp / "journal"))
    hooked = _time(bench_kernel.add_kernel, args, n)
    import triton

    # the hook's own work per cached launch, alone
    jit_fn, kwargs, best = bench_kernel.add_kernel, {"BLOCK": 256}, float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(n):
            rec.jit_launch(jit_fn, tuple(args), (16,), kwargs)
        best = min(best, (time.perf_counter() - start) / n * 1e6)
    print(f"the hook's key-and-count per cached launch: {best:.2f} us")

    print(
        f"triton {triton.__version__}: {plain:.2f} us/launch without the hook, {hooked:.2f} us with it "
        f"(+{hooked - plain:.2f} us); {sum(rec.counts.values())} launches counted, "
        f"journal {os.path.getsize(tmp / 'journal')} bytes"
    )


if __name__ == "__main__":
    main()
