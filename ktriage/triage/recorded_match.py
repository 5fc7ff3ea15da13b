"""Which recorded kernels a flagged TritonBench cell launched: a cell of a backend without catalog
kernels (liger_rms, liger_swiglu, ...) gets its kernels from a recorded workload (``ktriage record``
of the TritonBench run, ``triage --workload W.json``).

Why by shape: the recording does not tag a launch with TritonBench's input id, so the only link
between a cell and its launches is the input's shape. The rules, in order (docs/triage.md):

1. **the recording is this backend's**: the recorded command, when it is TritonBench's ``run.py``,
   names the cell's op and pass (``--op rms_norm --bwd``) and, with ``--only``, the cell's backend;
   and the kernels come from the backend's module (:data:`BACKEND_MODULES`: ``liger_rms`` ->
   ``liger_kernel.ops.rms_norm``), or, for a backend ktriage has no module for, the recording ran
   that backend alone (``--only B``). A recording of op X is never used for op Y;
2. **the shape**: the cell's x_val dims (its input label, e.g. ``(2048, 8192)``, else TritonBench's
   own x_val from the results file) against each recorded input's tensor arguments: a tensor whose
   shape IS the dims ("matched by shape: dY_ptr 2048x8192"); only when no input has one, a tensor
   with as many elements as the dims' product ("matched by element count": ``(8, 2048, 4096)`` vs
   ``16384x4096``). A one-number x_val is too weak to match;
3. **one input per function**: two recorded inputs of the same kernel function matching is
   ambiguous: a note, no kernels (never a guess presented as fact); the same holds for two
   workload files that both match;
4. **the timed pass**: a matched kernel launched once while the others ran many times is the
   setup (TritonBench's bwd runs the forward once to build the graph): noted, left out.

Pure: reads workloads already loaded, compiles nothing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ktriage.errors import worded
from ktriage.triage.model import CellTriage, RecordedKernel, RecordedMatch
from ktriage.wording import plural

if TYPE_CHECKING:
    from ktriage.record.workload import Input, Kernel, Workload

# The module of a TritonBench backend's Triton kernels, as the recording host names it
# (``Kernel.original_module``). Liger's fused linear cross entropy launches the cross entropy kernel.
BACKEND_MODULES: dict[str, tuple[str, ...]] = {
    "liger_rms": ("liger_kernel.ops.rms_norm",),
    "liger_layer_norm": ("liger_kernel.ops.layer_norm",),
    "liger_embedding": ("liger_kernel.ops.experimental.embedding",),
    "liger_swiglu": ("liger_kernel.ops.swiglu",),
    "liger_geglu": ("liger_kernel.ops.geglu",),
    "liger_cross_entropy_loss": ("liger_kernel.ops.cross_entropy",),
    "liger_lm_head_ce": ("liger_kernel.ops.fused_linear_cross_entropy", "liger_kernel.ops.cross_entropy"),
}
_MODES = {
    "--fwd": "fwd",
    "--bwd": "bwd",
    "--fwd_bwd": "fwd_bwd",
    "--fwd-bwd": "fwd_bwd",
    "--fwd_no_grad": "fwd_no_grad",
}


@dataclass(frozen=True)
class Loaded:
    """A ``--workload`` file, loaded once per triage."""

    path: str
    workload: Workload

    @property
    def name(self) -> str:
        from ktriage.workload.recorded.bundle import workload_name

        return workload_name(self.path)


def load_workloads(paths: Sequence[str]) -> list[Loaded]:
    """The ``--workload`` files, read (and their snapshots materialized) before any compile: a bad
    file is a ``FormatError`` naming it and the fix, as ``ktriage explain W.json`` gives it."""
    from ktriage.record.workload import load_workload

    return [Loaded(str(p), load_workload(p)) for p in paths]


def dims(text: str | None) -> tuple[int, ...] | None:
    """``(2048, 8192)`` -> (2048, 8192); None when the text is no tuple of integers."""
    if not text:
        return None
    parts = re.findall(r"-?\d+", text)
    if not parts or re.sub(r"[-\d\s,()\[\]]", "", text):
        return None
    return tuple(int(p) for p in parts)


def command_facts(workload: Workload) -> tuple[str | None, str | None, list[str]]:
    """The TritonBench op, pass and ``--only`` backends of the recorded command (None/[] when the
    command is not TritonBench's run.py or does not say)."""
    argv = workload.recorded.get("command") or []
    if not isinstance(argv, list):
        return None, None, []
    args = [str(a) for a in argv]
    if not any(Path(a).name == "run.py" for a in args):
        return None, None, []

    def value(flag: str) -> str | None:
        for i, a in enumerate(args):
            if a == flag and i + 1 < len(args):
                return args[i + 1]
            if a.startswith(flag + "="):
                return a.split("=", 1)[1]
        return None

    mode = value("--mode") or next((_MODES[a] for a in args if a in _MODES), None)
    only = [b.strip() for b in (value("--only") or "").split(",") if b.strip()]
    return value("--op"), mode, only


def owned_kernels(loaded: Loaded, cell: CellTriage) -> tuple[list[Kernel], str | None]:
    """The workload's kernels that are the cell's backend's, or ([], why not)."""
    op, mode, only = command_facts(loaded.workload)
    if op is not None and op != cell.op:
        return [], f"a recording of TritonBench's {op}, not {cell.op}"
    if op is not None and mode is not None and mode != cell.mode:
        return [], f"a recording of {op} {mode}, not {cell.mode}"
    if only and cell.backend not in only:
        return [], f"recorded with --only {','.join(only)}: {cell.backend} did not run"
    modules = BACKEND_MODULES.get(cell.backend)
    if modules:
        mine = [k for k in loaded.workload.kernels if k.original_module in modules or k.module in modules]
        if not mine:
            seen = sorted({k.original_module for k in loaded.workload.kernels}) or ["no kernels"]
            return [], f"its kernels come from {', '.join(seen)}, not {cell.backend}'s {', '.join(modules)}"
        return mine, None
    if only == [cell.backend]:
        return list(loaded.workload.kernels), None
    return [], (
        f"ktriage does not know which module {cell.backend}'s Triton kernels come from, and the recording did "
        f"not run {cell.backend} alone (TritonBench --only {cell.backend})"
    )


def _tensors(inp: Input) -> list[tuple[str, tuple[int, ...]]]:
    out = []
    for arg in inp.args:
        if isinstance(arg, (list, tuple)) and len(arg) == 2 and isinstance(arg[1], dict) and "shape" in arg[1]:
            out.append((str(arg[0]), tuple(int(s) for s in arg[1]["shape"])))
    return out


def _shape(s: Sequence[int]) -> str:
    return "x".join(str(v) for v in s)


Hit = tuple["Kernel", "Input", str, tuple[int, ...]]


def _hits(kernels: Sequence[Kernel], want: tuple[int, ...]) -> tuple[list[Hit], str]:
    """The recorded inputs with a tensor of the dims (exact), else of their element count."""
    exact: list[Hit] = []
    count: list[Hit] = []
    n = math.prod(want)
    for k in kernels:
        for inp in k.inputs:
            tensors = _tensors(inp)
            same = next(((name, s) for name, s in tensors if s == want), None)
            if same:
                exact.append((k, inp, *same))
                continue
            flat = next(((name, s) for name, s in tensors if math.prod(s) == n), None)
            if flat:
                count.append((k, inp, *flat))
    return (exact, "shape") if exact else (count, "element count")


def match_cell(
    cell: CellTriage, x_val: str | None, workloads: Sequence[Loaded]
) -> tuple[RecordedMatch | None, list[str]]:
    """The cell's recorded kernels by the module's rules, and notes on every workload not used."""
    from ktriage.workload.recorded.bundle import RECORDED_MODE, workload_entries

    notes: list[str] = []
    if cell.mode == RECORDED_MODE:  # a recorded bench's own cell: op = the workload's name
        return _own_entry(cell, workloads)
    candidates = [d for d in dict.fromkeys([dims(cell.input_label), dims(x_val)]) if d is not None]
    if not candidates:
        return None, [
            f"recorded workloads not used: the input {cell.input_label!r} is no shape to match recorded launches by"
        ]
    if all(len(d) < 2 for d in candidates):
        return None, [
            f"recorded workloads not used: the x_val {cell.input_label} is one number, too weak to match "
            "recorded launches by shape"
        ]
    found: list[tuple[Loaded, list[Hit], str, tuple[int, ...]]] = []
    for loaded in workloads:
        kernels, why = owned_kernels(loaded, cell)
        if why:
            notes.append(f"workload {loaded.path} not used for {cell.backend}: {why}")
            continue
        hits: list[Hit] = []
        how, want = "shape", candidates[0]
        for want in (d for d in candidates if len(d) >= 2):
            hits, how = _hits(kernels, want)
            if hits:
                break
        if not hits:
            shapes = sorted({_shape(s) for k in kernels for i in k.inputs for _, s in _tensors(i)[:1]})
            notes.append(
                f"workload {loaded.path}: no recorded input of {cell.backend} matches x_val "
                f"{' or '.join(str(d) for d in candidates)} by shape or element count (recorded first "
                f"tensors: {', '.join(shapes[:8]) or 'none'}): its kernels are not known for this cell"
            )
            continue
        per_fn: dict[str, list[Hit]] = {}
        for h in hits:
            per_fn.setdefault(h[0].function, []).append(h)
        twice = {fn: hs for fn, hs in per_fn.items() if len(hs) > 1}
        if twice:
            fn, hs = next(iter(twice.items()))
            which = ", ".join(f"{k.id} input {i.id} ({name} {_shape(s)})" for k, i, name, s in hs)
            notes.append(
                f"workload {loaded.path}: ambiguous: {len(hs)} recorded inputs of {fn} match x_val {want} by "
                f"{how} ({which}): not used (which one this cell timed is unknown)"
            )
            continue
        found.append((loaded, hits, how, want))
    if len(found) > 1:
        notes.append(
            "ambiguous: " + " and ".join(f.path for f, *_ in found) + f" both have {cell.backend} kernels matching "
            f"{cell.input_label}: none used (give one --workload for this op)"
        )
        return None, notes
    if not found:
        return None, notes
    loaded, hits, how, want = found[0]
    most = max(i.count for _, i, _, _ in hits)
    timed = [h for h in hits if most <= 1 or h[1].count > 1]
    left_out = [
        f"{k.id} {k.function} (input {i.id}): launched once while the pass's kernels ran up to {most} times: "
        "TritonBench's setup (e.g. the forward that builds the graph of a bwd run), not the timed pass"
        for k, i, _, _ in hits
        if not any(h[0] is k and h[1] is i for h in timed)
    ]
    numbers = {
        (e.kernel, e.input): e.id
        for e, _ in workload_entries(
            loaded.workload, kernels=[k.id for k, *_ in timed], inputs=[i.label for _, i, _, _ in timed]
        )
    }
    found_kernels = [_recorded_kernel(k, i, numbers[(k.id, i.id)]) for k, i, _, _ in timed]
    what = ", ".join(f"{name} {_shape(s)}" for _, _, name, s in timed)
    word = "shape" if how == "shape" else "element count"
    rule = (
        f"matched by {word}: {what} {'=' if how == 'shape' else 'has as many elements as'} x_val {want}"
        f"{' flattened' if how != 'shape' else ''} (recorded: {loaded.path}, {', '.join(sorted({k.package or '?' for k, *_ in timed}))})"
    )
    return RecordedMatch(loaded.path, loaded.name, rule, found_kernels, left_out), notes


def _own_entry(cell: CellTriage, workloads: Sequence[Loaded]) -> tuple[RecordedMatch | None, list[str]]:
    """A cell of a recorded bench (``ktriage bench W.json``) names its kernels itself: its op is the
    workload's name, its input id the entry number, its backend ``K3:function``. The ``--workload``
    of that name gives them, by number: no shape to match."""
    from ktriage.workload.recorded.bundle import workload_entries

    loaded = next((w for w in workloads if w.name == cell.op), None)
    if loaded is None:
        names = ", ".join(w.name for w in workloads) or "none given"
        return None, [
            worded(
                lambda o: (
                    f"a cell of the recorded bench {cell.op}: its kernels are in that workload's file "
                    f"({o('workloads', '--workload', [f'{cell.op}.workload.json'])}; given: {names})"
                )
            )
        ]
    kernel_id = cell.backend.split(":", 1)[0]
    entry = next(
        (e for e, _ in workload_entries(loaded.workload) if e.id == cell.input_id and e.kernel == kernel_id), None
    )
    if entry is None:
        return None, [
            f"workload {loaded.path} has no entry {cell.input_id} of {cell.backend}: not the file this bench "
            "recorded from (a re-recording numbers its entries anew)"
        ]
    k = next(k for k in loaded.workload.kernels if k.id == entry.kernel)
    i = next(i for i in k.inputs if i.id == entry.input)
    rule = (
        f"the recorded bench's own entry {entry.id}: {k.id} input {i.id} (recorded: {loaded.path}, {k.package or '?'})"
    )
    return RecordedMatch(loaded.path, loaded.name, rule, [_recorded_kernel(k, i, entry.id)]), []


def _recorded_kernel(k: Kernel, i: Input, entry: int) -> RecordedKernel:
    """A recorded (kernel, input) as a triage cell names it; ``entry``: its number in a recorded bundle."""
    return RecordedKernel(
        k.id, k.function, i.id, i.label, i.count, k.original_module, k.package, i.spec.name, i.spec.key(), entry
    )


def describe(match: RecordedMatch) -> str:
    """One note line: which recorded kernels stand for the cell."""
    names = "; ".join(f"{k.kernel} {k.function} ({plural(k.launches, 'launch', 'launches')})" for k in match.kernels)
    return f"its kernels from the recorded workload {match.name}: {names}; {match.rule}"
