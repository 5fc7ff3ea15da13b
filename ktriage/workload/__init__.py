"""Workloads: TritonBench-compatible operators and backends, native and replayed from artifacts (docs/workloads.md).

Importing this package does not import torch or Triton; the per-op modules do, when a backend runs.
"""

from ktriage.workload.ops import OpDef, bytes_moved, flops, get_op, list_ops

__all__ = ["OpDef", "bytes_moved", "flops", "get_op", "list_ops"]
