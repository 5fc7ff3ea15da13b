"""Workloads: TritonBench-compatible operators and backends, native and replayed from artifacts (docs/workloads.md).

Three sub-packages, each importing only those below it (an import-linter contract): ``recorded`` (launches
recorded from a real run, replayed) above ``bundles`` (cubins and a manifest, compiled here, measured there)
above ``ops`` (the operators' backends and torch code). Importing this package does not import torch or
Triton; the per-op modules do, when a backend runs.
"""

from ktriage.workload.ops.opdef import OpDef, bench_op, bytes_moved, flops, list_ops

__all__ = ["OpDef", "bytes_moved", "flops", "bench_op", "list_ops"]
