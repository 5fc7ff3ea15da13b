"""vector_add: this project's tutorial kernel (ops/kernels/vector_add.py), x + y. Catalog only.

The sweep includes a size that is not a multiple of 16, so specs without divisibility hints are
covered too.
"""

from __future__ import annotations

from collections.abc import Mapping

from ktriage.ops import tutorial
from ktriage.ops.inputs import InputCase
from ktriage.ops.operator import Kernels, Operator
from ktriage.ops.tutorial_params import vector_add_launch
from ktriage.spec.launch import Launch
from ktriage.spec.specialize import Constexpr as C
from ktriage.spec.specialize import Ptr

SOURCE = tutorial.source("vector_add.py", "add_kernel")


def inputs() -> list[InputCase]:
    return [InputCase(i, {"N": n}) for i, n in enumerate([1000, 65536, 1048576, 16777217])]


def recipe(
    case: InputCase, *, op: str, mode: str, dtype: str, target: str, sm_count: int, version: str | None
) -> Launch:
    n = case.facts["N"]
    p = vector_add_launch(n)
    args = [
        ("x_ptr", Ptr(dtype)),
        ("y_ptr", Ptr(dtype)),
        ("out_ptr", Ptr(dtype)),
        ("n_elements", n),
        ("BLOCK_SIZE", C(p["BLOCK_SIZE"])),
    ]
    return tutorial.row_launch(
        op=op,
        name=f"{op}.fwd[N={n}]",
        source=SOURCE,
        case=case,
        dtype=dtype,
        args=args,
        target=target,
        params=p,
    )


def largest_tensor(f: Mapping[str, int], mode: str, e: int) -> int:
    """x, y and the output alike: N*e."""
    return f["N"] * e


OP = Operator(
    name="vector_add",
    sweep=inputs,
    kernels=(
        Kernels(
            name="tutorial.vector_add",
            description=tutorial.description("x + y, memory-bound"),
            recipe=recipe,
            kernels={"fwd": SOURCE},
            modes=("fwd",),
            default_mode="fwd",
            dtypes=tutorial.DTYPES,
            default_dtype="fp32",
        ),
    ),
    largest_tensor=largest_tensor,
)
