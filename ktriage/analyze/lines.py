"""Line maps: each SASS instruction at its source line, and the per-line counts explain diffs.

Why: explain's totals say "LDL +829, STL +650 in the main loop"; a kernel engineer next asks *where*:
which lines of the kernel now spill, so that the loop can be split, the block shrunk or a small
reproducer filed. Triton compiles with ``-lineinfo``, so every cubin's ``.debug_line`` maps each
SASS instruction to ``file:line``, with the inlining chain of helpers such as ``tl.sum``.

How: the SASS listing comes from the one ``nvdisasm -c -ndf -gi`` run that ``analyze`` already makes
(``cuobjdump.disassemble``); ``-gi`` only adds comment lines, in the form

    //## File "/path/standard.py", line 260 inlined at "/path/kernel.py", line 122
    //## File "/path/kernel.py", line 122
            /*0a40*/                   FADD R3, R3, R4 ;

one comment per frame, innermost first, before the first instruction of the range they cover (the
location holds until the next block of comments). The first frame is the instruction's location; the
``inlined at`` parents form its chain, outermost last. ``cuobjdump -sass`` (the fallback without
nvdisasm) prints no line info: the map is then empty and every report says so by leaving the line
evidence out. Instructions before any location (none in Triton's cubins) count at ``(no line)``.

Per source line (:class:`LineStats`): instructions; LDL/STL; global, shared and atomic memory
instructions (the classes of ``sass.INSTRUCTION_CLASSES``); and how many of the line's instructions
sit in the main loop (``sass_loops``: its body's addresses), with the LDL/STL among them: static
counts per iteration of that loop.

Matching lines of two toolchains (:func:`diff_lines`): by source position (display path and line),
since the kernel source is the same for both. Lines of Triton's own library (``triton/language/
standard.py``) move between Triton releases, so those are matched by their source text when it was
readable, and by position otherwise.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from ktriage.analyze.sass import (
    LOCAL_LOAD,
    LOCAL_STORE,
    SassFunction,
    SassInstruction,
    instruction_class,
)
from ktriage.schema.jsontypes import JSONObject

_SECTION = re.compile(r"^\s*\.section\s+\.text\.([^,\s]+)")
_CUOBJ_FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)")
_LOC = re.compile(r'^\s*//##\s+File\s+"((?:[^"\\]|\\.)*)",\s+line\s+(\d+)(.*)$')
_INLINED = re.compile(r'inlined at\s+"((?:[^"\\]|\\.)*)",\s+line\s+(\d+)')
_INSTR = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s+(.*?)\s*;")
# nvdisasm's PTX-line annotations (cubins built with -G): not source lines
_PSEUDO_FILES = frozenset({".nv_debug_ptx_txt"})
NO_LINE = ("(no line)", 0)
TEXT_LIMIT = 160  # characters of a source line kept for reports
MEMORY_CLASSES = ("global", "shared", "atomic")


@dataclass(frozen=True)
class SourceLoc:
    """Where one instruction comes from: the innermost frame and the frames it was inlined into."""

    path: str  # as written in the cubin's line table (where it was compiled)
    line: int
    inlined_at: tuple[tuple[str, int], ...] = ()  # (path, line) of each caller, innermost first


@dataclass(frozen=True)
class LineInstruction:
    """One SASS instruction with its source location."""

    instruction: SassInstruction
    loc: SourceLoc | None


def parse_line_table(text: str) -> dict[str, dict[int, SourceLoc]]:
    """Per function, instruction address -> location, from an ``nvdisasm -g``/``-gi`` listing.

    Functions without line info (or a ``cuobjdump -sass`` listing) map to ``{}``."""
    result: dict[str, dict[int, SourceLoc]] = {}
    current: dict[int, SourceLoc] | None = None
    loc: SourceLoc | None = None
    block: list[tuple[str, int, tuple[tuple[str, int], ...]]] = []  # the frames of one comment block
    for raw in text.splitlines():
        if m := _SECTION.match(raw) or _CUOBJ_FUNC.match(raw):
            current = result.setdefault(m.group(1), {})
            loc, block = None, []
            continue
        if current is None:
            continue
        if m := _LOC.match(raw):
            path = original_path(_unescape(m.group(1)))
            if path in _PSEUDO_FILES:
                continue
            chain = tuple((original_path(_unescape(p)), int(n)) for p, n in _INLINED.findall(m.group(3)))
            block.append((path, int(m.group(2)), chain))
            continue
        if m := _INSTR.match(raw):
            if block:
                loc = _frames_to_loc(block)
                block = []
            if loc is not None:
                current[int(m.group(1), 16)] = loc
    return result


# a kernel compiled from its own source cut out of its module (insitu/worker.py, _load_extracted) is a file
# <temp>/ktriage-extracted-<uid>/<digest>/<the original's absolute path>, with the original's line numbers
_EXTRACTED = re.compile(r"^.*/ktriage-extracted-\d+/[0-9a-f]{16}(?=/)")


def original_path(path: str) -> str:
    """The user's file for a path in a line table: an extracted kernel's file names the original,
    whose lines it keeps (so its text is read from there, and a report names the user's file, not a
    temporary one); any other path as it is."""
    m = _EXTRACTED.match(path)
    return path[m.end() :] if m else path


def _unescape(path: str) -> str:
    return path.replace('\\"', '"').replace("\\\\", "\\")


def _frames_to_loc(block: list[tuple[str, int, tuple[tuple[str, int], ...]]]) -> SourceLoc:
    """The first frame is the location; its chain is the ``inlined at`` parents it names, and where
    nvdisasm printed each caller as a frame of its own, those frames' parents after them."""
    path, line, chain = block[0]
    parents = list(chain)
    for _p, _n, more in block[1:]:
        for frame in more:
            if frame not in parents:
                parents.append(frame)
    return SourceLoc(path, line, tuple(parents))


