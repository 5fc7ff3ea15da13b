"""Liger-Kernel's layer_norm, rms_norm and embedding, launched exactly as a given liger-kernel release does.

Each recipe restates, from the release's source, what its host code passes to the kernel: which
tensors (and their dtypes), which strides and sizes, the constexprs, num_warps/num_stages (absent
means Triton's default 4/3) and the grid. The values go through ktriage.spec.specialize, so ints of
1 and multiples of 16 are specialized as the JIT would. Versions:

- 0.5.10 (the TritonBench report's version). layer_norm backward: grid (sm_count,),
  rows_per_program = ceil(n_rows/sm_count) as a constexpr, partial _DW/_DB in W's dtype, a ``dtype``
  constexpr, and NO num_warps on CUDA (so 4). Forward: one program per row, BLOCK_SIZE/num_warps
  from calculate_settings, Mean/RSTD in X's dtype with stride 1 (-> constexpr 1).
- 0.8.5 (latest release read). layer_norm backward passes num_warps from calculate_settings, fp32
  partials and Mean/RSTD, Mean/RSTD strides (1 -> constexpr), COMPUTE_DW/COMPUTE_DB constexprs.
- rms_norm (ops/rms_norm.py, driven by transformers/rms_norm.py's LigerRMSNorm as TritonBench's
  operators/rms_norm/operator.py builds it: eps=1e-6, offset=0.0, casting_mode="llama" -> the
  constexpr 0, in_place=True so dX is dY). The weight is ``torch.ones(hidden_size)`` moved to the
  device only, so it stays fp32 whatever the input precision; RSTD is fp32 in llama mode; the
  backward's _dW partials are fp32 (sm_count, N) rows. 0.5.10: forward passes 13 arguments, the
  backward's rows_per_program is a constexpr. 0.8.5 adds the ``elementwise_affine`` constexpr (True:
  LigerRMSNorm has a weight), the backward's rows_per_program becomes a plain int (16 at M=2048 on
  132 SMs: divisible by 16) and it passes ``COMPUTE_DW=True`` (the weight requires grad); the
  row kernels are chosen because BLOCK_SIZE > 256 for every TritonBench input (the _block_ kernels
  run only for N <= 256 with M >= 32768).
- embedding (ops/experimental/embedding.py) is the same file in both releases: BLOCK_SIZE_M/N =
  next_power_of_2(min(128, D)), grid (cdiv(B*T, BM), cdiv(D, BN)), embedding_dim constexpr, no
  num_warps/num_stages. Indices are int64 (torch.randint).
"""

from __future__ import annotations

import math

from ktriage.catalog.inputs import InputCase
from ktriage.catalog.kernels._params import cdiv, next_power_of_2
from ktriage.catalog.recipe import TL_DTYPE, launch_from_values
from ktriage.errors import KtriageError
from ktriage.spec.launch import Launch
from ktriage.spec.specialize import Constexpr as C
from ktriage.spec.specialize import Ptr

DEFAULT_VERSION = "0.5.10"
LATEST_VERSION = "0.8.5"
VERSIONS = (DEFAULT_VERSION, LATEST_VERSION)
LAYER_NORM_MODULE = "liger_kernel.ops.layer_norm"
EMBEDDING_MODULE = "liger_kernel.ops.experimental.embedding"
RMS_NORM_MODULE = "liger_kernel.ops.rms_norm"
EPS = 1e-5  # TritonBench layer_norm passes eps=1e-5
RMS_EPS = 1e-6  # TritonBench rms_norm: LigerRMSNorm(hidden_size=H, eps=1e-6)
RMS_OFFSET = 0.0  # LigerRMSNorm's default offset (Gemma variants use 1.0)
CASTING_MODE_LLAMA = 0  # liger_kernel.ops.rms_norm._CASTING_MODE_LLAMA, LigerRMSNorm's default mode


def requirement(version: str) -> str:
    return f"liger-kernel=={version}"


def calculate_settings(n: int) -> tuple[int, int]:
    """Liger's (BLOCK_SIZE, num_warps) rule on CUDA (unchanged from v0.0.1 through 0.8.5)."""
    block = next_power_of_2(n)
    if block > 65536:
        raise KtriageError(f"Liger cannot launch a row of {n} elements (block {block} > 65536)", "use N <= 65536")
    if block >= 32768:
        return block, 32
    if block >= 8192:
        return block, 16
    if block >= 2048:
        return block, 8
    return block, 4


