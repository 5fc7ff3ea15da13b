"""Small Triton kernels that the analyze tests compile with real Triton wheels.

Loaded by file path inside a toolchain's compile worker (see triton_compile_for_tests.py), so it must not
import anything from ktriage or the test suite.
"""

import triton
import triton.language as tl


@triton.jit
def red_kernel(in_ptr, out_ptr, xnumel, rnumel, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    """Row sums with an Inductor-style [XBLOCK, RBLOCK] accumulator: 64x256 spills, 64x64 not."""
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    rbase = tl.arange(0, RBLOCK)[None, :]
    acc = tl.full([XBLOCK, RBLOCK], 0, tl.float32)
    for roffset in range(0, rnumel, RBLOCK):
        rindex = roffset + rbase
        rmask = rindex < rnumel
        v = tl.load(in_ptr + (rindex + rnumel * xindex), xmask & rmask, other=0.0)
        acc = acc + v
    s = tl.sum(acc, 1)[:, None]
    tl.store(out_ptr + xindex, s, xmask)


@triton.jit
def atomic_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """`tl.atomic_add` whose result is unused: ptxas 12.4 emits REDG, 12.8 emits ATOMG."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x_ptr + offs, m)
    tl.atomic_add(out_ptr + (offs % 16), v, m)


@triton.jit
def tensor_descriptor_kernel(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """Row softmax of a [BM, BN] tile, loaded and stored through device-side tensor descriptors (TMA).

    `tl.make_tensor_descriptor` exists from Triton 3.4 on, so 3.3.1 cannot compile this kernel (explain's
    reference fallback is tested on it); ptxas 12.4.131 and 12.8.93 allocate its registers differently."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    y_desc = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    tile = x_desc.load([pid_m * BM, pid_n * BN])
    e = tl.exp(tile - tl.max(tile, 1)[:, None])
    y_desc.store([pid_m * BM, pid_n * BN], e / tl.sum(e, 1)[:, None])

