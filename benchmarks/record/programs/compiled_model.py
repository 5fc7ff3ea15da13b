"""A torch.compile'd var_mean + LayerNorm and a small MLP block, forward and backward (issue 17).

Run on a GPU host, plain or under ``ktriage record``; prints a checksum of the results (the
recording must not change them) and which launcher inductor used for its kernels.
"""

import torch
import torch._inductor.config as inductor_config


def norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    var, mean = torch.var_mean(x, dim=-1, keepdim=True, correction=0)
    y = (x - mean) * torch.rsqrt(var + 1e-5)
    return torch.nn.functional.layer_norm(y * w + b, (x.shape[-1],))


class MLP(torch.nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.up, self.down = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(torch.nn.functional.gelu(self.up(x)))


def main() -> None:
    torch.manual_seed(0)
    d = 1024
    w, b = torch.randn(d, device="cuda"), torch.randn(d, device="cuda")
    mlp = MLP(d).cuda()
    cnorm, cmlp = torch.compile(norm, dynamic=False), torch.compile(mlp, dynamic=False)
    total = 0.0
    for rows in (4096, 2048, 4096):  # two shapes; the repeat is a cached launch
        x = torch.randn(rows, d, device="cuda", requires_grad=True)
        out = cmlp(cnorm(x, w, b))
        out.sum().backward()
        total += float(out.double().sum()) + float(x.grad.double().abs().sum())
    torch.cuda.synchronize()
    print(f"static_cuda_launcher={getattr(inductor_config, 'use_static_cuda_launcher', None)}")
    print(f"checksum={total:.6e}")


if __name__ == "__main__":
    main()
