"""Kernels of the spec options and constexpr forms tests (tests/compile/test_fp_fusion_and_dtypes.py).

``fma_kernel`` computes a*b+c: with ``enable_fp_fusion`` on (Triton's default) it compiles to FFMA,
off to FMUL and FADD. ``cast_kernel`` takes a dtype constexpr and uses it as a type (``x.to(OUT)``).
"""

import triton
import triton.language as tl


@triton.jit
def fma_kernel(a_ptr, b_ptr, c_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    c = tl.load(c_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, a * b + c, mask=mask)


@triton.jit
def cast_kernel(x_ptr, out_ptr, n, OUT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x.to(OUT), mask=mask)
