"""A side-by-side aligned diff of two PTX or SASS listings, for reports (the explain HTML).

Alignment is ``difflib.SequenceMatcher`` on the normalized lines of :mod:`ktriage.analyze.diff`
(register numbers, labels, addresses and offsets stripped), so only structural changes show; each
side displays its own text as written (SASS: the instruction with its registers; PTX: the line
without comments). Each line carries what a reader looks for: its number, the SASS address, the
base opcode and its instruction class (``sass.INSTRUCTION_CLASSES``), whether it is a local-memory
access (``LDL``/``STL``: spills) and whether it sits in the main loop (``sass_loops``).

Large kernels stay usable: runs of unchanged lines longer than ``2 * context`` are collapsed into
one ``skip`` row (they are equal on both sides after normalization), and one changed run longer
than ``max_run`` rows keeps its head and tail around a ``skip`` row that says how many changed rows
are not shown. PTX register declarations (``.reg .f32 %f<1317>;``) are taken out of the PTX diff
(reports show the declared classes as a table: ``Resources.ptx_registers``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ktriage.analyze.diff import normalize_ptx, normalize_sass
from ktriage.analyze.sass import LOCAL_LOAD, LOCAL_STORE, instruction_class, parse_sass

Tag = Literal["equal", "replace", "delete", "insert", "skip"]
_DECL = re.compile(r"^\.reg\s")


@dataclass(frozen=True)
class DiffLine:
    """One line of one side."""

    number: int  # 1-based position in the (normalized) listing
    text: str  # as displayed
    key: str  # normalized: what the alignment compares
    address: int | None = None  # SASS only
    opcode: str | None = None  # SASS base opcode, PTX instruction (first word)
    cls: str | None = None  # SASS instruction class
    main_loop: bool = False
    spill: bool = False  # LDL / STL (SASS), ld.local / st.local (PTX)


@dataclass(frozen=True)
class DiffRow:
    tag: Tag
    a: DiffLine | None = None
    b: DiffLine | None = None
    skipped: int = 0  # for tag "skip": rows not shown
    changed_skipped: bool = False  # the skipped rows are changed ones (a long changed run cut)

    @property
    def class_changed(self) -> bool:
        """A replace row whose two sides differ in opcode or instruction class (REDG -> ATOMG), not
        only in operands; one-sided rows are coloured as such already."""
        if self.tag == "replace" and self.a is not None and self.b is not None:
            return (self.a.cls, self.a.opcode) != (self.b.cls, self.b.opcode)
        return False


@dataclass
class SideDiff:
    kind: str  # "ptx" or "sass"
    rows: list[DiffRow] = field(default_factory=list)
    a_lines: int = 0
    b_lines: int = 0
    removed: int = 0
    added: int = 0
    hunks: int = 0

    @property
    def identical(self) -> bool:
        return self.removed == 0 and self.added == 0

    def first(self, pred: Callable[[DiffRow], bool]) -> int | None:
        """Index of the first row matching ``pred`` (for links to the line that shows a finding)."""
        return next((i for i, r in enumerate(self.rows) if pred(r)), None)


def ptx_lines(text: str) -> tuple[list[DiffLine], list[str]]:
    """The PTX lines to diff, and the register declarations taken out of them."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.DOTALL)
    text = re.sub(r"^\s*\.section\s+\.debug\w*\s*\{.*?\}", "", text, flags=re.DOTALL | re.MULTILINE)
    lines: list[DiffLine] = []
    decls: list[str] = []
    for raw in text.splitlines():
        norm = normalize_ptx(raw)
        if not norm:
            continue
        shown = " ".join(re.sub(r"//.*", "", raw).split())
        if _DECL.match(norm[0]):
            decls.append(shown)
            continue
        words = norm[0].split()
        op = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
        spill = op.startswith(("ld.local", "st.local"))
        lines.append(DiffLine(len(lines) + 1, shown, norm[0], opcode=op, spill=spill))
    return lines, decls


def sass_lines(text: str, *, function: str | None = None, main_loop: tuple[int, int] | None = None) -> list[DiffLine]:
    """The SASS instructions of ``function`` (or the first), with address, class, spill and loop marks."""
    funcs = parse_sass(text)
    if not funcs:
        return []
    name = function if function in funcs else next(iter(funcs))
    keys = normalize_sass(text, function=name)
    out = []
    for n, (inst, key) in enumerate(zip(funcs[name].instructions, keys), start=1):
        base = inst.base_opcode
        inside = main_loop is not None and main_loop[0] <= inst.address <= main_loop[1]
        out.append(
            DiffLine(
                n,
                f"/*{inst.address:04x}*/ {inst.text}",
                key,
                address=inst.address,
                opcode=base,
                cls=instruction_class(base),
                main_loop=inside,
                spill=base in (LOCAL_LOAD, LOCAL_STORE),
            )
        )
    return out


def align(a: Sequence[DiffLine], b: Sequence[DiffLine], *, kind: str, context: int = 3, max_run: int = 400) -> SideDiff:
    """Align two line lists (see the module docstring for collapsing)."""
    matcher = difflib.SequenceMatcher(a=[x.key for x in a], b=[x.key for x in b], autojunk=False)
    diff = SideDiff(kind, a_lines=len(a), b_lines=len(b))
    opcodes = matcher.get_opcodes()
    for n, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag == "equal":
            rows = [DiffRow("equal", a[i1 + k], b[j1 + k]) for k in range(i2 - i1)]
            head = context if n > 0 else 0
            tail = context if n < len(opcodes) - 1 else 0
            if len(rows) > head + tail + 1:
                diff.rows += rows[:head]
                diff.rows.append(DiffRow("skip", skipped=len(rows) - head - tail))
                diff.rows += rows[len(rows) - tail :] if tail else []
            else:
                diff.rows += rows
            continue
        diff.hunks += 1
        diff.removed += i2 - i1
        diff.added += j2 - j1
        changed: list[DiffRow] = []
        for k in range(max(i2 - i1, j2 - j1)):
            la = a[i1 + k] if i1 + k < i2 else None
            lb = b[j1 + k] if j1 + k < j2 else None
            changed.append(DiffRow("replace" if la and lb else "delete" if la else "insert", la, lb))
        if len(changed) > max_run:
            keep_head, keep_tail = max_run * 3 // 4, max_run // 4
            cut = len(changed) - keep_head - keep_tail
            changed = [*changed[:keep_head], DiffRow("skip", skipped=cut, changed_skipped=True), *changed[-keep_tail:]]
        diff.rows += changed
    return diff


def ptx_side_diff(
    a_text: str, b_text: str, *, context: int = 3, max_run: int = 400
) -> tuple[SideDiff, list[str], list[str]]:
    """The PTX diff and each side's register declarations."""
    a, a_decls = ptx_lines(a_text)
    b, b_decls = ptx_lines(b_text)
    return align(a, b, kind="ptx", context=context, max_run=max_run), a_decls, b_decls


def sass_side_diff(
    a_text: str,
    b_text: str,
    *,
    function: str | None = None,
    a_loop: tuple[int, int] | None = None,
    b_loop: tuple[int, int] | None = None,
    context: int = 3,
    max_run: int = 400,
) -> SideDiff:
    """The SASS diff of ``function`` with each side's main loop (address span) marked."""
    return align(
        sass_lines(a_text, function=function, main_loop=a_loop),
        sass_lines(b_text, function=function, main_loop=b_loop),
        kind="sass",
        context=context,
        max_run=max_run,
    )
