"""A tl.dot matmul that reads and writes through device-side tensor descriptors (TMA on sm_90).

``tl.make_tensor_descriptor`` builds the descriptor inside the kernel (Triton >= 3.4; 3.3 only had
``tl._experimental_make_tensor_descriptor``), which needs the global-scratch ABI argument and TMA
lowering: a path the pointer-arithmetic kernels of the catalog never take.
"""

import triton
import triton.language as tl


@triton.jit
def descriptor_matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(N, BLOCK_N)
    off_m = (pid // tiles_n) * BLOCK_M
    off_n = (pid % tiles_n) * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = a_desc.load([off_m, k * BLOCK_K])
        b = b_desc.load([off_n, k * BLOCK_K])
        acc = tl.dot(a, b.T, acc)
    c_desc.store([off_m, off_n], acc.to(c_ptr.dtype.element_ty))
