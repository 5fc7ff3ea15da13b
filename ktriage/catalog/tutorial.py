"""Recipes for this project's tutorial kernels (ktriage/catalog/kernels/), forward only.

Launch parameters come from kernels/_params.py, the module the kernels' own wrappers use; tensors
are fresh contiguous torch allocations (16-byte aligned), so strides are the shapes' row lengths.
"""

from __future__ import annotations

from ktriage.catalog.inputs import InputCase
from ktriage.catalog.kernels import KERNELS_DIR
from ktriage.catalog.kernels._params import (
    layer_norm_launch,
    matmul_launch,
    softmax_launch,
    vector_add_launch,
)
from ktriage.catalog.recipe import launch_from_values
from ktriage.spec.launch import Launch
from ktriage.spec.specialize import Constexpr as C
from ktriage.spec.specialize import Ptr


def _source(file: str, fn: str) -> str:
    return f"{KERNELS_DIR / file}:{fn}"


def _meta(op: str, case: InputCase, dtype: str, **extra: object) -> dict[str, object]:
    return {"op": op, "mode": "fwd", "input_id": case.id, "shape": dict(case.facts), "dtype": dtype, **extra}


def vector_add(case: InputCase, *, op: str, mode: str, dtype: str, target: str, sm_count: int, version: str | None) -> Launch:
    n = case.facts["N"]
    p = vector_add_launch(n)
    args = [("x_ptr", Ptr(dtype)), ("y_ptr", Ptr(dtype)), ("out_ptr", Ptr(dtype)), ("n_elements", n), ("BLOCK_SIZE", C(p["BLOCK_SIZE"]))]
    return launch_from_values(
        name=f"{op}.fwd[N={n}]", source=_source("vector_add.py", "add_kernel"), package=None, args=args,
        target=target, grid=p["grid"], num_warps=p["num_warps"], meta=_meta(op, case, dtype, BLOCK_SIZE=p["BLOCK_SIZE"]),
    )  # fmt: skip


def softmax(case: InputCase, *, op: str, mode: str, dtype: str, target: str, sm_count: int, version: str | None) -> Launch:
    m, n = case.facts["M"], case.facts["N"]
    p = softmax_launch(m, n)
    args = [("out_ptr", Ptr(dtype)), ("in_ptr", Ptr(dtype)), ("in_row_stride", n), ("out_row_stride", n), ("n_cols", n),
            ("BLOCK_SIZE", C(p["BLOCK_SIZE"]))]  # fmt: skip
    return launch_from_values(
        name=f"{op}.fwd[M={m},N={n}]", source=_source("softmax.py", "softmax_kernel"), package=None, args=args,
        target=target, grid=p["grid"], num_warps=p["num_warps"], meta=_meta(op, case, dtype, BLOCK_SIZE=p["BLOCK_SIZE"]),
    )  # fmt: skip


def layer_norm(case: InputCase, *, op: str, mode: str, dtype: str, target: str, sm_count: int, version: str | None) -> Launch:
    m, n = case.facts["M"], case.facts["N"]
    p = layer_norm_launch(m, n)
    args = [
        ("x_ptr", Ptr(dtype)), ("w_ptr", Ptr(dtype)), ("b_ptr", Ptr(dtype)), ("y_ptr", Ptr(dtype)),
        ("mean_ptr", Ptr("fp32")), ("rstd_ptr", Ptr("fp32")), ("row_stride", n), ("n_cols", n), ("eps", 1e-5),
        ("BLOCK_SIZE", C(p["BLOCK_SIZE"])),
    ]  # fmt: skip
    return launch_from_values(
        name=f"{op}.fwd[M={m},N={n}]", source=_source("layer_norm.py", "layer_norm_fwd_kernel"), package=None, args=args,
        target=target, grid=p["grid"], num_warps=p["num_warps"], meta=_meta(op, case, dtype, BLOCK_SIZE=p["BLOCK_SIZE"]),
    )  # fmt: skip


def matmul(case: InputCase, *, op: str, mode: str, dtype: str, target: str, sm_count: int, version: str | None) -> Launch:
    m, n, k = case.facts["M"], case.facts["N"], case.facts["K"]
    p = matmul_launch(m, n, k)
    args = [
        ("a_ptr", Ptr(dtype)), ("b_ptr", Ptr(dtype)), ("c_ptr", Ptr(dtype)), ("M", m), ("N", n), ("K", k),
        ("stride_am", k), ("stride_ak", 1), ("stride_bk", n), ("stride_bn", 1), ("stride_cm", n), ("stride_cn", 1),
        ("BLOCK_M", C(p["BLOCK_M"])), ("BLOCK_N", C(p["BLOCK_N"])), ("BLOCK_K", C(p["BLOCK_K"])), ("GROUP_M", C(p["GROUP_M"])),
    ]  # fmt: skip
    tiles = {key: p[key] for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}
    return launch_from_values(
        name=f"{op}.fwd[M={m},N={n},K={k}]", source=_source("matmul.py", "matmul_kernel"), package=None, args=args,
        target=target, grid=p["grid"], num_warps=p["num_warps"], num_stages=p["num_stages"], meta=_meta(op, case, dtype, **tiles),
    )  # fmt: skip
