"""softmax: this project's tutorial kernel (ops/kernels/softmax.py), a fused row softmax. Catalog only."""

from __future__ import annotations

from ktriage.ops import tutorial
from ktriage.ops.inputs import InputCase
from ktriage.ops.operator import Kernels, Operator, row_activation_bytes
from ktriage.ops.tutorial_params import softmax_launch
from ktriage.spec.launch import Launch
from ktriage.spec.specialize import Constexpr as C
from ktriage.spec.specialize import Ptr

SOURCE = tutorial.source("softmax.py", "softmax_kernel")


def inputs() -> list[InputCase]:
    return [InputCase(i, {"M": 4096, "N": n}) for i, n in enumerate([256, 1000, 3072, 8192])]


def recipe(
    case: InputCase, *, op: str, mode: str, dtype: str, target: str, sm_count: int, version: str | None
) -> Launch:
    m, n = case.facts["M"], case.facts["N"]
    p = softmax_launch(m, n)
    args = [
        ("out_ptr", Ptr(dtype)),
        ("in_ptr", Ptr(dtype)),
        ("in_row_stride", n),
        ("out_row_stride", n),
        ("n_cols", n),
        ("BLOCK_SIZE", C(p["BLOCK_SIZE"])),
    ]
    return tutorial.row_launch(
        op=op,
        name=f"{op}.fwd[M={m},N={n}]",
        source=SOURCE,
        case=case,
        dtype=dtype,
        args=args,
        target=target,
        params=p,
    )


OP = Operator(
    name="softmax",
    sweep=inputs,
    kernels=(
        Kernels(
            name="tutorial.softmax",
            description=tutorial.description("fused row softmax, memory-bound"),
            recipe=recipe,
            kernels={"fwd": SOURCE},
            modes=("fwd",),
            default_mode="fwd",
            dtypes=tutorial.DTYPES,
            default_dtype="fp32",
        ),
    ),
    largest_tensor=row_activation_bytes,
)