def located_instructions(fn: SassFunction, table: Mapping[int, SourceLoc]) -> list[LineInstruction]:
    """``fn``'s instructions (padding removed, as parsed by ``sass.parse_sass``) with their locations."""
    return [LineInstruction(inst, table.get(inst.address)) for inst in fn.instructions]


# ---------------------------------------------------------------------------------------------- paths
_SITE = re.compile(r"^.*/(?:site|dist)-packages/")
_HOME_PACKAGE = re.compile(r"^.*/packages/[^/]+-\d[^/]*/")  # <ktriage home>/packages/<dist>-<version>/
_SNAPSHOT = re.compile(r"^.*/snapshots/[0-9a-f]{16,}/")  # <ktriage home>/snapshots/<sha256>/ (recorded workloads)


def display_path(path: str) -> str:
    """The name a person knows a source file by: ``liger_kernel/ops/layer_norm.py`` for a package
    file (its path inside the installed package), ``triton/language/standard.py`` for Triton's own,
    the path inside a recorded workload's snapshot, a path relative to the working directory when the
    file is under it, else the path as compiled."""
    for pattern in (_SITE, _HOME_PACKAGE, _SNAPSHOT):
        if m := pattern.match(path):
            return path[m.end() :]
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if not rel.startswith("..") else path


def is_library(display: str) -> bool:
    """Triton's own modules (``tl.sum``'s reduction, ``tl.cdiv``...): their line numbers move between
    Triton releases, so a line of theirs is matched by its text (see :func:`diff_lines`)."""
    return display.startswith("triton/")


@lru_cache(maxsize=256)
def _file_lines(path: str, mtime_ns: int) -> tuple[str, ...] | None:
    del mtime_ns  # part of the cache key only: an edited file is read again
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return tuple(fh.read().splitlines())
    except OSError:
        return None


#: Source lines a bundle carries for its cubins (path as compiled -> line -> text, ``text_of_lines``): the GPU
#: host that profiles a bundle has neither the recorded program's snapshot nor the compiling Triton's files.
CarriedText = Mapping[str, Mapping[int, str]]


