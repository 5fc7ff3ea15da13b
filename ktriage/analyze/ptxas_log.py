"""Parse the `ptxas -v` log: the only place that states spill store/load bytes.

Why: the cubin records registers and the stack frame (cuobjdump shows them), but not how many of
those stack bytes are spill traffic; only ptxas's verbose log says so. Triton runs ptxas with `-v`
but throws the log away on success (3.3/3.4), so the compile stage must keep it and hand it here.

Formats seen (one function per block; several blocks when a module has several functions):

    ptxas info    : 0 bytes gmem
    ptxas info    : Compiling entry function 'red_kernel' for 'sm_90a'
    ptxas info    : Function properties for red_kernel
        88 bytes stack frame, 128 bytes spill stores, 96 bytes spill loads
    ptxas info    : Used 255 registers, used 1 barriers, 88 bytes cumulative stack size   (12.8+)
    ptxas info    : Used 255 registers, 88 bytes cumulative stack size                    (12.4)
    ptxas info    : Used 24 registers, 16 bytes smem, 480 bytes cmem[0], 8 bytes cmem[2]  (older)

A "Function properties for helper" block without "Compiling" describes a device function (.func).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ktriage.errors import CompileError

_COMPILING = re.compile(r"Compiling (entry )?function '([^']+)'(?: for '([^']+)')?")
_PROPS = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(.*)$")
_GMEM = re.compile(r"info\s*:\s*(\d+) bytes gmem(.*)$")
_BARRIERS = re.compile(r"used (\d+) barriers")
_CUM_STACK = re.compile(r"(\d+) bytes cumulative stack size")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[(\d+)\]")


@dataclass(frozen=True)
class PtxasFunctionInfo:
    """What `ptxas -v` says about one function. Fields the log did not print are None."""

    name: str
    is_entry: bool
    arch: str | None = None
    registers: int | None = None
    stack_frame_bytes: int | None = None
    spill_store_bytes: int | None = None
    spill_load_bytes: int | None = None
    barriers: int | None = None  # only ptxas >= 12.8 prints "used N barriers"
    cumulative_stack_bytes: int | None = None
    smem_bytes: int | None = None  # static shared only; Triton's extern shared is not in it
    cmem_bytes: dict[int, int] = field(default_factory=dict)  # constant bank -> bytes


@dataclass(frozen=True)
class PtxasLog:
    """A whole `ptxas -v` log: module-level gmem/cmem plus one entry per function."""

    gmem_bytes: int | None
    module_cmem_bytes: dict[int, int]
    functions: dict[str, PtxasFunctionInfo]

    def function(self, name: str) -> PtxasFunctionInfo:
        """The info for `name`; a clear error lists the functions the log has."""
        try:
            return self.functions[name]
        except KeyError:
            have = ", ".join(self.functions) or "none"
            raise CompileError(
                f"the ptxas log has no function named {name!r} (functions: {have})",
                "pass the log of the ptxas run that produced this kernel's cubin",
            ) from None


def parse_ptxas_log(text: str) -> PtxasLog:
    """Parse every function block of a `ptxas -v` log (12.4 and 12.8+ formats)."""
    funcs: dict[str, dict[str, object]] = {}
    gmem: int | None = None
    module_cmem: dict[int, int] = {}
    compiling: str | None = None  # function whose "Used ..." line comes next
    props_for: str | None = None  # function whose stack-frame line comes next

    def entry(name: str) -> dict[str, object]:
        return funcs.setdefault(name, {"name": name, "is_entry": False, "cmem_bytes": {}})

    for line in text.splitlines():
        if m := _GMEM.search(line):
            gmem = int(m.group(1))
            module_cmem = {int(b): int(n) for n, b in _CMEM.findall(m.group(2))}
        elif m := _COMPILING.search(line):
            compiling = m.group(2)
            e = entry(compiling)
            e["is_entry"] = bool(m.group(1))
            e["arch"] = m.group(3)
        elif m := _PROPS.search(line):
            props_for = m.group(1)
            entry(props_for)
        elif m := _FRAME.search(line):
            if props_for is not None:
                e = entry(props_for)
                e["stack_frame_bytes"], e["spill_store_bytes"], e["spill_load_bytes"] = (
                    int(m.group(1)),
                    int(m.group(2)),
                    int(m.group(3)),
                )
                props_for = None
        elif m := _USED.search(line):
            if compiling is None:
                continue
            e = entry(compiling)
            e["registers"] = int(m.group(1))
            rest = m.group(2)
            if b := _BARRIERS.search(rest):
                e["barriers"] = int(b.group(1))
            if c := _CUM_STACK.search(rest):
                e["cumulative_stack_bytes"] = int(c.group(1))
            if s := _SMEM.search(rest):
                e["smem_bytes"] = int(s.group(1))
            e["cmem_bytes"] = {int(b): int(n) for n, b in _CMEM.findall(rest)}
            compiling = None
    infos = {name: PtxasFunctionInfo(**fields) for name, fields in funcs.items()}  # type: ignore[arg-type]
    return PtxasLog(gmem_bytes=gmem, module_cmem_bytes=module_cmem, functions=infos)
