"""What the base-opcode comparison hides: modifier-level instruction changes and the main loop.

Why: `explain` reports `LDG +0` when two `LDG.E.128` became... two `LDG.E.128.CONSTANT`, and says
nothing when the main loop grew by 36 instructions while the kernel's totals barely moved. This
module compares, for one reference/new pair, (1) per instruction class (global, atomic, shared,
local, tensor, sync: `ktriage.analyze.sass.INSTRUCTION_CLASSES`) the counts per full opcode, and
(2) the main loops (`ktriage.analyze.sass_loops`), each with who is responsible (the cross matrix,
as for the other metrics).

Attribution of a class change: a class is a histogram, not one number, so each swap cell is
scored by how much of the way from the reference histogram to the new one it goes:
`1 - L1(swap, new) / L1(ref, new)` (1 = the swap already has the new histogram, 0 = it still has
the reference one). Those shares go through `attribution.attribute` like any metric (cells
`ref=0, new=1`), so "reproduces" means the same 80% as everywhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ktriage.analyze.resources import Resources
from ktriage.analyze.sass import INSTRUCTION_CLASSES
from ktriage.analyze.sass_loops import SassLoop
from ktriage.explain.attribution import Attribution, CrossCells, attribute
from ktriage.schema.jsontypes import JSONObject

CLASS_TITLES = {
    "global": "global memory",
    "atomic": "atomic",
    "shared": "shared memory",
    "local": "local memory",
    "tensor": "tensor-core",
    "sync": "synchronization",
}
# A main loop moving by one instruction is scheduling noise; two or more is worth a finding. Same
# for a class: one instruction more or less is noise, a swap (-1/+1) or more is a finding.
LOOP_MIN_DELTA = 2
OPCODE_MIN_CLASS_DELTA = 2
LOOP_OPCODES_SHOWN = 4


def _sorted_delta(ref: dict[str, int], new: dict[str, int]) -> list[tuple[str, int]]:
    """Non-zero changes per key, largest |delta| first, then by name (deterministic)."""
    delta = {k: new.get(k, 0) - ref.get(k, 0) for k in set(ref) | set(new)}
    return sorted(((k, d) for k, d in delta.items() if d), key=lambda kv: (-abs(kv[1]), kv[0]))


def _l1(a: dict[str, int], b: dict[str, int]) -> int:
    return sum(abs(a.get(k, 0) - b.get(k, 0)) for k in set(a) | set(b))


@dataclass(frozen=True)
class ClassChange:
    """One instruction class whose full-opcode counts differ: e.g. REDG.E.ADD... -> ATOMG.E.ADD...."""

    name: str  # class key of INSTRUCTION_CLASSES
    ref: dict[str, int]  # full opcode -> count, reference
    new: dict[str, int]
    delta: list[tuple[str, int]]  # non-zero, largest |delta| first
    attribution: Attribution
    cells: CrossCells  # shares of the change the swaps reproduce (module docstring)

    @property
    def size(self) -> int:
        """Instructions that changed (sum of |delta|)."""
        return sum(abs(d) for _, d in self.delta)

    def text(self, limit: int | None = None) -> str:
        """`LDG.E.128 -32 -> LDG.E.64 +64`: what went, then what came, each largest first."""
        shown = self.delta if limit is None else self.delta[:limit]
        gone = ", ".join(f"{op} {d:+d}" for op, d in shown if d < 0)
        came = ", ".join(f"{op} {d:+d}" for op, d in shown if d > 0)
        text = f"{gone} -> {came}" if gone and came else gone or came
        if limit is not None and len(self.delta) > limit:
            text += f" (+{len(self.delta) - limit} more)"
        return text

    def to_json(self) -> JSONObject:
        return {
            "class": self.name,
            "attribution": self.attribution,
            "text": self.text(),
            "opcodes": [
                {"opcode": op, "ref": self.ref.get(op, 0), "new": self.new.get(op, 0), "delta": d}
                for op, d in self.delta
            ],
            "reproduced": {
                "new_ptx_ref_ptxas": self.cells.new_ptx_ref_ptxas,
                "ref_ptx_new_ptxas": self.cells.ref_ptx_new_ptxas,
            },
        }


@dataclass(frozen=True)
class LoopChange:
    """The main loop of the reference vs that of the new kernel (either may have none)."""

    ref: SassLoop | None
    new: SassLoop | None
    ref_loops: int  # how many loops each kernel has
    new_loops: int
    attribution: Attribution
    cells: CrossCells  # main-loop instruction counts over the cross matrix (0 = no loop)

    @property
    def delta(self) -> int:
        return int(self.cells.new - self.cells.ref)

    @property
    def changed(self) -> bool:
        """Worth reporting: the main loop moved by LOOP_MIN_DELTA or more, or appeared/vanished."""
        return abs(self.delta) >= LOOP_MIN_DELTA or (self.ref is None) != (self.new is None)

    def opcode_delta(self) -> list[tuple[str, int]]:
        return _sorted_delta(self.ref.opcodes if self.ref else {}, self.new.opcodes if self.new else {})

    def text(self) -> str:
        """`main loop 212 -> 248 instructions (+36): LDL +8, STL +6`."""
        a = "no loop" if self.ref is None else str(self.ref.instructions)
        b = "no loop" if self.new is None else str(self.new.instructions)
        head = f"main loop {a} -> {b} instructions ({self.delta:+d})"
        ops = self.opcode_delta()[:LOOP_OPCODES_SHOWN]
        text = head + (": " + ", ".join(f"{op} {d:+d}" for op, d in ops) if ops else "")
        if self.ref_loops != self.new_loops:
            text += f"; loops {self.ref_loops} -> {self.new_loops}"
        return text

    def to_json(self) -> JSONObject:
        return {
            "ref": None if self.ref is None else self.ref.to_json(),
            "new": None if self.new is None else self.new.to_json(),
            "loops": {"ref": self.ref_loops, "new": self.new_loops},
            "instructions_delta": self.delta,
            "changed": self.changed,
            "attribution": self.attribution,
            "cross": {
                "new_ptx_ref_ptxas": self.cells.new_ptx_ref_ptxas,
                "ref_ptx_new_ptxas": self.cells.ref_ptx_new_ptxas,
            },
            "opcode_delta": [{"opcode": op, "delta": d} for op, d in self.opcode_delta()],
            "text": self.text(),
        }


@dataclass(frozen=True)
class SassDetail:
    """Everything of this module for one comparison; `classes` largest change first."""

    classes: list[ClassChange] = field(default_factory=list)
    main_loop: LoopChange | None = None  # None when neither kernel has a loop

    def to_json(self) -> JSONObject:
        return {
            "instruction_changes": [c.to_json() for c in self.classes],
            "main_loop": None if self.main_loop is None else self.main_loop.to_json(),
        }


def _main_count(res: Resources | None) -> float | None:
    if res is None:
        return None
    loop = res.main_loop
    return float(loop.instructions) if loop else 0.0


def compare_sass_detail(
    ref: Resources, new: Resources, swap_front: Resources | None, swap_asm: Resources | None
) -> SassDetail:
    """Compare ``ref`` with ``new``; the swaps (new PTX + ref ptxas, ref PTX + new ptxas) attribute
    each change and are None when they could not be assembled."""
    classes: list[ClassChange] = []
    for name in INSTRUCTION_CLASSES:
        a, b = ref.sass_classes.get(name, {}), new.sass_classes.get(name, {})
        delta = _sorted_delta(a, b)
        if not delta:
            continue
        total = float(_l1(a, b))

        def share(swap: Resources | None) -> float | None:
            return None if swap is None else 1.0 - _l1(swap.sass_classes.get(name, {}), b) / total  # noqa: B023

        cells = CrossCells(0.0, 1.0, share(swap_front), share(swap_asm))
        classes.append(ClassChange(name, dict(a), dict(b), delta, attribute(cells), cells))
    classes.sort(key=lambda c: (-c.size, c.name))
    main_loop = None
    if ref.sass_loops or new.sass_loops:
        cells = CrossCells(
            _main_count(ref) or 0.0, _main_count(new) or 0.0, _main_count(swap_front), _main_count(swap_asm)
        )
        main_loop = LoopChange(
            ref.main_loop,
            new.main_loop,
            len(ref.sass_loops),
            len(new.sass_loops),
            attribute(cells, abs_tol=LOOP_MIN_DELTA - 1),
            cells,
        )
    return SassDetail(classes, main_loop)
