"""rms_norm: Liger-Kernel's RMSNorm kernels (0.5.10 and 0.8.5) over TritonBench's rms_norm sweep. Catalog only (no bench workload yet).

TritonBench's facts are here (x_val label "(M, H)", baseline ``llama_rms``, Liger's backend
``liger_rms``), so ``ktriage triage`` of TritonBench rms_norm results explains ``liger_rms`` cells
from these kernels; no native backends and no replay, so ``ktriage bench`` does not run the op and
triage's GPU step times ``liger_rms`` only from a recording (``--workload``, or ``--measure``'s own).

Sweep (tritonbench/operators/rms_norm/operator.py): x of shape (M=2048, H) for H = 2**10..2**15
(ids 0..5; id 4 is N=16384), called N here like layer_norm's.

Recipe (ops/rms_norm.py, driven by transformers/rms_norm.py's LigerRMSNorm as TritonBench's
operators/rms_norm/operator.py builds it: eps=1e-6, offset=0.0, casting_mode="llama" -> the
constexpr 0, in_place=True so dX is dY). The weight is ``torch.ones(hidden_size)`` moved to the
device only, so it stays fp32 whatever the input precision; RSTD is fp32 in llama mode; the
backward's _dW partials are fp32 (sm_count, N) rows. 0.5.10: forward passes 13 arguments, the
backward's rows_per_program is a constexpr. 0.8.5 adds the ``elementwise_affine`` constexpr (True:
LigerRMSNorm has a weight), the backward's rows_per_program becomes a plain int (16 at M=2048 on
132 SMs: divisible by 16) and it passes ``COMPUTE_DW=True`` (the weight requires grad); the
row kernels are chosen because BLOCK_SIZE > 256 for every TritonBench input (the _block_ kernels
run only for N <= 256 with M >= 32768).
"""

from __future__ import annotations

import math

from ktriage.ops import liger
from ktriage.ops.inputs import InputCase, kernel_name
from ktriage.ops.operator import Kernels, Operator, row_activation_bytes
from ktriage.ops.recipe import TL_DTYPE, launch_from_values
from ktriage.spec.launch import Launch
from ktriage.spec.specialize import Constexpr as C
from ktriage.spec.specialize import Ptr

LIGER_MODULE = "liger_kernel.ops.rms_norm"
EPS = 1e-6  # TritonBench rms_norm: LigerRMSNorm(hidden_size=H, eps=1e-6)
OFFSET = 0.0  # LigerRMSNorm's default offset (Gemma variants use 1.0)
CASTING_MODE_LLAMA = 0  # liger_kernel.ops.rms_norm._CASTING_MODE_LLAMA, LigerRMSNorm's default mode


def inputs() -> list[InputCase]:
    """TritonBench rms_norm: x of shape (M=2048, H) for H = 2**10..2**15 (ids 0..5; id 4 is N=16384)."""
    return [InputCase(i, {"M": 2048, "N": 2**e}) for i, e in enumerate(range(10, 16))]


def liger_recipe(
    case: InputCase, *, op: str, mode: str, dtype: str, target: str, sm_count: int, version: str
) -> Launch:
    """Liger's RMSNorm forward/backward as ops/rms_norm.py's rms_norm_forward/rms_norm_backward launch it.

    ``dtype`` is X's (and Y's, dY's, dX's) dtype; the weight, RSTD and _dW stay fp32 (module doc).
    """
    m, n = case.facts["M"], case.facts["N"]
    block, warps = liger.calculate_settings(n)
    name = kernel_name(op, mode, f"N={n}")
    pkg = liger.requirement(version)
    affine = [] if version == liger.DEFAULT_VERSION else [("elementwise_affine", C(True))]
    if mode == "fwd":
        args = [
            ("Y_ptr", Ptr(dtype)),
            ("Y_row_stride", n),
            ("X_ptr", Ptr(dtype)),
            ("X_row_stride", n),
            ("W_ptr", Ptr("fp32")),
            ("W_row_stride", 1),
            ("RSTD_ptr", Ptr("fp32")),
            ("RSTD_row_stride", 1),
            ("n_cols", n),
            ("eps", EPS),
            ("offset", OFFSET),
            ("casting_mode", C(CASTING_MODE_LLAMA)),
            *affine,
            ("BLOCK_SIZE", C(block)),
        ]
        return launch_from_values(
            name=name,
            source=f"{LIGER_MODULE}:_rms_norm_forward_kernel",
            package=pkg,
            args=args,
            target=target,
            grid=(m,),
            num_warps=warps,
            meta=liger.meta(op, mode, case, dtype, version, BLOCK_SIZE=block),
        )
    rows_per_program = math.ceil(m / sm_count)
    meta = liger.meta(
        op, mode, case, dtype, version, BLOCK_SIZE=block, rows_per_program=rows_per_program, sm_count=sm_count
    )
    # 0.5.10 declares rows_per_program a constexpr; 0.8.5 takes it as a plain int.
    rows = C(rows_per_program) if version == liger.DEFAULT_VERSION else rows_per_program
    args = [
        ("dY_ptr", Ptr(dtype)),
        ("dY_row_stride", n),
        ("dX_ptr", Ptr(dtype)),
        ("dX_row_stride", n),
        ("X_ptr", Ptr(dtype)),
        ("X_row_stride", n),
        ("X_dtype", C(TL_DTYPE[dtype])),
        ("W_ptr", Ptr("fp32")),
        ("W_row_stride", 1),
        ("RSTD_ptr", Ptr("fp32")),
        ("RSTD_row_stride", 1),
        ("dW_ptr", Ptr("fp32")),
        ("dW_row_stride", n),
        ("n_rows", m),
        ("n_cols", n),
        ("offset", OFFSET),
        ("rows_per_program", rows),
        ("casting_mode", C(CASTING_MODE_LLAMA)),
        *affine,
        ("BLOCK_SIZE", C(block)),
    ]
    if version != liger.DEFAULT_VERSION:
        args.append(("COMPUTE_DW", C(True)))
    return launch_from_values(
        name=name,
        source=f"{LIGER_MODULE}:_rms_norm_backward_kernel",
        package=pkg,
        args=args,
        target=target,
        grid=(sm_count,),
        num_warps=warps,
        meta=meta,
    )


OP = Operator(
    name="rms_norm",
    sweep=inputs,
    kernels=(
        Kernels(
            name="liger.rms_norm",
            description="Liger RMSNorm (TritonBench rms_norm: M=2048, N=2^10..2^15, fp32 weight)",
            recipe=liger_recipe,
            versions=liger.VERSIONS,
            latest=liger.LATEST_VERSION,
            requirement=liger.requirement,
            kernels={
                "fwd": f"{LIGER_MODULE}:_rms_norm_forward_kernel",
                "bwd": f"{LIGER_MODULE}:_rms_norm_backward_kernel",
            },
            dtypes=("fp32", "bf16", "fp16"),
            default_dtype="fp32",
            backend="liger_rms",  # TritonBench's name; no replay (module doc)
        ),
    ),
    x_label="(M, H)",  # TritonBench's register_x_val label: (M, H), H called N here
    x_keys=("M", "N"),
    baseline="llama_rms",  # TritonBench's @register_benchmark(baseline=True)
    largest_tensor=row_activation_bytes,
)
