"""Small Triton kernels that exercise the runner's launch paths on the GPU host (compiled on the
CPU machine by make_runner_fixtures.py). Module-level imports are triton only: the compile worker
loads this file in a toolchain environment without torch or ktriage.
"""

import triton
import triton.language as tl


@triton.jit
def poke_kernel(ptr, value):
    """Store one fp32 through ``ptr``: given an address we choose (not a buffer), it faults."""
    tl.store(ptr, value)


@triton.jit
def spin_kernel(flag_ptr, max_iters):
    """Spin on a volatile load until *flag != 0 or max_iters loads: a bounded 'hang'."""
    i = 0
    while (tl.load(flag_ptr, volatile=True) == 0) & (i < max_iters):
        i += 1
    tl.store(flag_ptr + 1, i)


@triton.jit
def scalars_kernel(out_ptr, a, b, c, d, e, f):
    """Writes each scalar parameter as fp32: checks the packing of every scalar type."""
    tl.store(out_ptr + 0, a.to(tl.float32))
    tl.store(out_ptr + 1, b.to(tl.float32))
    tl.store(out_ptr + 2, c.to(tl.float32))
    tl.store(out_ptr + 3, d.to(tl.float32))
    tl.store(out_ptr + 4, e.to(tl.float32))
    tl.store(out_ptr + 5, f.to(tl.float32))


@triton.jit
def desc_scale_kernel(
    in_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
):
    """out = 2 * in through device-side tensor descriptors (TMA): Triton 3.4 keeps the descriptors
    in the hidden global scratch buffer, so this needs a non-NULL scratch of the right size."""
    src = tl.make_tensor_descriptor(
        in_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N]
    )
    dst = tl.make_tensor_descriptor(
        out_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N]
    )
    pm = tl.program_id(0) * BLOCK_M
    pn = tl.program_id(1) * BLOCK_N
    tile = src.load([pm, pn])
    dst.store([pm, pn], tile * 2.0)


@triton.jit
def cluster_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """x + y, compiled with num_ctas=2: the launch needs cuLaunchKernelEx with cluster dims."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(
        out_ptr + offs,
        tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m),
        mask=m,
    )
