"""Triage of constructed 3.3.1-vs-3.4.0 (and ptxas 12.4.131-vs-12.8.93) TritonBench CSVs with the
known regressions' latencies: the Liger layer_norm backward (N=4608..8192 much slower: spills, the
frontend) and the Liger embedding backward (REDG -> ATOMG, ptxas). Real toolchains, real compiles;
the bisects list releases on PyPI and download ptxas wheels (network, slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ktriage.cli.app import main
from ktriage.measure.results_file import read_results
from ktriage.measure.tritonbench_format import write_tritonbench_json
from ktriage.ops import registry
from ktriage.triage import TriageOptions, triage

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "gpu" / "issue3" / "run2_layer_norm_aa" / "ln_bwd.json"
SLOW_N = range(4608, 8192 + 1, 512)


def _layer_norm_csvs(d: Path) -> tuple[Path, Path]:
    """TritonBench CSVs as `run.py --op layer_norm --bwd --csv` writes them; 3.4.0 is 2.5x slower at N=4608..8192."""
    out = []
    for name, slow in (("layer_norm_bwd_331.csv", False), ("layer_norm_bwd_340.csv", True)):
        lines = ["x_val;torch_layer_norm-latency;liger_layer_norm-latency"]
        for n in range(1024, 15872 + 1, 512):
            liger = (0.2 + n / 20000) * (2.5 if slow and n in SLOW_N else 1.0)
            lines.append(f"{n};{0.1 + n / 50000};{liger}")
        (d / name).write_text("\n".join([*lines, "average;;"]) + "\n")
        out.append(d / name)
    return out[0], out[1]


def _embedding_csvs(d: Path) -> tuple[Path, Path]:
    """The embedding backward 3x slower on every input with ptxas 12.8.93 (the bundled one of 3.4.0)."""
    op = registry.operator("embedding")
    assert op is not None
    out = []
    for name, factor in (("embedding_bwd_ptxas12.4.csv", 1.0), ("embedding_bwd_ptxas12.8.csv", 3.0)):
        lines = ["x_val;torch_embedding-latency;liger_embedding-latency"]
        lines += [f"{op.x_val_text(c)};{0.3 + c.id / 100};{(0.25 + c.id / 100) * factor}" for c in op.inputs()]
        (d / name).write_text("\n".join([*lines, "average;;"]) + "\n")
        out.append(d / name)
    return out[0], out[1]


def test_layer_norm_regression_is_spills_from_the_frontend(tmp_path: Path) -> None:
    old, new = _layer_norm_csvs(tmp_path)
    report = triage(
        old, new, TriageOptions(old_toolchain="triton==3.3.1", new_toolchain="triton==3.4.0", bisect=False, fixes=False)
    )
    assert report.complete and report.exit_code() == 1
    assert sorted(int(c.input_label.split(", ")[1].rstrip(")")) for c in report.regressions) == list(SLOW_N)
    assert {(c.cause.kind, c.cause.attribution) for c in report.regressions if c.cause} == {("spills", "frontend")}
    assert all(c.cause and c.cause.text == "spills, frontend" for c in report.regressions)
    assert len(report.cells) == 8  # nothing else moved past the gate


def test_embedding_regression_is_ptxas_redg_to_atomg(tmp_path: Path) -> None:
    old, new = _embedding_csvs(tmp_path)
    report = triage(
        old,
        new,
        TriageOptions(
            old_toolchain="triton==3.4.0,ptxas==12.4.131", new_toolchain="triton==3.4.0", bisect=False, fixes=False
        ),
    )
    assert report.complete and len(report.regressions) == 16
    assert {c.cause.text for c in report.regressions if c.cause} == {"REDG→ATOMG, ptxas"}


def test_the_predictions_are_judged_at_the_triage_gate(tmp_path: Path) -> None:
    """One gate per report: the embedding's REDG -> ATOMG is predicted +63 % [+57 %, +68 %], wholly beyond
    explain's 5 % but reaching inside a 60 % triage gate. Judged at 5 % under that gate it was a cause
    ("regression"), while the notes spoke of a +-5% gate the report never showed; at the triage's gate it
    leans toward the slowdown, and the cell stays unsure without a GPU re-run."""
    old, new = _embedding_csvs(tmp_path)
    report = triage(
        old,
        new,
        TriageOptions(
            old_toolchain="triton==3.4.0,ptxas==12.4.131",
            new_toolchain="triton==3.4.0",
            threshold=0.60,
            bisect=False,
            fixes=False,
        ),
    )
    assert report.complete and len(report.cells) == 16 and not report.regressions
    for c in report.cells:
        assert c.predicted is not None and c.predicted.threshold == 0.60
        assert c.predicted.kind == "neutral" and c.predicted.lean == "regression"
        assert c.verdict == "unsure_no_gpu"
        assert "its point beyond the ±60% gate" in c.notes[0] and "5%" not in "; ".join(c.notes)


def test_tritonbench_json_written_from_a_results_file_is_triaged_with_its_env_toolchains(tmp_path: Path) -> None:
    """The H200 run (kernel timing, Triton 3.3.1 / 3.4.0 / 3.5.1 side by side) as TritonBench JSON files:
    the toolchains come from the files' env, and the known layer_norm regression is found."""
    run, cells = read_results(RESULTS)
    paths = write_tritonbench_json(tmp_path / "ln.tritonbench.json", run, cells)
    report = triage(paths[0], paths[1], TriageOptions(bisect=False, fixes=False))
    assert (report.old_toolchain, report.new_toolchain) == ("triton==3.3.1", "triton==3.4.0")
    assert report.complete and report.regressions
    assert {c.cause.text for c in report.regressions if c.cause} == {"spills, frontend"}
    assert all(c.single_value for c in report.cells)


