"""Operators: one module per operator (``ktriage/ops/<op>.py`` defines ``OP``), one registry (docs/architecture.md).

Everything ktriage knows about an op lives in its module: TritonBench's name, input sweep, x_vals,
backends and baseline, bytes and flops, and per library its catalog name, recipes per release,
replay and tune knobs. ``ktriage.catalog`` (specs), ``ktriage.workload`` (bench), ``ktriage.tune``
and ``ktriage.stats`` callers read them through :mod:`ktriage.ops.registry`.
"""

from ktriage.ops.inputs import InputCase
from ktriage.ops.operator import Kernels, Knob, Operator
from ktriage.ops.registry import OPERATORS, catalog_entry, default_baselines, operator

__all__ = ["OPERATORS", "InputCase", "Kernels", "Knob", "Operator", "catalog_entry", "default_baselines", "operator"]
