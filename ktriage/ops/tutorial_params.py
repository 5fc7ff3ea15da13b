"""Launch parameters of the tutorial kernels (ktriage/catalog/kernels/), shared by their wrappers and the recipes.

Pure Python on purpose (no triton, no torch): the host computes a spec with these functions, the
GPU host launches with the same functions, and the JIT-equivalence test checks they agree.
"""

from __future__ import annotations

from typing import TypedDict


class RowLaunch(TypedDict):
    """Launch of a one-tile-per-program kernel: its tile constexpr, warps and grid."""

    BLOCK_SIZE: int
    num_warps: int
    grid: tuple[int, ...]


class MatmulLaunch(TypedDict):
    BLOCK_M: int
    BLOCK_N: int
    BLOCK_K: int
    GROUP_M: int
    num_warps: int
    num_stages: int
    grid: tuple[int, ...]


def next_power_of_2(n: int) -> int:
    """Smallest power of two >= n (1 for n <= 1)."""
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


# vector_add: one 1-D tile per program; a fixed tile keeps the kernel purely bandwidth-bound.
VECTOR_ADD_BLOCK = 1024
VECTOR_ADD_WARPS = 4


def vector_add_launch(n: int) -> RowLaunch:
    return {"BLOCK_SIZE": VECTOR_ADD_BLOCK, "num_warps": VECTOR_ADD_WARPS, "grid": (cdiv(n, VECTOR_ADD_BLOCK),)}


def softmax_launch(n_rows: int, n_cols: int) -> RowLaunch:
    """One row per program, the whole row in registers: 8 fp32 values per thread at most, up to 16 warps."""
    block = next_power_of_2(n_cols)
    warps = max(1, min(16, block // 256))
    return {"BLOCK_SIZE": block, "num_warps": warps, "grid": (n_rows,)}


def layer_norm_launch(n_rows: int, n_cols: int) -> RowLaunch:
    """One row per program, looping over column chunks of at most 4096 elements (any N works)."""
    block = min(4096, next_power_of_2(n_cols))
    warps = max(1, min(8, block // 256))
    return {"BLOCK_SIZE": block, "num_warps": warps, "grid": (n_rows,)}


def matmul_launch(m: int, n: int, k: int) -> MatmulLaunch:
    """Big tiles for big problems (tensor-core bound), small tiles when there are too few big ones."""
    if m * n >= 1024 * 1024:
        bm, bn, bk, warps, stages = 128, 128, 64, 8, 3
    else:
        bm, bn, bk, warps, stages = 64, 64, 32, 4, 4
    grid = (cdiv(m, bm) * cdiv(n, bn),)
    return {
        "BLOCK_M": bm,
        "BLOCK_N": bn,
        "BLOCK_K": bk,
        "GROUP_M": 8,
        "num_warps": warps,
        "num_stages": stages,
        "grid": grid,
    }
