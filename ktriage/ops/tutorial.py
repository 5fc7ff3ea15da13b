"""What the recipes of this project's tutorial kernels (ktriage/catalog/kernels/) share. Forward only.

Launch parameters come from ops/tutorial_params.py, the module the kernels' own wrappers use; tensors
are fresh contiguous torch allocations (16-byte aligned), so strides are the shapes' row lengths.
The recipes are with their operators (``vector_add.py``, ``softmax.py``, ``layer_norm.py``, ``matmul.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ktriage.ops.inputs import InputCase
from ktriage.ops.recipe import launch_from_values
from ktriage.ops.tutorial_params import RowLaunch
from ktriage.spec.launch import Launch

# The kernel files stay in ktriage/catalog/kernels/ (their bytes are hashed into spec keys, and their
# wrappers import ktriage.catalog.kernels._params); recipes only name them by path, never import them.
KERNELS_DIR = Path(__file__).resolve().parents[1] / "catalog" / "kernels"

DTYPES = ("fp32", "fp16", "bf16")


def source(file: str, fn: str) -> str:
    return f"{KERNELS_DIR / file}:{fn}"


def meta(op: str, case: InputCase, dtype: str, **extra: object) -> dict[str, object]:
    return {"op": op, "mode": "fwd", "input_id": case.id, "shape": dict(case.facts), "dtype": dtype, **extra}


def row_launch(
    *,
    op: str,
    name: str,
    source: str,
    case: InputCase,
    dtype: str,
    args: Sequence[tuple[str, Any]],
    target: str,
    params: RowLaunch,
) -> Launch:
    """The launch of a one-tile-per-program tutorial kernel (vector_add, softmax, layer_norm): its grid,
    warps and BLOCK_SIZE are ``params`` (tutorial_params, as the kernel's own wrapper launches it), it
    has no package, and its meta records the tile. One function, so the recipes launch alike."""
    return launch_from_values(
        name=name,
        source=source,
        package=None,
        args=args,
        target=target,
        grid=params["grid"],
        num_warps=params["num_warps"],
        meta=meta(op, case, dtype, BLOCK_SIZE=params["BLOCK_SIZE"]),
    )


def description(what: str) -> str:
    return f"ktriage tutorial kernel: {what}"
