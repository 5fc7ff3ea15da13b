"""embedding: TritonBench's op and Liger-Kernel's experimental Embedding kernels (0.5.10 and 0.8.5).

Sweep (tritonbench/operators/embedding/operator.py): (B,T,D) in {(32,512,768),(8,2048,4096)},
V=2**10..2**17. Recipe (liger_kernel/ops/experimental/embedding.py, the same file in both
releases): BLOCK_SIZE_M/N = next_power_of_2(min(128, D)), grid (cdiv(B*T, BM), cdiv(D, BN)),
embedding_dim constexpr, no num_warps/num_stages. Indices are int64 (torch.randint).
Native backends: ktriage/workload/ops/embedding.py; replay: ktriage/workload/ops/embedding.py.
"""

from __future__ import annotations

from collections.abc import Mapping

from ktriage.ops import liger
from ktriage.ops.inputs import InputCase, kernel_name
from ktriage.ops.operator import Kernels, Knob, Operator
from ktriage.ops.recipe import launch_from_values
from ktriage.ops.tutorial_params import cdiv, next_power_of_2
from ktriage.spec.launch import Launch
from ktriage.spec.model import KernelSpec
from ktriage.spec.specialize import Constexpr as C
from ktriage.spec.specialize import Ptr

LIGER_MODULE = "liger_kernel.ops.experimental.embedding"
INDEX_BYTES = 8  # torch.randint gives int64 indices


def inputs() -> list[InputCase]:
    cases: list[InputCase] = []
    for b, t, d in [(32, 512, 768), (8, 2048, 4096)]:
        for v in [2**e for e in range(10, 18)]:
            cases.append(InputCase(len(cases), {"B": b, "T": t, "D": d, "V": v}))
    return cases


def liger_recipe(
    case: InputCase, *, op: str, mode: str, dtype: str, target: str, sm_count: int, version: str
) -> Launch:
    b, t, d, v = (case.facts[k] for k in ("B", "T", "D", "V"))
    n_tokens = b * t
    bm = bn = next_power_of_2(min(128, d))
    grid = (cdiv(n_tokens, bm), cdiv(d, bn))
    name = kernel_name(op, mode, f"B={b},T={t},D={d},V={v}")
    meta = liger.meta(op, mode, case, dtype, version, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn)
    consts = [("embedding_dim", C(d)), ("BLOCK_SIZE_M", C(bm)), ("BLOCK_SIZE_N", C(bn))]
    if mode == "fwd":
        args = [
            ("embeddings_ptr", Ptr(dtype)),
            ("indices_ptr", Ptr("i64")),
            ("output_ptr", Ptr(dtype)),
            ("n_elements", n_tokens),
        ]
        fn = "embedding_forward_kernel"
    else:
        args = [
            ("grad_output_ptr", Ptr(dtype)),
            ("grad_weight_ptr", Ptr(dtype)),
            ("indices_ptr", Ptr("i64")),
            ("n_elements", n_tokens),
        ]
        fn = "embedding_backward_kernel"
    return launch_from_values(
        name=name,
        source=f"{LIGER_MODULE}:{fn}",
        package=liger.requirement(version),
        args=args + consts,
        target=target,
        grid=grid,
        meta=meta,
    )


def liger_knobs(spec: KernelSpec) -> dict[str, Knob]:
    """Both blocks tile a grid axis with masked loads: any power of two from 16 to 256 is correct."""
    shape = spec.meta.get("shape", {})
    d = int(shape.get("D", 0) or 0)
    tokens = int(shape.get("B", 0) or 0) * int(shape.get("T", 0) or 0)
    knobs: dict[str, Knob] = {}
    for name, axis, numel in (("BLOCK_SIZE_M", 0, tokens), ("BLOCK_SIZE_N", 1, d)):
        cur = spec.constexprs.get(name)
        if not isinstance(cur, int) or not numel:
            continue
        values = tuple(v for v in (cur // 4, cur // 2, cur, cur * 2) if 16 <= v <= 256)
        knobs[name] = Knob(
            name,
            values,
            f"{name} tiles grid axis {axis} (cdiv({numel}, {name})) with masked loads, so any power of two is correct",
            axis,
            numel,
        )
    return knobs


def bytes_moved(f: Mapping[str, int], mode: str, e: int) -> int:
    """TritonBench has no gbps for it; ours, the algorithmic minimum: fwd reads the indices and B*T
    rows of D and writes them: BT*8 + 2*BT*D*e. bwd zeroes the V*D gradient, reads indices and dy,
    and read-modify-writes BT rows: V*D*e + BT*8 + BT*D*e + 2*BT*D*e."""
    bt, d, v = f["B"] * f["T"], f["D"], f["V"]
    fwd = bt * INDEX_BYTES + 2 * bt * d * e
    bwd = v * d * e + bt * INDEX_BYTES + 3 * bt * d * e
    return {"fwd": fwd, "bwd": bwd, "fwd_bwd": fwd + bwd}[mode]


def flops(f: Mapping[str, int], mode: str, e: int) -> int:
    """fwd 0 (a gather); bwd 1 per gradient element added (B*T*D)."""
    n = f["B"] * f["T"] * f["D"]
    return {"fwd": 0, "bwd": n, "fwd_bwd": n}[mode]


def largest_tensor(f: Mapping[str, int], mode: str, e: int) -> int:
    """The (V, D) table (or its gradient) or the (B*T, D) rows gathered from it, whichever is larger."""
    return max(f["V"], f["B"] * f["T"]) * f["D"] * e


OP = Operator(
    name="embedding",
    sweep=inputs,
    kernels=(
        Kernels(
            name="liger.embedding",
            description="Liger experimental Embedding (TritonBench embedding: (B,T,D) x V=2^10..2^17)",
            recipe=liger_recipe,
            versions=liger.VERSIONS,
            latest=liger.LATEST_VERSION,
            requirement=liger.requirement,
            kernels={
                "fwd": f"{LIGER_MODULE}:embedding_forward_kernel",
                "bwd": f"{LIGER_MODULE}:embedding_backward_kernel",
            },
            dtypes=("fp32", "bf16", "fp16"),
            default_dtype="fp32",
            backend="liger_embedding",
            replay="ktriage.workload.ops.embedding:LigerEmbeddingReplay",
            knobs=liger_knobs,
            source_hint="liger",
        ),
    ),
    x_label="(B, T, D, V)",
    x_keys=("B", "T", "D", "V"),
    baseline="torch_embedding",
    backends=("torch_embedding", "liger_embedding", "torch_compile_embedding"),
    module="ktriage.workload.ops.embedding",
    bytes_moved=bytes_moved,
    flops=flops,
    largest_tensor=largest_tensor,
)
