"""CPU time of `ktriage --help` against `python -c "import typer, rich"`, measured in the same run.

Issue 26 asks the listing to cost at most twice the CPU time of importing the CLI's two frameworks,
the floor ktriage cannot go below. CPU time (user + system of the child), not wall time: the
machines this runs on are shared, and CPU time moves less with their load. The two commands
alternate, run by run, so a change of load hits both alike; the ratio is of the medians.

Run from the repository root (the checkout's ktriage must be the one imported):

    python benchmarks/cli/help_cpu.py --runs 20

No test asserts a time (tests/cli/test_app.py asserts what the listing imports instead).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys

FLOOR = [sys.executable, "-c", "import typer, rich"]
HELP = [sys.executable, "-m", "ktriage", "--help"]


def cpu_seconds(argv: list[str]) -> float:
    """User + system CPU seconds of one fresh process running ``argv`` (output discarded)."""
    before = os.times()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = os.times()
    return (after.children_user - before.children_user) + (after.children_system - before.children_system)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    floor: list[float] = []
    help_: list[float] = []
    for _ in range(args.runs):
        floor.append(cpu_seconds(FLOOR))
        help_.append(cpu_seconds(HELP))
    f, h = statistics.median(floor), statistics.median(help_)
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"runs: {args.runs} each, alternating")
    print(f"`python -c 'import typer, rich'`: median {f:.3f} s CPU (min {min(floor):.3f}, max {max(floor):.3f})")
    print(f"`python -m ktriage --help`:       median {h:.3f} s CPU (min {min(help_):.3f}, max {max(help_):.3f})")
    print(f"ratio of medians: {h / f:.2f}x")


if __name__ == "__main__":
    main()
