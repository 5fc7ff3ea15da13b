"""How often is ktriage's verdict right? Synthetic timing samples with known truth.

Grid: noise CV 1/2/5/10% (log-normal), planted slowdowns 0/2/5/10/20%, three shapes
(clean log-normal; log-normal with 3% outliers at 1.5-3x; bimodal: two modes 25% apart whose
mixture share drifts between runs, the kernel itself unchanged apart from the planted effect),
fixed sample counts (20 and 50 per side) and the adaptive loop (start at 10, +10 per round,
``stop_when_sure`` after each round, cap 200). Default gate (5%) and confidence (99%).

Reports: the false-regression rate under A/A (target 0), regressions flagged for a real change
below the gate (2%), power for effects >= the gate and >= 3x the noise, and the share of "unsure".

    .venv/bin/python benchmarks/stats/verdict_accuracy.py [--reps 200] [--adaptive-reps 50] [--out benchmarks/stats]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
from collections import Counter
from multiprocessing import Pool
from pathlib import Path

import numpy as np
import scipy

from ktriage.stats.verdict import DEFAULT_CONFIG, compare_samples, stop_when_sure
from ktriage.testing import lognormal

CVS = (0.01, 0.02, 0.05, 0.10)
EFFECTS = (0.0, 0.02, 0.05, 0.10, 0.20)
SHAPES = ("lognormal", "outliers", "bimodal")
NS = (20, 50)
KINDS = ("regression", "improvement", "same", "unsure")


def draw(rng: np.random.Generator, shape: str, n: int, median: float, cv: float, slow_share: float) -> list[float]:
    if shape == "lognormal":
        return lognormal(rng, n, median, cv)
    if shape == "outliers":
        x = lognormal(rng, n, median, cv)
        for i in np.flatnonzero(rng.random(n) < 0.03):
            x[i] *= rng.uniform(1.5, 3.0)
        return x
    # bimodal: each sample is slow (x1.25) with probability slow_share
    x = np.asarray(lognormal(rng, n, median, cv))
    return list(np.where(rng.random(n) < slow_share, x * 1.25, x))


def shares(rng: np.random.Generator) -> tuple[float, float]:
    """The slow-mode share of the two runs: it drifts between runs (thermal state, clocks)."""
    return float(rng.uniform(0.2, 0.6)), float(rng.uniform(0.2, 0.6))


def fixed_condition(args: tuple[str, float, float, int, int, int]) -> dict:
    shape, cv, effect, n, reps, seed = args
    rng = np.random.default_rng(seed)
    c: Counter[str] = Counter()
    for _ in range(reps):
        sa, sb = shares(rng)
        v = compare_samples(draw(rng, shape, n, 1.0, cv, sa), draw(rng, shape, n, 1.0 + effect, cv, sb))
        c[v.verdict] += 1
    return {
        "mode": "fixed",
        "shape": shape,
        "cv": cv,
        "effect": effect,
        "n": n,
        "reps": reps,
        **{k: c[k] for k in KINDS},
    }


def adaptive_condition(args: tuple[str, float, float, int, int, int]) -> dict:
    shape, cv, effect, cap, reps, seed = args
    rng = np.random.default_rng(seed)
    c: Counter[str] = Counter()
    used = []
    for _ in range(reps):
        sa, sb = shares(rng)
        s = {"ref": draw(rng, shape, 10, 1.0, cv, sa), "new": draw(rng, shape, 10, 1.0 + effect, cv, sb)}
        while not stop_when_sure(s, [("ref", "new")], max_samples=cap):
            s["ref"] += draw(rng, shape, 10, 1.0, cv, sa)
            s["new"] += draw(rng, shape, 10, 1.0 + effect, cv, sb)
        c[compare_samples(s["ref"], s["new"]).verdict] += 1
        used.append(len(s["ref"]))
    return {
        "mode": "adaptive",
        "shape": shape,
        "cv": cv,
        "effect": effect,
        "n": cap,
        "reps": reps,
        "mean_samples": float(np.mean(used)),
        **{k: c[k] for k in KINDS},
    }


def summarize(rows: list[dict]) -> dict:
    def rate(sel: list[dict], kind: str) -> tuple[int, int]:
        return sum(r[kind] for r in sel), sum(r["reps"] for r in sel)

    out: dict = {}
    for mode in ("fixed", "adaptive"):
        m = [r for r in rows if r["mode"] == mode]
        aa = [r for r in m if r["effect"] == 0.0]
        out[mode] = {
            "aa_false_regression": rate(aa, "regression"),
            "aa_false_regression_unimodal": rate([r for r in aa if r["shape"] != "bimodal"], "regression"),
            "aa_false_regression_bimodal": rate([r for r in aa if r["shape"] == "bimodal"], "regression"),
            "subgate_2pct_flagged": rate([r for r in m if r["effect"] == 0.02], "regression"),
            "power_effect_ge_gate_and_3x_noise_unimodal": rate(
                [r for r in m if r["effect"] >= 0.05 and r["effect"] >= 3 * r["cv"] and r["shape"] != "bimodal"],
                "regression",
            ),
            "power_effect_ge_gate_and_3x_noise_bimodal": rate(
                [r for r in m if r["effect"] >= 0.05 and r["effect"] >= 3 * r["cv"] and r["shape"] == "bimodal"],
                "regression",
            ),
            "unsure_share_unimodal": rate([r for r in m if r["shape"] != "bimodal"], "unsure"),
            "unsure_share_bimodal": rate([r for r in m if r["shape"] == "bimodal"], "unsure"),
        }
    return out


def pct(pair: tuple[int, int]) -> str:
    k, n = pair
    return f"{k}/{n} = {100 * k / n:.1f}%" if n else "-"


def markdown(meta: dict, rows: list[dict], summary: dict) -> str:
    lines = [
        "# Verdict accuracy on synthetic samples",
        "",
        f"Command: `{meta['command']}`  ",
        f"Machine: {meta['machine']}  ",
        f"Date: {meta['date']} (git {meta['git_sha']}), {meta['seconds']:.0f} s",
        "",
        f"Defaults: gate +-{DEFAULT_CONFIG.threshold:.0%}, confidence {DEFAULT_CONFIG.confidence:.0%}, min samples {DEFAULT_CONFIG.min_samples}. "
        "Shapes: log-normal; log-normal with 3% outliers at 1.5-3x; bimodal (modes 25% apart, slow share drifting in [0.2, 0.6] between runs).",
        "",
        "## Headline",
        "",
        "| measure | fixed n (20, 50) | adaptive (10 -> cap 200) |",
        "|---|---|---|",
    ]
    names = {
        "aa_false_regression": "A/A: false 'regression' (all shapes)",
        "aa_false_regression_unimodal": "A/A: false 'regression', log-normal + outliers",
        "aa_false_regression_bimodal": "A/A: false 'regression', bimodal",
        "subgate_2pct_flagged": "real 2% change (below gate) flagged 'regression'",
        "power_effect_ge_gate_and_3x_noise_unimodal": "power: effect >= gate and >= 3x noise, log-normal + outliers",
        "power_effect_ge_gate_and_3x_noise_bimodal": "power: effect >= gate and >= 3x noise, bimodal",
        "unsure_share_unimodal": "'unsure' share, log-normal + outliers (all effects)",
        "unsure_share_bimodal": "'unsure' share, bimodal (all effects)",
    }
    for key, name in names.items():
        lines.append(f"| {name} | {pct(tuple(summary['fixed'][key]))} | {pct(tuple(summary['adaptive'][key]))} |")
    lines += ["", "## Per condition (% of runs: regression / improvement / same / unsure)", ""]
    for mode in ("fixed", "adaptive"):
        lines += [
            f"### {mode}",
            "",
            "| shape | CV | n | "
            + " | ".join(f"+{e:.0%}" for e in EFFECTS)
            + (" | mean samples (+0%..+20%)" if mode == "adaptive" else "")
            + " |",
            "|---|---|---|" + "---|" * len(EFFECTS) + ("---|" if mode == "adaptive" else ""),
        ]
        keys = sorted(
            {(r["shape"], r["cv"], r["n"]) for r in rows if r["mode"] == mode},
            key=lambda k: (SHAPES.index(k[0]), k[1], k[2]),
        )
        for shape, cv, n in keys:
            cells, samples = [], []
            for e in EFFECTS:
                (r,) = [
                    x
                    for x in rows
                    if x["mode"] == mode and (x["shape"], x["cv"], x["n"], x["effect"]) == (shape, cv, n, e)
                ]
                cells.append("/".join(f"{100 * r[k] / r['reps']:.0f}" for k in KINDS))
                samples.append(f"{r.get('mean_samples', 0):.0f}")
            extra = f" | {' '.join(samples)}" if mode == "adaptive" else ""
            lines.append(f"| {shape} | {cv:.0%} | {n} | " + " | ".join(cells) + extra + " |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--adaptive-reps", type=int, default=50)
    ap.add_argument("--cap", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    a = ap.parse_args()
    t0 = time.time()
    fixed = [
        (s, cv, e, n, a.reps, 1000 * i)
        for i, (s, cv, e, n) in enumerate((s, cv, e, n) for s in SHAPES for cv in CVS for e in EFFECTS for n in NS)
    ]
    adaptive = [
        (s, cv, e, a.cap, a.adaptive_reps, 7 + 1000 * i)
        for i, (s, cv, e) in enumerate((s, cv, e) for s in SHAPES for cv in CVS for e in EFFECTS)
    ]
    with Pool(a.jobs) as pool:
        rows = pool.map(fixed_condition, fixed) + pool.map(adaptive_condition, adaptive)
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        sha = "?"
    cpu = (
        next(
            (
                ln.split(":", 1)[1].strip()
                for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")
            ),
            platform.processor(),
        )
        if Path("/proc/cpuinfo").exists()
        else platform.processor()
    )
    meta = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": f"{platform.node()}: {cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}, Python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}",
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "git_sha": sha,
        "seconds": time.time() - t0,
        "config": {
            "threshold": DEFAULT_CONFIG.threshold,
            "confidence": DEFAULT_CONFIG.confidence,
            "min_samples": DEFAULT_CONFIG.min_samples,
        },
    }
    summary = summarize(rows)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "verdict_accuracy.json").write_text(
        json.dumps({"meta": meta, "summary": summary, "rows": rows}, indent=1) + "\n"
    )
    md = markdown(meta, rows, summary)
    (a.out / "verdict_accuracy.md").write_text(md + "\n")
    print(md.split("## Per condition")[0])


if __name__ == "__main__":
    main()
