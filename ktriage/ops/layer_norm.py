"""layer_norm: TritonBench's op, Liger-Kernel's kernels (0.5.10 and 0.8.5) and this project's tutorial kernel.

Sweep (tritonbench/operators/layer_norm/operator.py): M=4096, N=512*i for i in 2..31.

Liger recipes, restated from each release's liger_kernel/ops/layer_norm.py:
- 0.5.10 (the TritonBench report's version). Backward: grid (sm_count,), rows_per_program =
  ceil(n_rows/sm_count) as a constexpr, partial _DW/_DB in W's dtype, a ``dtype`` constexpr, and NO
  num_warps on CUDA (so 4). Forward: one program per row, BLOCK_SIZE/num_warps from
  calculate_settings, Mean/RSTD in X's dtype with stride 1 (-> constexpr 1).
- 0.8.5. Backward passes num_warps from calculate_settings, fp32 partials and Mean/RSTD, Mean/RSTD
  strides (1 -> constexpr), COMPUTE_DW/COMPUTE_DB constexprs.

The tutorial kernel (ops/kernels/layer_norm.py, forward only) has a sweep of its own in the
catalog (sizes that are not multiples of 16 included) and runs on TritonBench's sweep in a bench
(backend ``triton_layer_norm``). Native backends and replays: ktriage/workload/ops/layer_norm.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ktriage.ops import liger, tutorial
from ktriage.ops.inputs import InputCase, kernel_name
from ktriage.ops.operator import Kernels, Knob, Operator, row_activation_bytes
from ktriage.ops.recipe import TL_DTYPE, launch_from_values
from ktriage.ops.tutorial_params import layer_norm_launch, next_power_of_2
from ktriage.spec.launch import Launch
from ktriage.spec.model import KernelSpec
from ktriage.spec.specialize import Constexpr as C
from ktriage.spec.specialize import Ptr

LIGER_MODULE = "liger_kernel.ops.layer_norm"
EPS = 1e-5  # TritonBench layer_norm passes eps=1e-5


def inputs() -> list[InputCase]:
    return [InputCase(i, {"M": 4096, "N": 512 * n}) for i, n in enumerate(range(2, 32))]


def tutorial_inputs() -> list[InputCase]:
    return [InputCase(i, {"M": 4096, "N": n}) for i, n in enumerate([1024, 4096, 4608, 8192, 12000])]


def liger_recipe(
    case: InputCase, *, op: str, mode: str, dtype: str, target: str, sm_count: int, version: str
) -> Launch:
    m, n = case.facts["M"], case.facts["N"]
    block, warps = liger.calculate_settings(n)
    name = kernel_name(op, mode, f"N={n}")
    pkg = liger.requirement(version)
    if mode == "fwd":
        stat = dtype if version == liger.DEFAULT_VERSION else "fp32"
        args = [
            ("Y_ptr", Ptr(dtype)),
            ("Y_row_stride", n),
            ("X_ptr", Ptr(dtype)),
            ("X_row_stride", n),
            ("W_ptr", Ptr(dtype)),
            ("W_row_stride", 1),
            ("B_ptr", Ptr(dtype)),
            ("B_row_stride", 1),
            ("Mean_ptr", Ptr(stat)),
            ("Mean_row_stride", 1),
            ("RSTD_ptr", Ptr(stat)),
            ("RSTD_row_stride", 1),
            ("n_cols", n),
            ("eps", EPS),
            ("BLOCK_SIZE", C(block)),
        ]
        return launch_from_values(
            name=name,
            source=f"{LIGER_MODULE}:_layer_norm_forward_kernel",
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
    source = f"{LIGER_MODULE}:_layer_norm_backward_kernel"
    if version == liger.DEFAULT_VERSION:
        args = [
            ("X_ptr", Ptr(dtype)),
            ("W_ptr", Ptr(dtype)),
            ("Mean_ptr", Ptr(dtype)),
            ("RSTD_ptr", Ptr(dtype)),
            ("DX_ptr", Ptr(dtype)),
            ("DW_ptr", Ptr(dtype)),
            ("DB_ptr", Ptr(dtype)),
            ("DY_ptr", Ptr(dtype)),
            ("stride_x", n),
            ("stride_dx", n),
            ("stride_dw", n),
            ("stride_db", n),
            ("stride_dy", n),
            ("n_rows", m),
            ("n_cols", n),
            ("rows_per_program", C(rows_per_program)),
            ("BLOCK_SIZE", C(block)),
            ("dtype", C(TL_DTYPE[dtype])),
        ]
        # 0.5.10 passes no num_warps on CUDA: Triton's default applies.
        return launch_from_values(
            name=name, source=source, package=pkg, args=args, target=target, grid=(sm_count,), meta=meta
        )
    args = [
        ("X_ptr", Ptr(dtype)),
        ("stride_x", n),
        ("W_ptr", Ptr(dtype)),
        ("Mean_ptr", Ptr("fp32")),
        ("stride_mean", 1),
        ("RSTD_ptr", Ptr("fp32")),
        ("stride_rstd", 1),
        ("DX_ptr", Ptr(dtype)),
        ("stride_dx", n),
        ("DW_ptr", Ptr("fp32")),
        ("stride_dw", n),
        ("DB_ptr", Ptr("fp32")),
        ("stride_db", n),
        ("DY_ptr", Ptr(dtype)),
        ("stride_dy", n),
        ("n_rows", m),
        ("n_cols", n),
        ("rows_per_program", C(rows_per_program)),
        ("BLOCK_SIZE", C(block)),
        ("COMPUTE_DW", C(True)),
        ("COMPUTE_DB", C(True)),
    ]
    return launch_from_values(
        name=name, source=source, package=pkg, args=args, target=target, grid=(sm_count,), num_warps=warps, meta=meta
    )


def liger_knobs(spec: KernelSpec) -> dict[str, Knob]:
    """BLOCK_SIZE may only grow: the kernel loads a whole row with one masked tl.arange."""
    n = int(spec.meta.get("shape", {}).get("N", 0) or 0)
    block = spec.constexprs.get("BLOCK_SIZE")
    if not n or not isinstance(block, int):
        return {}
    least = next_power_of_2(n)
    values = tuple(v for v in (least, 2 * least) if v <= 65536)
    return {
        "BLOCK_SIZE": Knob(
            "BLOCK_SIZE",
            values,
            f"the kernel loads a whole row with tl.arange(0, BLOCK_SIZE) masked by n_cols, so BLOCK_SIZE must stay "
            f">= next_power_of_2(N={n}) = {least}; larger only adds masked lanes",
        )
    }


def tutorial_recipe(
    case: InputCase, *, op: str, mode: str, dtype: str, target: str, sm_count: int, version: str | None
) -> Launch:
    m, n = case.facts["M"], case.facts["N"]
    p = layer_norm_launch(m, n)
    args = [
        ("x_ptr", Ptr(dtype)),
        ("w_ptr", Ptr(dtype)),
        ("b_ptr", Ptr(dtype)),
        ("y_ptr", Ptr(dtype)),
        ("mean_ptr", Ptr("fp32")),
        ("rstd_ptr", Ptr("fp32")),
        ("row_stride", n),
        ("n_cols", n),
        ("eps", 1e-5),
        ("BLOCK_SIZE", C(p["BLOCK_SIZE"])),
    ]
    return tutorial.row_launch(
        op=op,
        name=f"{op}.fwd[M={m},N={n}]",
        source=tutorial.source("layer_norm.py", "layer_norm_fwd_kernel"),
        case=case,
        dtype=dtype,
        args=args,
        target=target,
        params=p,
    )


def bytes_moved(f: Mapping[str, int], mode: str, e: int) -> int:
    """TritonBench's own formula (operator.py ``gbps``): base = M*N*e; fwd 2*base (read x, write y),
    bwd 3*base (read x and dy, write dx), fwd_bwd 5*base."""
    base = f["M"] * f["N"] * e
    return {"fwd": 2 * base, "bwd": 3 * base, "fwd_bwd": 5 * base}[mode]


def flops(f: Mapping[str, int], mode: str, e: int) -> int:
    """fwd 7 per element (mean 1, variance 3, normalize-scale-shift 3); bwd 13 per element (x_hat 2,
    w*dy 1, the two row sums 3, dx 4, dw and db accumulation 3)."""
    n = f["M"] * f["N"]
    return {"fwd": 7 * n, "bwd": 13 * n, "fwd_bwd": 20 * n}[mode]


OP = Operator(
    name="layer_norm",
    sweep=inputs,
    kernels=(
        Kernels(
            name="liger.layer_norm",
            description="Liger LayerNorm (TritonBench layer_norm: M=4096, N=512*i, i=2..31)",
            recipe=liger_recipe,
            versions=liger.VERSIONS,
            latest=liger.LATEST_VERSION,
            requirement=liger.requirement,
            kernels={
                "fwd": f"{LIGER_MODULE}:_layer_norm_forward_kernel",
                "bwd": f"{LIGER_MODULE}:_layer_norm_backward_kernel",
            },
            dtypes=("fp32", "bf16", "fp16"),
            default_dtype="fp32",
            backend="liger_layer_norm",
            replay="ktriage.workload.ops.layer_norm:LigerLayerNormReplay",
            knobs=liger_knobs,
            source_hint="liger",
        ),
        Kernels(
            name="tutorial.layer_norm",
            description=tutorial.description("chunked layer norm forward, memory-bound"),
            recipe=tutorial_recipe,
            kernels={"fwd": tutorial.source("layer_norm.py", "layer_norm_fwd_kernel")},
            modes=("fwd",),
            default_mode="fwd",
            dtypes=tutorial.DTYPES,
            default_dtype="fp32",
            inputs=tutorial_inputs,
            backend="triton_layer_norm",
            replay="ktriage.workload.ops.layer_norm:TritonLayerNormReplay",
        ),
    ),
    x_label="(M, N)",
    x_keys=("M", "N"),
    baseline="torch_layer_norm",
    backends=("torch_layer_norm", "triton_layer_norm", "torch_compile_layer_norm", "liger_layer_norm"),
    module="ktriage.workload.ops.layer_norm",
    bytes_moved=bytes_moved,
    flops=flops,
    largest_tensor=row_activation_bytes,
)
