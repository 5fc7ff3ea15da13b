"""Real third-party kernels for the JIT-equivalence check, launched as their libraries launch them.

Why these: the catalog ops cover plain ``@triton.jit`` kernels with explicit constexprs. Real code
also goes through ``@triton.heuristics`` (values computed from the other arguments),
``@triton.autotune`` (tile sizes and num_warps/num_stages from a config), string and None
constexprs, ``do_not_specialize``, device-side tensor descriptors and ``tl.dot``. Each case restates,
from the library's own host code (file named in the function's docstring), the values it passes to
``kernel[grid](...)``: tensors with their dtypes, the ints as computed (1 and multiples of 16
specialize), constexprs, and num_warps/num_stages only where the library passes them. Values that a
heuristic or an autotune config provides are left out: the decorators supply them, as on a GPU host.

Cases:

- Liger-Kernel 0.5.10 and 0.8.5: cross_entropy (forward kernel, backward element_mul_kernel) and
  swiglu (forward/backward) over TritonBench's shapes, plus the rms_norm catalog recipe in bf16 (the
  catalog selection is fp32, TritonBench's default; issue 9's spill is the bf16 backward).
- fla-core (flash-linear-attention's kernels): the heuristics+autotune kernels of
  ``chunk_gated_delta_rule``'s forward (chunk_local_cumsum, recompute_w_u, chunk_fwd_o) in bf16 at a
  long-sequence config. No release works with every Triton, so two: 0.4.2 (plain ``triton.autotune``)
  for 3.2-3.8 (on 3.9 its ``fla.ops`` fails to import, the autotuner refusing fla/ops/cp's key
  "STAGE" that names no argument, and its kernels use ``tl.make_block_ptr``, which 3.9 removed), and
  0.6.0 (``fla_cache_autotune``, an Autotuner subclass) for 3.5+ (on 3.4.0 ``fla.modules`` imports
  ``triton.experimental.gluon.language.extra``, which 3.4.0's gluon lacks).
- ktriage/fidelity/kernels/: an autotuned ``tl.dot`` matmul and a device-side tensor-descriptor matmul.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypedDict

from ktriage.fidelity.kernels import KERNELS_DIR
from ktriage.fidelity.model import FidelityCase
from ktriage.ops import liger
from ktriage.ops.inputs import kernel_name
from ktriage.ops.recipe import launch_from_values
from ktriage.ops.tutorial_params import cdiv, next_power_of_2
from ktriage.spec.launch import TRITON_DEFAULT_STAGES, TRITON_DEFAULT_WARPS, Launch
from ktriage.spec.specialize import Constexpr as C
from ktriage.spec.specialize import Ptr

# TritonBench operators/cross_entropy: B=8, T=2048 rows of fp32 logits (torch.randn, no dtype), V=2^12..2^17.
CE_ROWS = 8 * 2048
CE_VOCABS = (2**12, 2**17)
CE_IGNORE_INDEX = -100  # LigerCrossEntropyLoss defaults: ignore_index=-100, reduction="mean", no weight/softcap
CE_MAX_FUSED_SIZE = 65536 // 2  # ops/cross_entropy.py MAX_FUSED_SIZE on CUDA (both releases)
CE_NUM_WARPS = 32  # both releases on CUDA; 0.8.5 uses 8 only for 2-byte inputs on Blackwell
# TritonBench operators/swiglu: LlamaMLP(hidden 4096, intermediate 11008) in bf16, x of (B=4, T=2^10..2^13, 4096).
SWIGLU_COLS = 11008
SWIGLU_ROWS = 4 * 2048
RMS_NORM_BF16_INPUTS = ("N=16384",)

FLA_VERSIONS = ("0.4.2", "0.6.0")
# chunk_gated_delta_rule at a long-sequence, Qwen3-Next-like head shape: one sequence, no cu_seqlens.
FLA_B, FLA_T, FLA_H, FLA_K, FLA_V, FLA_BT = 1, 8192, 16, 128, 128, 64
RCP_LN2 = 1.4426950216  # fla/ops/utils/constant.py (0.6.0 scales the gate cumsum to log2 space)

MATMUL_SIZE = 4096
DESCRIPTOR_BLOCKS = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}


def thirdparty_cases(target: str = "sm_90") -> list[FidelityCase]:
    """Every third-party case for ``target`` (the module doc lists them)."""
    cases: list[FidelityCase] = []
    for version in liger.VERSIONS:
        cases += liger_cross_entropy_cases(version, target)
        cases += liger_swiglu_cases(version, target)
        cases += liger_rms_norm_bf16_cases(version, target)
    for version in FLA_VERSIONS:
        cases += fla_cases(version, target)
    cases.append(autotuned_matmul_case(target))
    cases.append(descriptor_matmul_case(target))
    return cases


def _launch(
    name: str,
    source: str,
    package: str | None,
    args: Sequence[tuple[str, Any]],
    target: str,
    grid: tuple[int, ...],
    num_warps: int = TRITON_DEFAULT_WARPS,
    num_stages: int = TRITON_DEFAULT_STAGES,
    **meta: Any,
) -> Launch:
    """:func:`ktriage.ops.recipe.launch_from_values` (the one way a launch is built from its values, the
    catalog recipes' too) in the cases' short form: positional, the meta as keywords."""
    return launch_from_values(
        name=name,
        source=source,
        package=package,
        args=args,
        target=target,
        grid=grid,
        num_warps=num_warps,
        num_stages=num_stages,
        meta=dict(meta),
    )


def _liger_op(short: str, version: str) -> str:
    return f"liger.{short}" + ("" if version == liger.DEFAULT_VERSION else f"@{version}")


def liger_cross_entropy_cases(version: str, target: str) -> list[FidelityCase]:
    """liger_kernel/ops/cross_entropy.py (cross_entropy_forward / cross_entropy_backward).

    Forward: one program per row, every argument by keyword. weight/z_loss are None (constexpr
    None), the strides of target and loss are 1, n_non_ignore and sum_non_ignore_weight are the
    Python int count of non-ignored targets (all 16384: randint never gives -100), weight_sum the
    float 0.0, lse_square_scale/label_smoothing 0.0 and reduction "mean" as constexprs. 0.8.5 adds
    the token-accuracy and predicted-tokens outputs (None pointers, strides 0, flags False) and
    HAS_GRADIENTS (TritonBench's logits require grad). Backward: element_mul_kernel (ops/utils.py)
    scales the gradient stored in the logits by grad_output; TritonBench's loss.backward() passes
    grad_output 1.0, which Liger skips, so it runs when the loss is scaled (gradient accumulation).
    """
    op = _liger_op("cross_entropy", version)
    pkg = liger.requirement(version)
    source = "liger_kernel.ops.cross_entropy:liger_cross_entropy_kernel"
    latest = version != liger.DEFAULT_VERSION
    cases = []
    for vocab in CE_VOCABS:
        block = min(CE_MAX_FUSED_SIZE, next_power_of_2(vocab))
        outputs: list[tuple[str, Any]] = [("loss_ptr", Ptr("fp32")), ("z_loss_ptr", None), ("loss_stride", 1)]
        if latest:
            outputs += [
                ("token_accuracy_ptr", None),
                ("token_accuracy_stride", 0),
                ("predicted_tokens_ptr", None),
                ("predicted_tokens_stride", 0),
            ]
        flags: list[tuple[str, Any]] = [("RETURN_Z_LOSS", C(False))]
        if latest:
            flags += [("RETURN_TOKEN_ACCURACY", C(False)), ("RETURN_PREDICTED_TOKENS", C(False))]
        flags += [("BLOCK_SIZE", C(block)), ("HAS_WEIGHT", C(False)), ("HAS_SOFTCAPPING", C(False))]
        if latest:
            flags.append(("HAS_GRADIENTS", C(True)))
        args = [
            ("X_ptr", Ptr("fp32")),
            ("X_stride", vocab),
            ("Y_ptr", Ptr("i64")),
            ("Y_stride", 1),
            ("weight_ptr", None),
            *outputs,
            ("n_cols", vocab),
            ("n_non_ignore", CE_ROWS),
            ("sum_non_ignore_weight", CE_ROWS),
            ("weight_sum", 0.0),
            ("ignore_index", CE_IGNORE_INDEX),
            ("lse_square_scale", C(0.0)),
            ("label_smoothing", C(0.0)),
            ("reduction", C("mean")),
            ("softcap", None),
            *flags,
        ]
        name = f"{op}.fwd[BT={CE_ROWS},V={vocab}]"
        launch = _launch(name, source, pkg, args, target, (CE_ROWS,), num_warps=CE_NUM_WARPS, BLOCK_SIZE=block)
        cases.append(FidelityCase(name=name, launch=launch))
    vocab = CE_VOCABS[-1]
    block = min(CE_MAX_FUSED_SIZE, next_power_of_2(vocab))
    args = [
        ("X_ptr", Ptr("fp32")),
        ("X_stride", vocab),
        ("grad_output_ptr", Ptr("fp32")),
        ("n_cols", vocab),
        ("BLOCK_SIZE", C(block)),
    ]
    name = f"{op}.bwd[BT={CE_ROWS},V={vocab}]"
    launch = _launch(
        name,
        "liger_kernel.ops.utils:element_mul_kernel",
        pkg,
        args,
        target,
        (CE_ROWS,),
        num_warps=CE_NUM_WARPS,
        BLOCK_SIZE=block,
    )
    cases.append(FidelityCase(name=name, launch=launch))
    return cases


def liger_swiglu_cases(version: str, target: str) -> list[FidelityCase]:
    """liger_kernel/ops/swiglu.py (swiglu_forward / swiglu_backward) as LigerSwiGLUMLP calls them.

    One program per row of the (B*T, intermediate) activations, stride = intermediate (11008: a
    multiple of 16), ``n_cols`` a constexpr keyword, BLOCK_SIZE/num_warps from calculate_settings
    (16384, 16). 0.8.5 adds the float ``gate_multiplier`` (1.0 from transformers/swiglu.py); its
    Blackwell column-tiled kernels are not taken on sm_90.
    """
    op = _liger_op("swiglu", version)
    pkg = liger.requirement(version)
    block, warps = liger.calculate_settings(SWIGLU_COLS)
    gate = [("gate_multiplier", 1.0)] if version != liger.DEFAULT_VERSION else []
    cases = []
    for mode, fn, tensors in (
        ("fwd", "_swiglu_forward_kernel", ("a_ptr", "b_ptr", "c_ptr")),
        ("bwd", "_swiglu_backward_kernel", ("dc_ptr", "a_ptr", "b_ptr")),
    ):
        args = [
            *((t, Ptr("bf16")) for t in tensors),
            ("stride", SWIGLU_COLS),
            *gate,
            ("n_cols", C(SWIGLU_COLS)),
            ("BLOCK_SIZE", C(block)),
        ]
        name = kernel_name(op, mode, f"BT={SWIGLU_ROWS},N={SWIGLU_COLS}")
        launch = _launch(
            name, f"liger_kernel.ops.swiglu:{fn}", pkg, args, target, (SWIGLU_ROWS,), num_warps=warps, BLOCK_SIZE=block
        )
        cases.append(FidelityCase(name=name, launch=launch))
    return cases


def liger_rms_norm_bf16_cases(version: str, target: str) -> list[FidelityCase]:
    """The rms_norm catalog recipe (ktriage/ops/rms_norm.py) in bf16 at N=16384, both modes: issue 9's case."""
    from ktriage.catalog.registry import expand_launches

    op = _liger_op("rms_norm", version)
    cases = []
    for mode in ("bwd", "fwd"):
        for launch in expand_launches(op, mode=mode, dtype="bf16", inputs=list(RMS_NORM_BF16_INPUTS), target=target):
            name = launch.name.replace("[N=", "[bf16,N=")
            cases.append(FidelityCase(name=name, launch=launch, catalog=True))
    return cases


class VersionBounds(TypedDict, total=False):
    """The Triton versions a case's package version supports (FidelityCase's bounds), with why."""

    min_triton: str
    min_reason: str
    max_triton: str
    max_reason: str


def fla_cases(version: str, target: str) -> list[FidelityCase]:
    """fla-core's chunk_gated_delta_rule forward kernels that carry heuristics and autotune.

    Host code: fla/ops/gated_delta_rule/chunk.py (chunk_gated_delta_rule_fwd) calling
    fla/ops/utils/cumsum.py (chunk_local_cumsum_scalar), fla/ops/gated_delta_rule/wy_fast.py
    (recompute_w_u_fwd) and fla/ops/common/chunk_o.py (chunk_fwd_o). q/k/v/beta are bf16, the gate
    g is fp32 (its cumsum is written as torch.float), A and h are bf16 (k's dtype), cu_seqlens and
    chunk_indices None. Left out: what the heuristics compute (HAS_SCALE, IS_VARLEN, USE_G,
    USE_G_GAMMA) and what the configs give (BK/BV of chunk_fwd_o); no launch options (autotuned).
    ``T`` is ``do_not_specialize``. 0.6.0 adds HV (value heads; = H here), STATE_V_FIRST and
    USE_GRAPH, scales the cumsum by RCP_LN2 and drops HEAD_FIRST; 0.4.2 passes scale=None.
    """
    pkg = f"fla-core=={version}"
    new = version != "0.4.2"
    nt = cdiv(FLA_T, FLA_BT)
    heads = [("H", C(FLA_H)), *([("HV", C(FLA_H))] if new else [])]
    shape = f"B={FLA_B},T={FLA_T},H={FLA_H},K={FLA_K},V={FLA_V}"
    note = "fla-core 0.6.0 imports gluon.language.extra, which 3.4.0 lacks; 0.4.2 covers 3.2-3.4"
    old_note = "fla-core 0.4.2 uses tl.make_block_ptr, which Triton 3.9 removed; 0.6.0 covers 3.5-3.9"
    kw: VersionBounds = (
        {"min_triton": "3.5.0", "min_reason": note} if new else {"max_triton": "3.8.0", "max_reason": old_note}
    )
    cases = []

    cumsum_args: list[tuple[str, Any]] = [
        ("s", Ptr("fp32")),
        ("o", Ptr("fp32")),
        ("scale", RCP_LN2 if new else None),
        ("cu_seqlens", None),
        ("chunk_indices", None),
        ("T", FLA_T),
        ("B", C(FLA_B)),
        ("H", C(FLA_H)),
        ("BT", C(FLA_BT)),
        ("REVERSE", C(False)),
        ("USE_GRAPH", C(False)) if new else ("HEAD_FIRST", C(False)),
    ]
    grid: tuple[int, ...] = (nt * FLA_B * FLA_H,) if new else (nt, FLA_B * FLA_H)
    name = f"fla.chunk_local_cumsum@{version}.fwd[B={FLA_B},T={FLA_T},H={FLA_H}]"
    launch = _launch(name, "fla.ops.utils.cumsum:chunk_local_cumsum_scalar_kernel", pkg, cumsum_args, target, grid)
    cases.append(FidelityCase(name=name, launch=launch, autotune_pick=2, pass_options=False, **kw))

    wu_args: list[tuple[str, Any]] = [
        ("k", Ptr("bf16")),
        ("v", Ptr("bf16")),
        ("beta", Ptr("bf16")),
        ("w", Ptr("bf16")),
        ("u", Ptr("bf16")),
        ("A", Ptr("bf16")),
        ("g", Ptr("fp32")),
        ("cu_seqlens", None),
        ("chunk_indices", None),
        ("T", FLA_T),
        *heads,
        ("K", C(FLA_K)),
        ("V", C(FLA_V)),
        ("BT", C(FLA_BT)),
        ("BK", C(64)),
        ("BV", C(64)),
    ]
    name = f"fla.recompute_w_u@{version}.fwd[{shape}]"
    launch = _launch(
        name, "fla.ops.gated_delta_rule.wy_fast:recompute_w_u_fwd_kernel", pkg, wu_args, target, (nt, FLA_B * FLA_H)
    )
    cases.append(FidelityCase(name=name, launch=launch, autotune_pick=4, pass_options=False, **kw))

    o_args: list[tuple[str, Any]] = [
        ("q", Ptr("bf16")),
        ("k", Ptr("bf16")),
        ("v", Ptr("bf16")),
        ("h", Ptr("bf16")),
        ("g", Ptr("fp32")),
        ("g_gamma", None),
        ("o", Ptr("bf16")),
        ("cu_seqlens", None),
        ("chunk_indices", None),
        ("scale", FLA_K**-0.5),
        ("T", FLA_T),
        *heads,
        ("K", C(FLA_K)),
        ("V", C(FLA_V)),
        ("BT", C(FLA_BT)),
        ("STATE_V_FIRST", C(False)) if new else ("TRANSPOSE_STATE", C(False)),
    ]
    # The grid is a function of the config's BV in the library; the fake launcher ignores it.
    grid = (cdiv(FLA_V, 64) * nt, FLA_B * FLA_H) if new else (cdiv(FLA_V, 64), nt, FLA_B * FLA_H)
    name = f"fla.chunk_o@{version}.fwd[{shape}]"
    launch = _launch(name, "fla.ops.common.chunk_o:chunk_fwd_kernel_o", pkg, o_args, target, grid)
    cases.append(FidelityCase(name=name, launch=launch, autotune_pick=0, pass_options=False, **kw))
    return cases


def _matmul_args(m: int, n: int, k: int) -> list[tuple[str, Any]]:
    """fp16 row-major A (M,K), B (K,N), C (M,N): strides as torch reports them (inner ones are 1)."""
    return [
        ("a_ptr", Ptr("fp16")),
        ("b_ptr", Ptr("fp16")),
        ("c_ptr", Ptr("fp16")),
        ("M", m),
        ("N", n),
        ("K", k),
        ("stride_am", k),
        ("stride_ak", 1),
        ("stride_bk", n),
        ("stride_bn", 1),
        ("stride_cm", n),
        ("stride_cn", 1),
    ]


def autotuned_matmul_case(target: str) -> FidelityCase:
    """kernels/autotuned_matmul.py at 4096^3 fp16; the tiles, GROUP_M, warps and stages come from config 1."""
    size = MATMUL_SIZE
    name = f"ktriage.autotuned_matmul[M=N=K={size}]"
    source = f"{KERNELS_DIR / 'autotuned_matmul.py'}:matmul_kernel"
    grid = (cdiv(size, 128) * cdiv(size, 128),)
    launch = _launch(name, source, None, _matmul_args(size, size, size), target, grid)
    return FidelityCase(name=name, launch=launch, autotune_pick=1, pass_options=False)


def descriptor_matmul_case(target: str) -> FidelityCase:
    """kernels/descriptor_matmul.py at 4096^3 fp16, B given as (N, K) like Triton's TMA tutorials."""
    size = MATMUL_SIZE
    b = DESCRIPTOR_BLOCKS
    name = f"ktriage.descriptor_matmul[M=N=K={size}]"
    source = f"{KERNELS_DIR / 'descriptor_matmul.py'}:descriptor_matmul_kernel"
    args = [
        ("a_ptr", Ptr("fp16")),
        ("b_ptr", Ptr("fp16")),
        ("c_ptr", Ptr("fp16")),
        ("M", size),
        ("N", size),
        ("K", size),
        *((k, C(v)) for k, v in b.items()),
    ]
    grid = (cdiv(size, b["BLOCK_M"]) * cdiv(size, b["BLOCK_N"]),)
    launch = _launch(name, source, None, args, target, grid, num_warps=8, num_stages=3)
    return FidelityCase(name=name, launch=launch, min_triton="3.4.0", min_reason="tl.make_tensor_descriptor")
