"""Bisection accuracy under timing noise: ktriage's search + TimePredicate vs a plain single-sample bisection.

Synthetic (FAKE) latency series with a known culprit (ktriage.testing.FakeNoisyTimings):
64 candidates (good endpoint 0 .. bad endpoint 63), the culprit drawn uniformly in 1..63, a planted
slowdown ``effect`` from the culprit on, log-normal noise of CV ``cv``, and four shapes:

* ``lognormal``: clean multiplicative noise;
* ``drift``: plus a creep of +1% per measuring session (each call of the measurement: time passes
  while candidates build; thermal/clock state): what interleaving with re-measured endpoints is for;
* ``bimodal``: every variant has a second mode 15% slower holding 30% of its samples (a clock/
  placement state of the machine, the kernels unchanged);
* ``bimodal-bad``: the culprit and later candidates have a slow mode 20% beyond their level in 30%
  of their samples (the regression is a path the kernel only sometimes takes).

Methods, per trial on the same series:

* ``ktriage``: ``ktriage.bisect.search`` (binary) driving ``TimePredicate`` (preflight of both
  endpoints, candidates interleaved with both endpoints, three-way verdicts, adaptive 10 -> 200
  samples, "unsure" treated like a skip), default VerdictConfig (gate 5%, 99%);
* ``plain``: one sample of each endpoint and of each tested candidate; a candidate is bad when its
  sample is nearer the bad endpoint's than the good one's (threshold at the midpoint).
* ``plain-10``: the same with the median of 10 samples per candidate and endpoint (a fixed repeat
  count without an "unsure" answer).

Each trial ends as ``exact`` (the culprit named), ``range`` (no culprit named; a range or "unsure"
that contains the true culprit: honest), ``wrong`` (a wrong culprit, or a range that misses it), or
``preflight`` (ktriage stopped: the endpoints do not differ by more than the noise).

    .venv/bin/python benchmarks/bisect/noisy_bisect.py [--trials 200] [--jobs 2] [--out benchmarks/bisect]
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
from collections.abc import Callable
from multiprocessing import Pool
from pathlib import Path
from typing import Any

import numpy as np
import scipy

from ktriage.bisect.candidate import Candidate
from ktriage.bisect.time_predicate import TimePredicate
from ktriage.errors import KtriageError
from ktriage.stats.verdict import DEFAULT_CONFIG
from ktriage.testing import FakeNoisyTimings, fake_candidates

N_CANDIDATES = 64
CVS = (0.01, 0.02, 0.05, 0.10)
EFFECTS = (0.05, 0.10, 0.20, 0.30, 0.50)
SHAPES = ("lognormal", "drift", "bimodal", "bimodal-bad")
METHODS = ("ktriage", "plain", "plain-10")
ENDS = ("exact", "range", "wrong", "preflight")
MAX_SAMPLES = 200


def make_fake(shape: str, cv: float, effect: float, culprit: int, seed: int) -> FakeNoisyTimings:
    kw: dict[str, Any] = {}
    if shape == "drift":
        kw["drift"] = 0.01
    elif shape == "bimodal":
        kw["bimodal"] = (0.30, 0.15)
    elif shape == "bimodal-bad":
        kw.update(bimodal=(0.30, 0.20), bimodal_from=culprit)
    return FakeNoisyTimings(culprit=culprit, effect=effect, cv=cv, seed=seed, **kw)


# ----------------------------------------------------------------------------------- ktriage
def run_ktriage(fake: FakeNoisyTimings, cands: list[Candidate], workers: int) -> dict[str, Any]:
    pred = TimePredicate(fake, config=DEFAULT_CONFIG, max_samples=MAX_SAMPLES, keep_samples=False)
    try:
        culprit, lo, hi, tests = SEARCH(pred, cands, workers)
    except KtriageError as exc:
        if "do not differ" not in exc.problem:
            raise
        return {"end": "preflight", "samples": fake.samples_taken, "tests": 0}
    if culprit is not None:
        end = "exact" if culprit == fake.culprit else "wrong"
    else:
        end = "range" if lo < fake.culprit <= hi else "wrong"
    return {"end": end, "samples": fake.samples_taken, "tests": tests}


def local_binary_search(pred: TimePredicate, cands: list[Candidate], workers: int) -> tuple[int | None, int, int, int]:
    """LOCAL minimal driver (used only when ktriage.bisect.search is absent): binary search that
    routes around skip/unsure candidates and names a culprit only between adjacent good/bad."""
    pred.preflight(cands[0], cands[-1])
    lo, hi, tests, unusable = 0, len(cands) - 1, 0, set()
    while True:
        inside = [i for i in range(lo + 1, hi) if i not in unusable]
        if not inside:
            break
        mid = min(inside, key=lambda i: abs(i - (lo + hi) / 2))
        (obs,) = pred.test([cands[mid]])
        tests += 1
        if obs.outcome == "good":
            lo = mid
        elif obs.outcome == "bad":
            hi = mid
        else:
            unusable.add(mid)
    return (hi if hi - lo == 1 else None), lo, hi, tests


def core_search(pred: TimePredicate, cands: list[Candidate], workers: int) -> tuple[int | None, int, int, int]:
    """ktriage's driver (ktriage.bisect.search.run_search): binary, or k-ary with ``workers`` > 1."""
    res = run_search(cands, pred, workers=workers)
    return (res.hi if res.status == "culprit" else None), res.lo, res.hi, res.tested


