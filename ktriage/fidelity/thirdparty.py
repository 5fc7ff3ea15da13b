"""Real third-party kernels for the JIT-equivalence check, launched as their libraries launch them."""

from __future__ import annotations

from ktriage.fidelity.cases import FidelityCase


def thirdparty_cases(target: str = "sm_90") -> list[FidelityCase]:
    return []
