"""The launch hook's cost per launch on a GPU host, A/B inside one process (issue 17's overhead target).

Whole-process timings (many_launches.py plain vs under ``ktriage record``) move by +-30% between
processes on a shared host, more than the effect measured. Here one process times the same 20,000
launches (4 shapes, real CUDA tensors) with ``JITFunction.run`` plain and hooked, rotating rounds,
so all variants see the same machine state. Prints per-launch medians and the ratio. A second
argument names another copy of launch_hook.py (an earlier version) timed in the same rotation: a
before/after of a hook change measured side by side.
Usage (repo root): python3 benchmarks/record/programs/overhead_inprocess.py [ROUNDS] [BASELINE_HOOK]
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


def patched_by(name: str, hook_file: Path, plain: tuple, xs: dict, sizes: list[int]) -> tuple:
    """Install the hook in ``hook_file`` on the plain JIT; its patched (run, __getitem__) and recorder."""
    JITFunction.run, JITFunction.__getitem__ = plain
    spec = importlib.util.spec_from_file_location(f"_ktr_hook_{name}", hook_file)
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    rec = hook.install(str(Path(tempfile.mkdtemp()) / "journal"))
    patched = (JITFunction.run, JITFunction.__getitem__)
    assert patched != plain, f"the hook {hook_file} did not patch JITFunction"
    loop(xs, sizes, 400)  # the hook sees each shape once (new launches), then counts
    return patched, rec


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    hooks = {"hooked": ROOT / "ktriage" / "insitu" / "launch_hook.py"}
    if len(sys.argv) > 2:
        hooks["baseline"] = Path(sys.argv[2])
    sizes = [4096, 8192, 16384, 65536]
    xs = {
        s: (torch.randn(s, device="cuda"), torch.randn(s, device="cuda"), torch.empty(s, device="cuda")) for s in sizes
    }
    loop(xs, sizes, 400)  # compile and warm up, unhooked
    plain = (JITFunction.run, JITFunction.__getitem__)
    variants, recorders = {"plain": plain}, {}
    for name, path in hooks.items():
        variants[name], recorders[name] = patched_by(name, path, plain, xs, sizes)
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, patched in variants.items():
            JITFunction.run, JITFunction.__getitem__ = patched
            times[name].append(loop(xs, sizes, 20000))
    p = statistics.median(times["plain"])
    for name, values in times.items():
        print(f"{name:8s} us/launch: {' '.join(f'{v:.2f}' for v in values)}")
    for name, rec in recorders.items():
        h = statistics.median(times[name])
        print(
            f"{name}: median plain {p:.2f} us, {name} {h:.2f} us: +{h - p:.2f} us per launch, ratio {h / p:.3f}; "
            f"{sum(rec.counts.values())} launches counted in {len(rec.launches)} distinct launches"
        )


if __name__ == "__main__":
    main()