def source_text(path: str, line: int, carried: CarriedText | None = None) -> str:
    """The source line, stripped and cut to ``TEXT_LIMIT`` characters: the text ``carried`` with the cubin
    (what was compiled) first, else the file's; "" when neither has it (compiled on another machine, a
    snapshot not unpacked)."""
    if carried is not None and (text := carried.get(path, {}).get(line)):
        return text
    try:
        mtime = os.stat(path).st_mtime_ns
    except OSError:
        return ""
    lines = _file_lines(path, mtime)
    if lines is None or not 1 <= line <= len(lines):
        return ""
    return lines[line - 1].strip()[:TEXT_LIMIT]


# ---------------------------------------------------------------------------------------------- per line
@dataclass(frozen=True)
class LineStats:
    """The counts of one source line (one location: file, line and inlining chain) of one cubin."""

    file: str  # display path (display_path)
    line: int
    path: str = ""  # as in the line table
    inlined_at: tuple[str, ...] = ()  # "file:line" of each caller, innermost first
    inlined_frames: tuple[tuple[str, int], ...] = ()  # those callers as in the line table (path, line)
    text: str = ""  # the source line ("" when unreadable here)
    instructions: int = 0
    local_loads: int = 0  # LDL
    local_stores: int = 0  # STL
    global_mem: int = 0  # class global (LDG, STG, LDGSTS, TMA ...)
    shared_mem: int = 0  # class shared (LDS, STS, LDSM ...)
    atomic: int = 0  # class atomic (ATOMG, REDG ...)
    loop_instructions: int = 0  # of them in the main loop: static count per iteration
    loop_local: int = 0  # LDL/STL in the main loop, per iteration
    # full opcode (modifiers kept) -> count, for the instructions of a class of sass.INSTRUCTION_CLASSES:
    # where an LDS became an LDSM.16.M88 (the same count, another instruction)
    opcodes: dict[str, int] = field(default_factory=dict)

    @property
    def local(self) -> int:
        return self.local_loads + self.local_stores

    @property
    def in_main_loop(self) -> bool:
        return self.loop_instructions > 0

    @property
    def where(self) -> str:
        """``liger_kernel/ops/layer_norm.py:122``, with ``(inlined at ...)`` for a helper's line."""
        head = f"{self.file}:{self.line}" if self.line else self.file
        return head + (f" (inlined at {' <- '.join(self.inlined_at)})" if self.inlined_at else "")

    def to_json(self) -> JSONObject:
        data = {name: getattr(self, name) for name in _LINE_STATS_FIELDS}
        data["inlined_at"] = list(self.inlined_at)
        data["inlined_frames"] = [[p, n] for p, n in self.inlined_frames]
        data["opcodes"] = dict(self.opcodes)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LineStats:
        """Inverse of `to_json`, with the display names made again from the paths of the line table.

        Why: a display name can be relative to the working directory (:func:`display_path`), and the
        stats are cached next to the cubin (``analyze/artifact.py``) for every later run, from any
        directory: a name kept from the run that cached them would name another file, or the same file
        two ways, so that the line diff of two cubins matched none of its lines."""
        known = {f.name for f in fields(cls)}
        obj = {k: v for k, v in data.items() if k in known}
        frames = tuple((str(p), int(n)) for p, n in data.get("inlined_frames", ()))
        obj["inlined_frames"] = frames
        obj["inlined_at"] = tuple(str(x) for x in data.get("inlined_at", ()))
        if frames:
            obj["inlined_at"] = tuple(f"{display_path(p)}:{n}" for p, n in frames)
        path = str(data.get("path", ""))
        if path and path != NO_LINE[0]:
            obj["file"] = display_path(path)
        obj["opcodes"] = {str(k): int(v) for k, v in dict(data.get("opcodes", {})).items()}
        return cls(**obj)


_LINE_STATS_FIELDS = tuple(f.name for f in fields(LineStats))  # dataclasses.fields rebuilds it at every call

COUNTS = (
    "instructions",
    "local_loads",
    "local_stores",
    "global_mem",
    "shared_mem",
    "atomic",
    "loop_instructions",
    "loop_local",
)


