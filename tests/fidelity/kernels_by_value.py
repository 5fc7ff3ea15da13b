"""A kernel whose launch exercises the rest of the JIT's specialization for tests/fidelity/test_by_value.py:
a None passed to a pointer parameter, a bool, a float, a Triton dtype and an int of 1 passed to
tl.constexpr parameters, a tensor at an address that is not a multiple of 16, and
``do_not_specialize_on_alignment``."""

import triton
import triton.language as tl


@triton.jit(do_not_specialize_on_alignment=["n_aligned_off"])
def mixed_kernel(
    x_ptr, bias_ptr, out_ptr, n, n_aligned_off, one, alpha, flag,
    OUT_DTYPE: tl.constexpr, CONST_ONE: tl.constexpr, BLOCK: tl.constexpr,
):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * one, mask=mask, other=0.0).to(tl.float32) * alpha
    if bias_ptr is not None:
        x += tl.load(bias_ptr + offs, mask=mask, other=0.0)
    if flag:
        x = x * CONST_ONE
    tl.store(out_ptr + offs + n_aligned_off * 0, x.to(OUT_DTYPE), mask=mask)
