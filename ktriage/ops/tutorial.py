"""What the recipes of this project's tutorial kernels (ktriage/catalog/kernels/) share. Forward only.

Launch parameters come from ops/tutorial_params.py, the module the kernels' own wrappers use; tensors
are fresh contiguous torch allocations (16-byte aligned), so strides are the shapes' row lengths.
The recipes are with their operators (``vector_add.py``, ``softmax.py``, ``layer_norm.py``, ``matmul.py``).
"""

from __future__ import annotations

from pathlib import Path

from ktriage.ops.inputs import InputCase

# The kernel files stay in ktriage/catalog/kernels/ (their bytes are hashed into spec keys, and their
# wrappers import ktriage.catalog.kernels._params); recipes only name them by path, never import them.
KERNELS_DIR = Path(__file__).resolve().parents[1] / "catalog" / "kernels"

DTYPES = ("fp32", "fp16", "bf16")


def source(file: str, fn: str) -> str:
    return f"{KERNELS_DIR / file}:{fn}"


def meta(op: str, case: InputCase, dtype: str, **extra: object) -> dict[str, object]:
    return {"op": op, "mode": "fwd", "input_id": case.id, "shape": dict(case.facts), "dtype": dtype, **extra}


def description(what: str) -> str:
    return f"ktriage tutorial kernel: {what}"
