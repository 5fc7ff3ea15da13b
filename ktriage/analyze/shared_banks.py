"""Shared-memory bank conflicts read from the SASS addresses: wavefronts per LDS/STS request.

Why: a layout conversion through shared memory that is 8-way bank-conflicted costs 8 passes through
the 32 banks per store where a conflict-free one costs 1, with the same instruction count. On the
H200 that is the whole +14..47 % of Triton 3.3.1's inductor ``mul_sum`` and ``gather_gemv`` kernels
against 3.6.0 (``benchmarks/calibration/misses``: ncu counts 4.2M conflicts against 19k), and the
opcode histogram cannot see it. The addresses can: Triton computes them from the thread index with a
few integer instructions, so evaluating those for the 32 lanes of a warp gives each access's banks.

How: one pass over the function in address order (control flow ignored: the address arithmetic of a
layout conversion is straight-line code), each register a tuple of 32 lane values, or unknown. Known:
``S2R SR_TID.X`` (lanes 0..31 of warp 0), ``SR_LANEID``; every other source that is the same for the
lanes (``S2R SR_CTAID.*``, constants from ``c[...]``, uniform registers, loaded values) is taken as 0,
which shifts every lane's address alike and so leaves the banks' pattern as it is. Integer arithmetic
(``IMAD``, ``IADD3``, ``LEA``, ``SHF``, ``LOP3.LUT``, ``SGXT``, ``MOV``, ...) is evaluated; any other
instruction makes its destination unknown, and an access through an unknown address is not rated.
A predicated write makes its destination unknown (the lanes that skip it keep their old value); a
predicated access uses the predicate's lanes when ``ISETP`` computed it from known values, and else is
rated only if it is conflict-free with every lane on (then it is for any subset).

Rating, per request: 32-bit accesses are served a warp at a time, 64-bit a half-warp, 128-bit a
quarter-warp; in each phase, the wavefronts are the most distinct 4-byte words any one bank holds
(lanes reading one word share it). The ideal is 1, 2 and 4 wavefronts a request; ``conflict`` is
wavefronts over ideal. ``LDSM``/``STSM`` (matrix loads and stores) are conflict-free by construction
of Triton's swizzled layouts and are not rated.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ktriage.analyze.sass import SassFunction, SassInstruction

LANES = 32
BANKS = 32
MASK = 0xFFFFFFFF
Lanes = tuple[int, ...]
_ZERO: Lanes = (0,) * LANES
_REG = re.compile(r"^-?R(\d+|Z)(?:\.(?:X4|X8|X16|64|U32|H1|B\d|reuse))*$")
_PRED_REG = re.compile(r"^(!)?P(\d|T)$")
_UREG = re.compile(r"^U(?:R\d+|RZ)$")
_IMM = re.compile(r"^-?0x[0-9a-fA-F]+$|^-?\d+$")
_ADDR = re.compile(r"^\[(.*)\]$")


@dataclass(frozen=True)
class SharedAccess:
    """One LDS/STS of the function: its wavefronts per request for warp 0 (None: address unknown)."""

    address: int
    opcode: str
    wavefronts: int | None
    ideal: int

    @property
    def conflict(self) -> float | None:
        """Wavefronts over the ideal: 1.0 conflict-free, 8.0 eight-way."""
        return None if self.wavefronts is None else self.wavefronts / self.ideal


def _imm(text: str) -> int | None:
    if not _IMM.match(text):
        return None
    value = int(text, 16) if "0x" in text else int(text)
    return value & MASK


class _Lanes:
    """Register state: R<n> -> 32 lane values (unknown registers absent); RZ is 0."""

    def __init__(self) -> None:
        self.regs: dict[int, Lanes] = {}
        self.preds: dict[int, tuple[bool, ...]] = {}

    def predicate(self, operand: str) -> tuple[bool, ...] | None:
        """``P0``/``!P0``/``PT`` per lane; None when unknown."""
        m = _PRED_REG.match(operand.strip().lstrip("@"))
        if not m:
            return None
        if m.group(2) == "T":
            got: tuple[bool, ...] | None = (True,) * LANES
        else:
            got = self.preds.get(int(m.group(2)))
        if got is None:
            return None
        return tuple(not v for v in got) if m.group(1) else got

    def value(self, operand: str) -> Lanes | None:
        """An operand's lane values: a register (``.X4`` and similar suffixes ignored), an immediate,
        or a lane-invariant source (uniform register, constant bank) as 0. None when unknown."""
        op = operand.strip().lstrip("|").rstrip("|")
        negate = op.startswith("-")
        op = op.lstrip("-~!")
        if op in ("RZ", "URZ", "PT"):
            return _ZERO
        if m := _REG.match(op):
            got = self.regs.get(int(m.group(1))) if m.group(1) != "Z" else _ZERO
        elif _UREG.match(op) or op.startswith(("c[", "UR", "SR_")):
            got = _ZERO  # the same for every lane: it shifts all addresses alike
        elif (imm := _imm(op)) is not None:
            got = (imm,) * LANES
        else:
            return None
        if got is None:
            return None
        return tuple((-v) & MASK for v in got) if negate else got

    def set(self, dest: str, value: Lanes | None) -> None:
        m = _REG.match(dest.strip())
        if not m or m.group(1) == "Z":
            return
        reg = int(m.group(1))
        if value is None:
            self.regs.pop(reg, None)
        else:
            self.regs[reg] = tuple(v & MASK for v in value)


def _lut(a: int, b: int, c: int, table: int) -> int:
    """LOP3.LUT: bit i of the result is bit (a_i b_i c_i) of the 8-bit table (a is the MSB)."""
    out = 0
    for bit in range(32):
        index = (((a >> bit) & 1) << 2) | (((b >> bit) & 1) << 1) | ((c >> bit) & 1)
        out |= ((table >> index) & 1) << bit
    return out


def _signed(v: int) -> int:
    return v - (1 << 32) if v & 0x80000000 else v


def _map(fn: Callable[..., int], *args: Lanes) -> Lanes:
    return tuple(fn(*vals) & MASK for vals in zip(*args))


def _evaluate(inst: SassInstruction, state: _Lanes) -> tuple[str, Lanes | None] | None:
    """(first operand, its lane values: None when not an integer instruction this pass evaluates) of an
    instruction; None when it has no operand. ``state.set`` ignores a first operand that is no register."""
    ops = [o.strip() for o in inst.operands.split(",")]
    if not ops or not ops[0]:
        return None
    base, mods = inst.base_opcode, inst.opcode.split(".")[1:]
    dest, srcs = ops[0], ops[1:]
    vals = [state.value(s) for s in srcs]

    def known(n: int) -> list[Lanes] | None:
        got = vals[:n]
        return None if len(got) < n or any(v is None for v in got) else got  # type: ignore[return-value]

    if base == "S2R":
        if srcs and srcs[0] in ("SR_TID.X", "SR_LANEID"):
            return dest, tuple(range(LANES))
        return dest, _ZERO if srcs and srcs[0].startswith("SR_") else None
    if base in ("MOV", "UMOV"):
        return dest, vals[0] if vals else None
    if base == "IMAD" and not ({"WIDE", "HI", "X"} & set(mods)):
        # every IMAD form is a * b + c: .SHL multiplies by a power of two, .IADD by 1, .MOV is 0 * 0 + c
        if (k := known(3)) is None:
            return dest, None
        return dest, _map(lambda a, b, c: a * b + c, *k)
    if base == "IADD3" and "X" not in mods:
        k = known(3)
        return dest, None if k is None else _map(lambda a, b, c: a + b + c, *k)
    if base == "VIADD":
        k = known(2)
        return dest, None if k is None else _map(lambda a, b: a + b, *k)
    if base == "LEA" and "HI" not in mods:
        k = known(3)
        return dest, None if k is None else _map(lambda a, b, s: (a << (s & 31)) + b, *k)
    if base == "LEA" and "HI" in mods and "X" not in mods and len(srcs) >= 4:
        # LEA.HI d, a, b, c, s: b + (hi 32 bits of ((c:a) << s)), i.e. b + (a >> (32 - s)) with c's bits above
        k = known(4)
        return dest, None if k is None else _map(lambda a, b, c, s: b + ((((c << 32) | a) << (s & 31)) >> 32), *k)
    if base == "SHF" and len(srcs) >= 3:
        k = known(3)
        if k is None:
            return dest, None
        lo, shift, hi = k
        if "L" in mods:
            fn = (
                (lambda a, s, b: (((b << 32) | a) << (s & 31)) >> 32)
                if "HI" in mods
                else (lambda a, s, b: a << (s & 31))
            )
        elif "S32" in mods:
            fn = (
                (lambda a, s, b: _signed(b) >> (s & 31))
                if "HI" in mods
                else (lambda a, s, b: (b << 32 | a) >> (s & 31))
            )
        else:
            fn = (lambda a, s, b: b >> (s & 31)) if "HI" in mods else (lambda a, s, b: ((b << 32) | a) >> (s & 31))
        return dest, _map(fn, lo, shift, hi)
    if base == "LOP3" and len(srcs) >= 4:
        k = known(3)
        table = _imm(srcs[3])
        if k is None or table is None:
            return dest, None
        return dest, _map(lambda a, b, c: _lut(a, b, c, table), *k)
    if base == "SGXT" and len(srcs) >= 2:
        k = known(2)
        if k is None:
            return dest, None

        def extend(a: int, bits: int) -> int:
            bits &= 31
            if bits == 0:
                return 0
            v = a & ((1 << bits) - 1)
            if "U32" not in mods and v >> (bits - 1):
                v -= 1 << bits
            return v

        return dest, _map(extend, *k)
    if base in ("LDC", "ULDC") and "[R" not in inst.operands:
        return dest, _ZERO  # a constant: the same for every lane
    return dest, None


_COMPARE: dict[str, Callable[[int, int], bool]] = {
    "LT": lambda a, b: a < b,
    "LE": lambda a, b: a <= b,
    "GT": lambda a, b: a > b,
    "GE": lambda a, b: a >= b,
    "EQ": lambda a, b: a == b,
    "NE": lambda a, b: a != b,
}


def _set_predicate(inst: SassInstruction, state: _Lanes) -> bool:
    """ISETP P, Q, a, b, c: P = (a cmp b) AND c per lane (signed unless .U32); other writers of a
    predicate make it unknown. True when ``inst`` wrote a predicate."""
    ops = [o.strip() for o in inst.operands.split(",")]
    if not ops or not _PRED_REG.match(ops[0]) or ops[0] == "PT":
        return False
    mods = inst.opcode.split(".")[1:]
    target = int(ops[0][1:]) if ops[0][1:].isdigit() else None
    result: tuple[bool, ...] | None = None
    if inst.base_opcode == "ISETP" and len(ops) >= 5 and "EX" not in mods:
        a, b = state.value(ops[2]), state.value(ops[3])
        c = state.predicate(ops[4])
        cmp = next((_COMPARE[m] for m in mods if m in _COMPARE), None)
        if a is not None and b is not None and c is not None and cmp is not None:
            conv = (lambda v: v) if "U32" in mods else _signed
            joined = [cmp(conv(x), conv(y)) for x, y in zip(a, b)]
            if "AND" in mods:
                result = tuple(j and k for j, k in zip(joined, c))
            elif "OR" in mods:
                result = tuple(j or k for j, k in zip(joined, c))
    if target is not None:
        if result is None:
            state.preds.pop(target, None)
        else:
            state.preds[target] = result
    return True


def _address(operand: str, state: _Lanes) -> Lanes | None:
    """The per-lane byte address of ``[R40+0x30]``, ``[R5.X4+UR4+0x10]``, ``[UR4]`` (lane-invariant
    parts as 0)."""
    m = _ADDR.match(operand.strip())
    if not m:
        return None
    total: Lanes = _ZERO
    for term in re.split(r"\+(?![^\[]*\])", m.group(1)):
        term = term.strip()
        if not term:
            continue
        scale = 4 if ".X4" in term else 8 if ".X8" in term else 16 if ".X16" in term else 1
        v = state.value(term.split(".X")[0] if scale > 1 else term)
        if v is None:
            return None
        total = tuple((a + b * scale) & MASK for a, b in zip(total, v))
    return total


def wavefronts(addresses: Sequence[int], width: int, active: Sequence[bool] | None = None) -> tuple[int, int]:
    """(wavefronts, ideal) of one warp request: phases of 128 bytes (a warp of 32-bit accesses, a
    half-warp of 64-bit, a quarter of 128-bit); in each, the most distinct 4-byte words one bank holds
    among the active lanes (a phase without one costs nothing)."""
    per_phase = max(1, 128 // width)
    on = active if active is not None else (True,) * LANES
    total = 0
    for start in range(0, LANES, per_phase):
        banks: dict[int, set[int]] = {}
        for addr, lane_on in zip(addresses[start : start + per_phase], on[start : start + per_phase]):
            if not lane_on:
                continue
            for word in range(addr // 4, (addr + width) // 4):
                banks.setdefault(word % BANKS, set()).add(word)
        total += max((len(words) for words in banks.values()), default=0)
    return max(total, 1), LANES // per_phase


def _clear(dest: str, count: int, state: _Lanes) -> None:
    m = _REG.match(dest)
    if m and m.group(1) != "Z":
        for k in range(count):
            state.set(f"R{int(m.group(1)) + k}", None)


def shared_accesses(fn: SassFunction) -> list[SharedAccess]:
    """Every LDS/STS of ``fn`` with its wavefronts per request (see the module docstring)."""
    state = _Lanes()
    out: list[SharedAccess] = []
    for inst in fn.instructions:
        base = inst.base_opcode
        ops = [o.strip() for o in inst.operands.split(",")]
        if base in ("LDS", "STS"):
            where = ops[1] if base == "LDS" and len(ops) > 1 else ops[0]
            width = 4 * inst.destination_registers  # bytes a lane moves: 4, 8 (.64) or 16 (.128)
            ideal = max(1, LANES * width // 128)
            lanes = _address(where, state)
            active = state.predicate(inst.predicate) if inst.predicate else (True,) * LANES
            if lanes is None:
                out.append(SharedAccess(inst.address, inst.opcode, None, ideal))
            elif active is None:
                # an unknown predicate: with every lane on, a conflict-free request is conflict-free for any
                # subset of lanes too; a conflicted one may not be (a lane-0-only store), so it stays unrated
                waves, ideal = wavefronts(lanes, width)
                out.append(SharedAccess(inst.address, inst.opcode, waves if waves <= ideal else None, ideal))
            else:
                waves, ideal = wavefronts(lanes, width, active)
                out.append(SharedAccess(inst.address, inst.opcode, waves, ideal))
            if base == "LDS" and ops:
                _clear(ops[0], inst.destination_registers, state)
            continue
        if _set_predicate(inst, state):
            continue
        if inst.predicate:  # a conditional write: the lanes that skip it keep their old value
            if ops and _REG.match(ops[0]):
                _clear(ops[0], inst.destination_registers, state)
            continue
        result = _evaluate(inst, state)
        if result is not None:
            dest, value = result
            _clear(dest, inst.destination_registers, state)  # a .64/.128 destination spans the next registers too
            state.set(dest, value)
    return out


def bank_summary(accesses: Sequence[SharedAccess]) -> dict[str, float]:
    """What the cost model reads (``KernelFacts.shared_wavefronts``): per LDS/STS the mean wavefronts
    over ideal of the rated requests (1.0: conflict-free), for the opcodes that have any, and
    ``unrated``: how many accesses had an address this pass could not follow (0 when all were rated)."""
    out: dict[str, float] = {}
    for kind in ("LDS", "STS"):
        rated = [a.conflict for a in accesses if a.opcode.startswith(kind) and a.conflict is not None]
        if rated:
            out[kind] = round(sum(rated) / len(rated), 4)
    out["unrated"] = float(sum(1 for a in accesses if a.wavefronts is None))
    return out
