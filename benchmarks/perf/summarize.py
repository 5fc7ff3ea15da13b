"""The README tables of issue 13 (GPU side) from what benchmarks/perf/run_h200.sh wrote.

    python benchmarks/perf/summarize.py DIR > DIR/summary.md     # DIR: the unpacked perf.tgz (perf/)

Cost: GPU wall time of ktriage, TritonBench-style and the real TritonBench; the timed kernel time
(every sample's time x the calls it stands for: a graph-replay sample is ``calls_per_sample`` calls);
samples per cell; the protocol each backend got and why. A/A: run 1 against runs 2..5 with ktriage's
compare (default gate), wrongly flagged cells per backend. Verdicts: the toolchain comparisons of
the sweeps next to issue 3's (benchmarks/gpu/issue3), input by input.
"""

from __future__ import annotations

import collections
import csv
import io
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from ktriage.compare.pairing import compare_cells, compare_toolchains
from ktriage.measure.cells import Cell
from ktriage.measure.results_file import read_results
from ktriage.ops.registry import default_baselines

ISSUE3 = Path(__file__).resolve().parents[1] / "gpu" / "issue3"
FLAGS = ("regression", "improvement")


def walls(d: Path) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    path = d / "walls.txt"
    for line in path.read_text().splitlines() if path.exists() else []:
        name, *fields = line.split()
        out[name] = {k: float(v) for k, v in (f.split("=") for f in fields)}
    return out


def timed_s(cells: list[Cell]) -> float:
    return sum(sum(c.samples_ms) * int((c.extra or {}).get("calls_per_sample", 1)) for c in cells if c.samples_ms) / 1e3


def samples_text(cells: list[Cell]) -> str:
    n = sorted(len(c.samples_ms) for c in cells if c.samples_ms)
    return f"{statistics.median(n):g} ({n[0]}..{n[-1]})" if n else "-"


def tb_style(d: Path, name: str) -> tuple[float, int]:
    path = d / name
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    return sum(r["wall_s"] for r in rows), len(rows)


def cost(d: Path, w: dict[str, dict[str, float]]) -> list[str]:
    out = [
        "## GPU wall time",
        "",
        "| sweep | ktriage (process start to results written) | TritonBench-style (sequential processes) | real TritonBench (host toolchain only) | timed kernel time | ktriage / TritonBench-style | ktriage / timed | samples per cell, median (min..max) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for sweep, res, kt, tbs, real in (
        (
            "layer_norm bwd, 30 inputs x 3 toolchains",
            "ln_bwd.json",
            "ln_ktriage",
            "ln_tritonbench_style",
            "ln_tritonbench_real",
        ),
        ("embedding bwd, 16 inputs x 7 toolchains", "emb_bwd.json", "emb_ktriage", "emb_tritonbench_style", None),
    ):
        if not (d / res).exists() or kt not in w:
            continue
        _run, cells = read_results(d / res)
        k = w[kt].get("written_s", w[kt]["wall_s"])
        t = timed_s(cells)
        tb = w.get(tbs, {}).get("wall_s")
        rl = w.get(real, {}).get("wall_s") if real else None
        out.append(
            f"| {sweep} | {k:.1f} s | {f'{tb:.1f} s' if tb else '-'} | {f'{rl:.1f} s' if rl else '-'} | {t:.1f} s | "
            f"{f'**{k / tb:.2f}**' if tb else '-'} | {k / t:.2f} | {samples_text(cells)} |"
        )
    if "aa_1" in w:
        aa = [w[f"aa_{i}"].get("written_s", w[f"aa_{i}"]["wall_s"]) for i in range(1, 6) if f"aa_{i}" in w]
        out.append(f"\nA/A runs (30 inputs, torch + one toolchain): {', '.join(f'{x:.1f}' for x in aa)} s each.")
    return out


def protocols(d: Path) -> list[str]:
    out = [
        "## Timing protocol per backend",
        "",
        "| sweep | backend | protocol | cells | why (from the cells' `extra`) |",
        "|---|---|---|---|---|",
    ]
    for res in ("ln_bwd.json", "emb_bwd.json", "aa_1.json"):
        if not (d / res).exists():
            continue
        _run, cells = read_results(d / res)
        seen: dict[tuple[str, str], list[Cell]] = collections.defaultdict(list)
        for c in cells:
            if c.status == "ok":
                seen[
                    (
                        c.key.backend + ("@" + c.key.toolchain[:18] if c.key.toolchain else ""),
                        str((c.extra or {}).get("protocol")),
                    )
                ].append(c)
        for (backend, proto), cs in sorted(seen.items()):
            why = str((cs[0].extra or {}).get("protocol_reason", ""))
            over = sum(int((c.extra or {}).get("overrun_turns", 0)) for c in cs)
            note = f" (spin overran in {over} turns)" if proto == "queued" else ""
            out.append(f"| {res} | {backend} | {proto}{note} | {len(cs)} | {why} |")
    return out


