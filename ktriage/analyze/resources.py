"""Resources of one compiled kernel: registers, stack, spills, shared memory, SASS and PTX counts.

Why: most Triton regressions across compiler versions are resource regressions (more registers,
spills, an opcode that changed). `Resources` gathers every number `explain` compares, each from
the source that is authoritative for it, without a GPU:

- cubin via cuobjdump: registers, stack frame, static shared memory, barriers, SASS (opcode
  histograms, memory/tensor-core/sync instructions with their modifiers, loops and the main loop);
- the ptxas `-v` log: spill store/load bytes (nothing else records them); None when no log;
- the PTX: declared virtual registers (NOT register usage) and PTX instruction count;
- Triton's metadata: the dynamic shared memory the launch requests.

See docs/resources.md for each field and its pitfalls.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ktriage.analyze.cuobjdump import (
    disassemble,
    parse_elf_flags,
    parse_resource_usage,
    run_cuobjdump,
)
from ktriage.analyze.lines import LineStats, listing_line_stats
from ktriage.analyze.ptxas_log import PtxasFunctionInfo, parse_ptxas_log
from ktriage.analyze.sass import parse_sass
from ktriage.analyze.sass_loops import SassLoop, find_loops
from ktriage.analyze.shared_banks import bank_summary, shared_accesses
from ktriage.arch import parse_arch
from ktriage.errors import CompileError, FormatError, SpecError
from ktriage.ptx import parse_ptx
from ktriage.schema.jsontypes import JSONObject

# 2: sass_classes and sass_loops; 3: source_lines; 4: their opcodes; 5: the loops' load_waits. Cached resources of
# another schema are recomputed (artifact.py).
SCHEMA_VERSION = 7  # 6: shared_wavefronts; 7: their predicated accesses rated


@dataclass(frozen=True)
class Resources:
    """What one kernel needs per thread and per block, plus its SASS/PTX fingerprints.

    Unknown values are None, never guessed (spill bytes without a ptxas log, PTX counts without PTX).
    """

    kernel_name: str
    arch: str | None
    registers: int  # allocated per thread (cubin REG) = CU_FUNC_ATTRIBUTE_NUM_REGS
    stack_bytes: int  # per-thread stack frame (cubin STACK) = CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES
    spill_store_bytes: int | None  # ptxas log only
    spill_load_bytes: int | None  # ptxas log only
    shared_bytes: int  # per block, excluding the driver's reserved 1 KB: static + dynamic
    shared_static_bytes: int  # static shared as the driver counts it (cubin SHARED minus reservation)
    shared_dynamic_bytes: int | None  # Triton's metadata `shared`, requested at launch
    local_loads: int  # LDL instructions (spill reloads or local-array reads)
    local_stores: int  # STL instructions
    sass_opcodes: dict[str, int] = field(default_factory=dict)  # base opcode -> count
    sass_opcodes_detailed: dict[str, int] = field(default_factory=dict)  # opcode with modifiers
    sass_instructions: int = 0  # without the tail padding (see sass.py)
    ptx_registers: dict[str, int] = field(default_factory=dict)  # declared virtual regs per class
    ptx_registers_total: int | None = None
    ptx_instructions: int | None = None
    barriers: int | None = None  # named barriers (cubin ELF flags; ptxas >= 12.8 log)
    cumulative_stack_bytes: int | None = None  # ptxas log: stack incl. callees
    # memory/atomic/shared/local/tensor/sync class -> full opcode (modifiers kept) -> count (sass.py)
    sass_classes: dict[str, dict[str, int]] = field(default_factory=dict)
    sass_loops: tuple[SassLoop, ...] = ()  # natural loops, the main loop first (sass_loops.py)
    # per source line: instructions, LDL/STL, memory classes, main-loop share (analyze/lines.py);
    # empty when the listing had no line info (cuobjdump -sass)
    source_lines: tuple[LineStats, ...] = ()
    # shared-memory bank conflicts read from the SASS addresses (analyze/shared_banks.py): per LDS/STS
    # the mean wavefronts over ideal, and how many accesses could not be rated
    shared_wavefronts: dict[str, float] = field(default_factory=dict)

    @property
    def main_loop(self) -> SassLoop | None:
        """The loop the kernel most likely spends its iterations in (rule: sass_loops.py), if any."""
        return self.sass_loops[0] if self.sass_loops and self.sass_loops[0].main else None

    @property
    def has_spills(self) -> bool | None:
        """True/False from the ptxas log; None when spill bytes are unknown."""
        if self.spill_store_bytes is None or self.spill_load_bytes is None:
            return None
        return self.spill_store_bytes > 0 or self.spill_load_bytes > 0

    @property
    def triton_n_spills(self) -> int:
        """What Triton's `CompiledKernel.n_spills` reports: stack bytes / 4 (not a spill count)."""
        return self.stack_bytes // 4

    def to_json(self, *, source_lines: bool = True) -> JSONObject:
        """A JSON-ready dict (stable keys, `schema` for forward compatibility). ``source_lines=False``
        leaves the per-line map out: explain's report carries it per comparison, as the line diff, and
        building the 60 kernels' whole maps only to drop them was a tenth of a warm explain."""
        # what dataclasses.asdict gives, without its per-value deepcopy (a third of a warm explain
        # went into asdict for the 60 cells' reports); the fields are plain values and dicts of them
        data: dict[str, Any] = {}
        for name in _RESOURCES_FIELDS:  # in field order, as asdict has them
            if name == "sass_loops":
                data[name] = [loop.to_json() for loop in self.sass_loops]
            elif name == "source_lines":
                if source_lines:
                    data[name] = [line.to_json() for line in self.source_lines]
            else:
                data[name] = _plain_copy(getattr(self, name))
        return {"schema": SCHEMA_VERSION, **data}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | str) -> Resources:
        """Inverse of `to_json`; accepts the dict or its JSON text."""
        obj = json.loads(data) if isinstance(data, str) else dict(data)
        schema = obj.pop("schema", SCHEMA_VERSION)
        if schema != SCHEMA_VERSION:
            raise FormatError(
                f"resources were saved with schema {schema}, this ktriage reads {SCHEMA_VERSION}",
                "recompute them (they are derived from the cached artifact)",
            )
        known = {f.name for f in fields(cls)}
        obj["sass_loops"] = tuple(SassLoop.from_json(loop) for loop in obj.get("sass_loops", ()))
        obj["source_lines"] = tuple(LineStats.from_json(line) for line in obj.get("source_lines", ()))
        return cls(**{k: v for k, v in obj.items() if k in known})