try:
    from ktriage.bisect.search import run_search

    SEARCH: Callable[[TimePredicate, list[Candidate], int], tuple[int | None, int, int, int]] = core_search
    DRIVER = "ktriage.bisect.search.run_search"
except ImportError:  # the core driver is not there: the LOCAL minimal one stands in (said in the report)
    SEARCH = local_binary_search
    DRIVER = "LOCAL minimal driver (benchmarks/bisect/noisy_bisect.py local_binary_search)"


# ----------------------------------------------------------------------------------- plain
def run_plain(fake: FakeNoisyTimings, cands: list[Candidate], repeat: int) -> dict[str, Any]:
    def value(c: Candidate) -> float:
        return float(np.median(fake([c], repeat)[c.id]))

    g, b = value(cands[0]), value(cands[-1])
    lo, hi, tests = 0, len(cands) - 1, 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        x = value(cands[mid])
        tests += 1
        if abs(x - b) < abs(x - g):
            hi = mid
        else:
            lo = mid
    return {"end": "exact" if hi == fake.culprit else "wrong", "samples": fake.samples_taken, "tests": tests}


# ----------------------------------------------------------------------------------- grid
def condition(args: tuple[str, float, float, int, int, int]) -> list[dict[str, Any]]:
    shape, cv, effect, trials, seed, workers = args
    rng = np.random.default_rng(seed)
    cands = fake_candidates(N_CANDIDATES)
    ends: dict[str, Counter[str]] = {m: Counter() for m in METHODS}
    samples: dict[str, list[int]] = {m: [] for m in METHODS}
    tests: dict[str, list[int]] = {m: [] for m in METHODS}
    for _ in range(trials):
        culprit = int(rng.integers(1, N_CANDIDATES))
        s = int(rng.integers(2**31))
        for m in METHODS:
            fake = make_fake(shape, cv, effect, culprit, s)
            r = (
                run_ktriage(fake, cands, workers)
                if m == "ktriage"
                else run_plain(fake, cands, 1 if m == "plain" else 10)
            )
            ends[m][r["end"]] += 1
            samples[m].append(r["samples"])
            tests[m].append(r["tests"])
    return [
        {
            "shape": shape,
            "cv": cv,
            "effect": effect,
            "method": m,
            "trials": trials,
            **{e: ends[m][e] for e in ENDS},
            "mean_samples": float(np.mean(samples[m])),
            "max_samples": int(np.max(samples[m])),
            "mean_tests": float(np.mean(tests[m])),
        }
        for m in METHODS
    ]


def target_row(r: dict[str, Any]) -> bool:
    """The issue's target zone: effect >= 3x the noise (log-normal noise CV), gate-sized or larger."""
    return r["effect"] >= 3 * r["cv"] - 1e-12


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m in METHODS:
        mr = [r for r in rows if r["method"] == m]
        groups = {
            "target_unimodal": [r for r in mr if target_row(r) and r["shape"] in ("lognormal", "drift")],
            "target_bimodal": [r for r in mr if target_row(r) and r["shape"].startswith("bimodal")],
            "below_target": [r for r in mr if not target_row(r)],
            "all": mr,
        }
        out[m] = {}
        for g, sel in groups.items():
            n = sum(r["trials"] for r in sel)
            out[m][g] = {
                "trials": n,
                **{e: sum(r[e] for r in sel) for e in ENDS},
                "mean_samples": float(np.average([r["mean_samples"] for r in sel], weights=[r["trials"] for r in sel]))
                if sel
                else 0.0,
            }
    return out


def pct(k: int, n: int) -> str:
    return f"{k}/{n} = {100 * k / n:.1f}%" if n else "-"


