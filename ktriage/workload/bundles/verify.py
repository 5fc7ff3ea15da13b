"""What a bundle's cubins say about themselves, checked against what its manifest claims, and the
bundle's optional keyed signature.

Why: a bundle travels from the CPU machine that compiled it to the GPU host that times it, and the
GPU host has no toolchain to recompile with. The manifest's sha256 only proves that a cubin is the
one the manifest names; anyone who edits the manifest can name another (a cubin swapped with its
hash fixed up, an entry re-pointed at another toolchain's cubin) and bench would time the wrong
kernel under the right label. So at load each cubin is read (a small ELF reader: section headers,
the symbol table and NVIDIA's ``.nv.info`` attributes, all the standard library can parse) and
must agree with its entry:

- **kernel symbol**: the entry's ``kernel_name`` is a function of the cubin (a ``.text.<name>``
  section and its symbol);
- **target**: the SM of the ELF flags (``e_flags``: the low byte up to ELF ABI 7, the second byte
  from ABI 8) is the bundle's target (``sm_90a`` is SM 90);
- **assembler**: the cubin's ELF ABI version is one the entry's ptxas writes for its SM (7 before
  CUDA 12.8; 8 from CUDA 13; 12.8/12.9 write 7 below sm_100 and 8 from sm_100, seen with 12.9;
  ptxas writes no version string into a cubin);
- **ABI**: the parameter sizes of ``EIATTR_KPARAM_INFO`` (by ordinal) are the sizes of the entry's
  ABI (its PTX types, hidden scratch pointers included), and the ABI's Triton types are the spec's;
- **launch and resources**: the threads per CTA the cubin requires (``EIATTR_REQNTID`` or
  ``EIATTR_MAX_THREADS``) are the entry's ``num_warps`` x 32, and its register count
  (``EIATTR_REGCOUNT``) is the one the entry's resources report.

A mismatch refuses the bundle with an error naming the entry (kernel, toolchain, cubin). These
checks catch a cubin of another kernel, target, assembler or toolchain (whose registers or launch
differ); a deliberate forgery that also rewrites every claim is what the keyed signature is for:
with ``KTRIAGE_BUNDLE_KEY`` set, the writer signs the manifest (HMAC-SHA256 over its canonical
JSON, which holds every cubin's sha256) and the loader refuses a bundle whose signature is missing
or does not match. See docs/security.md.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ktriage.errors import FormatError
from ktriage.measure.params import SCALAR_SIZES

KEY_ENV = "KTRIAGE_BUNDLE_KEY"
SIGNATURE = "signature"  # the manifest's key for {"alg": "hmac-sha256", "value": hex}
ALG = "hmac-sha256"

EM_CUDA = 190
SHT_SYMTAB = 2
STT_FUNC = 2
# .nv.info attributes (EIATTR_*), as cuobjdump -elf names them
_REQNTID, _MAX_THREADS, _KPARAM_INFO, _REGCOUNT = 0x10, 0x05, 0x17, 0x2F
_EIFMT_SVAL = 0x04
# PTX parameter types -> bytes
CU_TENSOR_MAP_BYTES = 128  # sizeof(CUtensorMap): 16 64-bit words, in every CUDA with TMA
PTX_SIZES = {
    "u64": 8,
    "s64": 8,
    "b64": 8,
    "f64": 8,
    "u32": 4,
    "s32": 4,
    "b32": 4,
    "f32": 4,
    "u16": 2,
    "s16": 2,
    "b16": 2,
    "f16": 2,
    "bf16": 2,
    "u8": 1,
    "s8": 1,
    "b8": 1,
}


def abi_param_bytes(param: Mapping[str, object]) -> int | None:
    """Bytes the manifest's ABI entry claims in the kernel's parameter buffer: its PTX type's size, but
    for a 16-bit float, which PTX declares as ``.param .align 2 .b8 p[2]`` (the ABI keeps the element
    type, ``b8``) and the runner passes as its Triton type's 2 bytes (``measure.params.param_size``).
    None: a type not known. A tensor descriptor lowered to TMA is first its CUtensorMap, ``.b8 p[128]`` (the
    ABI keeps ``b8``, ``compile.abi``): 128 bytes, the size CUDA fixes for it."""
    ptx = str(param.get("ptx_type", "")).lstrip(".")
    triton_type = str(param.get("triton_type", ""))
    if ptx == "b8" and SCALAR_SIZES.get(triton_type) == 2:
        return 2
    if ptx == "b8" and triton_type.startswith("tensordesc") and "[" not in str(param.get("name", "")):
        return CU_TENSOR_MAP_BYTES
    return PTX_SIZES.get(ptx)


@dataclass
class CubinKernel:
    """One kernel of a cubin: its parameter sizes by ordinal, registers and required threads."""

    name: str
    param_sizes: dict[int, int] = field(default_factory=dict)
    registers: int | None = None
    threads: int | None = None


@dataclass
class CubinFacts:
    """What the ELF of a cubin says: its ELF ABI version, its SM and its kernels by name."""

    abi_version: int
    sm: int
    kernels: dict[str, CubinKernel]


class _Elf:
    """A bounds-checked reader of a little-endian ELF64 (a malformed file is a FormatError)."""

    def __init__(self, data: bytes, origin: str) -> None:
        self.data, self.origin = data, origin
        if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            raise self.bad("not a 64-bit little-endian ELF file")
        (machine,) = self.unpack("<H", 18)
        if machine != EM_CUDA:
            raise self.bad(f"ELF machine {machine}, not NVIDIA CUDA ({EM_CUDA})")
        (self.flags,) = self.unpack("<I", 48)
        (shoff,) = self.unpack("<Q", 40)
        shentsize, shnum, shstrndx = self.unpack("<HHH", 58)
        if shentsize != 64 or shnum > 65_535 or shstrndx >= max(shnum, 1):
            raise self.bad("bad section header table")
        self.sections: list[tuple[int, int, int, int, int]] = []  # name offset, type, file offset, size, link
        for i in range(shnum):
            name, typ, _flags, _addr, off, size, link = self.unpack("<IIQQQQI", shoff + 64 * i)
            if typ != 8 and off + size > len(data):  # 8: NOBITS (no bytes in the file)
                raise self.bad(f"section {i} lies outside the file")
            self.sections.append((name, typ, off, size, link))
        strtab = self.sections[shstrndx] if self.sections else (0, 0, 0, 0, 0)
        self.names = [self.cstr(strtab[2] + s[0], strtab[2] + strtab[3]) for s in self.sections]

    def bad(self, what: str) -> FormatError:
        return FormatError(
            f"{self.origin} is not a valid cubin: {what}", "copy the whole bundle folder again, or rebuild it"
        )

    def unpack(self, fmt: str, offset: int) -> tuple[Any, ...]:
        size = struct.calcsize(fmt)
        if offset < 0 or offset + size > len(self.data):
            raise self.bad("truncated")
        return struct.unpack_from(fmt, self.data, offset)

    def cstr(self, start: int, end: int) -> str:
        stop = self.data.find(b"\0", start, end)
        if start >= end or stop < 0:
            raise self.bad("bad string table")
        return self.data[start:stop].decode("utf-8", "replace")

    def body(self, index: int) -> bytes:
        _n, _t, off, size, _l = self.sections[index]
        return self.data[off : off + size]


def _attributes(blob: bytes) -> list[tuple[int, bytes]]:
    """The (attribute, value) entries of an ``.nv.info`` section: a format byte, an attribute byte,
    then a u16 value, or for EIFMT_SVAL a u16 size and that many bytes."""
    out = []
    p = 0
    while p + 4 <= len(blob):
        fmt, attr = blob[p], blob[p + 1]
        if fmt == _EIFMT_SVAL:
            (size,) = struct.unpack_from("<H", blob, p + 2)
            out.append((attr, blob[p + 4 : p + 4 + size]))
            p += 4 + size
        else:
            out.append((attr, blob[p + 2 : p + 4]))
            p += 4
    return out


def read_cubin(data: bytes, origin: str) -> CubinFacts:
    """The facts of a cubin (see the module docstring); a FormatError names ``origin`` if it is not one."""
    elf = _Elf(data, origin)
    abi_version = data[8]
    sm = (elf.flags >> 8) & 0xFF if abi_version >= 8 else elf.flags & 0xFF
    symbols: dict[int, str] = {}  # symbol index -> name (.nv.info names kernels by symbol index)
    functions: set[str] = set()
    for _n, typ, off, size, link in elf.sections:
        if typ != SHT_SYMTAB or link >= len(elf.sections):
            continue
        str_off, str_end = elf.sections[link][2], elf.sections[link][2] + elf.sections[link][3]
        for k in range(size // 24):
            st_name, st_info = elf.unpack("<IB", off + 24 * k)
            symbols[k] = elf.cstr(str_off + st_name, str_end) if st_name else ""
            if st_info & 0xF == STT_FUNC:
                functions.add(symbols[k])
    texts = {name[len(".text.") :] for name in elf.names if name.startswith(".text.")}
    kernels = {name: CubinKernel(name) for name in sorted(texts & functions)}
    for i, name in enumerate(elf.names):
        if name == ".nv.info":
            for attr, value in _attributes(elf.body(i)):
                if attr == _REGCOUNT and len(value) >= 8:
                    sym, regs = struct.unpack_from("<II", value)
                    if symbols.get(sym) in kernels:
                        kernels[symbols[sym]].registers = regs
        elif name.startswith(".nv.info.") and name[len(".nv.info.") :] in kernels:
            kernel = kernels[name[len(".nv.info.") :]]
            for attr, value in _attributes(elf.body(i)):
                if attr == _KPARAM_INFO and len(value) >= 12:
                    _index, ordinal, _offset, flags = struct.unpack_from("<IHHI", value)
                    kernel.param_sizes[ordinal] = flags >> 18
                elif attr in (_REQNTID, _MAX_THREADS) and len(value) >= 12:
                    x, y, z = struct.unpack_from("<III", value)
                    kernel.threads = x * y * z
    return CubinFacts(abi_version, sm, kernels)


def target_sm(target: str) -> int | None:
    """``sm_90a`` -> 90 (None when the target is not ``sm_<digits>[a|f]``)."""
    digits = target.removeprefix("sm_").rstrip("af")
    return int(digits) if target.startswith("sm_") and digits.isdigit() else None


def elf_abis_for(ptxas_version: str, sm: int) -> set[int] | None:
    """The ELF ABI versions ptxas of this version writes for SM ``sm`` (None: unknown version).

    Seen: ptxas 12.x writes 7 for sm_90; 12.9 writes 8 for sm_100 (the ABI came with Blackwell in
    12.8); 13.x writes 8 for every target. So: 13 and later: 8; before 12.8: 7; 12.8 and 12.9: 7
    below sm_100, 7 or 8 from sm_100 (not pinned down for 12.8)."""
    parts = ptxas_version.split(".")
    if len(parts) < 2 or not (parts[0].isdigit() and parts[1].isdigit()):
        return None
    version = (int(parts[0]), int(parts[1]))
    if version >= (13, 0):
        return {8}
    if version < (12, 8) or sm < 100:
        return {7}
    return {7, 8}


def check_artifact(
    facts: CubinFacts,
    *,
    where: str,
    kernel_name: str,
    target: str,
    ptxas_version: str,
    abi: Sequence[Mapping[str, object]],
    signature: dict[str, str],
    launch: Mapping[str, object],
    resources: Mapping[str, object] | None,
) -> None:
    """Refuse (FormatError naming ``where``: the entry) a cubin that is not what its entry claims."""
    fix = (
        "rebuild the bundle on the CPU machine (`ktriage bench --compile-only`) and copy the whole folder; a bundle "
        "edited by hand is refused"
    )

    def refuse(what: str) -> FormatError:
        return FormatError(f"{where}: {what}", fix)

    kernel = facts.kernels.get(kernel_name)
    if kernel is None:
        raise refuse(f"the cubin has no kernel {kernel_name!r} (it has: {', '.join(sorted(facts.kernels)) or 'none'})")
    want_sm = target_sm(target)
    if want_sm is not None and facts.sm != want_sm:
        raise refuse(f"the cubin is for sm_{facts.sm}, the bundle's target is {target}")
    abis = elf_abis_for(ptxas_version, facts.sm)
    if abis is not None and facts.abi_version in (7, 8) and facts.abi_version not in abis:
        raise refuse(
            f"the cubin's ELF ABI version is {facts.abi_version}, which ptxas {ptxas_version} does not write "
            f"for sm_{facts.sm} (it writes {' or '.join(map(str, sorted(abis)))}): the cubin comes from another assembler"
        )
    sizes = [abi_param_bytes(p) for p in abi]
    if kernel.param_sizes:
        found = [kernel.param_sizes.get(i) for i in range(max(kernel.param_sizes) + 1)]
        if len(found) != len(sizes) or any(s is not None and f != s for s, f in zip(sizes, found, strict=False)):
            raise refuse(
                f"the cubin's kernel takes parameters of {found} bytes, the manifest's ABI says "
                f"{sizes} ({', '.join(str(p.get('name')) for p in abi)})"
            )
    for p in abi:
        declared = signature.get(str(p.get("name")))
        if not p.get("hidden") and declared is not None and p.get("triton_type") != declared:
            raise refuse(
                f"parameter {p.get('name')!r} is {p.get('triton_type')!r} in the ABI but {declared!r} in the spec"
            )
    warps = launch.get("num_warps")
    if (
        kernel.threads is not None
        and isinstance(warps, int)
        and not isinstance(warps, bool)
        and kernel.threads != 32 * warps
    ):
        raise refuse(
            f"the cubin requires {kernel.threads} threads per CTA, the manifest launches num_warps={warps} "
            f"({32 * warps} threads)"
        )
    regs = resources.get("registers") if isinstance(resources, dict) else None
    if (
        kernel.registers is not None
        and isinstance(regs, int)
        and not isinstance(regs, bool)
        and regs != kernel.registers
    ):
        raise refuse(
            f"the cubin's kernel uses {kernel.registers} registers, the manifest's resources say {regs}: "
            "the cubin was compiled by another toolchain or from another kernel"
        )


# ----------------------------------------------------------------------------------- signing
def bundle_key() -> bytes | None:
    """``KTRIAGE_BUNDLE_KEY`` as bytes, None when unset or empty."""
    value = os.environ.get(KEY_ENV, "")
    return value.encode("utf-8", "surrogateescape") if value else None


def _canonical(manifest: Mapping[str, object]) -> bytes:
    body = {k: v for k, v in manifest.items() if k != SIGNATURE}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def signature_of(manifest: Mapping[str, object], key: bytes) -> str:
    """HMAC-SHA256 of the manifest's canonical JSON (every entry's cubin_sha256 is in it)."""
    return hmac.new(key, _canonical(manifest), hashlib.sha256).hexdigest()


def sign(manifest: Mapping[str, object]) -> dict[str, object]:
    """The manifest with its signature when ``KTRIAGE_BUNDLE_KEY`` is set (without one otherwise)."""
    key = bundle_key()
    body = {k: v for k, v in manifest.items() if k != SIGNATURE}
    if key is not None:
        body[SIGNATURE] = {"alg": ALG, "value": signature_of(body, key)}
    return body


def check_signature(raw: Any, where: str) -> None:
    """With ``KTRIAGE_BUNDLE_KEY`` set, refuse a manifest that is unsigned or whose signature does not
    match (the cubins' hashes are checked separately, against the signed manifest)."""
    key = bundle_key()
    if key is None:
        return
    if not isinstance(raw, dict):
        raise FormatError(f"{where} is not a JSON object", "rebuild the bundle")
    sig = raw.get(SIGNATURE)
    if not isinstance(sig, dict) or not sig.get("value"):
        raise FormatError(
            f"{where} is not signed, and {KEY_ENV} is set: an unsigned bundle is refused",
            f"build the bundle with the same {KEY_ENV} set, or unset {KEY_ENV} to load unsigned bundles",
        )
    if sig.get("alg") != ALG or not hmac.compare_digest(str(sig.get("value")), signature_of(raw, key)):
        raise FormatError(
            f"{where}: the signature does not match the manifest (edited after it was signed, or signed with "
            f"another key)",
            f"rebuild the bundle with this {KEY_ENV}, or give the key it was built with",
        )
