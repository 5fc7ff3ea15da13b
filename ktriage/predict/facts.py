"""What the cost model reads about one compiled kernel and its launch: ``KernelFacts``.

Why a type of its own: the model must run in three places from the same numbers, (1) inside
``explain`` from the ``Resources``/``Occupancy`` it has just computed, (2) in the calibration fit
from a committed dataset without compiling anything, and (3) from an explain JSON report. So the
facts are a small plain record, built from either source, serialised into the calibration cells
(``benchmarks/calibration/cells.jsonl``), and the model's features are computed from them at fit
time: a new feature needs no new compile of the corpus.

Everything here is exact compile-side data (registers, spills, SASS opcode counts with their
modifiers, the main loop's body, occupancy) plus the launch (grid, warps). No GPU facts: those
live in ``ktriage.arch`` and the model.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ktriage.analyze.occupancy import Occupancy
from ktriage.analyze.resources import Resources
from ktriage.insitu.launch_hook import SMALL_INT_TENSOR
from ktriage.ops import registry
from ktriage.schema.jsontypes import JSONObject
from ktriage.spec.model import KernelSpec
from ktriage.spec.sms import SM_COUNT, priced_sm_count

FACTS_VERSION = 1


@dataclass(frozen=True)
class LoopFacts:
    """One loop's static body: instruction count, base-opcode histogram, nesting, and how many times
    an iteration waits on its own global loads (``analyze.sass_loops.SassLoop.load_waits``: its dependent
    round trips to memory; None when the source did not count them, e.g. an explain report of an older
    ktriage: the model then assumes one round trip an iteration)."""

    instructions: int
    opcodes: dict[str, int]
    depth: int = 1
    innermost: bool = True
    load_waits: int | None = None

    def to_json(self) -> JSONObject:
        return {
            "instructions": self.instructions,
            "opcodes": dict(sorted(self.opcodes.items())),
            "depth": self.depth,
            "innermost": self.innermost,
            # only when counted: facts (and digests) built from older reports stay as they were
            **({"load_waits": self.load_waits} if self.load_waits is not None else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LoopFacts:
        return cls(
            int(data["instructions"]),
            {str(k): int(v) for k, v in dict(data.get("opcodes", {})).items()},
            int(data.get("depth", 1)),
            bool(data.get("innermost", True)),
            None if data.get("load_waits") is None else int(data["load_waits"]),
        )


@dataclass(frozen=True)
class KernelFacts:
    """One kernel compiled by one toolchain, at one launch (see the module docstring).

    ``opcodes`` holds the full opcodes with their modifiers (``LDG.E.128``, ``ATOMG.E.ADD.F32...``,
    ``CCTL.IVALL``); ``main_loop`` the loop ``analyze.sass_loops`` picks as the main one (None
    when the kernel has no loop); ``other_loops`` the rest. ``grid_ctas`` is None when the launch's
    grid is unknown (a spec without a grid: the model then assumes one full wave)."""

    kernel: str
    target: str
    registers: int
    spill_store_bytes: int
    spill_load_bytes: int
    stack_bytes: int
    shared_bytes: int
    instructions: int
    opcodes: dict[str, int]
    num_warps: int
    ctas_per_sm: int
    warps_per_sm: int
    grid_ctas: int | None
    sm_count: int
    main_loop: LoopFacts | None = None
    other_loops: tuple[LoopFacts, ...] = ()
    constexprs: dict[str, Any] = field(default_factory=dict)
    # bytes of the launch's largest tensor argument (a recorded launch names its shapes): what the main
    # loop streams through, for its trip count (None: unknown, the model's fitted trip count applies)
    data_bytes: int | None = None
    # every index of the launch is the same value: a recorded launch's integer tensor of more than
    # SMALL_INT_TENSOR elements is replayed as zeros (ktriage.workload.recorded.args), so a kernel that
    # scatters by those indices sends all its atomics to the same addresses (the model's serialization term)
    uniform_indices: bool = False
    # bytes of all the launch's tensor arguments (a recorded launch names their shapes): what it can move to and
    # from DRAM at most; a CTA's static loads beyond its share re-read (masked lanes, a second pass over a row, a
    # weight row every CTA reads) and are served by L2 (None: unknown, a catalog launch)
    tensor_bytes: int | None = None
    # shared-memory bank conflicts from the SASS addresses (``analyze.shared_banks.bank_summary``): per
    # LDS/STS the mean wavefronts over ideal, and ``unrated`` accesses; empty: not read (older reports)
    shared_wavefronts: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> JSONObject:
        return {
            "version": FACTS_VERSION,
            "kernel": self.kernel,
            "target": self.target,
            "registers": self.registers,
            "spill_store_bytes": self.spill_store_bytes,
            "spill_load_bytes": self.spill_load_bytes,
            "stack_bytes": self.stack_bytes,
            "shared_bytes": self.shared_bytes,
            "instructions": self.instructions,
            "opcodes": dict(sorted(self.opcodes.items())),
            "num_warps": self.num_warps,
            "ctas_per_sm": self.ctas_per_sm,
            "warps_per_sm": self.warps_per_sm,
            "grid_ctas": self.grid_ctas,
            "sm_count": self.sm_count,
            "main_loop": self.main_loop.to_json() if self.main_loop else None,
            "other_loops": [loop.to_json() for loop in self.other_loops],
            "constexprs": {k: v for k, v in self.constexprs.items() if isinstance(v, (int, float, str, bool))},
            "data_bytes": self.data_bytes,
            # only when set: the facts (and digests) of every other launch stay as they were
            **({"uniform_indices": True} if self.uniform_indices else {}),
            **({"tensor_bytes": self.tensor_bytes} if self.tensor_bytes is not None else {}),
            **({"shared_wavefronts": dict(sorted(self.shared_wavefronts.items()))} if self.shared_wavefronts else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> KernelFacts:
        loop = data.get("main_loop")
        return cls(
            kernel=str(data["kernel"]),
            target=str(data["target"]),
            registers=int(data["registers"]),
            spill_store_bytes=int(data["spill_store_bytes"]),
            spill_load_bytes=int(data["spill_load_bytes"]),
            stack_bytes=int(data["stack_bytes"]),
            shared_bytes=int(data["shared_bytes"]),
            instructions=int(data["instructions"]),
            opcodes={str(k): int(v) for k, v in dict(data["opcodes"]).items()},
            num_warps=int(data["num_warps"]),
            ctas_per_sm=int(data["ctas_per_sm"]),
            warps_per_sm=int(data["warps_per_sm"]),
            grid_ctas=None if data.get("grid_ctas") is None else int(data["grid_ctas"]),
            sm_count=int(data["sm_count"]),
            main_loop=LoopFacts.from_json(loop) if loop else None,
            other_loops=tuple(LoopFacts.from_json(x) for x in data.get("other_loops", ())),
            constexprs=dict(data.get("constexprs", {})),
            data_bytes=None if data.get("data_bytes") is None else int(data["data_bytes"]),
            uniform_indices=bool(data.get("uniform_indices", False)),
            tensor_bytes=None if data.get("tensor_bytes") is None else int(data["tensor_bytes"]),
            shared_wavefronts=_wavefronts(data.get("shared_wavefronts")),
        )

    def digest(self) -> str:
        """Equal digests: the model sees the two kernels as the same (the prediction is exactly 1)."""
        data = self.to_json()
        data.pop("constexprs")
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def _mapping(data: object) -> Mapping[str, Any] | None:
    return data if isinstance(data, Mapping) else None


def _wavefronts(data: object) -> dict[str, float]:
    return {str(k): float(v) for k, v in data.items()} if isinstance(data, Mapping) else {}


def _grid(grid: object) -> int | None:
    if not isinstance(grid, (list, tuple)) or not grid:
        return None
    try:
        dims = [int(g) for g in grid]
    except (TypeError, ValueError):
        return None
    return max(1, math.prod(dims))


_ELT_BYTES = {
    "fp64": 8,
    "i64": 8,
    "u64": 8,
    "fp32": 4,
    "i32": 4,
    "u32": 4,
    "tf32": 4,
    "fp16": 2,
    "bf16": 2,
    "i16": 2,
    "u16": 2,
    "fp8": 1,
    "i8": 1,
    "u8": 1,
    "i1": 1,
}


def data_bytes(
    signature: Mapping[str, str], meta: Mapping[str, Any], launch: Mapping[str, Any] | None = None
) -> int | None:
    """The largest tensor argument in bytes: a recorded launch's from its label (``X_ptr=16384x4096,...``:
    shapes of the pointer arguments) and the signature's element types; a spec written by values from its
    tensors' shapes (``launch``: :func:`launch_tensor_sizes`); a catalog op's launch from its operator's
    ``largest_tensor`` at the input's shape (``meta``: op, mode, shape, dtype). None when none names it
    (the model's fitted trip count applies)."""
    return _largest(_sizes(signature, meta, launch), meta)


def _largest(sizes: list[int] | None, meta: Mapping[str, Any]) -> int | None:
    """:func:`data_bytes` of the tensors' sizes :func:`_sizes` read (None: the catalog op's, from ``meta``)."""
    if sizes is None:
        return _catalog_data_bytes(meta)
    return max(sizes, default=0) or None


def tensor_bytes(
    signature: Mapping[str, str], meta: Mapping[str, Any], launch: Mapping[str, Any] | None = None
) -> int | None:
    """All tensor arguments' bytes of a recorded launch (from its label and the signature's element types) or
    of a spec written by values (its tensors' shapes); a tensor passed twice counts twice: an upper bound of
    its DRAM traffic. None for a catalog launch: its operators name their largest tensor only."""
    return _total(_sizes(signature, meta, launch))


def _total(sizes: list[int] | None) -> int | None:
    return None if sizes is None else sum(sizes) or None


def _sizes(signature: Mapping[str, str], meta: Mapping[str, Any], launch: Mapping[str, Any] | None) -> list[int] | None:
    """Each tensor argument's bytes where the launch names them: a recorded launch's label first (what the
    calibration was fitted on), else a by-value spec's shapes: ``launch``, or the one a compile keeps in the
    artifact's spec (``meta["launch"]``: the JIT's spec replaces the by-value one); None when neither does."""
    label = meta.get("input_label")
    if isinstance(label, str) and meta.get("recorded"):
        return _tensor_sizes(signature, label)
    kept = meta.get("launch")
    return launch_tensor_sizes(launch if launch is not None else kept if isinstance(kept, Mapping) else None)


def launch_tensor_sizes(launch: Mapping[str, Any] | None) -> list[int] | None:
    """Bytes of each tensor argument of a spec written by values (``KernelSpec.launch``: ``{"args": [[name,
    {"tensor": "fp16", "shape": [2048, 4097], ...}], ...]}``, docs/specs.md), shape x element size; a host-side
    tensor descriptor (``{"descriptor": "fp16", "shape": ..}``) counts as the tensor it describes. None when
    the spec is not by values, has no tensor, or any tensor has no shape: a size from some of the tensors
    would under-count the data and price a loop as shorter than it runs. An empty shape is a 0-d tensor (a
    scalar on the device, ``shape = []``): one element, a known size (it read as "no shape", so a spec with
    one was priced with the fixed trip count)."""
    args = (launch or {}).get("args")
    if not isinstance(args, list):
        return None
    sizes: list[int] = []
    for item in args:
        value = item[1] if isinstance(item, (list, tuple)) and len(item) == 2 else None
        if not isinstance(value, Mapping):
            continue
        # a tensor, or a host-side tensor descriptor ({"descriptor": "fp16", "shape": ..}): counted as its tensor
        dtype = value.get("tensor", value.get("descriptor"))
        if dtype is None:
            continue
        shape = value.get("shape")
        if not isinstance(shape, (list, tuple)):
            return None
        try:
            count = math.prod(int(d) for d in shape)
        except (TypeError, ValueError):
            return None
        sizes.append(count * element_bytes(str(dtype)))
    return sizes or None


def _tensor_sizes(signature: Mapping[str, str], label: str) -> list[int]:
    """Bytes of each pointer or host-side tensor descriptor argument the label gives a shape
    (``X_ptr=16384x4096,...``; a descriptor's is the shape it was made with)."""
    sizes = []
    for part in label.split(","):
        name, _, dims = part.partition("=")
        dtype = _element_type(str(signature.get(name.strip(), "")))
        if dtype is None or not dims:
            continue
        try:
            count = math.prod(int(d) for d in dims.split("x"))
        except ValueError:
            continue
        sizes.append(count * element_bytes(dtype))
    return sizes


def _element_type(ty: str) -> str | None:
    """The element type of a signature's tensor argument: a pointer's (``*bf16``) or a host-side tensor
    descriptor's (``tensordesc<fp16[64, 32]>``, Triton 3.4+: a TMA kernel's only view of its big tensors,
    so without it such a kernel had no data size); None for any other argument."""
    if ty.startswith("*"):
        return ty[1:]
    if ty.startswith("tensordesc<"):
        return ty[len("tensordesc<") :].partition("[")[0]
    return None


def element_bytes(dtype: str) -> int:
    """Bytes per element of a Triton dtype name (``fp16``, ``fp8e4nv``, ``i32``), by prefix; 4 when unknown.
    The one table of the cost model (configs.dtype_bytes reads torch names through it too)."""
    return next((size for prefix, size in _ELT_BYTES.items() if dtype.startswith(prefix)), 4)


def _catalog_data_bytes(meta: Mapping[str, Any]) -> int | None:
    """A catalog launch's largest tensor: its spec names the operator, the mode and the input's shape
    (``ktriage.ops``' recipes), and the operator knows which of its tensors is largest."""
    op, mode, shape, dtype = meta.get("op"), meta.get("mode"), meta.get("shape"), meta.get("dtype")
    if not isinstance(op, str) or not isinstance(mode, str) or not isinstance(shape, Mapping):
        return None
    operator = registry.operator(op)
    if operator is None or operator.largest_tensor is None:
        return None
    try:
        size = operator.largest_tensor({str(k): int(v) for k, v in shape.items()}, mode, element_bytes(str(dtype)))
    except (KeyError, TypeError, ValueError):
        return None
    return size if size > 0 else None


_INDEX_TYPES = {"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"}  # integer tensors (i1: coin flips, not zeros)


def uniform_indices(signature: Mapping[str, str], meta: Mapping[str, Any]) -> bool:
    """True when the launch is a recorded replay with an integer tensor argument of more than
    ``SMALL_INT_TENSOR`` elements: the recording keeps no values for it and the replay fills it with
    zeros (``ktriage.workload.recorded.args``), so every index the kernel reads is 0. A catalog op's
    launch (random indices), small recorded index tensors (their real values) and large ones recorded
    with a value sample (``meta["sampled_ints"]``: replayed from real values) are False."""
    label = meta.get("input_label")
    if not isinstance(label, str) or not meta.get("recorded"):
        return False
    sampled = meta.get("sampled_ints")  # recorded with a value sample: replayed from it, not zeros
    sampled_names = {str(n) for n in sampled} if isinstance(sampled, list) else set()
    for part in label.split(","):
        name, _, dims = part.partition("=")
        ty = str(signature.get(name.strip(), ""))
        if ty[1:] not in _INDEX_TYPES or not dims or name.strip() in sampled_names:
            continue
        try:
            count = math.prod(int(d) for d in dims.split("x"))
        except ValueError:
            continue
        if count > SMALL_INT_TENSOR:
            return True
    return False


class LaunchInputs(NamedTuple):
    """What the model reads from a launch besides its grid and warps (:func:`launch_inputs`): the
    ``KernelFacts`` fields of the same names."""

    data_bytes: int | None
    uniform_indices: bool
    tensor_bytes: int | None


def launch_inputs(
    signature: Mapping[str, str], meta: Mapping[str, Any], launch: Mapping[str, Any] | None = None
) -> LaunchInputs:
    """What the model reads from a launch besides its grid and warps: the data size, whether every
    index is one value, and all its tensors' bytes. Two inputs of a sweep that share a cubin and a grid
    still differ here (layer_norm N=4608 and N=5120 run one kernel on different rows), so a cache of
    predictions keys on it. ``launch``: a by-value spec's launch record (its tensors' shapes)."""
    sizes = _sizes(signature, meta, launch)  # once: a recorded label is parsed for both sizes
    return LaunchInputs(_largest(sizes, meta), uniform_indices(signature, meta), _total(sizes))


def spec_launch_inputs(spec: KernelSpec) -> LaunchInputs:
    """:func:`launch_inputs` of a spec: what :func:`facts_for_launch` gives the model about its data."""
    return launch_inputs(spec.signature, spec.meta, spec.launch)


def _loops(loops: Any) -> tuple[LoopFacts | None, tuple[LoopFacts, ...]]:
    main: LoopFacts | None = None
    others: list[LoopFacts] = []
    for loop in loops:
        data: Mapping[str, Any] = loop if isinstance(loop, Mapping) else loop.to_json()
        facts = LoopFacts.from_json(data)
        if data.get("main", False) and main is None:
            main = facts
        else:
            others.append(facts)
    return main, tuple(others)


def facts_from_resources(
    resources: Resources,
    occupancy: Occupancy,
    *,
    num_warps: int,
    grid: object,
    target: str,
    meta: Mapping[str, Any] | None = None,
    constexprs: Mapping[str, Any] | None = None,
    signature: Mapping[str, str] | None = None,
    launch: Mapping[str, Any] | None = None,
) -> KernelFacts:
    """The facts of a kernel just analyzed (no I/O: the resources are in memory); a spec's launch goes
    through :func:`facts_for_launch`."""
    main, others = _loops(resources.sass_loops)
    return KernelFacts(
        kernel=resources.kernel_name,
        target=target,
        registers=resources.registers,
        spill_store_bytes=resources.spill_store_bytes or 0,
        spill_load_bytes=resources.spill_load_bytes or 0,
        stack_bytes=resources.stack_bytes,
        shared_bytes=resources.shared_bytes,
        instructions=resources.sass_instructions,
        opcodes=dict(resources.sass_opcodes_detailed),
        num_warps=num_warps,
        ctas_per_sm=occupancy.ctas_per_sm,
        warps_per_sm=occupancy.warps_per_sm,
        grid_ctas=_grid(grid),
        sm_count=priced_sm_count(target, meta or {}),
        main_loop=main,
        other_loops=others,
        constexprs=dict(constexprs or {}),
        **launch_inputs(signature or {}, meta or {}, launch)._asdict(),
        shared_wavefronts=dict(resources.shared_wavefronts),
    )


def facts_for_launch(
    resources: Resources, occupancy: Occupancy, spec: KernelSpec, *, sm_count: int | None = None
) -> KernelFacts:
    """The facts of ``resources`` compiled from ``spec``, at ``spec``'s launch: its grid, num_warps,
    constexprs and the data its tensors hold (a recorded label, a by-value spec's shapes, a catalog op's
    shape), which set the main loop's trip count. The one builder of explain (each toolchain's compile of
    a spec) and tune (each config's spec), so that both price a launch alike: tune's screening built
    facts without the data, and a config's smaller loop step then looked like proportionally less work.
    ``sm_count``: a verb's ``--sm-count`` over the spec's own count."""
    meta = spec.meta if sm_count is None else {**spec.meta, SM_COUNT: sm_count}
    return facts_from_resources(
        resources,
        occupancy,
        num_warps=spec.num_warps,
        grid=spec.grid,
        target=spec.target,
        meta=meta,
        constexprs=spec.constexprs,
        signature=spec.signature,
        launch=spec.launch,
    )


def facts_from_explain_json(result: Mapping[str, Any], spec: Mapping[str, Any]) -> KernelFacts:
    """The facts of one cell of an explain JSON report (``kernels[i].results[toolchain]`` and
    ``kernels[i].spec``): what the calibration builder reads, so it needs no compile."""
    occ = result.get("occupancy") or {}
    main, others = _loops(result.get("sass_loops", ()))
    target = str(spec.get("target") or result.get("arch") or "sm_90")
    return KernelFacts(
        kernel=str(result["kernel_name"]),
        target=target,
        registers=int(result["registers"]),
        spill_store_bytes=int(result.get("spill_store_bytes") or 0),
        spill_load_bytes=int(result.get("spill_load_bytes") or 0),
        stack_bytes=int(result.get("stack_bytes") or 0),
        shared_bytes=int(result.get("shared_bytes") or 0),
        instructions=int(result.get("sass_instructions") or 0),
        opcodes={str(k): int(v) for k, v in dict(result.get("sass_opcodes_detailed") or {}).items()},
        num_warps=int(spec.get("num_warps") or occ.get("num_warps") or 4),
        ctas_per_sm=int(occ.get("ctas_per_sm", 1)),
        warps_per_sm=int(occ.get("warps_per_sm", 4)),
        grid_ctas=_grid(spec.get("grid")),
        sm_count=priced_sm_count(target, dict(spec.get("meta") or {})),
        main_loop=main,
        other_loops=others,
        constexprs=dict(spec.get("constexprs") or {}),
        **launch_inputs(
            dict(spec.get("signature") or {}), dict(spec.get("meta") or {}), _mapping(spec.get("launch"))
        )._asdict(),
        shared_wavefronts=_wavefronts(result.get("shared_wavefronts")),
    )
