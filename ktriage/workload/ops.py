"""TritonBench-compatible operators: names, input sweeps, x_vals, modes, precision, bytes and flops.

Why a registry of its own: ``ktriage bench`` must accept TritonBench's command lines unchanged
(``--op layer_norm --bwd --input-id 7``), so op names, input ids and x_vals must mean exactly what
they mean in TritonBench (meta-pytorch/tritonbench, tritonbench/operators/<op>/operator.py). The
layer_norm and embedding sweeps are the catalog's (ktriage.catalog.inputs, one home for sweeps);
rope has no catalog recipe, so its sweep lives here.

Pure Python: no torch import, so the CPU tool can list ops and compute metrics without torch.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType

from ktriage.catalog import inputs as sweeps
from ktriage.catalog.inputs import InputCase
from ktriage.catalog.registry import select_inputs
from ktriage.errors import KtriageError

MODES = ("fwd", "bwd", "fwd_bwd")
# TritonBench's --precision choices that make sense for these ops. "bypass" (TritonBench's default)
# means the op's DEFAULT_PRECISION; for these three ops that is torch's default dtype, fp32.
PRECISIONS = ("fp32", "bf16", "fp16")
ELEMENT_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}
INDEX_BYTES = 8  # torch.randint gives int64 indices
MAIN_RANDOM_SEED = 1337  # tritonbench/utils/env_utils.py

ROPE_NUM_Q_HEADS = 32
ROPE_NUM_KV_HEADS = 8


def rope_inputs() -> list[InputCase]:
    """TritonBench rope: H=8192 with T=2**10..2**14, then T=2048 with H=32*4**k for k=2..4 (512, 2048, 8192)."""
    shapes = [(8192, 2**e) for e in range(10, 15)] + [(32 * 2**e, 2048) for e in range(4, 10, 2)]
    return [InputCase(i, {"H": h, "T": t}) for i, (h, t) in enumerate(shapes)]


@dataclass(frozen=True)
class OpDef:
    """One TritonBench operator as ktriage runs it."""

    name: str
    x_label: str  # TritonBench's register_x_val label
    x_keys: tuple[str, ...]  # facts that make the x_val, in order
    baseline: str
    backends: tuple[str, ...]  # native backends, TritonBench's names, baseline first
    artifact_backends: tuple[str, ...]  # backends that can also run as replayed artifacts
    catalog_ops: dict[str, str]  # artifact backend -> catalog op of its kernels
    module: str  # the per-op module (inputs + native backends), imported only when needed
    sweep: Callable[[], list[InputCase]]
    modes: tuple[str, ...] = MODES
    default_precision: str = "fp32"

    def inputs(self) -> list[InputCase]:
        return self.sweep()

    def x_val(self, case: InputCase) -> tuple[int, ...]:
        """TritonBench's x_val for this input (layer_norm (M, N), embedding (B, T, D, V), rope (H, T))."""
        return tuple(int(case.facts[k]) for k in self.x_keys)

    def x_val_text(self, case: InputCase) -> str:
        return "(" + ", ".join(str(v) for v in self.x_val(case)) + ")"

    def impl(self) -> ModuleType:
        """The per-op module (imports torch)."""
        return importlib.import_module(self.module)


_OPS: dict[str, OpDef] = {
    "layer_norm": OpDef(
        name="layer_norm", x_label="(M, N)", x_keys=("M", "N"), baseline="torch_layer_norm",
        backends=("torch_layer_norm", "triton_layer_norm", "torch_compile_layer_norm", "liger_layer_norm"),
        artifact_backends=("liger_layer_norm", "triton_layer_norm"),
        catalog_ops={"liger_layer_norm": "liger.layer_norm", "triton_layer_norm": "tutorial.layer_norm"},
        module="ktriage.workload.layer_norm", sweep=sweeps.layer_norm_inputs,
    ),
    "embedding": OpDef(
        name="embedding", x_label="(B, T, D, V)", x_keys=("B", "T", "D", "V"), baseline="torch_embedding",
        backends=("torch_embedding", "liger_embedding", "torch_compile_embedding"),
        artifact_backends=("liger_embedding",), catalog_ops={"liger_embedding": "liger.embedding"},
        module="ktriage.workload.embedding", sweep=sweeps.embedding_inputs,
    ),
    "rope": OpDef(
        name="rope", x_label="(H, T)", x_keys=("H", "T"), baseline="apply_rotary_pos_emb",
        backends=("apply_rotary_pos_emb", "liger_rotary_pos_emb", "torch_compile_rotary_pos_emb_full_op"),
        artifact_backends=(), catalog_ops={}, module="ktriage.workload.rope", sweep=rope_inputs,
    ),
}  # fmt: skip


def list_ops() -> list[OpDef]:
    return list(_OPS.values())


def get_op(name: str) -> OpDef:
    """The op named as TritonBench names it; KtriageError listing the valid names otherwise."""
    if name not in _OPS:
        raise KtriageError(f"unknown operator {name!r}", f"use one of: {', '.join(_OPS)} (TritonBench's --op names)")
    return _OPS[name]


def check_mode(op: OpDef, mode: str) -> str:
    if mode not in op.modes:
        raise KtriageError(f"{op.name} has no mode {mode!r}", f"use one of: {', '.join(op.modes)} (--fwd, --bwd, --fwd-bwd)")
    return mode