def line_stats(
    located: Iterable[LineInstruction],
    main_loop_body: frozenset[int] = frozenset(),
    *,
    read_source: bool = True,
    carried: CarriedText | None = None,
) -> tuple[LineStats, ...]:
    """Aggregate located instructions per location, in source order (file, line, chain); each line's text
    from ``carried`` or its file (:func:`source_text`)."""
    acc: dict[tuple[str, int, tuple[tuple[str, int], ...]], dict[str, int]] = {}
    ops: dict[tuple[str, int, tuple[tuple[str, int], ...]], Counter[str]] = {}
    for item in located:
        loc = item.loc
        key = (loc.path, loc.line, loc.inlined_at) if loc is not None else (NO_LINE[0], NO_LINE[1], ())
        counts = acc.setdefault(key, dict.fromkeys(COUNTS, 0))
        opcodes = ops.setdefault(key, Counter())
        inst = item.instruction
        base = inst.base_opcode
        counts["instructions"] += 1
        local = base in (LOCAL_LOAD, LOCAL_STORE)
        counts["local_loads"] += base == LOCAL_LOAD
        counts["local_stores"] += base == LOCAL_STORE
        cls = instruction_class(base)
        if cls is not None:
            opcodes[inst.opcode] += 1
        counts["global_mem"] += cls == "global"
        counts["shared_mem"] += cls == "shared"
        counts["atomic"] += cls == "atomic"
        if inst.address in main_loop_body:
            counts["loop_instructions"] += 1
            counts["loop_local"] += local
    out = []
    for (path, line, chain), counts in acc.items():
        display = path if path == NO_LINE[0] else display_path(path)
        text = source_text(path, line, carried) if read_source and line else ""
        out.append(
            LineStats(
                display,
                line,
                path,
                tuple(f"{display_path(p)}:{n}" for p, n in chain),
                chain,
                text,
                **counts,
                opcodes=dict(sorted(ops[(path, line, chain)].items())),
            )
        )
    return tuple(sorted(out, key=lambda s: (s.file, s.line, s.inlined_at)))


def listing_line_stats(
    listing: str, fn: SassFunction, main_loop_body: frozenset[int] = frozenset(), carried: CarriedText | None = None
) -> tuple[LineStats, ...]:
    """:func:`line_stats` of ``fn`` from the listing it was parsed from (empty without line info)."""
    table = parse_line_table(listing).get(fn.name, {})
    if not table:
        return ()
    return line_stats(located_instructions(fn, table), main_loop_body, carried=carried)


def text_of_lines(stats: Iterable[LineStats]) -> dict[str, dict[int, str]]:
    """The source text of every line of ``stats`` that has one, by the path the cubin names it by: what a
    bundle carries so that a host without those files (the GPU host) still shows and matches the lines."""
    out: dict[str, dict[int, str]] = {}
    for s in stats:
        if s.text and s.line:
            out.setdefault(s.path, {})[s.line] = s.text
    return out


