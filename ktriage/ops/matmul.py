"""matmul: this project's tutorial kernel (ops/kernels/matmul.py), a tiled tl.dot matmul. Catalog only."""

from __future__ import annotations

from collections.abc import Mapping

from ktriage.ops import tutorial
from ktriage.ops.inputs import InputCase
from ktriage.ops.operator import Kernels, Knob, Operator
from ktriage.ops.recipe import launch_from_values
from ktriage.ops.tutorial_params import matmul_launch
from ktriage.spec.launch import Launch
from ktriage.spec.model import KernelSpec
from ktriage.spec.specialize import Constexpr as C
from ktriage.spec.specialize import Ptr

SOURCE = tutorial.source("matmul.py", "matmul_kernel")


def inputs() -> list[InputCase]:
    shapes = [(512, 512, 512), (1000, 1000, 1000), (2048, 2048, 2048), (4096, 4096, 4096)]
    return [InputCase(i, {"M": m, "N": n, "K": k}) for i, (m, n, k) in enumerate(shapes)]


def recipe(
    case: InputCase, *, op: str, mode: str, dtype: str, target: str, sm_count: int, version: str | None
) -> Launch:
    m, n, k = case.facts["M"], case.facts["N"], case.facts["K"]
    p = matmul_launch(m, n, k)
    args = [
        ("a_ptr", Ptr(dtype)),
        ("b_ptr", Ptr(dtype)),
        ("c_ptr", Ptr(dtype)),
        ("M", m),
        ("N", n),
        ("K", k),
        ("stride_am", k),
        ("stride_ak", 1),
        ("stride_bk", n),
        ("stride_bn", 1),
        ("stride_cm", n),
        ("stride_cn", 1),
        ("BLOCK_M", C(p["BLOCK_M"])),
        ("BLOCK_N", C(p["BLOCK_N"])),
        ("BLOCK_K", C(p["BLOCK_K"])),
        ("GROUP_M", C(p["GROUP_M"])),
    ]
    tiles = {key: p[key] for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}
    return launch_from_values(
        name=f"{op}.fwd[M={m},N={n},K={k}]",
        source=SOURCE,
        package=None,
        args=args,
        target=target,
        grid=p["grid"],
        num_warps=p["num_warps"],
        num_stages=p["num_stages"],
        meta=tutorial.meta(op, case, dtype, **tiles),
    )


def knobs(spec: KernelSpec) -> dict[str, Knob]:
    """The tiles tune may turn: BLOCK_M/N tile M and N with masked loads (the grid is cdiv(M, BLOCK_M) *
    cdiv(N, BLOCK_N), tune/space.recipe_grid), BLOCK_K steps the K loop with masked loads."""
    shape = spec.meta.get("shape", {})
    found: dict[str, Knob] = {}
    for name, values, why in (
        (
            "BLOCK_M",
            (64, 128, 256),
            "BLOCK_M tiles M with masked loads/stores: the grid is cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)",
        ),
        (
            "BLOCK_N",
            (64, 128, 256),
            "BLOCK_N tiles N with masked loads/stores: the grid is cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)",
        ),
        ("BLOCK_K", (32, 64), "BLOCK_K steps the K loop with masked loads: any power of two >= 16 is correct"),
    ):
        if isinstance(spec.constexprs.get(name), int) and shape.get("M") and shape.get("N"):
            found[name] = Knob(name, values, why, reduction=name == "BLOCK_K")
    return found


def largest_tensor(f: Mapping[str, int], mode: str, e: int) -> int:
    """The largest of A (M, K), B (K, N) and C (M, N)."""
    m, n, k = f["M"], f["N"], f["K"]
    return max(m * k, k * n, m * n) * e


OP = Operator(
    name="matmul",
    sweep=inputs,
    kernels=(
        Kernels(
            name="tutorial.matmul",
            description=tutorial.description("tiled tl.dot matmul, compute-bound"),
            recipe=recipe,
            kernels={"fwd": SOURCE},
            modes=("fwd",),
            default_mode="fwd",
            dtypes=("fp16", "bf16"),
            default_dtype="fp16",
            knobs=knobs,
            source_hint="matmul.py",
        ),
    ),
    largest_tensor=largest_tensor,
)
