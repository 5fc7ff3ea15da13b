"""Read what a PTX module declares: header, entry parameters, launch bounds, virtual registers.

Why: the compile stage needs the entry's parameter list (the launch ABI, including the hidden scratch
pointers Triton appends), and `explain` shows the declared virtual registers next to the registers
ptxas allocated. The two are different things: `.reg .b32 %r<2918>;` only says that LLVM numbered
2918 virtual registers of that class; ptxas allocates at most 255 hardware registers per thread.
A change in the declared classes (3.3.1 declares `.f32`, 3.4.0 only `.b32`, after LLVM's NVPTX
float-register removal) is a frontend change worth reporting, not a register-usage number.

Pure text parsing, no tools needed. A leaf module (it imports only ``ktriage.errors``) because both
``compile`` (``compile/abi.py``: the launch ABI) and ``analyze`` (``analyze/resources.py``) read PTX,
and ``analyze`` sits above ``compile`` (docs/architecture.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ktriage.errors import CompileError

_VERSION = re.compile(r"^\s*\.version\s+(\d+\.\d+)", re.MULTILINE)
_TARGET = re.compile(r"^\s*\.target\s+([^\n/]+)", re.MULTILINE)
_ADDRESS_SIZE = re.compile(r"^\s*\.address_size\s+(\d+)", re.MULTILINE)
# `.visible .entry name(` / `.func (.param .b32 ret) name(` / `.weak .func name(`
_FUNC_HEAD = re.compile(
    r"^[ \t]*(?:\.(?:visible|extern|weak)[ \t]+)*\.(entry|func)[ \t]*(?:\([^)]*\)[ \t]*)?([A-Za-z_$%][\w$%]*)",
    re.MULTILINE,
)
_REG_DECL = re.compile(r"^\s*\.reg\s+\.(\w+)\s+(.+?);")
_REG_RANGE = re.compile(r"^\s*[%\w$]+<(\d+)>\s*$")
_BRACE = re.compile(r"[{}]")
_PARAM = re.compile(r"\.param\s+(.*?)\s*([A-Za-z_$%][\w$%]*)\s*(?:\[(\d+)\])?\s*$")
_BOUND = re.compile(
    r"^\s*\.(maxnreg|reqntid|maxntid|minnctapersm|maxclusterrank|reqnctapercluster)\s+([\d,\s]+)",
    re.MULTILINE,
)


@dataclass(frozen=True)
class PtxParam:
    """One kernel parameter as PTX declares it; `ptx_type` is e.g. `u64`, `u32`, `b8`."""

    name: str
    ptx_type: str
    is_pointer: bool = False
    state_space: str | None = None  # `global`, `shared`, ... for `.ptr` params
    align: int | None = None
    array_len: int | None = None  # `.param .align 8 .b8 p[16]` (by-value aggregates)

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "ptx_type": self.ptx_type,
            "is_pointer": self.is_pointer,
            "state_space": self.state_space,
            "align": self.align,
            "array_len": self.array_len,
        }


@dataclass(frozen=True)
class PtxFunction:
    """An `.entry` (kernel) or `.func` (device function) of a PTX module."""

    name: str
    is_entry: bool
    params: tuple[PtxParam, ...]
    registers: dict[str, int] = field(default_factory=dict)  # class (`b32`, `f32`, `pred`...) -> count
    maxnreg: int | None = None
    reqntid: tuple[int, ...] | None = None
    maxntid: tuple[int, ...] | None = None
    instructions: int = 0

    @property
    def registers_total(self) -> int:
        return sum(self.registers.values())


@dataclass(frozen=True)
class PtxModule:
    """A parsed PTX module: header plus its functions in source order."""

    version: str | None
    target: str | None
    address_size: int | None
    functions: tuple[PtxFunction, ...]

    def function(self, name: str) -> PtxFunction:
        """The function called `name`; a clear error lists the ones that exist."""
        for fn in self.functions:
            if fn.name == name:
                return fn
        have = ", ".join(f.name for f in self.functions) or "none"
        raise CompileError(
            f"PTX has no function named {name!r} (functions: {have})",
            "pass the kernel name exactly as Triton compiled it (metadata `name`)",
        )

    @property
    def entries(self) -> tuple[PtxFunction, ...]:
        return tuple(f for f in self.functions if f.is_entry)


def strip_comments(text: str) -> str:
    """Remove `//` and `/* */` comments (PTX uses both)."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.DOTALL)
    return re.sub(r"//[^\n]*", "", text)