def markdown(meta: dict[str, Any], rows: list[dict[str, Any]], summary: dict[str, Any]) -> str:
    L = [
        "# Bisection under timing noise (synthetic series, known culprits)",
        "",
        f"Command: `{meta['command']}`  ",
        f"Machine: {meta['machine']}  ",
        f"Date: {meta['date']} (git {meta['git_sha']}), {meta['seconds']:.0f} s  ",
        f"Driver: {meta['driver']}, k = {meta['workers']} candidate(s) per round",
        "",
        f"{N_CANDIDATES} candidates, culprit uniform in 1..{N_CANDIDATES - 1}, {meta['trials']} trials per setting; "
        f"ktriage: gate {DEFAULT_CONFIG.threshold:.0%} (candidates: a third of the endpoints' distance), "
        f"confidence {DEFAULT_CONFIG.confidence:.0%}, 10 -> {MAX_SAMPLES} samples per variant per test. "
        "Samples counted = every sample taken, endpoints included.",
        "",
        "## Headline",
        "",
        "| method | zone | trials | exact | range/unsure (contains culprit) | wrong culprit | preflight stop | mean samples |",
        "|---|---|---|---|---|---|---|---|",
    ]
    zones = {
        "target_unimodal": "effect >= 3x noise, log-normal (+drift)",
        "target_bimodal": "effect >= 3x noise, bimodal",
        "below_target": "effect < 3x noise (all shapes)",
        "all": "all settings",
    }
    for m in METHODS:
        for z, name in zones.items():
            s = summary[m][z]
            L.append(
                f"| {m} | {name} | {s['trials']} | {pct(s['exact'], s['trials'])} | {pct(s['range'], s['trials'])} | "
                f"{pct(s['wrong'], s['trials'])} | {pct(s['preflight'], s['trials'])} | {s['mean_samples']:.0f} |"
            )
    L += [
        "",
        "## Per setting",
        "",
        "Cells: exact / range / wrong / preflight (% of trials), then mean samples per bisect.",
        "",
    ]
    for shape in SHAPES:
        L += [
            f"### {shape}",
            "",
            "| CV | effect | effect/noise | " + " | ".join(METHODS) + " | samples " + " / ".join(METHODS) + " |",
            "|---|---|---|" + "---|" * (len(METHODS) + 1),
        ]
        for cv in CVS:
            for e in EFFECTS:
                sel = {r["method"]: r for r in rows if (r["shape"], r["cv"], r["effect"]) == (shape, cv, e)}
                cells = []
                for m in METHODS:
                    r = sel[m]
                    cells.append("/".join(f"{100 * r[k] / r['trials']:.0f}" for k in ENDS))
                smp = " / ".join(f"{sel[m]['mean_samples']:.0f}" for m in METHODS)
                mark = " *" if target_row(sel[METHODS[0]]) else ""
                L.append(f"| {cv:.0%} | {e:.0%} | {e / cv:.1f}{mark} | " + " | ".join(cells) + f" | {smp} |")
        L.append("")
    L.append("`*`: the issue's target zone (effect >= 3x noise).")
    return "\n".join(L)


def machine() -> str:
    cpu = platform.processor()
    if Path("/proc/cpuinfo").exists():
        cpu = next(
            (
                ln.split(":", 1)[1].strip()
                for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")
            ),
            cpu,
        )
    return (
        f"{platform.node()}: {cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}, Python {platform.python_version()}, "
        f"numpy {np.__version__}, scipy {scipy.__version__}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--workers", type=int, default=1, help="ktriage's k (candidates per round); 1 = binary")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    a = ap.parse_args()
    t0 = time.time()
    shapes = a.shapes.split(",")
    grid = [
        (s, cv, e, a.trials, 1000 * i + 17, a.workers)
        for i, (s, cv, e) in enumerate((s, cv, e) for s in shapes for cv in CVS for e in EFFECTS)
    ]
    with Pool(a.jobs) as pool:
        rows = [r for rs in pool.imap(condition, grid) for r in rs]
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        sha = "?"
    meta = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": machine(),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "git_sha": sha,
        "seconds": time.time() - t0,
        "driver": DRIVER,
        "workers": a.workers,
        "trials": a.trials,
        "candidates": N_CANDIDATES,
        "max_samples": MAX_SAMPLES,
        "config": {"threshold": DEFAULT_CONFIG.threshold, "confidence": DEFAULT_CONFIG.confidence},
    }
    summary = summarize(rows)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "noisy_bisect.json").write_text(
        json.dumps({"meta": meta, "summary": summary, "rows": rows}, indent=1) + "\n"
    )
    md = markdown(meta, rows, summary)
    (a.out / "noisy_bisect.md").write_text(md + "\n")
    print(md.split("## Per setting")[0])


if __name__ == "__main__":
    main()