_RESOURCES_FIELDS = tuple(f.name for f in fields(Resources))  # dataclasses.fields rebuilds it at every call


def _plain_copy(value: Any) -> Any:
    """A copy of a JSON-like value (dicts, lists, tuples of plain values), as ``asdict`` would make it."""
    if isinstance(value, dict):
        return {k: _plain_copy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain_copy(v) for v in value)
    return value


def driver_static_shared(cubin_shared: int, arch: str | None) -> int:
    """cuobjdump's SHARED minus the per-block reservation that sm_90+ cubins include
    (``Arch.cubin_shared_includes_reservation``)."""
    try:
        a = parse_arch(arch) if arch else None
    except SpecError:
        a = None
    if a is not None and a.cubin_shared_includes_reservation and cubin_shared >= a.reserved_shared_per_block:
        return cubin_shared - a.reserved_shared_per_block
    return cubin_shared


def _check_log_matches(info: PtxasFunctionInfo, registers: int, stack: int, name: str) -> None:
    if (info.registers is not None and info.registers != registers) or (
        info.stack_frame_bytes is not None and info.stack_frame_bytes != stack
    ):
        raise CompileError(
            f"the ptxas log says {name} uses {info.registers} registers and "
            f"{info.stack_frame_bytes} bytes of stack, but the cubin has {registers} and {stack}",
            "pass the log of the ptxas run that produced this cubin (same PTX, ptxas and options)",
        )


def analyze(
    cubin: Path,
    *,
    cuobjdump: Path,
    ptxas_log: str | None,
    ptx: str | None,
    kernel_name: str,
    triton_shared: int | None,
    nvdisasm: Path | None = None,
) -> Resources:
    """Measure one kernel's resources from its cubin (running the real cuobjdump) and side inputs.

    The SASS comes from ``nvdisasm -c -ndf`` when the toolchain has nvdisasm: ``cuobjdump -sass``
    runs the same disassembler with its dataflow analysis on (about 0.5 s a cubin against 0.33 s),
    which nothing here reads, and the disassembly is the largest cost of a cold explain. Both
    listings parse to the same instructions (checked on every cached cubin: tests/analyze)."""
    usage_all = parse_resource_usage(run_cuobjdump(cuobjdump, cubin, "--dump-resource-usage"))
    if kernel_name not in usage_all:
        have = ", ".join(usage_all) or "none"
        raise CompileError(
            f"{cubin} has no function named {kernel_name!r} (functions: {have})",
            "pass the kernel name exactly as Triton compiled it (metadata `name`)",
        )
    usage = usage_all[kernel_name]
    listing = disassemble(cubin, cuobjdump=cuobjdump, nvdisasm=nvdisasm)
    sass_fn = parse_sass(listing)[kernel_name]
    elf = parse_elf_flags(run_cuobjdump(cuobjdump, cubin, "-elf")).get(kernel_name)

    info: PtxasFunctionInfo | None = None
    if ptxas_log is not None:
        info = parse_ptxas_log(ptxas_log).function(kernel_name)
        _check_log_matches(info, usage.registers, usage.stack_bytes, kernel_name)

    static_shared = driver_static_shared(usage.shared_bytes, sass_fn.arch)
    ptx_fn = parse_ptx(ptx).function(kernel_name) if ptx is not None else None
    barriers = elf.barriers if elf is not None else (info.barriers if info else None)
    loops = tuple(find_loops(sass_fn))
    main = loops[0] if loops and loops[0].main else None
    return Resources(
        kernel_name=kernel_name,
        arch=sass_fn.arch,
        registers=usage.registers,
        stack_bytes=usage.stack_bytes,
        spill_store_bytes=info.spill_store_bytes if info else None,
        spill_load_bytes=info.spill_load_bytes if info else None,
        shared_bytes=static_shared + (triton_shared or 0),
        shared_static_bytes=static_shared,
        shared_dynamic_bytes=triton_shared,
        local_loads=sass_fn.local_loads,
        local_stores=sass_fn.local_stores,
        sass_opcodes=sass_fn.opcode_histogram(),
        sass_opcodes_detailed=sass_fn.opcode_histogram(with_modifiers=True),
        sass_instructions=sass_fn.instruction_count,
        ptx_registers=dict(ptx_fn.registers) if ptx_fn else {},
        ptx_registers_total=ptx_fn.registers_total if ptx_fn else None,
        ptx_instructions=ptx_fn.instructions if ptx_fn else None,
        barriers=barriers,
        cumulative_stack_bytes=info.cumulative_stack_bytes if info else None,
        sass_classes=sass_fn.class_histogram(),
        sass_loops=loops,
        source_lines=listing_line_stats(listing, sass_fn, main.body if main is not None else frozenset()),
        shared_wavefronts=bank_summary(shared_accesses(sass_fn)),
    )
