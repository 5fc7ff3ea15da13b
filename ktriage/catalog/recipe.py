"""Shared plumbing for recipes: turn argument values into a KernelSpec through the JIT's rules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ktriage.spec.model import KernelSpec
from ktriage.spec.specialize import specialize_args

# Triton's defaults when a launch passes no num_warps / num_stages (CUDAOptions in
# third_party/nvidia/backend/compiler.py: num_warps=4, num_stages=3, 3.3 through 3.6).
TRITON_DEFAULT_WARPS = 4
TRITON_DEFAULT_STAGES = 3

TL_DTYPE = {"fp32": "tl.float32", "bf16": "tl.bfloat16", "fp16": "tl.float16"}


def spec_from_values(
    *,
    name: str,
    source: str,
    package: str | None,
    args: Sequence[tuple[str, Any]],
    target: str,
    grid: tuple[int, ...],
    meta: dict[str, Any],
    num_warps: int = TRITON_DEFAULT_WARPS,
    num_stages: int = TRITON_DEFAULT_STAGES,
) -> KernelSpec:
    """A spec for a launch described by its argument values, in parameter order."""
    sp = specialize_args(args)
    return KernelSpec(
        name=name,
        source=source,
        package=package,
        signature=sp.signature,
        constexprs=sp.constexprs,
        divisible_by_16=sp.divisible_by_16,
        equal_to_1=sp.equal_to_1,
        num_warps=num_warps,
        num_stages=num_stages,
        target=target,
        grid=grid,
        meta=meta,
    )
