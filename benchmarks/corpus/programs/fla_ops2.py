"""More flash-linear-attention ops, forward and backward, bf16: the model's test on kernels no fit has seen.

``benchmarks/corpus/programs/fla_ops.py`` recorded ``chunk_simple_gla``, ``chunk_gla`` and ``chunk_delta_rule``;
their kernels are in the calibration. This program runs other fla-core 0.6.0 ops, each a layer of a published
linear-attention or recurrent model, so none of their kernels is in any fit:

- ``retention``: ``chunk_retention`` (RetNet);
- ``linear_attn``: ``chunk_linear_attn`` with normalization;
- ``hgrn``: ``chunk_hgrn`` (HGRN: an element-wise gated recurrence, D = 2048);
- ``rwkv6``: ``chunk_rwkv6`` (a decay per key channel and a bonus ``u``);
- ``forgetting_attn``: ``parallel_forgetting_attn`` (softmax attention with a forget gate);
- ``based``: ``parallel_based`` (feature dim 16, the Based layer's);
- ``norm_gate``: ``rms_norm_gated`` (the output norm with a swish gate that GLA/RetNet/DeltaNet layers end with),
  at hidden 2048 and 4096;
- ``rotary``: ``rotary_embedding`` on queries, at T = 4096 and 8192.

One op per process (``python3 fla_ops2.py OP``), so the recorder's time limit and any failure stay per op. The
forward and the forward+backward of an op run in their own try blocks: one failure never stops the other. The
first of two calls autotunes. Prints a checksum; exit 1 only when every step failed.
"""

import sys
import traceback
from collections.abc import Callable

import torch
import torch.nn.functional as F

B, T, H, K, V = 2, 4096, 8, 128, 128
DEV, DT = "cuda", torch.bfloat16
Op = Callable[[], tuple[torch.Tensor, list[torch.Tensor]]]


def leaf(*shape: int, dtype: torch.dtype = DT) -> torch.Tensor:
    return torch.randn(*shape, device=DEV, dtype=dtype).requires_grad_(True)


def qkv(k_dim: int = K) -> list[torch.Tensor]:
    return [leaf(B, T, H, k_dim), leaf(B, T, H, k_dim), leaf(B, T, H, V)]


def retention() -> tuple[torch.Tensor, list[torch.Tensor]]:
    from fla.ops.retention import chunk_retention

    q, k, v = qkv()
    o, _ = chunk_retention(q, k, v, output_final_state=True)
    return o, [q, k, v]


def linear_attn() -> tuple[torch.Tensor, list[torch.Tensor]]:
    from fla.ops.linear_attn import chunk_linear_attn

    q, k, v = qkv()
    o, _ = chunk_linear_attn(q.sigmoid(), k.sigmoid(), v, normalize=True)
    return o, [q, k, v]


def hgrn() -> tuple[torch.Tensor, list[torch.Tensor]]:
    from fla.ops.hgrn import chunk_hgrn

    x = leaf(B, T, 2048)
    g = F.logsigmoid(torch.randn(B, T, 2048, device=DEV, dtype=DT)).requires_grad_(True)
    o, _ = chunk_hgrn(x, g)
    return o, [x, g]


def rwkv6() -> tuple[torch.Tensor, list[torch.Tensor]]:
    from fla.ops.rwkv6 import chunk_rwkv6

    r, k, v = qkv()
    w = F.logsigmoid(torch.randn(B, T, H, K, device=DEV, dtype=torch.float32)).requires_grad_(True)
    u = leaf(H, K)
    o, _ = chunk_rwkv6(r, k, v, w, u, output_final_state=True)
    return o, [r, k, v, w, u]


def forgetting_attn() -> tuple[torch.Tensor, list[torch.Tensor]]:
    from fla.ops.forgetting_attn import parallel_forgetting_attn

    q, k, v = qkv()
    g = F.logsigmoid(torch.randn(B, T, H, device=DEV, dtype=torch.float32)).requires_grad_(True)
    return parallel_forgetting_attn(q, k, v, g), [q, k, v, g]


def based() -> tuple[torch.Tensor, list[torch.Tensor]]:
    from fla.ops.based import parallel_based

    q, k, v = qkv(16)
    return parallel_based(q, k, v), [q, k, v]


def norm_gate(hidden: int) -> Op:
    def run() -> tuple[torch.Tensor, list[torch.Tensor]]:
        from fla.modules.norm.fused_norm_gate import rms_norm_gated

        x, g = leaf(B * T, hidden), leaf(B * T, hidden)
        w = torch.ones(hidden, device=DEV, dtype=DT).requires_grad_(True)
        return rms_norm_gated(x, g, w, None, activation="swish"), [x, g, w]

    return run


def rotary(seq: int) -> Op:
    def run() -> tuple[torch.Tensor, list[torch.Tensor]]:
        from fla.modules.rotary import rotary_embedding

        x = leaf(B, seq, H, K)
        angle = torch.outer(torch.arange(seq, device=DEV, dtype=torch.float32), torch.rand(K // 2, device=DEV))
        return rotary_embedding(x, angle.cos().to(DT), angle.sin().to(DT)), [x]

    return run


OPS: dict[str, list[tuple[str, Op]]] = {
    "retention": [("chunk_retention", retention)],
    "linear_attn": [("chunk_linear_attn", linear_attn)],
    "hgrn": [("chunk_hgrn", hgrn)],
    "rwkv6": [("chunk_rwkv6", rwkv6)],
    "forgetting_attn": [("parallel_forgetting_attn", forgetting_attn)],
    "based": [("parallel_based", based)],
    "norm_gate": [(f"rms_norm_gated {h}", norm_gate(h)) for h in (2048, 4096)],
    "rotary": [(f"rotary_embedding T={s}", rotary(s)) for s in (4096, 8192)],
}


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in OPS:
        print(f"usage: fla_ops2.py OP, one of {', '.join(OPS)}", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    total, failed, tried = 0.0, 0, 0
    for name, op in OPS[argv[0]]:
        for backward in (False, True):
            tried += 1
            step = f"{name} {'fwd+bwd' if backward else 'fwd'}"
            try:
                for _ in range(2):  # the first call autotunes
                    o, leaves = op()
                    total += float(o.double().abs().sum())
                    if backward:
                        o.float().square().sum().backward()
                        total += sum(float(t.grad.double().abs().sum()) for t in leaves if t.grad is not None)
                torch.cuda.synchronize()
                print(f"ok   {step}", flush=True)
            except Exception:
                failed += 1
                print(f"FAIL {step}:\n{traceback.format_exc()}", flush=True)
    print(f"checksum={total:.6e} failed={failed}/{tried}")
    return 1 if failed == tried else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
