"""`ktriage triage` of TritonBench rms_norm CSVs: ``liger_rms`` is explained from the catalog's
``liger.rms_norm`` kernels (the rms_norm Operator carries TritonBench's x_val, baseline and backend
name), though no replay can time them: the GPU step says so and names the recorded-workload route.

Real: the CSVs are written as TritonBench writes them (first column its register_x_val label
``(M, H)``, x_val ``(2048, H)``, the baseline first, an ``average`` row), the compiles use the test
home's Triton 3.3.1 and 3.4.0. The latencies are made up (one number a side, as TritonBench's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ktriage.cli.app import main
from ktriage.triage import TriageOptions, triage

SLOWER = {16384: 1.5}  # liger_rms at (2048, 16384), 3.3.1 -> 3.4.0
BASE_MOVED = {1024: 1.3}  # llama_rms (the baseline) at (2048, 1024)
CROSS = ["--old-toolchain", "triton==3.3.1", "--new-toolchain", "triton==3.4.0"]


def _csvs(d: Path) -> tuple[Path, Path]:
    out = []
    for name, new in (("rms_norm_bwd_331.csv", False), ("rms_norm_bwd_340.csv", True)):
        lines = ["(M, H);llama_rms-latency;liger_rms-latency"]
        for h in (2**e for e in range(10, 16)):
            llama = (0.1 + h / 50000) * (BASE_MOVED.get(h, 1.0) if new else 1.0)
            liger = (0.05 + h / 100000) * (SLOWER.get(h, 1.0) if new else 1.0)
            lines.append(f"(2048, {h});{llama};{liger}")
        (d / name).write_text("\n".join([*lines, "average;;"]) + "\n")
        out.append(d / name)
    return out[0], out[1]


def test_a_slower_liger_rms_cell_is_explained_from_the_catalog(tmp_path: Path) -> None:
    old, new = _csvs(tmp_path)
    report = triage(
        old, new, TriageOptions(old_toolchain="triton==3.3.1", new_toolchain="triton==3.4.0", bisect=False, fixes=False)
    )
    (liger,) = [c for c in report.cells if c.backend == "liger_rms"]
    # x_val (2048, 16384) is the catalog's input 4 (N=16384): its kernels compiled with both toolchains
    assert (liger.input_id, liger.input_label, liger.catalog) == (4, "(2048, 16384)", "liger.rms_norm")
    assert not any("no kernels in ktriage's catalog" in n for n in liger.notes)
    assert liger.compile_change is True and liger.verdict != "unexplained"
    # Triton 3.4.0 changes the backward at N=16384 (stack, LDL, a longer main loop), predicted neutral: the note
    # names the changes, and the prediction stands next to the measured +50 %
    assert liger.predicted is not None and liger.predicted.kind == "neutral"
    assert liger.changes is not None and liger.changes.startswith("N=16384") and "LDL" in liger.changes
    assert any(
        n.startswith("no compile-side change predicts the measured slowdown (measured +50.0%") for n in liger.notes
    )
    # llama_rms is the op's baseline (TritonBench's): its own move is the machine's, not a backend without kernels
    assert report.baseline is not None and report.baseline.per_op == {"rms_norm": "llama_rms"}
    (llama,) = [c for c in report.cells if c.backend == "llama_rms"]
    assert (llama.input_label, llama.catalog, llama.verdict) == ("(2048, 1024)", None, "unsure_no_gpu")
    assert llama.is_baseline and llama.verdict_text.startswith("the baseline moved")
    assert not any("no kernels in ktriage's catalog" in n for n in llama.notes)


def test_the_gpu_step_says_why_it_cannot_time_liger_rms(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No replay of liger.rms_norm: the bundle step writes nothing and each cell says why, naming the
    recording that would time it (the catalog explains it compile-side only)."""
    old, new = _csvs(tmp_path)
    out = tmp_path / "tri"
    args = ["triage", str(old), str(new), *CROSS, "--no-bisect", "--no-fixes", "--bundle", str(out)]
    code = main([*args, "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and not out.exists()
    (cell,) = [c for c in report["cells"] if c["backend"] == "liger_rms"]
    assert cell["catalog"] == "liger.rms_norm" and cell["verdict"] == "unsure_no_replay"
    assert cell["measured"]["verdict"] == "not_measured"
    assert cell["measured"]["text"].startswith(
        "no replay for rms_norm (liger.rms_norm explains it compile-side; ktriage has no bench workload of "
        "rms_norm) and no recorded kernels of liger_rms: give workloads=['W.json'] (--workload W.json) "
        "(`ktriage record -o W.json -- python run.py --op rms_norm --bwd --only liger_rms`)"
    )
    assert "no flagged cell can be re-measured" in report["measured"]["note"]
