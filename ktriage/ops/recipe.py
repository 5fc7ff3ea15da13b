"""Shared plumbing for recipes: a launch described by its argument values (spec/launch.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ktriage.spec.launch import TRITON_DEFAULT_STAGES, TRITON_DEFAULT_WARPS, Launch

TL_DTYPE = {"fp32": "tl.float32", "bf16": "tl.bfloat16", "fp16": "tl.float16"}


def launch_from_values(
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
) -> Launch:
    """A launch described by its argument values, in parameter order (``.to_spec()`` gives the spec)."""
    return Launch(
        name=name,
        source=source,
        package=package,
        args=tuple(args),
        target=target,
        grid=grid,
        num_warps=num_warps,
        num_stages=num_stages,
        meta=meta,
    )
