"""The built-in catalog: Liger-Kernel recipes and this project's tutorial kernels (docs/catalog.md)."""

from ktriage.catalog.inputs import InputCase
from ktriage.catalog.registry import (
    OpInfo,
    expand_op,
    get_op,
    list_ops,
    op_inputs,
    select_inputs,
)

__all__ = ["InputCase", "OpInfo", "expand_op", "get_op", "list_ops", "op_inputs", "select_inputs"]