# ---------------------------------------------------------------------------------------------- diff
@dataclass(frozen=True)
class LineDelta:
    """One source line whose counts moved between the reference and the new cubin."""

    file: str
    line: int  # the new side's line (the reference's when the line is gone)
    text: str
    inlined_at: tuple[str, ...]
    ref: LineStats | None
    new: LineStats | None

    def count(self, name: str, side: str) -> int:
        stats = self.ref if side == "ref" else self.new
        return 0 if stats is None else int(getattr(stats, name))

    def delta(self, name: str) -> int:
        return self.count(name, "new") - self.count(name, "ref")

    def opcode_delta(self, cls: str | None = None) -> list[tuple[str, int]]:
        """Per full opcode (of class ``cls``, or of any class), the non-zero changes, largest first."""
        if cls is None:
            return list(self._all_opcode_delta)
        return self._opcode_delta(cls)

    @cached_property
    def _all_opcode_delta(self) -> tuple[tuple[str, int], ...]:
        """Every class's: asked for by the ranking (``impact``) and the report of every line."""
        return tuple(self._opcode_delta(None))

    def _opcode_delta(self, cls: str | None) -> list[tuple[str, int]]:
        a = self.ref.opcodes if self.ref is not None else {}
        b = self.new.opcodes if self.new is not None else {}
        out = [
            (op, b.get(op, 0) - a.get(op, 0))
            for op in set(a) | set(b)
            if cls is None or instruction_class(op.split(".", 1)[0]) == cls
        ]
        return sorted(((op, d) for op, d in out if d), key=lambda kv: (-abs(kv[1]), kv[0]))

    def class_changed(self, cls: str) -> int:
        """How many instructions of the class changed on this line (sum of |delta| per full opcode):
        an LDS that became an LDSM.16.M88 is 2, where the class count moved by 0."""
        return sum(abs(d) for _, d in self.opcode_delta(cls))

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    @cached_property
    def impact(self) -> float:
        """Predicted cost, for ranking (highest first): local-memory traffic inside the main loop
        (per iteration) weighs most, then local memory anywhere, other memory instructions and the
        main loop's length, then instruction count."""
        return (
            8.0 * abs(self.delta("loop_local"))
            + 3.0 * abs(self.delta("local_loads") + self.delta("local_stores"))
            + 2.0 * (abs(self.delta("global_mem")) + abs(self.delta("shared_mem")) + abs(self.delta("atomic")))
            + 1.0 * abs(self.delta("loop_instructions"))
            + 0.25 * abs(self.delta("instructions"))
            + 0.5 * sum(abs(d) for _, d in self.opcode_delta())
        )

    def to_json(self) -> JSONObject:
        # each side's counts read once (a sweep's report has ~650 line deltas of 9 counts each)
        ref = {k: self.count(k, "ref") for k in COUNTS}
        new = {k: self.count(k, "new") for k in COUNTS}
        return {
            "file": self.file,
            "line": self.line,
            "text": self.text,
            "inlined_at": list(self.inlined_at),
            "impact": round(self.impact, 2),
            "ref": ref if self.ref is not None else None,
            "new": new if self.new is not None else None,
            "delta": {k: new[k] - ref[k] for k in COUNTS if new[k] != ref[k]},
            "opcode_delta": {op: d for op, d in self.opcode_delta()},
        }


def match_key(s: LineStats) -> tuple[str, str | int, tuple[str, ...]]:
    """What pairs a line of one toolchain with a line of the other (module docstring)."""
    if is_library(s.file) and s.text:
        chain = tuple(c for c in s.inlined_at if not is_library(c))  # library callers move too
        return (s.file, s.text, chain)
    return (s.file, s.line, s.inlined_at)


def _merge(items: Sequence[LineStats]) -> LineStats:
    if len(items) == 1:
        return items[0]
    first = items[0]
    sums = {k: sum(int(getattr(s, k)) for s in items) for k in COUNTS}
    opcodes: Counter[str] = Counter()
    for s in items:
        opcodes.update(s.opcodes)
    return LineStats(
        first.file,
        first.line,
        first.path,
        first.inlined_at,
        first.inlined_frames,
        first.text,
        **sums,
        opcodes=dict(opcodes),
    )


def pair_lines(ref: Sequence[LineStats], new: Sequence[LineStats]) -> list[tuple[LineStats | None, LineStats | None]]:
    """Every line of either cubin, the reference's and the new one's paired (see the module docstring:
    by position, Triton's library lines by text), in source order of the new side."""
    groups: dict[tuple[str, str | int, tuple[str, ...]], tuple[list[LineStats], list[LineStats]]] = {}
    for side, stats in ((0, ref), (1, new)):
        for s in stats:
            groups.setdefault(match_key(s), ([], []))[side].append(s)
    pairs = [(_merge(a) if a else None, _merge(b) if b else None) for a, b in groups.values()]

    def order(pair: tuple[LineStats | None, LineStats | None]) -> tuple[bool, str, int, tuple[str, ...]]:
        s = pair[1] if pair[1] is not None else pair[0]
        assert s is not None
        return (s.file == NO_LINE[0], s.file, s.line, s.inlined_at)

    return sorted(pairs, key=order)


