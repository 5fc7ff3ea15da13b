"""Test kernels wrapped like flash-linear-attention's (autotune over heuristics over jit).

Apart from kernels_for_tests.py because a module-level ``@triton.autotune`` touches Triton's active
driver at import on 3.3 (its Autotuner asks it for a benchmarker): this file is only imported where
ktriage's fake driver is installed (the compile worker, the JIT harness), as libraries like Liger 0.8.5
are. Loaded by file path inside a toolchain: it may import only triton.
"""

import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 128}, num_warps=4)],
                 key=["n"])
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def heuristic_autotuned_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    """Decorated like flash-linear-attention's kernels: autotune over heuristics over jit."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        x = tl.load(x_ptr + offs)
    else:
        x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, x * 2.0, mask=offs < n)
