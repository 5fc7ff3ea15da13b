"""The calibration dataset: cells built from a committed bench results file (the fixed bench's, gzipped) and
the committed explain report of the same kernels equal the committed cells.jsonl lines (the pairing, the verdicts and the
facts reproduce without a compile), and `ktriage calibrate` fits from a dataset or from a results
file with its report, and refuses unpaired input naming the fix."""

from __future__ import annotations

import gzip
import importlib.util
import json
from collections import Counter
from pathlib import Path
from typing import Any

from ktriage.measure.results_file import read_results
from ktriage.predict.dataset import cells_from_results, read_cells
from ktriage.predict.model import load_params

REPO = Path(__file__).resolve().parents[2]
CELLS = REPO / "benchmarks" / "calibration" / "cells.jsonl"
RESULTS = REPO / "benchmarks" / "record" / "h200d" / "bench" / "wl-tb_rms_norm_bwd.json"
REPORT = REPO / "benchmarks" / "record" / "h200" / "explain_rms_norm_bwd.json"
FIXED = "benchmarks/calibration/replicate/h200_run3/other/wl-tb_rms_norm_bwd.json.gz"  # the same bundle, fixed bench


def _with_committed_counts(report: dict[str, Any]) -> dict[str, Any]:
    """The report with its loops' load waits and its bank summaries filled from the committed counts, as the
    calibration's build fills them (the report was written before either was counted; its cubins are gone, the
    counts were read from the same kernels compiled again: benchmarks/calibration/recompiled.py)."""
    spec = importlib.util.spec_from_file_location("calibration_build", REPO / "benchmarks/calibration/build.py")
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    counts: Counter[tuple[str, str]] = Counter()
    build.add_load_waits(report, "tb_rms_norm_bwd", counts, build.read_saved_waits(build.LOAD_WAITS))
    build.add_shared_banks(report, "tb_rms_norm_bwd", counts, build.read_saved_banks(build.SHARED_BANKS))
    return report


def test_cells_rebuild_from_committed_results_and_report(tmp_path: Path) -> None:
    results = tmp_path / "wl-tb_rms_norm_bwd.json"
    results.write_bytes(gzip.decompress((REPO / FIXED).read_bytes()))
    run, cells = read_results(results)
    report = _with_committed_counts(json.loads(REPORT.read_text()))
    made, notes = cells_from_results(run, cells, report, operator="tb_rms_norm_bwd", source=FIXED)
    assert not notes and len(made) == 24  # 12 kernel inputs x (3.3.1, 3.4.0) against 3.6.0
    # (the corpus benched the same operator again: its cells share the operator, not the source)
    committed = [c for c in read_cells(CELLS) if c.source == FIXED]
    assert [c.to_json() for c in made] == [c.to_json() for c in committed]
    faster = [c for c in made if c.measured.verdict == "improvement"]
    assert len(faster) == 3 and all(c.reference == "triton==3.6.0" and c.measured.ci_high < 1 for c in faster)


def test_a_toolchain_the_report_lacks_is_named(tmp_path: Path) -> None:
    """A run toolchain the explain report did not compile is skipped with a note that names it and what the report
    has: it said "lacks triton==3.6.0 or triton==3.3.1", which of the two being for the reader to find."""
    results = tmp_path / "wl-tb_rms_norm_bwd.json"
    results.write_bytes(gzip.decompress((REPO / FIXED).read_bytes()))
    run, cells = read_results(results)
    report = _with_committed_counts(json.loads(REPORT.read_text()))
    report["toolchains"] = [t for t in report["toolchains"] if t["spec"] != "triton==3.3.1"]
    made, notes = cells_from_results(run, cells, report, operator="tb_rms_norm_bwd", source=FIXED)
    assert len(made) == 12  # 3.4.0 against 3.6.0 only
    assert [n.text() for n in notes] == [
        "tb_rms_norm_bwd comparison triton==3.3.1 against triton==3.6.0: the explain report lacks triton==3.3.1 "
        "(it has triton==3.4.0, triton==3.6.0, triton==3.9.0)"
    ], notes


