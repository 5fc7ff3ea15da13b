"""Compare two kernels: SASS opcode deltas, and PTX/SASS diffs aligned on structure.

Why: a raw `diff` of two compilers' PTX or SASS differs on nearly every line (register numbers,
addresses, encodings, debug line info), which hides the few lines that matter. Normalizing those
away first leaves the structural changes: an instruction that appeared, a type that changed, a
loop that got longer. `opcode_delta` is the one-line summary (`REDG -8, ATOMG +8`).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Literal

from ktriage.analyze.resources import Resources
from ktriage.analyze.sass import parse_sass
from ktriage.wording import plural

Kind = Literal["ptx", "sass"]


def opcode_delta(a: Resources, b: Resources) -> dict[str, int]:
    """Count change per base opcode from `a` to `b`: non-zero only, largest |delta| first."""
    keys = set(a.sass_opcodes) | set(b.sass_opcodes)
    delta = {k: b.sass_opcodes.get(k, 0) - a.sass_opcodes.get(k, 0) for k in keys}
    return dict(sorted(((k, v) for k, v in delta.items() if v), key=lambda kv: (-abs(kv[1]), kv[0])))


def format_opcode_delta(delta: dict[str, int], *, limit: int | None = None) -> str:
    """`REDG -8, ATOMG +8` (in the order given; `limit` keeps the first N and says how many more)."""
    items = list(delta.items())
    shown = items if limit is None else items[:limit]
    text = ", ".join(f"{k} {v:+d}" for k, v in shown)
    if limit is not None and len(items) > limit:
        text += f", … {len(items) - limit} more"
    return text or "no change"


# ---------------------------------------------------------------------------------------------
# normalization


_PTX_DROP = re.compile(
    r"^\s*(?:\.loc\b|\.file\b|// begin inline asm|// end inline asm|\$L__(?:tmp|func_begin|func_end)\w*:)"
)
_PTX_REG = re.compile(r"%[a-z]+\d+\b")
_PTX_BB = re.compile(r"\$L__BB\d+_\d+")
_PTX_REG_DECL = re.compile(r"(\.reg\s+\.\w+\s+%\w+)<\d+>")


def normalize_ptx(text: str) -> list[str]:
    """PTX lines without what always differs between builds.

    Dropped: comments, blank lines, `.loc`/`.file` line info, debug sections, inline-asm markers,
    debug labels. Rewritten: virtual register names (`%r123`, `%rd4`, `%f7` -> `%r`, `%rd`,
    `%f`), basic-block labels (`$L__BB0_3` -> `$L__BB`), declared register counts
    (`%r<2918>` -> `%r<N>`), whitespace. The register *class* letter is kept, so 3.3.1's `%f`
    vs 3.4.0's `%r` for floats stays visible, as do instruction types (`.f32` vs `.b32`).
    """
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.DOTALL)
    text = re.sub(r"^\s*\.section\s+\.debug\w*\s*\{.*?\}", "", text, flags=re.DOTALL | re.MULTILINE)
    out: list[str] = []
    for line in text.splitlines():
        if _PTX_DROP.match(line):
            continue
        line = re.sub(r"//.*", "", line)
        line = _PTX_REG_DECL.sub(r"\1<N>", line)
        line = _PTX_REG.sub(lambda m: re.sub(r"\d+", "", m.group(0)), line)
        line = _PTX_BB.sub("$L__BB", line)
        line = " ".join(line.split())
        if line:
            out.append(line)
    return out


_SASS_REG = re.compile(r"\b(U?R)(?:\d+|Z)\b(?:\.reuse)?")
_SASS_PRED = re.compile(r"\b(U?P)\d\b")
_SASS_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
_SASS_LABEL = re.compile(r"\.L_x_\d+")


def _normalize_sass_operands(text: str) -> str:
    text = _SASS_REG.sub(lambda m: m.group(0) if m.group(0).endswith("Z") else m.group(1), text)
    text = text.replace(".reuse", "")
    text = _SASS_PRED.sub(r"\1", text)
    text = _SASS_HEX.sub("0x?", text)
    text = _SASS_LABEL.sub(".L", text)
    return " ".join(text.split())


def normalize_sass(text: str, *, function: str | None = None) -> list[str]:
    """SASS instructions (one per line) without addresses, encodings, register numbers, offsets.

    Takes a `cuobjdump -sass` or `nvdisasm -c` listing; picks `function` (or the only / first one).
    Kept: predicates' polarity (`@!P`), opcodes with modifiers, operand shapes (`RZ` and `PT` are
    kept since they mean "no result"); tail padding is dropped (see sass.py).
    """
    funcs = parse_sass(text)
    if not funcs:
        return []
    fn = funcs[function] if function is not None else next(iter(funcs.values()))
    out = []
    for inst in fn.instructions:
        pred = f"{_normalize_sass_operands(inst.predicate)} " if inst.predicate else ""
        out.append(f"{pred}{inst.opcode} {_normalize_sass_operands(inst.operands)}".rstrip())
    return out


def normalize(text: str, kind: Kind, *, function: str | None = None) -> list[str]:
    """Normalize `text` as PTX or SASS (see `normalize_ptx`, `normalize_sass`)."""
    if kind == "ptx":
        return normalize_ptx(text)
    if kind == "sass":
        return normalize_sass(text, function=function)
    raise ValueError(f"kind must be 'ptx' or 'sass', not {kind!r}")


# ---------------------------------------------------------------------------------------------
# diff


def aligned_diff(
    a_text: str,
    b_text: str,
    *,
    kind: Kind,
    context: int = 3,
    function: str | None = None,
    a_label: str = "a",
    b_label: str = "b",
) -> str:
    """A unified diff of the normalized texts: only structural changes remain (empty if none)."""
    a_lines = normalize(a_text, kind, function=function)
    b_lines = normalize(b_text, kind, function=function)
    return "\n".join(difflib.unified_diff(a_lines, b_lines, fromfile=a_label, tofile=b_label, n=context, lineterm=""))


@dataclass(frozen=True)
class DiffSummary:
    """How much two normalized listings differ."""

    kind: str
    a_lines: int
    b_lines: int
    removed: int  # lines only in a
    added: int  # lines only in b
    hunks: int  # contiguous changed regions

    @property
    def unchanged(self) -> int:
        return self.a_lines - self.removed

    @property
    def is_identical(self) -> bool:
        return self.removed == 0 and self.added == 0

    def __str__(self) -> str:
        if self.is_identical:
            return f"{self.kind.upper()} identical after normalization ({self.a_lines} lines)"
        return (
            f"{self.kind.upper()}: {self.removed} of {self.a_lines} lines removed, {self.added} of "
            f"{self.b_lines} added, in {plural(self.hunks, 'place')}"
        )


def diff_summary(a_text: str, b_text: str, *, kind: Kind, function: str | None = None) -> DiffSummary:
    """Count differing lines of the normalized texts (same normalization as `aligned_diff`)."""
    a_lines = normalize(a_text, kind, function=function)
    b_lines = normalize(b_text, kind, function=function)
    matcher = difflib.SequenceMatcher(a=a_lines, b=b_lines, autojunk=False)
    removed = added = hunks = 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        hunks += 1
        removed += i2 - i1
        added += j2 - j1
    return DiffSummary(kind=kind, a_lines=len(a_lines), b_lines=len(b_lines), removed=removed, added=added, hunks=hunks)
