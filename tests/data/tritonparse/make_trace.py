"""The program behind the committed tritonparse trace: real Triton (a toolchain's), real torch tensors
(CPU), real tritonparse, and a stand-in GPU (ktriage's fake driver).

    TRITONPARSE_DIR=DIR python make_trace.py INSITU_DIR     # writes tritonparse's trace into DIR
    python make_trace.py INSITU_DIR                         # the same launches, no tritonparse
                                                            # (what `ktriage record` runs in the test)

INSITU_DIR is ktriage/insitu (fakedriver.py). Set TRITONPARSE_FULL_SOURCE=1 for
``enable_full_python_source=True``, TRITONPARSE_NO_LAUNCH=1 to leave launch tracing off,
TRITONPARSE_COMPRESSION=gzip for tritonparse's .bin.ndjson. The committed traces (README.md) were
made with Triton 3.6.0 (a ktriage toolchain), torch 2.13 (CPU build) and tritonparse 0.6.0.

Why a launcher of its own: tritonparse's launch events come from ``knobs.runtime.launch_enter_hook``,
which Triton's compiled C launcher calls (backends/nvidia/driver.py: ``launch_enter_hook(launch_metadata)``
before the launch, ``launch_exit_hook`` after). The fake driver's launcher does nothing, so under it
no launch event is written. FakeHookCallingLauncher is that fake launcher plus the two hook calls
the C launcher makes; everything that builds the event (Triton's ``launch_metadata``, tritonparse's
hooks and argument extraction) is the real code.
"""

import os
import sys

sys.path.insert(0, sys.argv[1])
import fakedriver  # noqa: E402  (the stand-in GPU)

trace_dir = os.environ.get("TRITONPARSE_DIR")
if trace_dir:
    import tritonparse.structured_logging as tp

    tp.init(trace_dir, enable_trace_launch=not os.environ.get("TRITONPARSE_NO_LAUNCH"),
            enable_full_python_source=bool(os.environ.get("TRITONPARSE_FULL_SOURCE")),
            compression=os.environ.get("TRITONPARSE_COMPRESSION"))

driver = fakedriver.install(90)


class FakeHookCallingLauncher(fakedriver._FakeLauncher):
    """The fake launcher, calling the launch hooks as Triton's C launcher does."""

    def __call__(self, *args, **kwargs):
        launch_metadata, enter, leave = args[6], args[7], args[8]
        if enter is not None:
            enter(launch_metadata)
        if leave is not None:
            leave(launch_metadata)


driver.launcher_cls = FakeHookCallingLauncher

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tp_kernels  # noqa: E402

for n in (4096, 4096, 8192, 1000):  # n=1000: not divisible by 16, another specialization
    x, y, out = torch.ones(n), torch.ones(n), torch.empty(n)
    tp_kernels.add_kernel[((n + 255) // 256,)](x, y, out, n, BLOCK=256)
rows = torch.ones(64, 96, dtype=torch.float16)
tp_kernels.scale_rows_kernel[(64,)](rows, torch.empty_like(rows), 0.5, 96, rows.stride(0), BLOCK=128, num_warps=2)
# autotuned: the fake benchmarker times config 0 (one launch under the autotuner's _bench), then it runs
src = torch.ones(2048)
tp_kernels.copy_kernel[lambda meta: ((2048 + meta["BLOCK"] - 1) // meta["BLOCK"],)](src, torch.empty_like(src), 2048)
print("done")
