"""Run cuobjdump on a cubin and parse its resource usage and ELF section flags.

Why: the cubin is the ground truth of what runs; cuobjdump reads registers (`REG`), the stack frame
(`STACK`, what the driver reports as `CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES` and Triton divides by 4
into `n_spills`) and static shared memory without a GPU. It does not know spill bytes: those are
only in the ptxas log (see ptxas_log.py).
"""

from __future__ import annotations

import re
import subprocess
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from ktriage.errors import ToolchainError

_FUNC = re.compile(r"^\s*Function\s+([^:\s]+)\s*:\s*$")
_FIELD = re.compile(r"([A-Z]+(?:\[\d+\])?):(\d+)")
_ELF_TEXT = re.compile(r"^\.text\.(\S+)\s*$")
_ELF_FLAGS = re.compile(r"^bar\s*=\s*(\d+)\s+reg\s*=\s*(\d+)\s+lmem\s*=\s*(\d+)\s+smem\s*=\s*(\d+)")


@dataclass(frozen=True)
class ResourceUsage:
    """One function's line of `cuobjdump --dump-resource-usage`.

    `shared_bytes` is cuobjdump's `SHARED`: the size of the function's `.nv.shared.<fn>` section.
    On sm_90 cubins it includes the 1 KB the driver reserves per block whenever the kernel uses
    shared memory at all (see docs/resources.md); `LOCAL` is a separate, rarely used local segment.
    """

    name: str
    registers: int
    stack_bytes: int
    shared_bytes: int
    local_bytes: int
    constant_bytes: dict[int, int] = field(default_factory=dict)  # bank -> bytes
    raw: dict[str, int] = field(default_factory=dict)  # every KEY:VALUE as printed


@dataclass(frozen=True)
class ElfFlags:
    """Per-function flags cuobjdump -elf prints under `.text.<fn>`: barriers and smem."""

    name: str
    barriers: int
    smem_bytes: int


def parse_resource_usage(text: str) -> dict[str, ResourceUsage]:
    """Parse `cuobjdump --dump-resource-usage` output into one entry per function."""
    result: dict[str, ResourceUsage] = {}
    current: str | None = None
    for line in text.splitlines():
        if m := _FUNC.match(line):
            current = m.group(1)
            continue
        if current is None:
            continue
        fields = {k: int(v) for k, v in _FIELD.findall(line)}
        if "REG" not in fields:
            continue
        consts = {int(k[len("CONSTANT[") : -1]): v for k, v in fields.items() if k.startswith("CONSTANT[")}
        result.setdefault(
            current,
            ResourceUsage(
                name=current,
                registers=fields["REG"],
                stack_bytes=fields.get("STACK", 0),
                shared_bytes=fields.get("SHARED", 0),
                local_bytes=fields.get("LOCAL", 0),
                constant_bytes=consts,
                raw=fields,
            ),
        )
        current = None
    return result


def parse_elf_flags(text: str) -> dict[str, ElfFlags]:
    """Parse the `bar = N reg = 0 lmem=0 smem=S` line cuobjdump -elf prints after `.text.<fn>`."""
    result: dict[str, ElfFlags] = {}
    current: str | None = None
    for line in text.splitlines():
        if m := _ELF_TEXT.match(line):
            current = m.group(1)
            continue
        if current is not None and (m := _ELF_FLAGS.match(line.strip())):
            result.setdefault(current, ElfFlags(current, int(m.group(1)), int(m.group(4))))
            current = None
    return result


def run_cuobjdump(cuobjdump: Path, cubin: Path, *args: str) -> str:
    """Run `cuobjdump <args> <cubin>` and return stdout; failures name the tool and the file."""
    cmd = [str(cuobjdump), *args, str(cubin)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise ToolchainError(
            f"cannot run cuobjdump at {cuobjdump}: {exc}",
            "pass the cuobjdump bundled with Triton (triton/backends/nvidia/bin/cuobjdump)",
        ) from exc
    if proc.returncode != 0:
        raise ToolchainError(
            f"`{' '.join(cmd)}` failed (exit {proc.returncode}): {proc.stderr.strip()[:500]}",
            "check that the file is a cubin for an NVIDIA target that this cuobjdump knows",
        )
    return proc.stdout


# Listings this process made, newest last, up to _LISTING_BYTES of text: analysis disassembles every
# cubin, and the line excerpts of a report (analyze.artifact.cached_line_excerpt) need the same listing
# again moments later; a second nvdisasm run per cited cubin was most of what they added to a cold explain.
_LISTINGS: OrderedDict[tuple[str, str, str, int, int], str] = OrderedDict()
_LISTING_BYTES = 64 << 20
_LISTINGS_LOCK = threading.Lock()


def disassemble(cubin: Path, *, cuobjdump: Path, nvdisasm: Path | None = None) -> str:
    """The cubin's SASS listing: ``nvdisasm -c -ndf -gi`` (no dataflow pass: what every parser here needs,
    at two thirds of the time; ``-gi`` adds the line table's ``//## File ..., line N inlined at ...``
    comments that ``analyze/lines.py`` reads, at no measurable cost) where the toolchain has
    nvdisasm, else ``cuobjdump -sass`` (no line info). A cubin disassembled before in this process (the
    same file, size and modification time, the same tools) is answered from memory."""
    try:
        st = cubin.stat()
    except OSError:
        return _disassemble(cubin, cuobjdump=cuobjdump, nvdisasm=nvdisasm)  # its own error names the file
    key = (str(cubin), str(cuobjdump), str(nvdisasm), st.st_size, st.st_mtime_ns)
    with _LISTINGS_LOCK:
        listing = _LISTINGS.get(key)
        if listing is not None:
            _LISTINGS.move_to_end(key)
            return listing
    listing = _disassemble(cubin, cuobjdump=cuobjdump, nvdisasm=nvdisasm)
    with _LISTINGS_LOCK:
        _LISTINGS[key] = listing
        total = sum(len(v) for v in _LISTINGS.values())
        while total > _LISTING_BYTES and len(_LISTINGS) > 1:
            _, dropped = _LISTINGS.popitem(last=False)
            total -= len(dropped)
    return listing


def _disassemble(cubin: Path, *, cuobjdump: Path, nvdisasm: Path | None) -> str:
    if nvdisasm is None:
        return run_cuobjdump(cuobjdump, cubin, "-sass")
    cmd = [str(nvdisasm), "-c", "-ndf", "-gi", str(cubin)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return run_cuobjdump(cuobjdump, cubin, "-sass")
    if proc.returncode != 0 or not proc.stdout.strip():
        return run_cuobjdump(cuobjdump, cubin, "-sass")  # the same disassembler, through the tool that always works
    return proc.stdout