def aa(d: Path) -> list[str]:
    files = [d / f"aa_{i}.json" for i in range(1, 6)]
    if not all(f.exists() for f in files):
        return []
    runs = [read_results(f) for f in files]
    out = [
        "## A/A: Triton 3.3.1's layer_norm bwd and the torch baseline against themselves, 5 runs",
        "",
        "Run 1 against runs 2..5 (`ktriage compare`'s verdicts, default gate 5 %, 99 %).",
        "",
        "| backend | compared cells | wrongly flagged | same | unsure | ratio median | ratio min..max |",
        "|---|---|---|---|---|---|---|",
    ]
    per: dict[str, list[Any]] = collections.defaultdict(list)
    for i in range(1, 5):
        c = compare_cells(
            runs[0][1],
            runs[i][1],
            ref_label="aa_1",
            new_label=f"aa_{i + 1}",
            ref_run=runs[0][0],
            new_run=runs[i][0],
            baseline="torch_layer_norm",
        )
        for p in c.pairs:
            if p.verdict is not None:
                per[p.backend].append(p.verdict)
    for backend, vs in sorted(per.items()):
        kinds = collections.Counter(v.verdict for v in vs)
        ratios = [v.ratio for v in vs]
        out.append(
            f"| {backend} | {len(vs)} | **{kinds['regression'] + kinds['improvement']}** | {kinds['same']} | {kinds['unsure']} | "
            f"{statistics.median(ratios):.4f} | {min(ratios):.4f}..{max(ratios):.4f} |"
        )
    return out


def verdicts(run: Any, cells: list[Cell]) -> tuple[dict[str, dict[int, str]], dict[str, str]]:
    """Per toolchain comparison: the verdict of each input, and its cliffs (where, which way)."""
    out: dict[str, dict[int, str]] = {}
    cliffs: dict[str, str] = {}
    for c in compare_toolchains(cells, run=run, default_baselines=default_baselines()):
        name = f"{c.ref_label[:12]} -> {c.new_label}"
        out[name] = {
            p.input_id: p.verdict.verdict for p in c.pairs if p.verdict is not None and p.new_toolchain is not None
        }
        found = sorted(
            {
                f"{'new/ref' if f.kind == 'new_vs_ref' else 'vs baseline'} {'.'.join((f.toolchain or 'native').split('.')[:5])}: "
                f"{f.cliff.x_before}->{f.cliff.x_after} {'up' if f.cliff.factor > 1 else 'down'}"
                for f in c.cliffs
            }
        )
        cliffs[name] = "; ".join(found)
    return out, cliffs


def _counts(v: dict[int, str]) -> str:
    return "/".join(str(list(v.values()).count(k)) for k in ("regression", "same", "unsure", "improvement"))


def same_verdicts(d: Path) -> list[str]:
    out = [
        "## The speed-ups change no verdict (issue 3's comparisons)",
        "",
        "Verdict counts are regression / same / unsure / improvement; a *flip* is an input decided both times "
        "with different verdicts, *resolved* one that issue 3 left unsure and that is decided now.",
        "",
        "| sweep | comparison | now | issue 3 | same verdict | flips | resolved | newly unsure |",
        "|---|---|---|---|---|---|---|---|",
    ]
    cliffs: list[str] = []
    for res, old in (
        ("ln_bwd.json", ISSUE3 / "run2_layer_norm_aa" / "ln_bwd.json"),
        ("emb_bwd.json", ISSUE3 / "run1_embedding_tritonbench_style" / "emb_bwd.json"),
    ):
        if not (d / res).exists() or not old.exists():
            continue
        (new_v, new_c), (old_v, old_c) = verdicts(*read_results(d / res)), verdicts(*read_results(old))
        for name, nv in new_v.items():
            ov = old_v.get(name, {})
            agree = sum(ov.get(i) == v for i, v in nv.items())
            both = [(ov[i], v) for i, v in nv.items() if i in ov]
            flips = sum(o != n and "unsure" not in (o, n) for o, n in both)
            resolved = sum(o == "unsure" and n != "unsure" for o, n in both)
            unsure = sum(o != "unsure" and n == "unsure" for o, n in both)
            out.append(
                f"| {res} | {name} | {_counts(nv)} | {_counts(ov) if ov else '-'} | {agree} of {len(nv)} | **{flips}** | {resolved} | {unsure} |"
            )
            ncl, ocl = new_c.get(name, ""), old_c.get(name, "")
            same = "the same cliffs as issue 3" if ncl == ocl else f"issue 3 had: {ocl or 'none'}"
            cliffs.append(f"- {res} {name}: {ncl or 'no cliffs'} ({same})")
    return out + ["", "Cliffs:", ""] + cliffs


def tritonbench_real(d: Path) -> list[str]:
    path = d / "ln_tritonbench_real.csv"
    if not path.exists() or not path.read_text().strip():
        return []
    rows = [r for r in csv.reader(io.StringIO(path.read_text()), delimiter=";") if len(r) > 1]  # not its log lines
    return [
        "## The real TritonBench, host toolchain (layer_norm bwd, latency ms)",
        "",
        "```",
        *[";".join(r) for r in rows[:40]],
        "```",
    ]


def main() -> None:
    d = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    w = walls(d)
    parts = [
        ["# Issue 13 on the H200: what a bench sweep costs", ""],
        cost(d, w),
        protocols(d),
        aa(d),
        same_verdicts(d),
        tritonbench_real(d),
    ]
    env = d / "env.txt"
    if env.exists():
        parts.append(["## Environment", "", "```", env.read_text().strip(), "```"])
    print("\n".join(line for part in parts for line in part + [""]))


if __name__ == "__main__":
    main()