def test_a_catalog_report_without_backend_is_refused_naming_it(run_cli) -> None:
    """A catalog op's results with its explain report but no --backend matched nothing: 30 notes "no kernel of the
    explain report matches", then "no calibration cells; fix: pass --from cells.jsonl, or --results R.json --explain
    E.json", which is what was passed. Refused naming the missing --backend and the run's artifact backend."""
    results = REPO / "benchmarks" / "gpu" / "issue3" / "run2_layer_norm_aa" / "ln_bwd.json"
    report = REPO / "benchmarks" / "explain" / "layer_norm_bwd_triton_3.3.1_vs_3.4.0.json"
    r = run_cli(["calibrate", "--results", str(results), "--explain", str(report), "--no-cv"])
    assert r.exit_code == 2 and "and no --backend says which of the run's backends" in r.err_text, r.stderr
    assert "fix: add --backend liger_layer_norm" in r.err_text
    r = run_cli(["calibrate", "--results", str(results), "--explain", str(report), "--backend", "liger_rms_norm"])
    assert r.exit_code == 2 and "--backend liger_rms_norm is no artifact backend of the run" in r.err_text, r.stderr
    assert "use one of: liger_layer_norm" in r.err_text  # a wrong name skipped every pair the same way
    r = run_cli(["calibrate", "--results", str(results), "--explain", str(report), "--backend", "liger_layer_norm"])
    assert r.exit_code == 0 and "30 cells" in r.err_text, r.stderr  # named, the same files pair


def test_a_partial_explain_report_is_one_note_and_every_input_it_lacks_is_kept(run_cli, tmp_path: Path) -> None:
    """A user explained 4 of the 30 inputs their results file timed: calibrate printed one note per input the
    report lacks (26 lines, each "no kernel of the explain report matches") before the one line that mattered.
    One note per kind of mismatch now, with the count, the first labels and the fix; the model file (-o) and
    the API's report keep every one."""
    results = REPO / "benchmarks" / "gpu" / "issue3" / "run2_layer_norm_aa" / "ln_bwd.json"
    whole = json.loads((REPO / "benchmarks" / "explain" / "layer_norm_bwd_triton_3.3.1_vs_3.4.0.json").read_text())
    partial = tmp_path / "partial.json"  # the report of 4 inputs, as `explain -i 0 -i 1 -i 2 -i 3` writes it
    partial.write_text(json.dumps({**whole, "kernels": whole["kernels"][:4]}))
    out = tmp_path / "model.json"
    base = ["calibrate", "--results", str(results), "--explain", str(partial), "--backend", "liger_layer_norm"]
    r = run_cli([*base, "--no-cv", "-o", str(out)])
    assert r.exit_code == 0, r.stderr
    notes = [line for line in r.stderr.splitlines() if line.startswith("note:")]
    assert notes == [
        "note: 26 inputs of layer_norm liger_layer_norm skipped (no kernel of the explain report matches): "
        "(4096, 3072), (4096, 3584), (4096, 4096) and 23 more; "
        "to fit on them, explain them too (explain -i covers only the inputs it names)",
        # the run also timed 3.5.1, which this report never compiled: another kind, its own line
        "note: 1 comparison of layer_norm skipped (the explain report lacks triton==3.5.1): triton==3.5.1 against "
        "triton==3.3.1 (it has triton==3.3.1, triton==3.4.0); explain with every toolchain of the run (-t)",
    ], r.stderr
    assert f"{results}: 4 cells (layer_norm)" in r.err_text
    skipped = json.loads(out.read_text())["skipped"]
    inputs = [s["label"] for s in skipped if s["reason"] == "no kernel of the explain report matches"]
    assert len(skipped) == 27 and len(inputs) == 26 and inputs[-1] == "(4096, 15872)"
    assert {s["source"] for s in skipped} == {str(results)}


