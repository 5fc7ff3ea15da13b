"""Element-wise add of two vectors: the simplest memory-bound kernel (2 loads, 1 store per element).

Module-level imports are triton only: the compile worker loads this file by path in a toolchain
environment that has neither torch nor ktriage. The wrapper imports them when it is called.
"""

import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    start = tl.program_id(0) * BLOCK_SIZE
    offsets = start + tl.arange(0, BLOCK_SIZE)
    inside = offsets < n_elements
    a = tl.load(x_ptr + offsets, mask=inside)
    b = tl.load(y_ptr + offsets, mask=inside)
    tl.store(out_ptr + offsets, a + b, mask=inside)


def add(x, y):
    """out = x + y on the GPU, launched exactly as the catalog recipe describes."""
    import torch

    from ktriage.catalog.kernels._params import vector_add_launch

    out = torch.empty_like(x)
    n = x.numel()
    launch = vector_add_launch(n)
    add_kernel[launch["grid"]](x, y, out, n, BLOCK_SIZE=launch["BLOCK_SIZE"], num_warps=launch["num_warps"])
    return out