def line_key(s: LineStats) -> tuple[str, int, tuple[str, ...]]:
    """The location of a LineStats as :func:`loc_key` gives it for an instruction."""
    return (s.file, s.line, s.inlined_at)


def loc_key(loc: SourceLoc | None) -> tuple[str, int, tuple[str, ...]]:
    """The key of the LineStats an instruction at ``loc`` was counted in."""
    if loc is None:
        return (NO_LINE[0], NO_LINE[1], ())
    return (display_path(loc.path), loc.line, tuple(f"{display_path(p)}:{n}" for p, n in loc.inlined_at))


def diff_lines(ref: Sequence[LineStats], new: Sequence[LineStats]) -> list[LineDelta]:
    """The lines whose counts differ, highest predicted impact first (then in source order)."""
    out: list[LineDelta] = []
    for a, b in pair_lines(ref, new):
        if (
            a is not None
            and b is not None
            and all(getattr(a, k) == getattr(b, k) for k in COUNTS)
            and a.opcodes == b.opcodes
        ):
            continue
        shown = b if b is not None else a
        assert shown is not None
        out.append(LineDelta(shown.file, shown.line, shown.text, shown.inlined_at, a, b))
    out.sort(key=lambda d: (-d.impact, d.file, d.line))
    return out


def parse_line_spec(spec: str) -> tuple[str, int, int]:
    """``FILE:LINE`` or ``FILE:FIRST-LAST`` (as ``--lines`` takes it) -> (file, first, last).

    Raises ValueError with what is wrong (the CLI turns it into an error with the fix)."""
    file, sep, rng = spec.rpartition(":")
    if not sep or not file:
        raise ValueError(f"{spec!r} names no line: write FILE:LINE or FILE:FIRST-LAST")
    first_s, dash, last_s = rng.partition("-")
    if not first_s.isdigit() or (dash and not last_s.isdigit()):
        raise ValueError(f"{spec!r}: {rng!r} is not a line or a range of lines")
    first, last = int(first_s), int(last_s) if dash else int(first_s)
    if first < 1 or last < first:
        raise ValueError(f"{spec!r}: the range {first}-{last} is empty")
    return file, first, last


def matches_file(given: str, display: str, path: str = "") -> bool:
    """Whether ``--lines``' FILE names this source file: the display path, the compiled path, or a
    trailing part of either that starts at a ``/`` (``layer_norm.py`` and ``ops/layer_norm.py`` both name
    ``liger_kernel/ops/layer_norm.py``)."""
    given = given.strip()
    for name in (display, path):
        if name and (name == given or name.endswith("/" + given.lstrip("/"))):
            return True
    return False


def in_lines(loc: SourceLoc | None, file: str, first: int, last: int) -> bool:
    """Whether an instruction belongs to those lines: its own location, or a call site it was inlined
    from (a ``tl.sum`` at line 122 belongs to line 122)."""
    if loc is None:
        return False
    frames = ((loc.path, loc.line), *loc.inlined_at)
    return any(first <= n <= last and matches_file(file, display_path(p), p) for p, n in frames)


def compress_ranges(numbers: Iterable[int]) -> str:
    """``122-123, 126`` for a set of line numbers."""
    nums = sorted(set(numbers))
    parts: list[str] = []
    start = prev = None
    for n in nums:
        if start is None:
            start = prev = n
        elif prev is not None and n == prev + 1:
            prev = n
        else:
            parts.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = n
    if start is not None:
        parts.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ", ".join(parts)


@dataclass(frozen=True)
class LineMap:
    """One cubin's function with every instruction located (for the SASS of a line, ``--lines``, the
    profile's per-address samples)."""

    function: str
    instructions: tuple[LineInstruction, ...] = field(default_factory=tuple)

    def of_lines(self, file: str, first: int, last: int) -> list[LineInstruction]:
        return [li for li in self.instructions if in_lines(li.loc, file, first, last)]

    def by_address(self) -> dict[int, SourceLoc | None]:
        return {li.instruction.address: li.loc for li in self.instructions}


