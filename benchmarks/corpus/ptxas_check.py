"""Which ptxas made each side's cubin, and how far apart the two SASS listings are, per kernel input.

Why: the H200 ``triage --run`` of ``h200/triage_run/`` compared ``triton=host,ptxas=/usr/local/cuda/bin/ptxas``
(13.0.88) with ``triton=host`` (Triton 3.6.0's bundled 12.8.93) and explain called all 5 Liger kernels identical.
This checks on a CPU that a ``ptxas=`` override of a host toolchain is what assembles its cubins, with evidence
that does not come from ktriage's own records alone: a ptxas >= 13 writes its version into the cubin's
``.note.nv.tkinfo`` section (12.x writes none), and the SASS is compared as cuobjdump prints it (instruction
text with register numbers and offsets, and every 64-bit encoding word: how many differ, and how many of
those differ beyond the scheduling control bits of an instruction's second word).

Usage (the Python that runs ktriage is the host: e.g. a Triton 3.6.0 toolchain venv's python with this checkout
and ktriage's venv on PYTHONPATH), reading the kernels of ``ktriage explain W.json -o OUT.json`` reports:

    python benchmarks/corpus/ptxas_check.py 'triton=host,ptxas=/path/to/ptxas;triton=host' OUT.json [...]
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from ktriage.analyze.cuobjdump import run_cuobjdump
from ktriage.compile.compiler import Artifact, Compiler
from ktriage.spec.model import KernelSpec
from ktriage.toolchain.manager import ensure_toolchain


def note_version(cubin: Path) -> str:
    """The ptxas version a cubin's ``.note.nv.tkinfo`` names ('none': ptxas 12.x writes no such note)."""
    out = subprocess.run(["readelf", "-p", ".note.nv.tkinfo", str(cubin)], capture_output=True, text=True).stdout
    found = re.search(r"V(\d+\.\d+\.\d+)", out)
    return found.group(1) if found else "none"


def listing(sass: str) -> tuple[list[str], list[str]]:
    """The instructions (comments dropped) and the 64-bit encoding words of a ``cuobjdump -sass`` listing."""
    instructions: list[str] = []
    words: list[str] = []
    for line in sass.splitlines():
        words += re.findall(r"/\* (0x[0-9a-f]{16}) \*/", line)
        if ";" in line:
            instructions.append(re.sub(r"/\*.*?\*/", "", line).strip())
    return instructions, words


def _low(word: str) -> int:
    """An instruction's second 64-bit word without its top 23 bits, the scheduling control bits (stall
    count, yield, dependency barriers and waits): equal low bits mean only the scheduling differs."""
    return int(word, 16) & ((1 << 41) - 1)


def main(toolchains: str, reports: list[str]) -> None:
    old, new = (ensure_toolchain(t) for t in toolchains.split(";"))
    print(f"old: {old.spec} ({old.id}); new: {new.spec} ({new.id})")
    print(
        "kernel | input | old ptxas: recorded / cubin note | new ptxas: recorded / cubin note | instructions | same text | words differing"
        " | of them beyond the control bits"
    )
    seen: set[str] = set()
    with Compiler(jobs=1) as compiler:
        for report in reports:
            for kernel in json.loads(Path(report).read_text())["kernels"]:
                spec = KernelSpec.from_json(kernel["spec"])
                function = spec.source.rsplit(":", 1)[-1]
                if spec.key() in seen:  # a workload's fwd kernel recorded again in its bwd run
                    continue
                seen.add(spec.key())
                sides = []
                for tc in (old, new):
                    art = compiler.compile(spec, tc)
                    if not isinstance(art, Artifact):
                        raise SystemExit(f"{kernel['name']}: {tc.spec}: {art}")
                    sides.append((art, listing(run_cuobjdump(tc.cuobjdump, art.cubin.cubin_path, "-sass"))))
                (a, (ia, wa)), (b, (ib, wb)) = sides
                pairs = list(zip(wa, wb))
                differing = sum(x != y for x, y in pairs) + abs(len(wa) - len(wb))
                beyond = sum(x != y for i, (x, y) in enumerate(pairs) if i % 2 == 0 or _low(x) != _low(y))
                print(
                    f"{function} | {kernel['input'][:60]} | {a.cubin.ptxas_version} / {note_version(a.cubin.cubin_path)}"
                    f" | {b.cubin.ptxas_version} / {note_version(b.cubin.cubin_path)} | {len(ia)} vs {len(ib)}"
                    f" | {ia == ib} | {differing} of {len(wa)} | {beyond}"
                )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
