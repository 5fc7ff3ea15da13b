"""TritonBench-compatible operators as ``ktriage bench`` runs them: lookup, modes, precision, inputs, metrics.

Why TritonBench's names: ``ktriage bench`` must accept TritonBench's command lines unchanged
(``--op layer_norm --bwd --input-id 7``), so op names, input ids and x_vals must mean exactly what
they mean in TritonBench (meta-pytorch/tritonbench, tritonbench/operators/<op>/operator.py). The
facts of each op (sweep, x_val keys, backends, baseline, bytes and flops) are its operator's
(``ktriage/ops/<op>.py``); this module is the bench's view of them.

Pure Python: no torch import, so the CPU tool can list ops and compute metrics without torch.
"""

from __future__ import annotations

from collections.abc import Sequence

from ktriage.errors import KtriageError, run_as, spelled, worded
from ktriage.ops import registry
from ktriage.ops.inputs import InputCase, select_inputs
from ktriage.ops.operator import MODES, Operator
from ktriage.ops.rope import NUM_KV_HEADS as ROPE_NUM_KV_HEADS
from ktriage.ops.rope import NUM_Q_HEADS as ROPE_NUM_Q_HEADS
from ktriage.ops.rope import inputs as rope_inputs

__all__ = ["MODES", "ROPE_NUM_KV_HEADS", "ROPE_NUM_Q_HEADS", "OpDef", "rope_inputs"]

# TritonBench's --precision choices that make sense for these ops. "bypass" (TritonBench's default)
# means the op's DEFAULT_PRECISION; for these three ops that is torch's default dtype, fp32.
PRECISIONS = ("fp32", "bf16", "fp16")
ELEMENT_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}
INDEX_BYTES = 8  # torch.randint gives int64 indices
MAIN_RANDOM_SEED = 1337  # tritonbench/utils/env_utils.py

OpDef = Operator  # the bench's name for an operator (ktriage.ops.operator.Operator)


def list_ops() -> list[OpDef]:
    return registry.bench_operators()


def bench_op(name: str) -> OpDef:
    """The bench's view of an op, named as TritonBench names it (``layer_norm``): its backends, inputs and
    baseline; KtriageError listing the valid names otherwise. (The catalog's view, by kernel name, is
    ``ktriage.catalog.catalog_op``.)"""
    op = registry.operator(name)
    names = ", ".join(o.name for o in registry.bench_operators())
    if op is not None and op.name == name and not op.backends:
        # an operator ktriage knows (its catalog kernels, TritonBench's facts for triage) but cannot time:
        # "unknown" was wrong, and the way on for its kernels is a recording or explain
        catalog = ", ".join(k.name for k in op.kernels) or "none"
        kernel = op.kernels[0].name if op.kernels else name
        # each step as its reader runs it (run_as): the command line is shown no kt.* call
        record = run_as(
            "kt.record(command=['python', 'prog.py'], output='W.json')", "ktriage record -o W.json -- python prog.py"
        )
        bench = run_as(
            "kt.bench_recorded(workload='W.json', toolchains=['OLD', 'NEW'])", "ktriage bench W.json -t OLD -t NEW"
        )
        explain = run_as(
            f"kt.explain(target={kernel!r}, toolchains=['OLD', 'NEW'])", f"ktriage explain {kernel} -t OLD -t NEW"
        )
        raise KtriageError(
            f"bench has no workload of {name!r}: ktriage knows its kernels (catalog: {catalog}) but has no native "
            "backends or replay to time them",
            worded(
                lambda o: (
                    f"time a program that runs it: {spelled(record, o)}, then {spelled(bench, o)}; "
                    f"compile-side: {spelled(explain, o)}; or bench one of: {names} (as {o('op', '--op')})"
                )
            ),
        )
    if op is None or op.name != name:
        raise KtriageError(
            f"unknown operator {name!r}",
            worded(lambda o: f"use one of: {names} (TritonBench's operator names, as {o('op', '--op')})"),
        )
    return op


def check_mode(op: OpDef, mode: str) -> str:
    if mode not in op.modes:
        raise KtriageError(
            f"{op.name} has no mode {mode!r}",
            worded(lambda o: f"use one of: {', '.join(op.modes)}, e.g. {o('mode', '--mode', op.modes[0])}"),
        )
    return mode


def resolve_precision(op: OpDef, precision: str | None) -> str:
    """``None``/``"bypass"`` -> the op's default (fp32, TritonBench's torch default dtype)."""
    if precision in (None, "bypass"):
        return op.default_precision
    assert precision is not None
    if precision not in PRECISIONS:
        raise KtriageError(
            f"precision {precision!r} is not supported for {op.name}", f"use one of: {', '.join(PRECISIONS)}"
        )
    return precision


def select_op_inputs(
    op: OpDef, *, input_id: int | None = None, num_inputs: int | None = None, selectors: Sequence[str] | None = None
) -> list[InputCase]:
    """TritonBench's ``--input-id K --num-inputs N`` (ids K..K+N-1), or catalog-style selectors ("7", "N=4608")."""
    cases = op.inputs()
    if selectors:
        cases = select_inputs(op.name, cases, selectors)
    start = input_id or 0
    if start < 0 or start >= len(op.inputs()):
        raise KtriageError(
            worded(lambda o: f"{o('input_id', '--input-id', start)} is out of range for {op.name}"),
            f"use 0..{len(op.inputs()) - 1}",
        )
    stop = start + num_inputs if num_inputs is not None else None
    if input_id is not None or num_inputs is not None:
        cases = [c for c in cases if c.id >= start and (stop is None or c.id < stop)]
    return cases


# ------------------------------------------------------------------------------------------ metrics
def bytes_moved(op: str, case: InputCase, mode: str, precision: str = "fp32") -> int:
    """Bytes for the gbps metric (GB/s = bytes / latency_ms * 1e-6, TritonBench's unit); the formula
    is the operator's (``ktriage/ops/<op>.py`` ``bytes_moved``, its docstring says where it comes from)."""
    opdef = registry.operator(op)
    if opdef is None or opdef.name != op or opdef.bytes_moved is None:
        names = ", ".join(o.name for o in registry.bench_operators())
        raise KtriageError(f"no bytes formula for op {op!r}", f"use one of: {names}")
    return opdef.bytes_moved(case.facts, mode, ELEMENT_BYTES[precision])


def flops(op: str, case: InputCase, mode: str, precision: str = "fp32") -> int:
    """Nominal floating-point operations for the tflops metric (TFLOP/s = flops / latency_ms * 1e-9),
    counted from the math, not from any one implementation (``ktriage/ops/<op>.py`` ``flops``)."""
    opdef = registry.operator(op)
    if opdef is None or opdef.name != op or opdef.flops is None:
        names = ", ".join(o.name for o in registry.bench_operators())
        raise KtriageError(f"no flops formula for op {op!r}", f"use one of: {names}")
    return opdef.flops(case.facts, mode, ELEMENT_BYTES.get(precision, 0))


def gbps(bytes_: int, latency_ms: float) -> float:
    return bytes_ / latency_ms * 1e-6


def tflops(flops_: int, latency_ms: float) -> float:
    return flops_ / latency_ms * 1e-9
