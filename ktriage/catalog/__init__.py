"""The built-in catalog: ops expanded into KernelSpecs (docs/catalog.md); the facts are in ktriage.ops."""

from ktriage.catalog.registry import (
    OpInfo,
    catalog_op,
    expand_op,
    list_ops,
    op_inputs,
    select_inputs,
)
from ktriage.ops.inputs import InputCase

__all__ = ["InputCase", "OpInfo", "expand_op", "catalog_op", "list_ops", "op_inputs", "select_inputs"]
