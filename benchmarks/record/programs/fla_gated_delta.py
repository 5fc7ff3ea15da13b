"""flash-linear-attention's chunk_gated_delta_rule forward, bf16, a long variable-length batch (issue 17).

A Qwen3-Next-style layer: 16 heads, head dims 128, 16384 tokens in 4 sequences of different lengths
(``cu_seqlens``: the small integer tensor the recorder keeps by value). Prints a checksum.
"""

import torch
import torch.nn.functional as F
from fla.ops.gated_delta_rule import chunk_gated_delta_rule


def main() -> None:
    torch.manual_seed(0)
    T, H, K, V = 16384, 16, 128, 128
    dev, dt = "cuda", torch.bfloat16
    q = torch.randn(1, T, H, K, device=dev, dtype=dt)
    k = torch.randn(1, T, H, K, device=dev, dtype=dt)
    v = torch.randn(1, T, H, V, device=dev, dtype=dt)
    g = F.logsigmoid(torch.randn(1, T, H, device=dev, dtype=torch.float32)).to(dt)
    beta = torch.rand(1, T, H, device=dev, dtype=dt).sigmoid()
    cu_seqlens = torch.tensor([0, 4096, 10240, 12288, T], device=dev, dtype=torch.long)
    total = 0.0
    with torch.no_grad():
        for _ in range(3):  # the first call autotunes; the others are the steady state
            o, state = chunk_gated_delta_rule(
                q, k, v, g, beta, output_final_state=True, cu_seqlens=cu_seqlens, use_qk_l2norm_in_kernel=True
            )
            total += float(o.double().abs().sum()) + float(state.double().abs().sum())
    torch.cuda.synchronize()
    print(f"checksum={total:.6e}")


if __name__ == "__main__":
    main()
