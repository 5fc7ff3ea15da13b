"""A user's row-wise softmax with an online max and a tl.range loop (two passes over the row), as they
wrote it. At N=32768 (BLOCK=16384, 4 warps) it spills with Triton 3.3.1 and 3.6.0: the kernel on which
`explain --fixes` listed a maxnreg "fix" predicted +111 %. Loaded by path in a toolchain's compile
worker: it imports nothing from ktriage."""

import triton
import triton.language as tl


@triton.jit
def online_softmax_kernel(
    x_ptr, y_ptr, n_cols, stride_xm, stride_ym,
    BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr,
):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_xm
    y_row = y_ptr + row * stride_ym
    cols = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    d = tl.zeros([BLOCK], tl.float32)
    for start in tl.range(0, n_cols, BLOCK, num_stages=NUM_STAGES):
        offs = start + cols
        x = tl.load(x_row + offs, mask=offs < n_cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        d = d * tl.exp(m - m_new) + tl.exp(x - m_new)
        m = m_new
    m_row = tl.max(m, axis=0)
    d_row = tl.sum(d * tl.exp(m - m_row), axis=0)
    for start in tl.range(0, n_cols, BLOCK, num_stages=NUM_STAGES):
        offs = start + cols
        x = tl.load(x_row + offs, mask=offs < n_cols, other=float("-inf")).to(tl.float32)
        y = tl.exp(x - m_row) / d_row
        tl.store(y_row + offs, y.to(y_ptr.dtype.element_ty), mask=offs < n_cols)

