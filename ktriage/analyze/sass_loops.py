"""Loops in a kernel's SASS: the instruction count of each loop body, and which loop is the main one.

Why: the opcode histogram counts code, not executed code. A K loop that grows from 212 to 248
instructions while the kernel's totals stay about the same is a slowdown the histogram hides (the
loop body runs once per iteration, the prologue and epilogue once). So each loop is found in the
control flow and counted on its own.

How: basic blocks from the branch instructions (`BRA` targets, the instruction after a `BRA`,
`EXIT`, `RET`, `BRX`/`JMX`), dominators over the blocks reachable from the function entry (and
from `CALL` targets, which are subroutines placed in the same listing), and the natural loop of
each back edge (a branch to a block that dominates it; for the code ptxas emits that is the
backward `BRA` to the loop header). Back edges to one header form one loop. ptxas places slow
paths out of line (e.g. the `SYNCS.PHASECHK.TRANS64.TRYWAIT` retry of an mbarrier wait on
sm_100, after the function's `EXIT`): they belong to the loop they return into, so a loop's
`instructions` can exceed its address range. Indirect branches (`BRX`, `JMX`) end a block with no
known successor: a loop closed only through one is not found (Triton kernels have none).

Main loop rule: the loop whose own body (its instructions minus those of loops nested in it) has
the most memory and tensor-core instructions (classes global, atomic, shared, local, tensor of
`sass.INSTRUCTION_CLASSES`); ties go to an innermost loop, then to the larger own body, then to
the lower address. Without any such instruction that is the largest innermost loop. This is a
static guess at "the loop most iterations are spent in": a K loop of a matmul (LDGSTS/HGMMA), the
row loop of a reduction (LDG), not a 2-instruction barrier spin loop or an outer tile loop.

Load waits (`SassLoop.load_waits`): how many times one iteration of an innermost loop stops for its
own global loads. Walking the body in address order, an instruction that reads a register a global
load (`LDG`, generic `LD`) of the same iteration still writes is a wait: the warp's scoreboard holds it
there until that load returns, so every load issued before it is one round trip to memory and the next
loads start a new one. The count is the number of dependent round trips an iteration makes. Why it
matters: in a latency-bound loop (few warps per SM) the time of an iteration is about round trips x
the memory latency, and two toolchains can issue the same loads in a different order.
TritonBench's `_layer_norm_bwd_dwdb` (16 `LDG.E.128` an iteration) waits 8 times with Triton 3.3.1
and 13 times with 3.6.0, which measures 1.4x slower at grid 8..16 on an H200. Simplifications: a wait
counts every outstanding load as returned (cuobjdump prints no scoreboard numbers, so the register
dependences are what is known); predicated instructions count as executed; local loads (`LDL`, spill
reloads) are not counted (the cost model prices each one's latency already); 0 for a loop without
global loads and for outer loops (their bodies hold inner loops, whose iterations are not one round).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ktriage.analyze.sass import VECTOR_REGISTERS, WORK_CLASSES, SassFunction, SassInstruction, instruction_class
from ktriage.schema.jsontypes import JSONObject

# `0x400` (cuobjdump), `` `(.L_x_3) `` or `` `($__internal_0_$...) `` (nvdisasm labels)
_TARGET = re.compile(r"(?:0x([0-9a-fA-F]+)|`?\(([^()`\s]+)\)`?|(\.L_\w+))\s*$")
_ENDS_FLOW = frozenset({"EXIT", "RET", "BRX", "JMX", "KILL"})  # no fall-through when unpredicated
_CONDITIONAL_BRA = frozenset({"DIV", "CONV"})  # BRA.DIV / BRA.CONV branch only on (non)convergence


@dataclass(frozen=True)
class SassLoop:
    """One natural loop: addresses of its header and of its last back edge, and its body's counts."""

    start: int  # address of the loop header (the branch target)
    end: int  # address of the last backward branch (the latch)
    instructions: int  # static instructions of the body, nested loops and out-of-line blocks included
    depth: int  # 1 = outermost
    innermost: bool
    main: bool = False  # the main loop (see the module docstring); listed first
    opcodes: dict[str, int] = field(default_factory=dict)  # base opcode -> count in the body
    # waits of one iteration on its own global loads (module docstring); None: read from a report of
    # a ktriage that did not count them
    load_waits: int | None = None
    # the body's instruction addresses (for the per-line counts of analyze/lines.py); not saved
    body: frozenset[int] = field(default_factory=frozenset, compare=False, repr=False)

    def to_json(self) -> JSONObject:
        return {
            "start": self.start,
            "end": self.end,
            "instructions": self.instructions,
            "depth": self.depth,
            "innermost": self.innermost,
            "main": self.main,
            "opcodes": dict(self.opcodes),
            **({"load_waits": self.load_waits} if self.load_waits is not None else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SassLoop:
        return cls(
            start=int(data["start"]),
            end=int(data["end"]),
            instructions=int(data["instructions"]),
            depth=int(data["depth"]),
            innermost=bool(data["innermost"]),
            main=bool(data.get("main", False)),
            opcodes={str(k): int(v) for k, v in dict(data.get("opcodes", {})).items()},
            load_waits=None if data.get("load_waits") is None else int(data["load_waits"]),
        )

    @property
    def span(self) -> str:
        """`0x1300..0x18a0`, as the SASS listing writes addresses."""
        return f"{self.start:#x}..{self.end:#x}"


# `R12`, `R12.64` in an operand (not `UR4`, `RZ`, `P0`): registers with the width a load writes
_REGISTER = re.compile(r"\bR(\d+)\b")
_VECTOR_REGISTER = re.compile(r"\bR(\d+)(?:\.(64|128))?\b")
_GLOBAL_LOADS = frozenset({"LDG", "LD"})


def _load_dest(inst: SassInstruction) -> set[int]:
    """The registers a global load writes: its first operand, widened by the load's `.64`/`.128`."""
    first = inst.operands.split(",", 1)[0]
    m = _REGISTER.search(first)
    if m is None:
        return set()
    base = int(m.group(1))
    return set(range(base, base + inst.destination_registers))


def _reads(inst: SassInstruction) -> set[int]:
    """The registers an instruction reads: every operand after the first, all operands of a store,
    a reduction or an atomic (their first operand is an address or data, not only a destination);
    a vector operand `R4.64` reads R4 and R5."""
    ops = inst.operands.split(",")
    srcs = ",".join(ops if inst.base_opcode.startswith(("ST", "RED", "ATOM")) else ops[1:])
    regs: set[int] = set()
    for m in _VECTOR_REGISTER.finditer(srcs):
        base = int(m.group(1))
        regs.update(range(base, base + VECTOR_REGISTERS.get(m.group(2) or "", 1)))
    return regs


def load_waits(body: list[SassInstruction]) -> int:
    """The waits of one iteration on its own global loads (module docstring), `body` in address order."""
    waits = 0
    pending: set[int] = set()
    for inst in body:
        if pending and _reads(inst) & pending:
            waits += 1
            pending = set()
        if inst.base_opcode in _GLOBAL_LOADS:
            pending |= _load_dest(inst)
    return waits


def _target(inst: SassInstruction, labels: Mapping[str, int]) -> int | None:
    """The branch target address of a BRA/CALL (`0x400` from cuobjdump, `` `(.L_x_3) `` from nvdisasm)."""
    m = _TARGET.search(inst.operands)
    if m is None:
        return None
    return int(m.group(1), 16) if m.group(1) else labels.get(m.group(2) or m.group(3))


def _is_conditional(inst: SassInstruction) -> bool:
    modifiers = set(inst.opcode.split(".")[1:])
    # `BRA.U !UP0, 0x180` / `BRA.DIV UR4, 0x..`: a condition among the operands
    extra_operands = "," in inst.operands
    return (inst.predicate not in (None, "@PT")) or bool(modifiers & _CONDITIONAL_BRA) or extra_operands


def _blocks(fn: SassFunction) -> tuple[list[tuple[int, int]], list[set[int]], list[int]]:
    """Basic blocks as [start, end) instruction indices, their successors, and the entry blocks."""
    instrs = fn.instructions
    index = {inst.address: i for i, inst in enumerate(instrs)}
    leaders = {0}
    calls: set[int] = set()
    for i, inst in enumerate(instrs):
        base = inst.base_opcode
        if base == "CALL":
            target = _target(inst, fn.labels)
            if target in index:
                calls.add(index[target])
                leaders.add(index[target])
        elif base == "BRA" or base in _ENDS_FLOW:
            if base == "BRA":
                target = _target(inst, fn.labels)
                if target in index:
                    leaders.add(index[target])
            if i + 1 < len(instrs):
                leaders.add(i + 1)
    starts = sorted(leaders)
    spans = [(s, starts[k + 1] if k + 1 < len(starts) else len(instrs)) for k, s in enumerate(starts)]
    block_of = {s: k for k, (s, _) in enumerate(spans)}
    succs: list[set[int]] = []
    for k, (_, end) in enumerate(spans):
        last = instrs[end - 1]
        out: set[int] = set()
        falls = True
        if last.base_opcode == "BRA":
            target = _target(last, fn.labels)
            if target in index:
                out.add(block_of[index[target]])
            falls = _is_conditional(last)
        elif last.base_opcode in _ENDS_FLOW:
            falls = _is_conditional(last)
        if falls and k + 1 < len(spans):
            out.add(k + 1)
        succs.append(out)
    entries = [0] + sorted(block_of[c] for c in calls if block_of[c] != 0)
    return spans, succs, entries


def _dominators(succs: list[set[int]], entries: list[int]) -> dict[int, int]:
    """Dominator sets (bit sets over block numbers) of the blocks reachable from the entries."""
    preds: dict[int, set[int]] = {}
    order: list[int] = []  # reverse post-order over the reachable blocks
    seen: set[int] = set()
    for entry in entries:
        if entry in seen:
            continue
        stack: list[tuple[int, list[int]]] = [(entry, sorted(succs[entry]))]
        seen.add(entry)
        post: list[int] = []
        while stack:
            node, todo = stack[-1]
            if todo:
                nxt = todo.pop(0)
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, sorted(succs[nxt])))
            else:
                post.append(node)
                stack.pop()
        order += reversed(post)
    for node in seen:
        for s in succs[node]:
            preds.setdefault(s, set()).add(node)
    roots = set(entries)
    everything = sum(1 << n for n in seen)
    dom = {n: (1 << n) if n in roots else everything for n in seen}
    changed = True
    while changed:
        changed = False
        for n in order:
            if n in roots:
                continue
            meet = everything
            for p in preds.get(n, ()):
                meet &= dom[p]
            new = meet | (1 << n)
            if new != dom[n]:
                dom[n] = new
                changed = True
    return dom


