"""The corpus's calibration cells rebuild from committed files alone: the explain reports under
benchmarks/corpus/h200/explain carry no load waits (written before ktriage counted them), and the
counts read from their cubins are committed in benchmarks/calibration/load_waits.json.gz, so a machine
without those cubins (this test's empty home) builds the same cells, byte for byte: run 1's (the corpus's
first bench) and the calibration's own (the fixed bench's labels, replicate/h200_run3 and h200_run4)."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "benchmarks" / "corpus" / "h200"
CALIBRATION = ROOT / "benchmarks" / "calibration"
REPLICATE = CALIBRATION / "replicate"


def _rebuild_in_an_empty_home(script: Path, args: list[str], tmp_path: Path) -> list[str]:
    """Run a cells build with no artifacts and no toolchains (no cubin can be read): its cells' lines, once it
    exited 0 and every loop's load waits came from the committed counts."""
    out = tmp_path / "cells.jsonl"
    home = tmp_path / "home"
    home.mkdir()
    proc = subprocess.run(
        [sys.executable, str(script), *args, "--out", str(out), "--work", str(tmp_path / "work")],
        capture_output=True,
        text=True,
        env={**os.environ, "KTRIAGE_HOME": str(home)},
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "load waits no cubin: 0 kernel results" in proc.stderr, proc.stderr[-3000:]
    return out.read_text().splitlines()


def test_the_corpus_cells_rebuild_without_the_cubins(tmp_path: Path) -> None:
    rebuilt = _rebuild_in_an_empty_home(
        ROOT / "benchmarks" / "calibration" / "build.py",
        [
            "--scan", str(CORPUS / "bench"),
            "--workloads", str(CORPUS / "workloads"),
            "--explain-dir", str(CORPUS / "explain"),
            "--no-sources", "--no-compile",
        ],
        tmp_path,
    )  # fmt: skip
    run1 = set(gzip.decompress((REPLICATE / "cells_run1.jsonl.gz").read_bytes()).decode().splitlines())
    # the corpus's bench folder also holds the Liger operators benched later (calibration/fresh_ops/: the
    # model's test on operators no fit has seen), built from the same folder with --match 'liger_*.json'
    fresh_ops = set((CALIBRATION / "fresh_ops" / "cells.jsonl").read_text().splitlines())
    assert len(fresh_ops) == 118 and not run1 & fresh_ops
    assert len(rebuilt) == 693 + 118 and not [line for line in rebuilt if line not in run1 | fresh_ops]
    assert fresh_ops <= set(rebuilt)


def test_the_fresh_operator_cells_rebuild_from_their_results_alone(tmp_path: Path) -> None:
    """``--match`` keeps a scan to the results files named like it: the 12 Liger operators and nothing else."""
    rebuilt = _rebuild_in_an_empty_home(
        ROOT / "benchmarks" / "calibration" / "build.py",
        [
            "--scan", str(CORPUS / "bench"), "--match", "liger_*.json",
            "--workloads", str(CORPUS / "workloads"),
            "--explain-dir", str(CORPUS / "explain"),
            "--no-sources", "--no-compile",
        ],
        tmp_path,
    )  # fmt: skip
    assert rebuilt == (CALIBRATION / "fresh_ops" / "cells.jsonl").read_text().splitlines()


def test_the_calibration_cells_rebuild_from_the_fixed_bench_results(tmp_path: Path) -> None:
    """The cells the shipped model is fitted on: the same facts, the fixed bench's measurements, each naming
    the committed results file it came from (Triton 3.9.0's 3 softmax cells were not benched again)."""
    rebuilt = _rebuild_in_an_empty_home(
        REPLICATE / "build.py",
        [
            "--results", str(REPLICATE / "h200_run3"),
            "--results", str(REPLICATE / "h200_run4"),
            "--corpus-only",
        ],
        tmp_path,
    )  # fmt: skip
    committed = set((ROOT / "benchmarks" / "calibration" / "cells.jsonl").read_text().splitlines())
    assert len(rebuilt) == 690 and not [line for line in rebuilt if line not in committed]
    assert all('"source": "benchmarks/calibration/replicate/h200_run' in line for line in rebuilt)
