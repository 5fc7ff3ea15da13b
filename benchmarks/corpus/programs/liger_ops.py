"""Liger-Kernel 0.8.5 operators that TritonBench does not run, forward and backward on the GPU.

The corpus's Liger kernels came through TritonBench (its ``liger_*`` backends: cross_entropy, embedding,
layer_norm, rms_norm, swiglu, ...). Liger ships more Triton operators than TritonBench benchmarks; this
program runs one of them, so that ``ktriage record`` captures kernels no fit of the cost model has seen
(issue 24's fresh operators, ``benchmarks/calibration/fresh_ops/``). Two shapes each, in bf16 (Liger's
training dtype), one forward and one backward per shape, sizes of a 1-8B model's layer.

    python3 benchmarks/corpus/programs/liger_ops.py OP      # OP: one of OPS below, or --list
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

import torch

DT = torch.bfloat16
DEV = "cuda"


def _rand(*shape: int, grad: bool = True, dtype: torch.dtype = DT) -> torch.Tensor:
    return torch.randn(shape, device=DEV, dtype=dtype).requires_grad_(grad)  # shape () is a 0-d scalar


def _backward(out: torch.Tensor | tuple[torch.Tensor, ...]) -> None:
    outs = out if isinstance(out, tuple) else (out,)
    torch.autograd.backward([o for o in outs if o.requires_grad], [torch.ones_like(o) for o in outs if o.requires_grad])


def dyt(rows: int, hidden: int) -> None:
    from liger_kernel.transformers.functional import liger_dyt

    x = _rand(rows, hidden)
    _backward(liger_dyt(x, _rand(1), _rand(hidden), _rand(hidden)))


def fused_add_rms_norm(rows: int, hidden: int) -> None:
    from liger_kernel.transformers.functional import liger_fused_add_rms_norm

    _backward(liger_fused_add_rms_norm(_rand(rows, hidden), _rand(rows, hidden), _rand(hidden), 1e-6, in_place=False))


def group_norm(batch: int, channels: int) -> None:
    from liger_kernel.transformers.functional import liger_group_norm

    x = _rand(batch, channels, 4096)
    _backward(liger_group_norm(x, _rand(channels), _rand(channels), channels, channels // 16, 1e-6))


def poly_norm(rows: int, hidden: int) -> None:
    from liger_kernel.transformers.functional import liger_poly_norm

    # the bias is a 0-d scalar: Liger returns its gradient 0-d, and autograd refuses that for a (1,) input
    _backward(liger_poly_norm(_rand(rows, hidden), _rand(3), _rand(), 1e-6, in_place=False))


def modulated_rms_norm(rows: int, hidden: int) -> None:
    from liger_kernel.transformers.functional import liger_modulated_rms_norm

    x = _rand(rows, hidden)
    _backward(liger_modulated_rms_norm(x, _rand(hidden), _rand(rows, hidden), _rand(rows, hidden), in_place=False))


def sparsemax(rows: int, width: int) -> None:
    from liger_kernel.transformers.functional import liger_sparsemax

    _backward(liger_sparsemax(_rand(rows, width)))


def softmax(rows: int, width: int) -> None:
    from liger_kernel.transformers.functional import liger_softmax

    _backward(liger_softmax(_rand(rows, width)))


def relu_squared(rows: int, hidden: int) -> None:
    from liger_kernel.transformers.functional import liger_relu_squared

    _backward(liger_relu_squared(_rand(rows, hidden)))


def tvd(rows: int, vocab: int) -> None:
    from liger_kernel.transformers.functional import liger_tvd

    p = torch.softmax(torch.randn(rows, vocab, device=DEV), -1).requires_grad_(True)
    q = torch.softmax(torch.randn(rows, vocab, device=DEV), -1)
    _backward(liger_tvd(p, q, reduction="batchmean"))


def rope(tokens: int, heads: int) -> None:
    from liger_kernel.transformers.functional import liger_rope

    q, k = _rand(1, heads, tokens, 128), _rand(1, max(heads // 4, 1), tokens, 128)
    cos, sin = _rand(1, tokens, 128, grad=False), _rand(1, tokens, 128, grad=False)
    _backward(liger_rope(q, k, cos, sin))


def qwen2vl_mrope(tokens: int, heads: int) -> None:
    from liger_kernel.transformers.functional import liger_qwen2vl_mrope

    q, k = _rand(1, heads, tokens, 128), _rand(1, max(heads // 4, 1), tokens, 128)
    cos, sin = _rand(3, 1, tokens, 128, grad=False), _rand(3, 1, tokens, 128, grad=False)
    _backward(liger_qwen2vl_mrope(q, k, cos, sin, [16, 24, 24]))


def fused_neighborhood_attention(tokens: int, heads: int) -> None:
    from liger_kernel.transformers.functional import liger_fused_neighborhood_attention

    q, k, v = (_rand(2, heads, tokens, 64) for _ in range(3))
    _backward(liger_fused_neighborhood_attention(q, k, v, kernel_size=7))


# OP -> (function, two shapes: the function's two size arguments)
OPS: dict[str, tuple[Callable[[int, int], None], tuple[tuple[int, int], tuple[int, int]]]] = {
    "dyt": (dyt, ((4096, 4096), (8192, 8192))),
    "fused_add_rms_norm": (fused_add_rms_norm, ((4096, 4096), (8192, 8192))),
    "group_norm": (group_norm, ((16, 512), (32, 1024))),
    "poly_norm": (poly_norm, ((4096, 4096), (8192, 8192))),
    "modulated_rms_norm": (modulated_rms_norm, ((4096, 4096), (8192, 8192))),
    "sparsemax": (sparsemax, ((4096, 4096), (2048, 32768))),
    "softmax": (softmax, ((4096, 4096), (2048, 65536))),
    "relu_squared": (relu_squared, ((4096, 4096), (8192, 14336))),
    "tvd": (tvd, ((2048, 32000), (4096, 128256))),
    "rope": (rope, ((2048, 32), (8192, 32))),
    "qwen2vl_mrope": (qwen2vl_mrope, ((2048, 28), (8192, 28))),
    "fused_neighborhood_attention": (fused_neighborhood_attention, ((1024, 8), (2048, 16))),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("op", nargs="?", help="one of: " + ", ".join(OPS))
    parser.add_argument("--list", action="store_true", help="print the operators and exit")
    args = parser.parse_args()
    if args.list or not args.op:
        print("\n".join(OPS))
        return 0 if args.list else 2
    if args.op not in OPS:
        print(f"liger_ops: unknown operator {args.op!r}; one of: {', '.join(OPS)}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("liger_ops: no CUDA GPU", file=sys.stderr)
        return 2
    fn, shapes = OPS[args.op]
    started = time.perf_counter()
    torch.manual_seed(0)
    for a, b in shapes:
        fn(a, b)
    torch.cuda.synchronize()
    print(f"liger_ops {args.op}: {len(shapes)} shapes, fwd+bwd, {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
