"""How long `ktriage --help` takes, and what it imports (issue 10: under 0.3 s, no scipy/SQLAlchemy).

Why a script: help is what a new user runs first, and its cost is the CLI's import cost, paid again
by every short command. This measures it the way a user meets it, in fresh interpreters:

- wall time of ``python -m ktriage ARGS`` over ``--runs`` runs (min, median, max), next to the floor
  of ``python -c "import typer"`` (the interpreter plus the CLI framework, which ktriage cannot avoid);
- ``python -X importtime``: the total self+cumulative import time and the slowest top-level imports;
- which heavy packages (scipy, sqlalchemy, numpy, jinja2) and verb modules ended up in sys.modules.

Run from the repository root (the worktree's ktriage must be the one imported):

    python benchmarks/cli/help_time.py --runs 10 --markdown benchmarks/cli/after.md

Wall times depend on the machine and its load; the import lists do not.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HEAVY = ("scipy", "sqlalchemy", "numpy", "jinja2")
CASES: tuple[tuple[str, ...], ...] = (("--help",), ("explain", "--help"), ("runs", "--help"), ("occupancy", "--help"))


def wall_times(argv: list[str], runs: int) -> list[float]:
    """Seconds per run of ``argv`` in a fresh process (output discarded)."""
    out: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        out.append(time.perf_counter() - start)
    return out


@dataclass
class ImportProfile:
    total_us: int  # cumulative microseconds of the top-level imports
    slowest: list[tuple[int, str]]  # (cumulative us, module), the ten slowest top-level imports
    loaded: list[str]  # heavy packages and ktriage.cli modules in sys.modules afterwards


def import_profile(args: tuple[str, ...]) -> ImportProfile:
    """``-X importtime`` of one help call, run as ``python -m ktriage`` runs (runpy)."""
    probe = (
        "import sys, runpy\n"
        f"sys.argv = ['ktriage', *{list(args)!r}]\n"
        "try:\n"
        "    runpy.run_module('ktriage', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "import json\n"
        "mods = sorted(sys.modules)\n"
        f"print('MODULES=' + json.dumps([m for m in mods if m.split('.')[0] in {HEAVY!r} and '.' not in m]"
        " + [m for m in mods if m.startswith('ktriage.cli.')]), file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", probe],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "100"},
        check=False,
    )
    top: list[tuple[int, str]] = []
    loaded: list[str] = []
    for line in proc.stderr.splitlines():
        if line.startswith("MODULES="):
            loaded = json.loads(line.removeprefix("MODULES="))
            continue
        if not line.startswith("import time:") or "|" not in line:
            continue
        _self_us, cumulative, raw_name = line.removeprefix("import time:").split("|", 2)
        if not cumulative.strip().isdigit():
            continue  # the header line
        if raw_name[1:2] != " ":  # a top-level import: nested ones are indented two spaces per level
            top.append((int(cumulative), raw_name.strip()))
    total = sum(us for us, _ in top)
    return ImportProfile(total, sorted(top, reverse=True)[:10], loaded)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--markdown", type=Path, help="Also write the table here.")
    parser.add_argument("--label", default="", help="e.g. before / after, printed in the title.")
    args = parser.parse_args()

    floor = wall_times([sys.executable, "-c", "import typer"], args.runs)
    rows = []
    for case in CASES:
        times = wall_times([sys.executable, "-m", "ktriage", *case], args.runs)
        prof = import_profile(case)
        rows.append((case, times, prof))

    lines = [
        f"# `ktriage --help` timing {args.label}".rstrip(),
        "",
        f"- date: {datetime.date.today().isoformat()}",
        f"- machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}, Python {platform.python_version()}",
        f"- load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        f"- command: `python benchmarks/cli/help_time.py --runs {args.runs}` (wall: fresh `python -m ktriage ...` processes)",
        f"- floor, `python -c 'import typer'`: median {statistics.median(floor):.3f} s, min {min(floor):.3f} s",
        "",
        "| command | wall median (s) | min | max | -X importtime cumulative (s) | heavy modules loaded | ktriage.cli modules loaded |",
        "|---|---|---|---|---|---|---|",
    ]
    for case, times, prof in rows:
        loaded = prof.loaded
        heavy = ", ".join(m for m in loaded if not m.startswith("ktriage")) or "none"
        cli = ", ".join(m.removeprefix("ktriage.cli.") for m in loaded if m.startswith("ktriage.cli.")) or "none"
        lines.append(
            f"| `ktriage {' '.join(case)}` | {statistics.median(times):.3f} | {min(times):.3f} | "
            f"{max(times):.3f} | {prof.total_us / 1e6:.3f} | {heavy} | {cli} |"
        )
    lines += ["", "Slowest top-level imports of `ktriage --help` (-X importtime, cumulative):", ""]
    for us, name in rows[0][2].slowest:
        lines.append(f"- {us / 1e3:.1f} ms {name}")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
