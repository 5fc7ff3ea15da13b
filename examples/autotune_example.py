"""Spill-aware autotuning of a row-sum reduction with ktriage's prune hook.

The config space has big [XBLOCK, RBLOCK] fp32 accumulator tiles that spill registers to local memory;
the hook compiles every config without launching it, drops the spilling ones and keeps the best three
by its latency-hiding estimate (bytes and warps in flight per SM, SMs the grid keeps busy), so
triton.autotune times only those.

    python examples/autotune_example.py                 # on a GPU: tune and run, print what was pruned
    python examples/autotune_example.py --target sm_90  # no GPU: screen the configs for sm_90 only

Needs Triton 3.3+ and ktriage importable (pip install ktriage, or PYTHONPATH=<repo>); torch for the GPU run.
"""

from __future__ import annotations

import argparse

import triton
import triton.language as tl

from ktriage.tune.autotune import TensorArg, ktriage_prune

CONFIGS = [
    triton.Config({"XBLOCK": x, "RBLOCK": r}, num_warps=w)
    for x, r, w in [(64, 256, 4), (128, 128, 4), (64, 128, 8), (64, 64, 4), (32, 128, 4), (16, 64, 2), (8, 256, 4)]
]


def make_kernel(target: str | None):
    prune = ktriage_prune(max_spill_bytes=0, keep=3, target=target)

    @triton.autotune(configs=CONFIGS, key=["xnumel", "rnumel"], prune_configs_by=prune)
    @triton.jit
    def row_sum(in_ptr, out_ptr, xnumel, rnumel, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
        xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
        xmask = xindex < xnumel
        rbase = tl.arange(0, RBLOCK)[None, :]
        acc = tl.full([XBLOCK, RBLOCK], 0, tl.float32)
        for roffset in range(0, rnumel, RBLOCK):
            rindex = roffset + rbase
            v = tl.load(in_ptr + (rindex + rnumel * xindex), xmask & (rindex < rnumel), other=0.0)
            acc = acc + v * v
        tl.store(out_ptr + xindex, tl.sum(acc, 1)[:, None], xmask)

    return row_sum, prune["ktriage"]


def grid_for(rows: int):
    return lambda meta: (triton.cdiv(rows, meta["XBLOCK"]),)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", help="screen for this arch without a GPU, e.g. sm_90")
    parser.add_argument("--rows", type=int, default=8192)
    parser.add_argument("--cols", type=int, default=4096)
    args = parser.parse_args()
    kernel, hook = make_kernel(args.target)
    if args.target:
        # No GPU: call the hook as the autotuner would, with tensors described by dtype.
        hook.bind(kernel)
        named = {"in_ptr": TensorArg("fp32"), "out_ptr": TensorArg("fp32"), "xnumel": args.rows, "rnumel": args.cols}
        # The Autotuner also passes the launch's grid; the hook evaluates it per config (idle SMs count).
        hook(CONFIGS, named, grid=grid_for(args.rows))
    else:
        import torch

        x = torch.randn(args.rows, args.cols, device="cuda")
        out = torch.empty(args.rows, device="cuda")
        kernel[grid_for(args.rows)](x, out, args.rows, args.cols)
        torch.testing.assert_close(out, (x * x).sum(1), rtol=1e-4, atol=1e-2)
        print(f"best config: {kernel.best_config}")
    for row in hook.last_report:
        print(f"{'keep' if row.kept else 'drop'}  {row.label:<44} {row.reason}")


if __name__ == "__main__":
    main()