@pytest.mark.network
@pytest.mark.slow
def test_both_regressions_bisect_to_their_release_with_fixes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ln_old, ln_new = _layer_norm_csvs(tmp_path)
    code = main(
        [
            "triage",
            str(ln_old),
            str(ln_new),
            "--old-toolchain",
            "triton==3.3.1",
            "--new-toolchain",
            "triton==3.4.0",
            "-o",
            str(tmp_path / "ln.json"),
            "-o",
            str(tmp_path / "ln.md"),
            "-o",
            str(tmp_path / "ln.html"),
        ]
    )
    capsys.readouterr()
    ln = json.loads((tmp_path / "ln.json").read_text())
    assert code == 1 and ln["complete"]
    culprits = {
        (c["culprit"]["source"], c["culprit"]["culprit"], c["culprit"]["predecessor"])
        for c in ln["cells"]
        if c["verdict"] == "regression"
    }
    assert culprits == {("pypi:triton", "triton==3.4.0", "triton==3.3.1")}
    assert any(f["verified"] for c in ln["cells"] for f in c["fixes"])  # e.g. the nearest config without spills
    assert "spills, frontend" in (tmp_path / "ln.md").read_text()

    em_old, em_new = _embedding_csvs(tmp_path)
    code = main(
        [
            "triage",
            str(em_old),
            str(em_new),
            "--old-toolchain",
            "triton==3.4.0,ptxas==12.4.131",
            "--new-toolchain",
            "triton==3.4.0",
            "--format",
            "json",
        ]
    )
    em = json.loads(capsys.readouterr().out)
    assert code == 1 and em["complete"]
    culprits = {
        (c["culprit"]["source"], c["culprit"]["culprit"], c["culprit"]["predecessor"])
        for c in em["cells"]
        if c["verdict"] == "regression"
    }
    assert culprits == {("ptxas", "ptxas 12.5.40", "ptxas 12.4.131")}
    assert any(f["kind"] == "relaxed_atomics" or "relaxed" in f["description"] for c in em["cells"] for f in c["fixes"])


def test_ktriage_results_files_with_samples_give_statistical_regressions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same H200 run split into two ktriage results files (3.3.1's kernels, 3.4.0's kernels, the
    host's torch baseline in both): raw samples, so compare's own verdict is a regression too."""
    from dataclasses import replace

    from ktriage.measure.results_file import write_results

    run, cells = read_results(RESULTS)
    paths = []
    for record in run.toolchains[:2]:
        side = replace(run, toolchains=[record])
        kept = [c for c in cells if c.key.toolchain in (None, record["id"])]
        paths.append(write_results(tmp_path / f"{record['spec'].replace('==', '-')}.json", side, kept))
    code = main(["triage", str(paths[0]), str(paths[1]), "--no-bisect", "--no-fixes", "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and (report["old_toolchain"], report["new_toolchain"]) == ("triton==3.3.1", "triton==3.4.0")
    regressions = [c for c in report["cells"] if c["verdict"] == "regression"]
    assert [c["input"] for c in regressions][0] == "(4096, 4608)"  # worst first: +492% kernel time
    assert {c["stats_verdict"] for c in regressions} == {"regression"} and not any(
        c["single_value"] for c in regressions
    )
    assert {c["cause"]["text"] for c in regressions} == {"spills, frontend"}
    assert not report["gpu_needed"]


def test_one_results_file_as_both_sides_reports_its_own_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`ktriage triage F F` on the H200 run: its 3.3.1 and 3.4.0 halves are one process's interleaved
    samples. The report said "triage --run: ..." (no --run was given) and its baseline check "none: pass
    --baseline" (an option triage does not have), though the run timed its torch baseline once for both."""
    code = main(["triage", str(RESULTS), str(RESULTS), "--no-bisect", "--no-fixes", "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and (report["old_toolchain"], report["new_toolchain"]) == ("triton==3.3.1", "triton==3.4.0")
    assert report["measured"]["note"].startswith("one results file as both sides")
    assert report["baseline"]["status"] == "shared" and "--baseline" not in report["baseline"]["message"]
    assert "measured once, in the same process, for both sides" in report["baseline"]["message"]