def find_loops(fn: SassFunction) -> list[SassLoop]:
    """The natural loops of `fn`, the main loop first, then by header address."""
    if not fn.instructions:
        return []
    spans, succs, entries = _blocks(fn)
    dom = _dominators(succs, entries)
    preds: dict[int, set[int]] = {}
    for n in dom:
        for s in succs[n]:
            preds.setdefault(s, set()).add(n)
    bodies: dict[int, set[int]] = {}
    latches: dict[int, int] = {}
    for n in dom:
        for h in succs[n]:
            if h in dom and dom[n] >> h & 1:  # h dominates n: n -> h is a back edge
                body = bodies.setdefault(h, {h})
                work = [n]
                while work:
                    x = work.pop()
                    if x not in body:
                        body.add(x)
                        work += [p for p in preds.get(x, ()) if p in dom]
                latches[h] = max(latches.get(h, n), n)
    if not bodies:
        return []
    instrs = fn.instructions
    headers = sorted(bodies)
    inner = {h: [o for o in headers if o != h and bodies[o] < bodies[h]] for h in headers}
    outer = {h: sum(1 for o in headers if o != h and bodies[h] < bodies[o]) for h in headers}

    def body_instrs(blocks: set[int]) -> list[SassInstruction]:
        return [instrs[i] for b in sorted(blocks) for i in range(*spans[b])]

    def work_count(blocks: set[int]) -> int:
        return sum(1 for i in body_instrs(blocks) if instruction_class(i.base_opcode) in WORK_CLASSES)

    loops: list[tuple[tuple[int, int, int, int], SassLoop]] = []
    for h in headers:
        own = bodies[h] - set().union(*(bodies[o] for o in inner[h]))
        members = body_instrs(bodies[h])
        counts = Counter(i.base_opcode for i in members)
        loop = SassLoop(
            start=instrs[spans[h][0]].address,
            end=instrs[spans[latches[h]][1] - 1].address,
            instructions=sum(counts.values()),
            depth=outer[h] + 1,
            innermost=not inner[h],
            opcodes=dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
            body=frozenset(i.address for i in members),
            load_waits=load_waits(sorted(members, key=lambda i: i.address)) if not inner[h] else 0,
        )
        own_size = sum(spans[b][1] - spans[b][0] for b in own)
        loops.append(((-work_count(own), 0 if loop.innermost else 1, -own_size, loop.start), loop))
    best = min(loops, key=lambda kv: kv[0])[1]
    rest = sorted((lp for _, lp in loops if lp is not best), key=lambda lp: lp.start)
    return [replace(best, main=True)] + rest