def _parse_param(decl: str) -> PtxParam:
    decl = " ".join(decl.split())
    m = _PARAM.search(decl)
    if not m:
        raise ValueError(f"unrecognized PTX parameter: {decl!r}")
    words = m.group(1).split()
    ptx_type = next((w[1:] for w in words if re.fullmatch(r"\.[busf]\d+|\.pred", w)), "")
    space = next((w[1:] for w in words if w in (".global", ".shared", ".const", ".local")), None)
    align = None
    if ".align" in words:
        idx = words.index(".align")
        align = int(words[idx + 1]) if idx + 1 < len(words) else None
    return PtxParam(
        name=m.group(2),
        ptx_type=ptx_type,
        is_pointer=".ptr" in words,
        state_space=space,
        align=align,
        array_len=int(m.group(3)) if m.group(3) else None,
    )


def _split_params(paren_body: str) -> list[str]:
    return [p.strip() for p in paren_body.split(",") if p.strip()]


def _count_registers(body: str) -> dict[str, int]:
    """Declared registers of the function's top-level scope (depth 1), per class.

    Nested `{ .reg .b32 %tmp; }` scopes come from inline asm; they are tiny and not what
    `%r<N>` counts mean, so they are left out.
    """
    counts: dict[str, int] = {}
    depth = 0
    for line in body.splitlines():
        if depth == 1:
            m = _REG_DECL.match(line)
            if m:
                cls, names = m.group(1), m.group(2)
                n = 0
                for item in names.split(","):
                    r = _REG_RANGE.match(item)
                    n += int(r.group(1)) if r else 1
                counts[cls] = counts.get(cls, 0) + n
        depth += line.count("{") - line.count("}")
    return counts


def _count_instructions(body: str) -> int:
    """Statements that are instructions: not directives (`.reg`, `.loc`), labels or braces."""
    count = 0
    for stmt in body.replace("{", ";").replace("}", ";").split(";"):
        stmt = stmt.strip()
        # a label may precede an instruction on the same statement: `$L__BB0_1: add.s32 ...`
        while True:
            m = re.match(r"^[$\w.]+:\s*", stmt)
            if not m:
                break
            stmt = stmt[m.end() :]
        if stmt and not stmt.startswith("."):
            count += 1
    return count


def _bound(header: str, name: str) -> tuple[int, ...] | None:
    for m in _BOUND.finditer(header):
        if m.group(1) == name:
            return tuple(int(x) for x in m.group(2).replace(",", " ").split())
    return None


def parse_ptx(text: str) -> PtxModule:
    """Parse a PTX module's header and every `.entry`/`.func` in it."""
    clean = strip_comments(text)
    # drop debug sections (`.section .debug_info { ... }`): they hold no code
    clean = re.sub(r"^\s*\.section\s+\.debug\w*\s*\{.*?\}", "", clean, flags=re.DOTALL | re.MULTILINE)
    functions: list[PtxFunction] = []
    for m in _FUNC_HEAD.finditer(clean):
        kind, name = m.group(1), m.group(2)
        pos = m.end()
        # parameter list `( ... )` right after the name (may be absent for `.func f()`)
        rest = clean[pos:]
        params: list[PtxParam] = []
        pm = re.match(r"\s*\(", rest)
        if pm:
            close = rest.index(")", pm.end())
            params = [_parse_param(p) for p in _split_params(rest[pm.end() : close])]
            pos += close + 1
        if clean[pos:].lstrip().startswith(";"):
            continue  # a prototype (`.extern .func f(...);`), no body
        brace = clean.find("{", pos)
        if brace < 0:
            continue
        header = clean[pos:brace]
        # matching closing brace (scanning brace to brace: a per-character loop cost ~0.1 s per
        # kernel, paid by every analysis and launch ABI); unbalanced: the body runs to the end
        depth, end = 0, len(clean)
        for b in _BRACE.finditer(clean, brace):
            depth += 1 if b.group() == "{" else -1
            if depth == 0:
                end = b.start()
                break
        body = clean[brace : end + 1]
        maxnreg = _bound(header, "maxnreg")
        functions.append(
            PtxFunction(
                name=name,
                is_entry=kind == "entry",
                params=tuple(params),
                registers=_count_registers(body),
                maxnreg=maxnreg[0] if maxnreg else None,
                reqntid=_bound(header, "reqntid"),
                maxntid=_bound(header, "maxntid"),
                instructions=_count_instructions(body[1:-1]),
            )
        )
    v, t, a = _VERSION.search(clean), _TARGET.search(clean), _ADDRESS_SIZE.search(clean)
    return PtxModule(
        version=v.group(1) if v else None,
        target=t.group(1).strip() if t else None,
        address_size=int(a.group(1)) if a else None,
        functions=tuple(functions),
    )
