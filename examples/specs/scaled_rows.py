"""A kernel as real libraries write them: strides passed as ints (the inner ones are 1 for a
contiguous tensor), a ``@triton.heuristics`` constexpr, an annotated int and a ``do_not_specialize``
int. ``scaled_rows.toml`` beside this file describes one launch of it by values (docs/specs.md)."""

import triton
import triton.language as tl


@triton.heuristics({"EVEN_N": lambda args: args["N"] % args["BLOCK_N"] == 0})
@triton.jit(do_not_specialize=["seed"])
def scaled_rows_kernel(
    x_ptr, y_ptr, M, N: tl.int32,
    stride_xm, stride_xn, stride_ym, stride_yn,
    scale, seed,
    BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr,
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    for start in range(0, N, BLOCK_N):
        offs = start + cols
        x_row = x_ptr + row * stride_xm + offs * stride_xn
        if EVEN_N:
            x = tl.load(x_row)
        else:
            x = tl.load(x_row, mask=offs < N, other=0.0)
        y = x.to(tl.float32) * scale + seed
        y_row = y_ptr + row * stride_ym + offs * stride_yn
        if EVEN_N:
            tl.store(y_row, y.to(y_ptr.dtype.element_ty))
        else:
            tl.store(y_row, y.to(y_ptr.dtype.element_ty), mask=offs < N)
