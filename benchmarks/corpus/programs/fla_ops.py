"""flash-linear-attention ops, forward and backward, bf16 (issue 23's corpus).

B=2, T=4096, H=8, K=V=128, the chunked kernels a linear-attention layer runs in training:
- ``chunk_simple_gla`` with a constant decay per head (``g_gamma``: RetNet/Lightning-style);
- ``chunk_gla`` (a gate per key channel);
- ``chunk_delta_rule`` (DeltaNet).
fla-core 0.6.0 refuses ``chunk_simple_gla``'s backward with a per-token gate on Hopper with Triton 3.4-3.7.0
("produces incorrect results", fla issue #640): the decay here is the constant ``g_gamma`` form, which that
backward path does not reject. Each op's forward and its backward run in their own try blocks: one failure
never stops the others. Prints a checksum.
"""

import sys
import traceback
from collections.abc import Callable

import torch
import torch.nn.functional as F
from fla.ops.delta_rule import chunk_delta_rule
from fla.ops.gla import chunk_gla
from fla.ops.simple_gla import chunk_simple_gla

B, T, H, K, V = 2, 4096, 8, 128, 128
DEV, DT = "cuda", torch.bfloat16


def qkv() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    q, k = (torch.randn(B, T, H, K, device=DEV, dtype=DT, requires_grad=True) for _ in range(2))
    v = torch.randn(B, T, H, V, device=DEV, dtype=DT, requires_grad=True)
    return q, k, v


def simple_gla() -> tuple[torch.Tensor, list[torch.Tensor]]:
    q, k, v = qkv()
    g_gamma = F.logsigmoid(torch.randn(H, device=DEV, dtype=torch.float32))
    o, _ = chunk_simple_gla(q, k, v, g_gamma=g_gamma, output_final_state=True)
    return o, [q, k, v]


def gla() -> tuple[torch.Tensor, list[torch.Tensor]]:
    q, k, v = qkv()
    g = F.logsigmoid(torch.randn(B, T, H, K, device=DEV, dtype=torch.float32)).requires_grad_(True)
    o, _ = chunk_gla(q, k, v, g, output_final_state=True)
    return o, [q, k, v, g]


def delta_rule() -> tuple[torch.Tensor, list[torch.Tensor]]:
    q, k, v = qkv()
    k = F.normalize(k.detach().float(), dim=-1).to(DT).requires_grad_(True)
    beta = torch.rand(B, T, H, device=DEV, dtype=DT).sigmoid().requires_grad_(True)
    o, _ = chunk_delta_rule(q, k, v, beta, output_final_state=True)
    return o, [q, k, v, beta]


def main() -> int:
    torch.manual_seed(0)
    total, failed, tried = 0.0, 0, 0
    ops: list[tuple[str, Callable[[], tuple[torch.Tensor, list[torch.Tensor]]]]] = [
        ("chunk_simple_gla", simple_gla), ("chunk_gla", gla), ("chunk_delta_rule", delta_rule)]
    for name, op in ops:
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
    sys.exit(main())
