"""rope: TritonBench's op (bench only: no catalog kernels yet). Native backends: ktriage/workload/ops/rope.py.

Sweep (tritonbench/operators/rope/operator.py): H=8192 with T=2**10..2**14, then T=2048 with
H=32*4**k for k=2..4 (512, 2048, 8192); num_q_heads=32, num_kv_heads=8, head_dim=H/32.
"""

from __future__ import annotations

from collections.abc import Mapping

from ktriage.ops.inputs import InputCase
from ktriage.ops.operator import Operator

NUM_Q_HEADS = 32
NUM_KV_HEADS = 8


def inputs() -> list[InputCase]:
    """TritonBench rope: H=8192 with T=2**10..2**14, then T=2048 with H=32*4**k for k=2..4 (512, 2048, 8192)."""
    shapes = [(8192, 2**e) for e in range(10, 15)] + [(32 * 2**e, 2048) for e in range(4, 10, 2)]
    return [InputCase(i, {"H": h, "T": t}) for i, (h, t) in enumerate(shapes)]


def bytes_moved(f: Mapping[str, int], mode: str, e: int) -> int:
    """Ours: q (32 heads) and k (8 heads) of T*hd each, hd = H/32, and cos, sin of T*hd: fwd and bwd
    each read q,k (or dq,dk), cos, sin and write the rotated q,k: 2*40*T*hd*e + 2*T*hd*e."""
    t, hd = f["T"], f["H"] // NUM_Q_HEADS
    one = 2 * (NUM_Q_HEADS + NUM_KV_HEADS) * t * hd * e + 2 * t * hd * e
    return {"fwd": one, "bwd": one, "fwd_bwd": 2 * one}[mode]


def flops(f: Mapping[str, int], mode: str, e: int) -> int:
    """3 per element of q and k (q*cos + rotate_half(q)*sin), fwd and bwd alike."""
    n = (NUM_Q_HEADS + NUM_KV_HEADS) * f["T"] * (f["H"] // NUM_Q_HEADS)
    return {"fwd": 3 * n, "bwd": 3 * n, "fwd_bwd": 6 * n}[mode]


OP = Operator(
    name="rope",
    sweep=inputs,
    x_label="(H, T)",
    x_keys=("H", "T"),
    baseline="apply_rotary_pos_emb",
    backends=("apply_rotary_pos_emb", "liger_rotary_pos_emb", "torch_compile_rotary_pos_emb_full_op"),
    module="ktriage.workload.ops.rope",
    bytes_moved=bytes_moved,
    flops=flops,
)
