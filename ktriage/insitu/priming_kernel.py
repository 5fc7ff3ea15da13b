"""The kernel a compile worker compiles once before its first request (see worker.prime): small,
with a shared-memory reduction, so that Triton's whole pipeline (PTX step included) has run once."""

import triton
import triton.language as tl


@triton.jit
def priming_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(x_ptr + offs, x * tl.sum(x, axis=0), mask=offs < n)
