"""Kernel specs: a @triton.jit function plus everything the JIT decides for one launch (see docs/specs.md)."""

from ktriage.spec.model import KNOWN_TARGETS, KernelSpec
from ktriage.spec.specialize import (
    Constexpr,
    Descriptor,
    Ptr,
    Specialization,
    specialize_args,
    specialize_launch,
)

__all__ = [
    "KNOWN_TARGETS",
    "Constexpr",
    "Descriptor",
    "KernelSpec",
    "Ptr",
    "Specialization",
    "specialize_args",
    "specialize_launch",
]