def test_calibrate_writes_a_model_explain_reads(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "model.json"
    r = run_cli(["calibrate", "--from", str(CELLS), "-o", str(out), "--no-cv"])
    assert r.exit_code == 0, r.stderr
    assert load_params(out).fitted_on.startswith(f"{len(read_cells(CELLS))} cells")
    r = run_cli(
        [
            "calibrate",
            "--results",
            str(RESULTS),
            "--explain",
            str(REPORT),
            "--results",
            str(RESULTS),
            "--explain",
            str(REPORT),
            "--operator",
            "rms",
            "--operator",
            "rms_again",  # the same kernels under a second name: nothing to hold out that the fit did not see
            "--cells-out",
            str(tmp_path / "c.jsonl"),
        ]
    )
    assert r.exit_code == 0, r.stderr
    assert len(read_cells(tmp_path / "c.jsonl")) == 48 and "| regression |" in r.stdout
    # held out one name at a time, each name's cells were predicted by a fit on their copy
    assert "in sample, not held out (its 2 operators launch kernels of the same names" in r.stdout, r.stdout
    two = tmp_path / "two.jsonl"  # two operators that share no kernel: one to hold out, one to fit on
    two.write_text(
        "".join(line for line in CELLS.read_text().splitlines(True) if '"operator": "tb_rms_norm_bwd"' in line)
        + "".join(line for line in CELLS.read_text().splitlines(True) if '"operator": "tb_sum_fwd"' in line)
    )
    r = run_cli(["calibrate", "--from", str(two)])
    assert r.exit_code == 0, r.stderr
    assert "leave-one-operator-out over 2 operators" in r.stdout and "2 groups" in r.stdout, r.stdout
    assert "recall by the size of the measured change" in r.stdout and "| 15% and more |" in r.stdout
    assert "what the interval's width alone allows" in r.stdout and "a predictor knowing each cell's" in r.stdout


def test_calibrate_prints_paths_and_names_with_brackets_as_they_are(run_cli, tmp_path: Path) -> None:
    """calibrate printed its notes and the model's path as rich markup: a folder named [nightly] vanished from
    "…/[nightly]/r.json: 24 cells" and from "model: …" (the path the user then types)."""
    folder = tmp_path / "[nightly]"
    folder.mkdir()
    results = folder / "r.json"
    results.write_bytes(RESULTS.read_bytes())
    out = folder / "model.json"
    r = run_cli(["calibrate", "--results", str(results), "--explain", str(REPORT), "--no-cv", "-o", str(out)])
    assert r.exit_code == 0, r.stderr
    assert f"{results}: 24 cells" in r.err_text and f"model: {out} (use it with explain --model {out}" in r.err_text


def test_calibrate_never_writes_over_the_files_it_reads(run_cli, tmp_path: Path) -> None:
    """`calibrate --results r.json ... -o r.json` replaced the GPU results file (which only a GPU can make again)
    with the fitted model, and --cells-out over the explain report replaced the report with cells. Both are
    refused before the fit, naming the file; a model or a dataset written before is rewritten as asked."""
    results, report = tmp_path / "r.json", tmp_path / "e.json"
    results.write_bytes(RESULTS.read_bytes())
    report.write_bytes(REPORT.read_bytes())
    before = results.read_bytes(), report.read_bytes()
    base = ["calibrate", "--results", str(results), "--explain", str(report), "--no-cv"]
    r = run_cli([*base, "-o", str(results)])
    assert r.exit_code == 2 and f"-o {results} exists and is not a ktriage model file" in r.err_text, r.stderr
    r = run_cli([*base, "--cells-out", str(report)])
    assert r.exit_code == 2 and f"--cells-out {report} exists and is not a calibration dataset" in r.err_text
    assert (results.read_bytes(), report.read_bytes()) == before
    model, cells = tmp_path / "m.json", tmp_path / "c.jsonl"
    for _ in range(2):  # the second time over its own outputs
        r = run_cli([*base, "-o", str(model), "--cells-out", str(cells)])
        assert r.exit_code == 0, r.stderr
    assert load_params(model).fitted_on.startswith("24 cells") and len(read_cells(cells)) == 24


def test_calibrate_refuses_unpaired_input(run_cli) -> None:
    r = run_cli(["calibrate", "--results", str(RESULTS)])
    assert r.exit_code == 2 and "--explain" in r.err_text and "fix:" in r.err_text
    r = run_cli(["calibrate", "--results", str(RESULTS), "--explain", str(RESULTS)])
    assert r.exit_code == 2 and "not an explain report" in r.err_text


def test_calibrate_on_one_operator_says_its_scores_are_in_sample(run_cli, tmp_path: Path) -> None:
    """One operator leaves none to hold out: its scores are the fit's own, never a cross-validation,
    and the model file carries no held-out record for explain and triage to quote."""
    out = tmp_path / "model.json"
    r = run_cli(["calibrate", "--results", str(RESULTS), "--explain", str(REPORT), "--operator", "rms", "-o", str(out)])
    assert r.exit_code == 0, r.stderr
    assert "in sample, not held out (a fit on one operator cannot be held out by operator" in r.stdout
    assert "leave-one-operator-out" not in r.stdout
    model = json.loads(out.read_text())
    assert model["cross_validation"] is None and model["in_sample"]["matrix"]
    assert load_params(out).cv == {"held_out": False, "level": 0.8, "threshold": 0.05}


def test_a_fit_on_one_operator_counts_in_the_singular_and_says_what_its_parameters_mean(
    run_cli, tmp_path: Path
) -> None:
    """A user's small fit (one results file, one operator) printed "fitted_on": "8 cells of 1 operators", and its
    parameters with no word on what they are worth: most of them were the defaults, untouched by the cells, and the
    interval came from the fit's own residuals. The count is worded once (ktriage.wording), and the summary says
    both, with what a held-out record needs."""
    out = tmp_path / "model.json"
    r = run_cli(["calibrate", "--results", str(RESULTS), "--explain", str(REPORT), "--operator", "rms", "-o", str(out)])
    assert r.exit_code == 0, r.stderr
    assert load_params(out).fitted_on == "24 cells of 1 operator" and "1 operators" not in r.stdout
    assert "how well the model fits the 24 cells it was fitted on" in r.stdout
    assert "parameters kept their defaults (nothing in these cells moves them): " in r.stdout
    kept = r.stdout.split("moves them): ", 1)[1].splitlines()[0].split(", ")
    assert "lambda_atomic" in kept and "lambda_global" not in kept  # rms_norm has no atomics; it has loads
    assert "comes from the residuals of the cells it was fitted on, so it is narrower than a held-out one" in r.stdout
    assert "calibrate on two or more operators, with cross-validation" in r.stdout


def test_calibrate_refuses_cells_it_cannot_fit(run_cli, tmp_path: Path) -> None:
    line = json.loads(CELLS.read_text().splitlines()[0])
    null_facts = tmp_path / "null.jsonl"
    null_facts.write_text(json.dumps({**line, "new_facts": None}) + "\n")
    r = run_cli(["calibrate", "--from", str(null_facts)])
    assert r.exit_code == 2 and f"{null_facts}:1 is not a calibration cell" in r.err_text and "fix:" in r.err_text
    newer = tmp_path / "newer.jsonl"
    newer.write_text(json.dumps({**line, "version": 999}) + "\n")
    r = run_cli(["calibrate", "--from", str(newer)])
    assert r.exit_code == 2 and "999" in r.err_text and "upgrade ktriage" in r.err_text
    no_ratio = tmp_path / "no_ratio.jsonl"
    no_ratio.write_text(json.dumps({**line, "measured": {**line["measured"], "ratio": -1.0}}) + "\n")
    r = run_cli(["calibrate", "--from", str(no_ratio), "-o", str(tmp_path / "m.json")])
    assert r.exit_code == 2 and "the one calibration cell has no measured ratio to fit" in r.err_text
    assert not (tmp_path / "m.json").exists()


def test_calibrate_refuses_cells_that_are_not_utf8_text(run_cli, tmp_path: Path) -> None:
    """``--from cells.jsonl.gz`` (or any file not UTF-8) was an internal error, UnicodeDecodeError: read
    through the schema layer, it is a user error naming the file."""
    packed = tmp_path / "cells.jsonl.gz"
    packed.write_bytes(gzip.compress(CELLS.read_bytes()[:4000]))
    r = run_cli(["calibrate", "--from", str(packed)])
    assert (
        r.exit_code == 2
        and r.problem == f"calibration cells {packed} is gzip-compressed, and this file is read as plain text"
    )
    assert r.fix is not None and r.fix.startswith("decompress it first (gunzip -k FILE.gz)")
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b"caf\xe9\n")
    r = run_cli(["calibrate", "--from", str(latin)])
    assert r.exit_code == 2 and r.problem == f"calibration cells {latin} is not UTF-8 text (byte 3: b'\\xe9')", r.stderr


def test_calibrate_names_a_run_of_one_toolchain(run_cli) -> None:
    """A results file of one toolchain (an A/A run) has no pair to fit: calibrate said only "no
    calibration cells; fix: pass --from cells.jsonl, or --results R.json --explain E.json", which is what
    was passed. It names the file and the toolchain count now."""
    one = REPO / "benchmarks" / "gpu" / "issue3" / "run2_layer_norm_aa" / "aa_1.json"
    r = run_cli(["calibrate", "--results", str(one), "--explain", str(REPORT)])
    assert r.exit_code == 2 and r.problem.startswith(f"{one}: the run timed 1 toolchain (triton-3.3.1"), r.stderr
    assert "two or more toolchains side by side" in (r.fix or "")
