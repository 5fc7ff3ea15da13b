"""Parse SASS listings (`cuobjdump -sass` or `nvdisasm -c`) into instructions and opcode histograms.

Why: a regression often shows first as an opcode that appears or disappears: `LDL`/`STL` (local
memory: spills or local arrays), `REDG` turning into `ATOMG` (an atomic whose result is unused
no longer lowered to a reduction), `HGMMA` vs `HMMA`. Counting base opcodes makes those visible
without reading thousands of lines.

Instruction count: every instruction of the function except the tail padding, i.e. the NOPs
after the end and the `BRA` to itself that the assembler places after the last `EXIT` (a
trap for run-away warps). That padding only rounds code size up to an alignment and changes
with unrelated code size, so counting it would create fake deltas. The padding count is kept
(`padding`) for anyone who wants the raw number.

Instruction classes: base opcodes hide changes that live in the modifiers (`LDG.E.128` becoming
two `LDG.E.64`, an eviction hint `.EF` appearing, `.STRONG.GPU` vs `.STRONG.SYS`, `MEMBAR.ALL.CTA`
becoming `CCTL.IVALL`). For the instructions where modifiers carry cache policy, width, scope or
tensor-core shape (memory, atomics, tensor cores, synchronization), `class_histogram` keeps the
full opcode per class, so a comparison can say which variant replaced which.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

_CUOBJ_FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)")
_NVDIS_FUNC = re.compile(r"^\s*\.section\s+\.text\.([^,\s]+)")
_ARCH = re.compile(r"code for (sm_\w+)")
_ARCH_FLAG = re.compile(r"EF_CUDA_SM(\d+)")  # nvdisasm prints only the ELF header flags
_ARCH_TARGET = re.compile(r"^\s*\.target\s+(sm_\w+)")  # ... or, for newer ELF layouts, a .target line
_INSTR = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s+(.*?)\s*;")
_LABEL = re.compile(r"^\s*(\.L_\w+|\.text\.[\w.$]+|[A-Za-z_$][\w$]*):\s*$")
_PRED = re.compile(r"^@!?U?P(?:T|\d+)\s+")
_HEX_TARGET = re.compile(r"^BRA(?:\.\S+)?\s+0x([0-9a-fA-F]+)\s*$")
_LABEL_TARGET = re.compile(r"^BRA(?:\.\S+)?\s+`?\(?(\.L_\w+)\)?`?\s*$")

LOCAL_LOAD = "LDL"
LOCAL_STORE = "STL"

# Base opcodes whose modifiers matter, by class. Chosen from what ptxas 12.4-12.8 emits for sm_80,
# sm_90a and sm_100a (tests/data/resources/*.sass, Triton matmul/reduction/atomic/embedding
# kernels): cp.async is LDGSTS, TMA is UTMALDG/UTMASTG (UBLK* for bulk copies), wgmma is HGMMA
# (IGMMA/QGMMA for int8/fp8), tcgen05 is UTC*MMA with LDTM/STTM for tensor memory, mbarriers are
# SYNCS. One class holds the instructions that replace each other (REDG <-> ATOMG, HMMA <-> HGMMA,
# LDG <-> LDGSTS <-> UTMALDG, MEMBAR <-> CCTL) so that a delta can pair them.
INSTRUCTION_CLASSES: dict[str, tuple[str, ...]] = {
    "global": (
        "LDG",
        "STG",
        "LD",
        "ST",
        "LDGSTS",
        "UTMALDG",
        "UTMASTG",
        "UTMAPF",
        "UTMAREDG",
        "UBLKCP",
        "UBLKPF",
        "UBLKRED",
    ),
    "atomic": ("ATOM", "ATOMG", "ATOMS", "RED", "REDG", "REDAS"),
    "shared": ("LDS", "STS", "LDSM", "STSM"),
    "local": ("LDL", "STL"),
    "tensor": (
        "HMMA",
        "IMMA",
        "DMMA",
        "BMMA",
        "HGMMA",
        "IGMMA",
        "QGMMA",
        "BGMMA",
        "UTCHMMA",
        "UTCIMMA",
        "UTCQMMA",
        "UTCOMMA",
        "UTCMMA",
        "LDTM",
        "STTM",
        "UTCBAR",
        "UTCCP",
    ),
    "sync": (
        "BAR",
        "MEMBAR",
        "ERRBAR",
        "CGAERRBAR",
        "FENCE",
        "CCTL",
        "SYNCS",
        "DEPBAR",
        "LDGDEPBAR",
        "WARPGROUP",
        "ARRIVES",
        "UCGABAR_ARV",
        "UCGABAR_WAIT",
        "UTMACCTL",
        "UTMACMDFLUSH",
    ),
}
_CLASS_OF = {op: name for name, ops in INSTRUCTION_CLASSES.items() for op in ops}
# Classes whose instructions move data or do the math: what a main loop is made of (sass_loops.py).
WORK_CLASSES = frozenset({"global", "atomic", "shared", "local", "tensor"})


# registers a `.64`/`.128` modifier spans, on an opcode (`LDG.E.128`) or an operand (`R4.64`); `.WIDE` on an opcode
VECTOR_REGISTERS = {"64": 2, "128": 4, "WIDE": 2}


def instruction_class(base_opcode: str) -> str | None:
    """The class (`global`, `atomic`, `shared`, `local`, `tensor`, `sync`) of a base opcode, or None."""
    return _CLASS_OF.get(base_opcode)


@dataclass(frozen=True)
class SassInstruction:
    """One SASS instruction: `@P0 LDG.E R0, desc[UR4][R4.64]` -> predicate, opcode, operands."""

    address: int
    opcode: str  # with modifiers, e.g. `ATOMG.E.ADD.F32.FTZ.RN.STRONG.GPU`
    operands: str
    predicate: str | None = None

    @property
    def base_opcode(self) -> str:
        """The opcode without modifiers: `ATOMG.E.ADD.F32` -> `ATOMG`."""
        return self.opcode.split(".", 1)[0]

    @property
    def destination_registers(self) -> int:
        """Consecutive registers the destination spans, from the opcode's modifiers: 2 for ``.64`` and
        ``.WIDE`` (``IMAD.WIDE``), 4 for ``.128`` (``LDG.E.128``, ``LDS.128``), else 1."""
        mods = self.opcode.split(".")[1:]
        return next((VECTOR_REGISTERS[m] for m in mods if m in VECTOR_REGISTERS), 1)

    @property
    def text(self) -> str:
        pred = f"{self.predicate} " if self.predicate else ""
        return f"{pred}{self.opcode} {self.operands}".rstrip()


@dataclass(frozen=True)
class SassFunction:
    """The SASS of one function, padding removed (see module docstring)."""

    name: str
    arch: str | None
    instructions: tuple[SassInstruction, ...]
    padding: int = 0
    labels: dict[str, int] = field(default_factory=dict, compare=False)  # nvdisasm label -> address

    @property
    def instruction_count(self) -> int:
        return len(self.instructions)

    def opcode_histogram(self, *, with_modifiers: bool = False) -> dict[str, int]:
        """Counts per opcode, most frequent first; base opcodes unless `with_modifiers`."""
        counts = Counter(i.opcode if with_modifiers else i.base_opcode for i in self.instructions)
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def class_histogram(self) -> dict[str, dict[str, int]]:
        """Per instruction class, counts per full opcode (modifiers kept), most frequent first.

        Only the classes of `INSTRUCTION_CLASSES`, only classes present, in that table's order.
        """
        counts: dict[str, Counter[str]] = {}
        for inst in self.instructions:
            name = instruction_class(inst.base_opcode)
            if name is not None:
                counts.setdefault(name, Counter())[inst.opcode] += 1
        return {
            name: dict(sorted(counts[name].items(), key=lambda kv: (-kv[1], kv[0])))
            for name in INSTRUCTION_CLASSES
            if name in counts
        }

    @property
    def local_loads(self) -> int:
        return sum(1 for i in self.instructions if i.base_opcode == LOCAL_LOAD)

    @property
    def local_stores(self) -> int:
        return sum(1 for i in self.instructions if i.base_opcode == LOCAL_STORE)


def parse_instruction(address: int, text: str) -> SassInstruction:
    """Split one instruction's text (without `;`) into predicate, opcode and operands."""
    text = text.strip()
    predicate = None
    if m := _PRED.match(text):
        predicate = m.group(0).strip()
        text = text[m.end() :]
    opcode, _, operands = text.partition(" ")
    return SassInstruction(address=address, opcode=opcode, operands=operands.strip(), predicate=predicate)


