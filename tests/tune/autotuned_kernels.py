"""Kernels as projects write them for the autotuner: an ``@triton.autotune`` bf16 matmul whose configs set
warps and stages as well as tiles, and an autotuned row kernel whose ``@triton.heuristics`` reads the tile
(``EVEN_N``). tests/tune/test_autotuned_spec_file.py tunes them from spec files written by values."""

import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=8, num_stages=4),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4, num_stages=2),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64}, num_warps=8, num_stages=3),
    ],
    key=["M", "N", "K"],
)
@triton.jit
def bf16_mm_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_bk,
    stride_cm,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid = tl.program_id(0)
    n_tiles = tl.cdiv(N, BLOCK_N)
    rm = (pid // n_tiles) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = (pid % n_tiles) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_p = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b_p = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, K, BLOCK_K):
        acc = tl.dot(tl.load(a_p), tl.load(b_p), acc)
        a_p += BLOCK_K
        b_p += BLOCK_K * stride_bk
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.bfloat16))


@triton.autotune(
    configs=[triton.Config({"BLOCK_N": 256}, num_warps=4), triton.Config({"BLOCK_N": 4096}, num_warps=8)],
    key=["N"],
)
@triton.heuristics({"EVEN_N": lambda args: args["N"] % args["BLOCK_N"] == 0})
@triton.jit
def scale_rows_kernel(x_ptr, y_ptr, N, stride, BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr):
    row = tl.program_id(0)
    for start in range(0, N, BLOCK_N):
        offs = start + tl.arange(0, BLOCK_N)
        if EVEN_N:
            x = tl.load(x_ptr + row * stride + offs)
        else:
            x = tl.load(x_ptr + row * stride + offs, mask=offs < N, other=0.0)
        tl.store(y_ptr + row * stride + offs, x * 2, mask=offs < N)
