"""The corpus's calibration cells rebuild from committed files alone: the explain reports under
benchmarks/corpus/h200/explain carry no load waits (written before ktriage counted them), and the
counts read from their cubins are committed in benchmarks/calibration/load_waits.json.gz, so a machine
without those cubins (this test's empty home) builds the same cells, byte for byte."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "benchmarks" / "corpus" / "h200"


def test_the_corpus_cells_rebuild_without_the_cubins(tmp_path: Path) -> None:
    out = tmp_path / "cells.jsonl"
    home = tmp_path / "home"  # no artifacts, no toolchains: no cubin can be read
    home.mkdir()
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "calibration" / "build.py"),
            "--scan", str(CORPUS / "bench"),
            "--workloads", str(CORPUS / "workloads"),
            "--explain-dir", str(CORPUS / "explain"),
            "--no-sources", "--no-compile",
            "--out", str(out),
            "--work", str(tmp_path / "work"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "KTRIAGE_HOME": str(home)},
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "load waits no cubin: 0 kernel results" in proc.stderr, proc.stderr[-3000:]
    committed = set((ROOT / "benchmarks" / "calibration" / "cells.jsonl").read_text().splitlines())
    rebuilt = out.read_text().splitlines()
    assert len(rebuilt) == 693 and not [line for line in rebuilt if line not in committed]
