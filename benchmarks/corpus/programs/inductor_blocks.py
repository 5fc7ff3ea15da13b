"""The blocks of a transformer training step under ``torch.compile``, forward and backward: inductor's generated
reductions and pointwise kernels, the model's test on kernels no fit has seen.

The calibration holds TritonBench's and Liger's hand-written kernels and a few inductor kernels (TritonBench's
``inductor`` backends, ``compiled_model``). This program compiles the blocks a decoder layer's step is made of,
each at three sizes with ``dynamic=False`` (one specialized kernel set per size, as a training job gets):

- ``rmsnorm``: the residual add and RMSNorm with a weight (hidden 2048, 4096, 8192; 8192 rows);
- ``layernorm_gelu``: LayerNorm with weight and bias, then GELU (hidden 1024, 4096, 8192);
- ``swiglu``: ``silu(a) * b`` (intermediate 4096, 11008, 14336; 8192 rows);
- ``softmax``: a scaled softmax with an additive bias over attention scores (64 heads x T x T, T = 512, 1024, 2048);
- ``cross_entropy``: the loss over fp32 logits (4096 rows; vocab 32000, 50304, 128256);
- ``rope``: rotary embedding on queries laid out (B, T, H, D) (T = 1024, 4096, 8192; 32 heads of 128);
- ``adamw``: one AdamW update written out in tensor ops on a flat fp32 parameter (4M, 16M, 64M elements),
  the multi-output pointwise kernel inductor fuses it into (no backward).

One block per process (``python3 inductor_blocks.py BLOCK``), so the recorder's time limit and any failure stay per
block; every size's forward and forward+backward run in their own try blocks. Prints a checksum; exit 1 only when
every step failed.
"""

import sys
import traceback
from collections.abc import Callable

import torch
import torch.nn.functional as F

DEV, DT = "cuda", torch.bfloat16
ROWS = 8192
Step = Callable[[], tuple[torch.Tensor, list[torch.Tensor]]]


def leaf(*shape: int, dtype: torch.dtype = DT) -> torch.Tensor:
    return torch.randn(*shape, device=DEV, dtype=dtype).requires_grad_(True)


def rmsnorm_fn(x: torch.Tensor, res: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    h = (x + res).float()
    return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w


def layernorm_gelu_fn(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.gelu(F.layer_norm(x, (x.shape[-1],), w, b), approximate="tanh")


def swiglu_fn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.silu(a) * b


def softmax_fn(s: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.softmax(s.float() * 0.088 + bias, dim=-1).to(s.dtype)


def cross_entropy_fn(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits, target)


def rope_fn(q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    q1, q2 = q.float().chunk(2, dim=-1)
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return torch.cat((q1 * c - q2 * s, q2 * c + q1 * s), dim=-1).to(q.dtype)


def adamw_fn(
    p: torch.Tensor, g: torch.Tensor, m: torch.Tensor, v: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    lr, b1, b2, eps, wd, t = 1e-3, 0.9, 0.95, 1e-8, 0.1, 10
    m2 = b1 * m + (1 - b1) * g
    v2 = b2 * v + (1 - b2) * g * g
    update = (m2 / (1 - b1**t)) / (torch.sqrt(v2 / (1 - b2**t)) + eps)
    return p * (1 - lr * wd) - lr * update, m2, v2


def compiled(fn: Callable[..., object]) -> Callable[..., object]:
    return torch.compile(fn, dynamic=False)


def rmsnorm(hidden: int) -> Step:
    f = compiled(rmsnorm_fn)

    def run() -> tuple[torch.Tensor, list[torch.Tensor]]:
        x, res, w = leaf(ROWS, hidden), leaf(ROWS, hidden), leaf(hidden)
        return f(x, res, w), [x, res, w]  # type: ignore[return-value]

    return run


def layernorm_gelu(hidden: int) -> Step:
    f = compiled(layernorm_gelu_fn)

    def run() -> tuple[torch.Tensor, list[torch.Tensor]]:
        x, w, b = leaf(ROWS, hidden), leaf(hidden), leaf(hidden)
        return f(x, w, b), [x, w, b]  # type: ignore[return-value]

    return run


def swiglu(inter: int) -> Step:
    f = compiled(swiglu_fn)

    def run() -> tuple[torch.Tensor, list[torch.Tensor]]:
        a, b = leaf(ROWS, inter), leaf(ROWS, inter)
        return f(a, b), [a, b]  # type: ignore[return-value]

    return run


def softmax(seq: int) -> Step:
    f = compiled(softmax_fn)

    def run() -> tuple[torch.Tensor, list[torch.Tensor]]:
        s = leaf(64, seq, seq)
        bias = torch.randn(seq, seq, device=DEV, dtype=torch.float32)
        return f(s, bias), [s]  # type: ignore[return-value]

    return run


def cross_entropy(vocab: int) -> Step:
    f = compiled(cross_entropy_fn)

    def run() -> tuple[torch.Tensor, list[torch.Tensor]]:
        logits = leaf(4096, vocab, dtype=torch.float32)
        target = torch.randint(0, vocab, (4096,), device=DEV)
        return f(logits, target), [logits]  # type: ignore[return-value]

    return run


def rope(seq: int) -> Step:
    f = compiled(rope_fn)

    def run() -> tuple[torch.Tensor, list[torch.Tensor]]:
        q = leaf(2, seq, 32, 128)
        angle = torch.outer(torch.arange(seq, device=DEV, dtype=torch.float32), torch.rand(64, device=DEV))
        return f(q, angle.cos(), angle.sin()), [q]  # type: ignore[return-value]

    return run


def adamw(numel: int) -> Step:
    f = compiled(adamw_fn)

    def run() -> tuple[torch.Tensor, list[torch.Tensor]]:
        p, g, m = (torch.randn(numel, device=DEV) for _ in range(3))
        v = torch.rand(numel, device=DEV)
        out = f(p, g, m, v)
        return out[0], []  # type: ignore[index]

    return run


BLOCKS: dict[str, tuple[Callable[[int], Step], tuple[int, ...], bool]] = {
    "rmsnorm": (rmsnorm, (2048, 4096, 8192), True),
    "layernorm_gelu": (layernorm_gelu, (1024, 4096, 8192), True),
    "swiglu": (swiglu, (4096, 11008, 14336), True),
    "softmax": (softmax, (512, 1024, 2048), True),
    "cross_entropy": (cross_entropy, (32000, 50304, 128256), True),
    "rope": (rope, (1024, 4096, 8192), True),
    "adamw": (adamw, (1 << 22, 1 << 24, 1 << 26), False),
}


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in BLOCKS:
        print(f"usage: inductor_blocks.py BLOCK, one of {', '.join(BLOCKS)}", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    make, sizes, has_backward = BLOCKS[argv[0]]
    total, failed, tried = 0.0, 0, 0
    for size in sizes:
        step_fn = make(size)
        for backward in (False, True) if has_backward else (False,):
            tried += 1
            step = f"{argv[0]} {size} {'fwd+bwd' if backward else 'fwd'}"
            try:
                for _ in range(2):
                    o, leaves = step_fn()
                    total += float(o.double().abs().sum())
                    if backward:
                        o.float().square().mean().backward()
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