def _strip_padding(instrs: list[SassInstruction], labels: dict[str, int]) -> tuple[list[SassInstruction], int]:
    end = len(instrs)
    while end and instrs[end - 1].base_opcode == "NOP":
        end -= 1
    if end:
        last = instrs[end - 1]
        text = f"{last.opcode} {last.operands}".strip()
        self_loop = False
        if m := _HEX_TARGET.match(text):
            self_loop = int(m.group(1), 16) == last.address
        elif m := _LABEL_TARGET.match(text):
            self_loop = labels.get(m.group(1)) == last.address
        if self_loop and last.predicate is None:
            end -= 1
    return instrs[:end], len(instrs) - end


def parse_sass(text: str) -> dict[str, SassFunction]:
    """Parse a `cuobjdump -sass` or `nvdisasm -c` listing into functions by name."""
    arch: str | None = None
    current: str | None = None
    found: dict[str, tuple[list[SassInstruction], dict[str, int]]] = {}
    pending_labels: list[str] = []
    arch_of: dict[str, str | None] = {}
    for line in text.splitlines():
        if m := _ARCH.search(line):
            arch = m.group(1)
        elif arch is None and (m := _ARCH_FLAG.search(line)):
            arch = f"sm_{m.group(1)}" + ("a" if "EF_CUDA_ACCELERATORS" in line else "")
        elif arch is None and (m := _ARCH_TARGET.match(line)):
            arch = m.group(1)
        if m := _CUOBJ_FUNC.match(line) or _NVDIS_FUNC.match(line):
            current = m.group(1)
            found.setdefault(current, ([], {}))
            arch_of[current] = arch
            pending_labels = []
            continue
        if current is None:
            continue
        if m := _LABEL.match(line):
            pending_labels.append(m.group(1))
            continue
        if m := _INSTR.match(line):
            instrs, labels = found[current]
            inst = parse_instruction(int(m.group(1), 16), m.group(2))
            for lab in pending_labels:
                labels[lab] = inst.address
            pending_labels = []
            instrs.append(inst)
    result: dict[str, SassFunction] = {}
    for name, (instrs, labels) in found.items():
        kept, padding = _strip_padding(instrs, labels)
        result[name] = SassFunction(
            name=name, arch=arch_of.get(name), instructions=tuple(kept), padding=padding, labels=labels
        )
    return result
