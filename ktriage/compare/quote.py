"""The counters of a compared cell, quoted in one line next to its verdict (compare, triage).

A results cell may carry the Nsight Compute counters of its (input, backend, toolchain) in
``extra["profile"]`` (:mod:`ktriage.profile.attach` puts them there; the section's schema is
``ktriage.schema.results.ProfileSectionSchema``). When both sides of a compared pair carry them,
:func:`quote_pair` says in one sentence what the compiler did (the bundle's compile-side resources:
spill bytes, registers, the SASS opcodes that changed most) and what the counters show for it
(registers per thread, the local-memory (spill) share of L1 traffic, the stall reason that grew
most, DRAM throughput and bytes, the kernel's duration), e.g.

    triton-3.4.0.ptxas-12.8.93 spills 3712 B/thread (ref 632 B), 32 registers (ref 255); SASS LDL
    111->940, ... ncu, _layer_norm_backward_kernel: 255 -> 32 registers/thread; local-memory (spill) traffic is 91%
    of L1 sectors (ref 53%); stall 'long_scoreboard' +13 points (now 67% of stall cycles); ...

Where a side could not be profiled (no permission to the counters, no ncu), the quote is that one
line instead. Pure: dicts in, text out; the renderers (``ktriage.report``) only lay it out.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ktriage.measure.results_file import cell_profile
from ktriage.schema.jsontypes import JSONObject, JSONValue

if TYPE_CHECKING:
    from ktriage.compare.pairing import Comparison, PairResult
    from ktriage.measure.cells import Cell

MAX_KERNELS = 3  # launches quoted per pair; the profile.json of the run has them all
_HASH = re.compile(r"\.[0-9a-f]{8}$")


def short(toolchain: str | None) -> str:
    """A toolchain id without its content hash (``triton-3.4.0.ptxas-12.8.93``): enough in a sentence."""
    return _HASH.sub("", toolchain) if toolchain else "host"


Pair = tuple[float | None, float | None]  # [reference, new], None where ncu gave none


@dataclass(frozen=True)
class TopStall:
    """The stall reason whose share of stall cycles grew most (``top_stall``)."""

    reason: str
    points: float  # new share - reference share, in percentage points
    share_pct: float  # its share of the new side's stall cycles

    def to_json(self) -> JSONObject:
        return {"reason": self.reason, "points": self.points, "share_pct": self.share_pct}


@dataclass(frozen=True)
class KernelNumbers:
    """The quoted numbers of one launch pair, each a (reference, new) pair."""

    kernel: str
    registers_per_thread: Pair
    local_share_of_l1_sectors_pct: Pair
    dram_throughput_pct: Pair
    dram_bytes: Pair
    duration_ns: Pair
    global_atom_requests: Pair
    global_red_requests: Pair
    top_stall: TopStall | None

    def to_json(self) -> JSONObject:
        """The JSON's keys in this order, each pair a [reference, new] list."""
        return {
            "kernel": self.kernel,
            "registers_per_thread": list(self.registers_per_thread),
            "local_share_of_l1_sectors_pct": list(self.local_share_of_l1_sectors_pct),
            "dram_throughput_pct": list(self.dram_throughput_pct),
            "dram_bytes": list(self.dram_bytes),
            "duration_ns": list(self.duration_ns),
            "global_atom_requests": list(self.global_atom_requests),
            "global_red_requests": list(self.global_red_requests),
            "top_stall": self.top_stall.to_json() if self.top_stall is not None else None,
        }


@dataclass(frozen=True)
class CompileSides:
    """Both sides' compile-side resources (the profile section's ``compile_side``, as written)."""

    ref: JSONValue
    new: JSONValue

    def to_json(self) -> JSONObject:
        return {"ref": self.ref, "new": self.new}


@dataclass
class CounterQuote:
    """The counters of one compared pair, as a sentence and as numbers (for JSON)."""

    op: str
    mode: str
    input_id: int
    input_label: str
    backend: str
    ref_toolchain: str | None
    new_toolchain: str | None
    verdict: str
    ratio: float | None
    text: str
    available: bool  # both sides had counters
    kernels: list[KernelNumbers] = field(default_factory=list)
    compile_side: CompileSides | None = None  # None where a side had no counters (JSON: {})

    def label(self) -> str:
        tcs = (
            short(self.ref_toolchain)
            if self.ref_toolchain == self.new_toolchain
            else f"{short(self.ref_toolchain)}->{short(self.new_toolchain)}"
        )
        return f"{self.op}.{self.mode}[{self.input_label}] {self.backend}@{tcs}"

    def head(self) -> str:
        """The verdict the quote sits next to: ``regression +507.3%``."""
        if self.ratio is None or not math.isfinite(self.ratio):
            return self.verdict
        return f"{self.verdict} {(self.ratio - 1) * 100:+.1f}%"

    def to_json(self) -> JSONObject:
        return {
            "op": self.op,
            "mode": self.mode,
            "input_id": self.input_id,
            "input_label": self.input_label,
            "backend": self.backend,
            "ref_toolchain": self.ref_toolchain,
            "new_toolchain": self.new_toolchain,
            "verdict": self.verdict,
            "ratio": self.ratio,
            "available": self.available,
            "text": self.text,
            "kernels": [k.to_json() for k in self.kernels],
            "compile_side": self.compile_side.to_json() if self.compile_side is not None else {},
        }


