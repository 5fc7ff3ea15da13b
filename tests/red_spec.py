"""The inductor-style reduction of tests/kernels_for_tests.py (``red_kernel``) as a spec: its source and
signature (``triton_compile_for_tests``) in one place for the tests that compile it (compile, cache,
toolchain, tune, predict), so a change to the kernel is made once."""

from __future__ import annotations

from ktriage.spec.model import KernelSpec
from tests.triton_compile_for_tests import KERNELS_FILE, RED_SIGNATURE

RED_SOURCE = f"{KERNELS_FILE}:red_kernel"


def red_spec(name: str = "red", divisible_by_16: tuple[str, ...] = (), **consts: int) -> KernelSpec:
    """``red_kernel`` at XBLOCK=64, RBLOCK=256 (``consts`` override or add constexprs) on a 1024-CTA grid."""
    return KernelSpec(
        name,
        RED_SOURCE,
        dict(RED_SIGNATURE),
        {"XBLOCK": 64, "RBLOCK": 256, **consts},
        divisible_by_16=divisible_by_16,
        grid=(1024,),
    )
