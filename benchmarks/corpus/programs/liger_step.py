"""A small Liger-Kernel 0.8.5 training step on the GPU: the program of `ktriage triage --run` on the H200.

One decoder-style block in bf16, 3 steps of forward + backward + SGD:
``LigerRMSNorm -> LigerSwiGLUMLP (+ residual) -> LigerRMSNorm -> LigerFusedLinearCrossEntropyLoss``
(the lm head fused with the cross entropy, as Liger patches Llama-style models). Modest sizes (2048
tokens, hidden 1024, intermediate 2816, vocabulary 16384) so the run, Triton's JIT compiles
included, ends in seconds. Prints the losses and the wall time; exit 1 on a non-finite loss.

    python3 benchmarks/corpus/programs/liger_step.py [--steps 3]
"""

import argparse
import math
import sys
import time
from types import SimpleNamespace

import torch
from liger_kernel.transformers.fused_linear_cross_entropy import LigerFusedLinearCrossEntropyLoss
from liger_kernel.transformers.rms_norm import LigerRMSNorm
from liger_kernel.transformers.swiglu import LigerSwiGLUMLP

TOKENS, HIDDEN, INTERMEDIATE, VOCAB = 2048, 1024, 2816, 16384


class Block(torch.nn.Module):
    """RMSNorm -> SwiGLU MLP with a residual -> RMSNorm, then the fused lm head + cross entropy."""

    def __init__(self) -> None:
        super().__init__()
        self.norm1 = LigerRMSNorm(HIDDEN)
        self.mlp = LigerSwiGLUMLP(SimpleNamespace(hidden_size=HIDDEN, intermediate_size=INTERMEDIATE, hidden_act="silu"))
        self.norm2 = LigerRMSNorm(HIDDEN)
        self.lm_head = torch.nn.Linear(HIDDEN, VOCAB, bias=False)
        self.loss = LigerFusedLinearCrossEntropyLoss()

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        h = x + self.mlp(self.norm1(x))
        return self.loss(self.lm_head.weight, self.norm2(h), target)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("liger_step: no CUDA GPU", file=sys.stderr)
        return 2
    started = time.perf_counter()
    torch.manual_seed(0)
    model = Block().to(device="cuda", dtype=torch.bfloat16)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(TOKENS, HIDDEN, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    target = torch.randint(0, VOCAB, (TOKENS,), device="cuda")
    losses = []
    for _ in range(args.steps):
        opt.zero_grad(set_to_none=True)
        loss = model(x, target)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    torch.cuda.synchronize()
    print(f"liger_step: {args.steps} steps, losses {', '.join(f'{v:.4f}' for v in losses)}, "
          f"{time.perf_counter() - started:.1f} s")
    return 0 if all(math.isfinite(v) for v in losses) else 1


if __name__ == "__main__":
    sys.exit(main())