def _meta(op: str, mode: str, case: InputCase, dtype: str, version: str, **extra: object) -> dict[str, object]:
    return {"op": op, "mode": mode, "input_id": case.id, "shape": dict(case.facts), "dtype": dtype,
            "package_version": version, **extra}  # fmt: skip


def layer_norm(case: InputCase, *, op: str, mode: str, dtype: str, target: str, sm_count: int, version: str) -> Launch:
    m, n = case.facts["M"], case.facts["N"]
    block, warps = calculate_settings(n)
    name = f"{op}.{mode}[N={n}]"
    pkg = requirement(version)
    if mode == "fwd":
        stat = dtype if version == DEFAULT_VERSION else "fp32"
        args = [
            ("Y_ptr", Ptr(dtype)), ("Y_row_stride", n), ("X_ptr", Ptr(dtype)), ("X_row_stride", n),
            ("W_ptr", Ptr(dtype)), ("W_row_stride", 1), ("B_ptr", Ptr(dtype)), ("B_row_stride", 1),
            ("Mean_ptr", Ptr(stat)), ("Mean_row_stride", 1), ("RSTD_ptr", Ptr(stat)), ("RSTD_row_stride", 1),
            ("n_cols", n), ("eps", EPS), ("BLOCK_SIZE", C(block)),
        ]  # fmt: skip
        return launch_from_values(
            name=name, source=f"{LAYER_NORM_MODULE}:_layer_norm_forward_kernel", package=pkg, args=args,
            target=target, grid=(m,), num_warps=warps, meta=_meta(op, mode, case, dtype, version, BLOCK_SIZE=block),
        )  # fmt: skip
    rows_per_program = math.ceil(m / sm_count)
    meta = _meta(op, mode, case, dtype, version, BLOCK_SIZE=block, rows_per_program=rows_per_program, sm_count=sm_count)
    source = f"{LAYER_NORM_MODULE}:_layer_norm_backward_kernel"
    if version == DEFAULT_VERSION:
        args = [
            ("X_ptr", Ptr(dtype)), ("W_ptr", Ptr(dtype)), ("Mean_ptr", Ptr(dtype)), ("RSTD_ptr", Ptr(dtype)),
            ("DX_ptr", Ptr(dtype)), ("DW_ptr", Ptr(dtype)), ("DB_ptr", Ptr(dtype)), ("DY_ptr", Ptr(dtype)),
            ("stride_x", n), ("stride_dx", n), ("stride_dw", n), ("stride_db", n), ("stride_dy", n),
            ("n_rows", m), ("n_cols", n), ("rows_per_program", C(rows_per_program)), ("BLOCK_SIZE", C(block)),
            ("dtype", C(TL_DTYPE[dtype])),
        ]  # fmt: skip
        # 0.5.10 passes no num_warps on CUDA: Triton's default applies.
        return launch_from_values(name=name, source=source, package=pkg, args=args, target=target, grid=(sm_count,), meta=meta)
    args = [
        ("X_ptr", Ptr(dtype)), ("stride_x", n), ("W_ptr", Ptr(dtype)), ("Mean_ptr", Ptr("fp32")), ("stride_mean", 1),
        ("RSTD_ptr", Ptr("fp32")), ("stride_rstd", 1), ("DX_ptr", Ptr(dtype)), ("stride_dx", n),
        ("DW_ptr", Ptr("fp32")), ("stride_dw", n), ("DB_ptr", Ptr("fp32")), ("stride_db", n),
        ("DY_ptr", Ptr(dtype)), ("stride_dy", n), ("n_rows", m), ("n_cols", n),
        ("rows_per_program", C(rows_per_program)), ("BLOCK_SIZE", C(block)), ("COMPUTE_DW", C(True)), ("COMPUTE_DB", C(True)),
    ]  # fmt: skip
    return launch_from_values(
        name=name, source=source, package=pkg, args=args, target=target, grid=(sm_count,), num_warps=warps, meta=meta
    )