def resolve_precision(op: OpDef, precision: str | None) -> str:
    """``None``/``"bypass"`` -> the op's default (fp32, TritonBench's torch default dtype)."""
    if precision in (None, "bypass"):
        return op.default_precision
    assert precision is not None
    if precision not in PRECISIONS:
        raise KtriageError(f"precision {precision!r} is not supported for {op.name}", f"use one of: {', '.join(PRECISIONS)}")
    return precision


def select_op_inputs(op: OpDef, *, input_id: int | None = None, num_inputs: int | None = None,
                     selectors: Sequence[str] | None = None) -> list[InputCase]:
    """TritonBench's ``--input-id K --num-inputs N`` (ids K..K+N-1), or catalog-style selectors ("7", "N=4608")."""
    cases = op.inputs()
    if selectors:
        cases = select_inputs(op.name, cases, selectors)
    start = input_id or 0
    if start < 0 or start >= len(op.inputs()):
        raise KtriageError(f"--input-id {start} is out of range for {op.name}", f"use 0..{len(op.inputs()) - 1}")
    stop = start + num_inputs if num_inputs is not None else None
    if input_id is not None or num_inputs is not None:
        cases = [c for c in cases if c.id >= start and (stop is None or c.id < stop)]
    return cases


# ------------------------------------------------------------------------------------------ metrics
def bytes_moved(op: str, case: InputCase, mode: str, precision: str = "fp32") -> int:
    """Bytes for the gbps metric (GB/s = bytes / latency_ms * 1e-6, TritonBench's unit).

    - layer_norm: TritonBench's own formula (operator.py ``gbps``): base = M*N*e (e = element bytes);
      fwd 2*base (read x, write y), bwd 3*base (read x and dy, write dx), fwd_bwd 5*base.
    - embedding (TritonBench has no gbps for it; ours, the algorithmic minimum): fwd reads the
      indices and B*T rows of D and writes them: BT*8 + 2*BT*D*e. bwd zeroes the V*D gradient,
      reads indices and dy, and read-modify-writes BT rows: V*D*e + BT*8 + BT*D*e + 2*BT*D*e.
    - rope (ours): q (32 heads) and k (8 heads) of T*hd each, hd = H/32, and cos, sin of T*hd:
      fwd and bwd each read q,k (or dq,dk), cos, sin and write the rotated q,k: 2*40*T*hd*e + 2*T*hd*e.
    """
    e = ELEMENT_BYTES[precision]
    f = case.facts
    if op == "layer_norm":
        base = f["M"] * f["N"] * e
        return {"fwd": 2 * base, "bwd": 3 * base, "fwd_bwd": 5 * base}[mode]
    if op == "embedding":
        bt, d, v = f["B"] * f["T"], f["D"], f["V"]
        fwd = bt * INDEX_BYTES + 2 * bt * d * e
        bwd = v * d * e + bt * INDEX_BYTES + 3 * bt * d * e
        return {"fwd": fwd, "bwd": bwd, "fwd_bwd": fwd + bwd}[mode]
    if op == "rope":
        t, hd = f["T"], f["H"] // ROPE_NUM_Q_HEADS
        one = 2 * (ROPE_NUM_Q_HEADS + ROPE_NUM_KV_HEADS) * t * hd * e + 2 * t * hd * e
        return {"fwd": one, "bwd": one, "fwd_bwd": 2 * one}[mode]
    raise KtriageError(f"no bytes formula for op {op!r}", f"use one of: {', '.join(_OPS)}")


def flops(op: str, case: InputCase, mode: str, precision: str = "fp32") -> int:
    """Nominal floating-point operations for the tflops metric (TFLOP/s = flops / latency_ms * 1e-9).

    Counted from the math, not from any one implementation:
    - layer_norm fwd 7 per element (mean 1, variance 3, normalize-scale-shift 3); bwd 13 per element
      (x_hat 2, w*dy 1, the two row sums 3, dx 4, dw and db accumulation 3).
    - embedding: fwd 0 (a gather); bwd 1 per gradient element added (B*T*D).
    - rope: 3 per element of q and k (q*cos + rotate_half(q)*sin), fwd and bwd alike.
    """
    f = case.facts
    if op == "layer_norm":
        n = f["M"] * f["N"]
        return {"fwd": 7 * n, "bwd": 13 * n, "fwd_bwd": 20 * n}[mode]
    if op == "embedding":
        n = f["B"] * f["T"] * f["D"]
        return {"fwd": 0, "bwd": n, "fwd_bwd": n}[mode]
    if op == "rope":
        n = (ROPE_NUM_Q_HEADS + ROPE_NUM_KV_HEADS) * f["T"] * (f["H"] // ROPE_NUM_Q_HEADS)
        return {"fwd": 3 * n, "bwd": 3 * n, "fwd_bwd": 6 * n}[mode]
    raise KtriageError(f"no flops formula for op {op!r}", f"use one of: {', '.join(_OPS)}")


def gbps(bytes_: int, latency_ms: float) -> float:
    return bytes_ / latency_ms * 1e-6


def tflops(flops_: int, latency_ms: float) -> float:
    return flops_ / latency_ms * 1e-9