def _num(value: Any) -> float | None:
    return (
        float(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        else None
    )


def compile_sentence(toolchain: str | None, new: Mapping[str, Any] | None, ref: Mapping[str, Any] | None) -> str:
    """What the compiler did, from the bundle's resources of both sides: spills and registers, then
    the SASS opcodes whose counts changed most (ATOMG 0->32)."""
    name = short(toolchain)
    if not new or new.get("error"):
        return f"{name}: no compile-side resources recorded"
    ref = ref or {}
    spill, ref_spill = int(new.get("spill_store_bytes") or 0), int(ref.get("spill_store_bytes") or 0)
    regs, ref_regs = new.get("registers"), ref.get("registers")
    reg_text = f"{regs} registers" + (f" (ref {ref_regs})" if ref_regs is not None else "")
    if spill or ref_spill:
        text = f"{name} spills {spill} B/thread (ref {ref_spill} B), {reg_text}"
    else:
        text = f"{name}: no spills, {reg_text}"
    ops, ref_ops = new.get("sass_opcodes") or {}, ref.get("sass_opcodes") or {}
    deltas = {k: int(ops.get(k, 0)) - int(ref_ops.get(k, 0)) for k in set(ops) | set(ref_ops)}
    changed = sorted((k for k, d in deltas.items() if d), key=lambda k: (-abs(deltas[k]), k))[:3]
    if changed:
        text += "; SASS " + ", ".join(f"{k} {int(ref_ops.get(k, 0))}->{int(ops.get(k, 0))}" for k in changed)
    return text


def top_stall(ref: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[str, float, float] | None:
    """The stall reason whose share of stall cycles grew most (reason, points, new share); the one
    that moved most when none grew."""
    shares, ref_shares = new.get("stall_share_pct") or {}, ref.get("stall_share_pct") or {}
    if not shares or not ref_shares:
        return None
    points = {r: float(shares.get(r, 0.0)) - float(ref_shares.get(r, 0.0)) for r in set(shares) | set(ref_shares)}
    grown = {r: p for r, p in points.items() if p > 0}
    reason = max(grown, key=lambda r: (grown[r], r)) if grown else max(points, key=lambda r: (abs(points[r]), r))
    return reason, points[reason], float(shares.get(reason, 0.0))


def kernel_numbers(ref: Mapping[str, Any], new: Mapping[str, Any]) -> KernelNumbers:
    """The quoted numbers of one launch pair, [reference, new] each (None where ncu gave none)."""

    def pair(key: str) -> Pair:
        return _num(ref.get(key)), _num(new.get(key))

    stall = top_stall(ref, new)
    return KernelNumbers(
        kernel=str(new.get("kernel_name") or ref.get("kernel_name") or ""),
        registers_per_thread=pair("registers_per_thread"),
        local_share_of_l1_sectors_pct=pair("local_share_of_l1_sectors_pct"),
        dram_throughput_pct=pair("dram_throughput_pct"),
        dram_bytes=pair("dram_bytes"),
        duration_ns=pair("duration_ns"),
        global_atom_requests=pair("global_atom_requests"),
        global_red_requests=pair("global_red_requests"),
        top_stall=TopStall(*stall) if stall else None,
    )


def _both(pair: Pair) -> tuple[float, float] | None:
    """The pair when ncu gave both sides' number, else None."""
    ref, new = pair
    return None if ref is None or new is None else (ref, new)


def kernel_sentence(numbers: KernelNumbers) -> str:
    """The counters of one launch pair, in the order the issue asks: registers, local-memory share,
    the stall that grew, DRAM throughput (and bytes), atomics when there are any, the duration."""
    said = []
    if regs := _both(numbers.registers_per_thread):
        said.append(f"{regs[0]:.0f} -> {regs[1]:.0f} registers/thread")
    local = _both(numbers.local_share_of_l1_sectors_pct)
    if local and (local[0] or local[1]):
        said.append(f"local-memory (spill) traffic is {local[1]:.0f}% of L1 sectors (ref {local[0]:.0f}%)")
    stall = numbers.top_stall
    if stall:
        said.append(f"stall '{stall.reason}' {stall.points:+.0f} points (now {stall.share_pct:.0f}% of stall cycles)")
    dram, dram_bytes = _both(numbers.dram_throughput_pct), _both(numbers.dram_bytes)
    if dram:
        text = f"DRAM throughput {dram[0]:.0f}% -> {dram[1]:.0f}% of peak"
        if dram_bytes:
            text += f" ({dram_bytes[0] / 1e6:.1f} -> {dram_bytes[1] / 1e6:.1f} MB)"
        said.append(text)
    elif dram_bytes:
        said.append(f"DRAM {dram_bytes[0] / 1e6:.1f} -> {dram_bytes[1] / 1e6:.1f} MB")
    atoms = [
        (both, w)
        for pair, w in ((numbers.global_atom_requests, "atomic"), (numbers.global_red_requests, "reduction"))
        if (both := _both(pair)) and (both[0] or both[1])
    ]
    if atoms:
        said.append(", ".join(f"global {w} requests {both[0]:,.0f} -> {both[1]:,.0f}" for both, w in atoms))
    if duration := _both(numbers.duration_ns):
        said.append(f"kernel {duration[0] / 1e3:.1f} -> {duration[1] / 1e3:.1f} us")
    body = "; ".join(said) if said else "ncu reported none of the quoted counters"
    return f"{numbers.kernel}: {body}" if numbers.kernel else body


def unavailable_line(side: str, toolchain: str | None, section: Mapping[str, Any] | None) -> str:
    """One line for a side without counters: why ncu could not run there, or that it was not profiled."""
    if section is None:
        return f"{side} {short(toolchain)}: not profiled"
    error = str(section.get("error") or "ncu gave no launches").splitlines()[0][:300]
    return f"{side} {short(toolchain)}: {error}"


def quote_sections(
    ref: Mapping[str, Any] | None,
    new: Mapping[str, Any] | None,
    *,
    ref_toolchain: str | None,
    new_toolchain: str | None,
) -> tuple[str, bool, list[KernelNumbers], CompileSides | None]:
    """(text, available, per-kernel numbers, compile side) for the two sides' profile sections."""
    usable = [s is not None and s.get("status") == "ok" and bool(s.get("launches")) for s in (ref, new)]
    if not all(usable):
        lines = [
            unavailable_line(side, tc, s)
            for side, tc, s, ok in (("ref", ref_toolchain, ref, usable[0]), ("new", new_toolchain, new, usable[1]))
            if not ok
        ]
        return "counters: " + "; ".join(lines), False, [], None
    assert ref is not None and new is not None
    kernels = [kernel_numbers(a, b) for a, b in zip(ref["launches"], new["launches"])]
    side = compile_sentence(new_toolchain, new.get("compile_side"), ref.get("compile_side"))
    text = side + ". ncu, " + " | ".join(kernel_sentence(k) for k in kernels[:MAX_KERNELS])
    if len(kernels) > MAX_KERNELS:
        text += f" | and {len(kernels) - MAX_KERNELS} more launches"
    return text, True, kernels, CompileSides(ref=ref.get("compile_side"), new=new.get("compile_side"))


def _index(cells: Iterable[Cell]) -> dict[tuple[str, str, int, str, str | None], JSONObject]:
    out = {}
    for c in cells:
        section = cell_profile(c)
        if section is not None:
            out[(c.key.op, c.key.mode, c.key.input_id, c.key.backend, c.key.toolchain)] = section
    return out


def quote_pair(pair: PairResult, ref: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> CounterQuote:
    text, available, kernels, compile_side = quote_sections(
        ref, new, ref_toolchain=pair.ref_toolchain, new_toolchain=pair.new_toolchain
    )
    ratio = pair.verdict.ratio if pair.verdict is not None and math.isfinite(pair.verdict.ratio) else None
    return CounterQuote(
        pair.op,
        pair.mode,
        pair.input_id,
        pair.input_label,
        pair.backend,
        pair.ref_toolchain,
        pair.new_toolchain,
        pair.kind,
        ratio,
        text,
        available,
        kernels,
        compile_side,
    )


def comparison_quotes(c: Comparison) -> list[CounterQuote]:
    """A quote for every compared pair where at least one side's cell carries a profile section
    (both: the counters; one: the line saying why the other has none), regressions first."""
    refs, news = _index(c.ref_cells), _index(c.new_cells)
    if not refs and not news:
        return []
    out = []
    for p in c.pairs:
        if p.status != "compared":
            continue
        ref = refs.get((p.op, p.mode, p.input_id, p.backend, p.ref_toolchain))
        new = news.get((p.op, p.mode, p.input_id, p.backend, p.new_toolchain))
        if ref is not None or new is not None:
            out.append(quote_pair(p, ref, new))
    order = {"regression": 0, "unsure": 1, "improvement": 2, "same": 3}
    return sorted(out, key=lambda q: (order.get(q.verdict, 4), -(q.ratio or 0.0)))


def cell_quote(
    ref_cells: Sequence[Cell], new_cells: Sequence[Cell], *, op: str, mode: str, input_id: int, backend: str
) -> str | None:
    """The quote for one (op, mode, input, backend) across two result sets whatever the toolchains
    (triage pairs a side's artifact cell with the other side's): None when neither side has counters."""

    def pick(cells: Sequence[Cell]) -> tuple[JSONObject | None, str | None]:
        found = [
            (cell_profile(c), c.key.toolchain)
            for c in cells
            if (c.key.op, c.key.mode, c.key.input_id, c.key.backend) == (op, mode, input_id, backend)
        ]
        with_profile = [f for f in found if f[0] is not None]
        return with_profile[-1] if with_profile else (None, found[-1][1] if found else None)

    (ref, ref_tc), (new, new_tc) = pick(ref_cells), pick(new_cells)
    if ref is None and new is None:
        return None
    return quote_sections(ref, new, ref_toolchain=ref_tc, new_toolchain=new_tc)[0]