def rms_norm(case: InputCase, *, op: str, mode: str, dtype: str, target: str, sm_count: int, version: str) -> Launch:
    """Liger's RMSNorm forward/backward as ops/rms_norm.py's rms_norm_forward/rms_norm_backward launch it.

    ``dtype`` is X's (and Y's, dY's, dX's) dtype; the weight, RSTD and _dW stay fp32 (module doc).
    """
    m, n = case.facts["M"], case.facts["N"]
    block, warps = calculate_settings(n)
    name = f"{op}.{mode}[N={n}]"
    pkg = requirement(version)
    affine = [] if version == DEFAULT_VERSION else [("elementwise_affine", C(True))]
    if mode == "fwd":
        args = [
            ("Y_ptr", Ptr(dtype)), ("Y_row_stride", n), ("X_ptr", Ptr(dtype)), ("X_row_stride", n),
            ("W_ptr", Ptr("fp32")), ("W_row_stride", 1), ("RSTD_ptr", Ptr("fp32")), ("RSTD_row_stride", 1),
            ("n_cols", n), ("eps", RMS_EPS), ("offset", RMS_OFFSET), ("casting_mode", C(CASTING_MODE_LLAMA)),
            *affine, ("BLOCK_SIZE", C(block)),
        ]  # fmt: skip
        return launch_from_values(
            name=name, source=f"{RMS_NORM_MODULE}:_rms_norm_forward_kernel", package=pkg, args=args,
            target=target, grid=(m,), num_warps=warps, meta=_meta(op, mode, case, dtype, version, BLOCK_SIZE=block),
        )  # fmt: skip
    rows_per_program = math.ceil(m / sm_count)
    meta = _meta(op, mode, case, dtype, version, BLOCK_SIZE=block, rows_per_program=rows_per_program, sm_count=sm_count)
    # 0.5.10 declares rows_per_program a constexpr; 0.8.5 takes it as a plain int.
    rows = C(rows_per_program) if version == DEFAULT_VERSION else rows_per_program
    args = [
        ("dY_ptr", Ptr(dtype)), ("dY_row_stride", n), ("dX_ptr", Ptr(dtype)), ("dX_row_stride", n),
        ("X_ptr", Ptr(dtype)), ("X_row_stride", n), ("X_dtype", C(TL_DTYPE[dtype])),
        ("W_ptr", Ptr("fp32")), ("W_row_stride", 1), ("RSTD_ptr", Ptr("fp32")), ("RSTD_row_stride", 1),
        ("dW_ptr", Ptr("fp32")), ("dW_row_stride", n), ("n_rows", m), ("n_cols", n), ("offset", RMS_OFFSET),
        ("rows_per_program", rows), ("casting_mode", C(CASTING_MODE_LLAMA)), *affine, ("BLOCK_SIZE", C(block)),
    ]  # fmt: skip
    if version != DEFAULT_VERSION:
        args.append(("COMPUTE_DW", C(True)))
    return launch_from_values(
        name=name, source=f"{RMS_NORM_MODULE}:_rms_norm_backward_kernel", package=pkg, args=args,
        target=target, grid=(sm_count,), num_warps=warps, meta=meta,
    )  # fmt: skip


def embedding(case: InputCase, *, op: str, mode: str, dtype: str, target: str, sm_count: int, version: str) -> Launch:
    b, t, d, v = (case.facts[k] for k in ("B", "T", "D", "V"))
    n_tokens = b * t
    bm = bn = next_power_of_2(min(128, d))
    grid = (cdiv(n_tokens, bm), cdiv(d, bn))
    name = f"{op}.{mode}[B={b},T={t},D={d},V={v}]"
    meta = _meta(op, mode, case, dtype, version, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn)
    consts = [("embedding_dim", C(d)), ("BLOCK_SIZE_M", C(bm)), ("BLOCK_SIZE_N", C(bn))]
    if mode == "fwd":
        args = [("embeddings_ptr", Ptr(dtype)), ("indices_ptr", Ptr("i64")), ("output_ptr", Ptr(dtype)), ("n_elements", n_tokens)]
        fn = "embedding_forward_kernel"
    else:
        args = [("grad_output_ptr", Ptr(dtype)), ("grad_weight_ptr", Ptr(dtype)), ("indices_ptr", Ptr("i64")), ("n_elements", n_tokens)]
        fn = "embedding_backward_kernel"
    return launch_from_values(
        name=name, source=f"{EMBEDDING_MODULE}:{fn}", package=requirement(version), args=args + consts,
        target=target, grid=grid, meta=meta,
    )  # fmt: skip