def line_map_of_listing(listing: str, fn: SassFunction) -> LineMap:
    return LineMap(fn.name, tuple(located_instructions(fn, parse_line_table(listing).get(fn.name, {}))))


def cubin_line_map(cubin: Path, kernel_name: str, *, cuobjdump: Path, nvdisasm: Path | None) -> LineMap:
    """Disassemble ``cubin`` (the same one call as ``analyze``) and locate ``kernel_name``'s instructions."""
    from ktriage.analyze.cuobjdump import disassemble
    from ktriage.analyze.sass import parse_sass

    listing = disassemble(cubin, cuobjdump=cuobjdump, nvdisasm=nvdisasm)
    funcs = parse_sass(listing)
    fn = funcs.get(kernel_name) or next(iter(funcs.values()), None)
    if fn is None:
        return LineMap(kernel_name)
    return line_map_of_listing(listing, fn)


def instruction_text(inst: SassInstruction) -> str:
    """An instruction as the listing writes it, with its address: ``/*0a40*/ FADD R3, R3, R4``."""
    return f"/*{inst.address:04x}*/ {inst.text}"


__all__ = [
    "LineDelta",
    "LineInstruction",
    "LineMap",
    "LineStats",
    "SourceLoc",
    "compress_ranges",
    "cubin_line_map",
    "diff_lines",
    "display_path",
    "in_lines",
    "instruction_text",
    "line_map_of_listing",
    "line_stats",
    "listing_line_stats",
    "matches_file",
    "parse_line_spec",
    "parse_line_table",
]


# ---------------------------------------------------------------------------------------------- excerpts
_PTX_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"((?:[^"\\]|\\.)*)"')
_PTX_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+\d+(.*)$")
_PTX_INLINED = re.compile(r"inlined_at\s+(\d+)\s+(\d+)")


def ptx_excerpt(ptx: str, file: str, first: int, last: int) -> str:
    """The PTX instructions of those source lines (``.loc`` says which line each comes from; an
    ``inlined_at`` caller in range counts too), as a listing ``diff.normalize_ptx`` reads: for a
    bug report's reproducer-sized diff."""
    return "\n".join(raw for loc, raw in _ptx_instructions(ptx) if in_lines(loc, file, first, last))


@lru_cache(maxsize=16)
def _ptx_instructions(ptx: str) -> tuple[tuple[SourceLoc | None, str], ...]:
    """Each PTX instruction line with the ``.loc`` before it, parsed once per text: a report cites
    several lines of the same kernel."""
    files: dict[str, str] = {}
    for raw in ptx.splitlines():
        if m := _PTX_FILE.match(raw):
            files[m.group(1)] = _unescape(m.group(2))
    out: list[tuple[SourceLoc | None, str]] = []
    loc: SourceLoc | None = None
    for raw in ptx.splitlines():
        if m := _PTX_LOC.match(raw):
            chain = tuple((files.get(f, f), int(n)) for f, n in _PTX_INLINED.findall(m.group(3)))
            loc = SourceLoc(files.get(m.group(1), m.group(1)), int(m.group(2)), chain)
            continue
        text = raw.strip()
        if not text or text.startswith((".", "//", "{", "}", "$")) or not text.endswith(";"):
            continue
        out.append((loc, raw))
    return tuple(out)


def sass_excerpt(line_map: LineMap, file: str, first: int, last: int) -> str:
    """The SASS instructions of those source lines as an nvdisasm-style listing that
    ``sass.parse_sass`` (and so ``diff.normalize_sass``) reads."""
    rows = [
        f"        /*{li.instruction.address:04x}*/                   {li.instruction.text} ;"
        for li in line_map.of_lines(file, first, last)
    ]
    return "\n".join([f'\t.section\t.text.{line_map.function},"ax",@progbits', *rows])


def known_files(stats: Iterable[LineStats]) -> list[str]:
    """The source files with instructions (display paths), for an error that names what exists."""
    return sorted({s.file for s in stats if s.line})
