"""How well `ktriage profile` repeats on the H200: two ncu runs of the same bundles, compared launch by launch.

Round 3's device call 2 profiled again the 11 bundles that call 1 had profiled (a skip-list bug, see
h200/round3_call2_walls.txt), on the same machine 10 minutes later. That is a repeatability check for free: ncu's
counts that depend on the cubin alone (instructions executed, registers) must be equal; the timed ones (duration)
and the memory traffic vary, and what matters to a verdict is whether the toolchains' difference repeats.

    .venv/bin/python benchmarks/corpus/profile_repeat.py A_DIR B_DIR OUT.md
        A_DIR, B_DIR: folders of NAME.json or NAME.json.gz profile reports (h200/profile, h200/profile/repeat_call2)
"""

from __future__ import annotations

import gzip
import json
import statistics
import sys
from pathlib import Path
from typing import Any


def reports(folder: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for path in sorted(folder.glob("*.json*")):
        name = path.name.split(".json")[0]
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        out[name] = json.loads(data)
    return out


def launches(report: Any) -> dict[str, dict[str, Any]]:
    """Toolchain -> its first launch's counters (profile times the bundle's first input, one launch each)."""
    out = {}
    for tc, entry in report.get("toolchains", {}).items():
        if entry.get("status") == "ok" and entry.get("launches"):
            out[tc] = entry["launches"][0]
    return out


def pct(new: float, old: float) -> float:
    return 100.0 * (new - old) / old if old else 0.0


def main(argv: list[str]) -> int:
    a_dir, b_dir, out = Path(argv[0]), Path(argv[1]), Path(argv[2])
    a, b = reports(a_dir), reports(b_dir)
    rows, dur, dram, delta_diff, inst_equal, inst_total = [], [], [], [], 0, 0
    for name in sorted(set(a) & set(b)):
        la, lb = launches(a[name]), launches(b[name])
        ref = a[name].get("reference")
        for tc in sorted(set(la) & set(lb), key=lambda t: (t != ref, t)):
            x, y = la[tc], lb[tc]
            inst_total += 1
            inst_equal += int(x["inst_executed"] == y["inst_executed"])
            d = pct(y["duration_ns"], x["duration_ns"])
            m = pct(y["dram_bytes"], x["dram_bytes"])
            dur.append(abs(d))
            dram.append(abs(m))
            vs_ref = ""
            if tc != ref and ref in la and ref in lb:
                ra = pct(x["duration_ns"], la[ref]["duration_ns"])
                rb = pct(y["duration_ns"], lb[ref]["duration_ns"])
                delta_diff.append(abs(rb - ra))
                vs_ref = f"{ra:+.1f} % / {rb:+.1f} %"
            same = x["inst_executed"] == y["inst_executed"]
            inst = "same" if same else f"{x['inst_executed']:.0f} / {y['inst_executed']:.0f}"
            rows.append(
                f"| {name} | `{tc.split('.ptxas')[0]}` | {x['kernel_name']} | "
                f"{x['duration_ns']:.0f} / {y['duration_ns']:.0f} ({d:+.1f} %) | {vs_ref or '(reference)'} | "
                f"{inst} | {m:+.1f} % |"
            )
    lines = [
        f"# ncu repeatability: `{a_dir}` vs `{b_dir}`",
        "",
        f"{len(set(a) & set(b))} bundles profiled twice, {inst_total} toolchain launches (first input, first launch, "
        "`--warmup 1`, clocks not locked: `--clock-control none`).",
        "",
        f"- instructions executed equal in both runs: {inst_equal} of {inst_total}",
        f"- duration, run to run: median |change| {statistics.median(dur):.1f} %, max {max(dur):.1f} %",
        f"- DRAM bytes, run to run: median |change| {statistics.median(dram):.1f} %, max {max(dram):.1f} %",
        f"- a toolchain's duration vs the reference's (what a profile's finding says), run to run: median |difference| "
        f"{statistics.median(delta_diff):.1f} points, max {max(delta_diff):.1f} points ({len(delta_diff)} pairs)",
        "",
        "| bundle | toolchain | kernel | duration ns, run A / B | vs reference, A / B | inst executed | DRAM bytes B vs A |",
        "|---|---|---|---|---|---|---|",
        *rows,
    ]
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:9]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
