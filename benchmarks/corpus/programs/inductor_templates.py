"""torch.compile programs whose kernels launch through inductor's template launchers (issue 23, point 2):
a max-autotune matmul (mm's ``triton_tem_`` template kernels), flex attention (its forward and backward
template kernels plus pointwise ones) and a user-defined Triton kernel called inside a compiled function.

Run on a GPU host, plain or under ``ktriage record``; prints a checksum (the recording must not change it).
"""

import torch
import triton
import triton.language as tl
from torch.nn.attention.flex_attention import flex_attention


@triton.jit
def user_scale_kernel(x_ptr, out_ptr, n, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * SCALE, mask=mask)


def user_kernel(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    user_scale_kernel[(triton.cdiv(n, 1024),)](x, out, n, SCALE=2.0, BLOCK=1024)
    return out + 1


def mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.relu(a @ b)


def causal(b, h, q_idx, kv_idx):  # type: ignore[no-untyped-def]
    return q_idx >= kv_idx


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return flex_attention(q, k, v, score_mod=lambda s, b, h, qi, ki: torch.where(causal(b, h, qi, ki), s, -float("inf")))


def main() -> None:
    torch.manual_seed(0)
    total = 0.0
    cmm = torch.compile(mm, mode="max-autotune-no-cudagraphs", dynamic=False)
    a, b = torch.randn(2048, 1024, device="cuda", dtype=torch.float16), torch.randn(1024, 4096, device="cuda", dtype=torch.float16)
    for _ in range(2):
        total += float(cmm(a, b).double().sum())
    cuser = torch.compile(user_kernel, dynamic=False)
    x = torch.randn(1 << 20, device="cuda")
    total += float(cuser(x).double().sum())
    cattn = torch.compile(attention, dynamic=False)
    q, k, v = (torch.randn(2, 8, 1024, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    out = cattn(q, k, v)
    out.float().sum().backward()
    total += float(out.double().sum()) + float(q.grad.double().abs().sum())
    torch.cuda.synchronize()
    print(f"checksum={total:.6e}")


if __name__ == "__main__":
    main()
