"""The load waits and bank conflicts of committed explain reports whose cubins are gone, read from the same
kernels compiled again.

``build.py`` reads each loop's load waits and each function's shared-memory bank summary from the cubins a
committed report names, and commits what it read (``load_waits.json.gz``, ``shared_banks.json.gz``). Eight
recorded workloads of ``sources.json`` (110 of the 968 cells) were explained on a machine whose compile cache was
not kept, so their cells carried neither: no bank conflicts priced (fla's ``chunk_gated_delta_rule_fwd_kernel_h``
with Triton 3.3.1 has 9x the reference's conflicts under ncu, ``misses/``), one load wait assumed a loop.

This compiles nothing itself. Given each committed report and a fresh explain of the same workload with the same
toolchains (``ktriage explain WORKLOAD -t ... --arch sm_90 -o FRESH.json``, commands in README.md), it pairs
their results by kernel, input and toolchain, keeps a pair only where the compile facts are identical (registers,
stack, instruction count, every opcode's count: the same cubin, whichever cache path it was written to), and
saves what the fresh cubin says under the committed cubin's name, so ``build.py`` and ``replicate/build.py``
find it like any other committed count::

    KTRIAGE_HOME=~/.cache/ktriage .venv/bin/python benchmarks/calibration/recompiled.py \\
        benchmarks/record/h200/explain_rms_norm_bwd.json=/tmp/rex/tb_rms_norm_bwd.json ...
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from build import (  # the calibration's build script, beside this one
    LOAD_WAITS,
    SHARED_BANKS,
    _cubin_banks,
    _cubin_loops,
    _cuobjdump,
    cubin_key,
    read_saved_banks,
    read_saved_waits,
    write_saved_banks,
    write_saved_waits,
)

# what must be equal for two results to be the same cubin
SAME_COMPILE = ("kernel_name", "registers", "stack_bytes", "sass_instructions", "sass_opcodes")


def _results(path: Path) -> dict[tuple[str, str, str], dict[str, Any]]:
    raw = path.read_bytes()
    report = json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)
    return {
        (str(kernel["name"]), json.dumps(kernel.get("input"), sort_keys=True), tc): result
        for kernel in report.get("kernels", ())
        for tc, result in (kernel.get("results") or {}).items()
        if "kernel_name" in result and (result.get("artifact") or {}).get("cubin")
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pairs", nargs="+", metavar="COMMITTED=FRESH", help="a committed report and its fresh explain")
    args = ap.parse_args()
    cuobjdump = _cuobjdump()
    if cuobjdump is None:
        print("error: no cuobjdump in the ktriage home's toolchains; fix: run a ktriage explain first", file=sys.stderr)
        return 2
    waits, banks = read_saved_waits(LOAD_WAITS), read_saved_banks(SHARED_BANKS)
    counts: Counter[str] = Counter()
    for pair in args.pairs:
        committed_path, _, fresh_path = pair.partition("=")
        committed, fresh = _results(Path(committed_path)), _results(Path(fresh_path))
        for key, old in committed.items():
            new = fresh.get(key)
            if new is None:
                counts["not compiled again"] += 1
                continue
            if any(old.get(k) != new.get(k) for k in SAME_COMPILE):
                counts["compiled differently: left out"] += 1
                continue
            name = cubin_key(str(old["artifact"]["cubin"]))
            cubin = str(new["artifact"]["cubin"])
            if name not in waits:
                loops = _cubin_loops(cuobjdump, cubin)
                if loops is not None:
                    waits[name] = loops
                    counts["load waits added"] += 1
            if name not in banks:
                summary = _cubin_banks(cuobjdump, cubin)
                if summary is not None:
                    banks[name] = summary
                    counts["bank summaries added"] += 1
            counts["same cubin"] += 1
        print(f"{committed_path}: {len(committed)} results, {len(fresh)} compiled again", file=sys.stderr)
    write_saved_waits(LOAD_WAITS, waits)
    write_saved_banks(SHARED_BANKS, banks)
    for what, n in sorted(counts.items()):
        print(f"{what}: {n}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
