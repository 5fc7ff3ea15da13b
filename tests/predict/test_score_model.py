"""`ktriage calibrate --score-only` / `kt.score_model`: the cost model as it is, not refitted, next to the GPU's
verdicts. Its predictions must be explain's (`predict` with the model's interval), the model must be the one
named (`--model`), a fit's options are refused rather than ignored, and the cells it reads are calibrate's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ktriage.api as kt
from ktriage.errors import KtriageError
from ktriage.predict.calibration import CellResult, Scores
from ktriage.predict.dataset import read_cells
from ktriage.predict.model import PARAMS_FILE, load_params, predict
from ktriage.predict.scoring import disagreement, log_error, score

REPO = Path(__file__).resolve().parents[2]
FRESH_OPS = REPO / "benchmarks" / "calibration" / "fresh_ops" / "cells.jsonl"
RESULTS = REPO / "benchmarks" / "record" / "h200d" / "bench" / "wl-tb_rms_norm_bwd.json"
REPORT = REPO / "benchmarks" / "record" / "h200" / "explain_rms_norm_bwd.json"


def test_each_cell_is_predicted_as_explain_predicts_it() -> None:
    """118 cells of operators no fit has seen (benchmarks/calibration/fresh_ops/, whose README says: no false
    alarm, 1 of 2 improvements, 0 of 4 regressions): the scores are those of `predict` cell by cell."""
    cells, params = read_cells(FRESH_OPS), load_params()
    scored = score(cells, params)
    by_hand = [predict(c.ref, c.new, params) for c in cells]
    assert [(r.predicted_ratio, r.low, r.high, r.kind) for r in scored.results] == [
        (p.ratio, p.low, p.high, p.kind) for p in by_hand
    ]
    assert scored.scores == Scores.of([p.kind for p in by_hand], [c.measured.verdict for c in cells])
    assert (
        scored.scores.matrix["neutral"]["regression"] == 4 and scored.scores.matrix["improvement"]["improvement"] == 1
    )
    misses = scored.misses()
    assert len(misses) == 5 and [log_error(r) for r in misses] == sorted(map(log_error, misses), reverse=True)
    assert scored.agreed() == (78, 83) and scored.summary().startswith("agrees with the GPU on 78 of 83 cells")


def test_a_disagreement_is_named_by_what_the_gpu_measured() -> None:
    cell = read_cells(FRESH_OPS)[0]

    def kinds(predicted: str, measured: str) -> str | None:
        from dataclasses import replace

        c = replace(cell, measured=replace(cell.measured, verdict=measured))
        return disagreement(CellResult(c, 1.0, 1.0, 1.0, predicted))

    assert kinds("neutral", "regression") == "missed regression"
    assert kinds("regression", "same") == "false regression"
    assert kinds("improvement", "regression") == "false improvement"
    assert kinds("neutral", "same") is None and kinds("regression", "regression") is None
    assert kinds("regression", "unsure") is None  # the GPU could not tell: no disagreement to count


def test_the_command_scores_a_results_file_with_its_report(run_cli, tmp_path: Path) -> None:
    """The rms_norm bwd recording benched on the H200, with the explain report of its kernels: every cell
    calibrate would fit on is scored, each with its measured and predicted ratio, in the JSON too."""
    base = ["calibrate", "--results", str(RESULTS), "--explain", str(REPORT), "--operator", "rms", "--score-only"]
    scores, tables = tmp_path / "scores.json", tmp_path / "scores.md"
    r = run_cli([*base, "--scores-out", str(scores)])
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("the shipped model (fitted on 968 cells of 55 operators; predicted intervals ±3.4%), ")
    assert "not refitted, on 24 cells of 1 operator" in r.stdout and "| predicted \\ measured |" in r.stdout
    doc = json.loads(scores.read_text())
    assert doc["tool"] == "ktriage calibrate --score-only" and doc["model"]["shipped"] is True
    assert len(doc["cells"]) == 24 and {"measured_ratio", "predicted_ratio", "low", "high", "disagreement"} <= set(
        doc["cells"][0]
    )
    r = run_cli([*base, "--scores-out", str(tables)])
    assert r.exit_code == 0 and "## Every cell (24)" in tables.read_text()
    r = run_cli([*base, "--scores-out", str(scores)])  # an earlier scores file is replaced
    assert r.exit_code == 0, r.stderr


def test_scores_out_never_replaces_another_file(run_cli, tmp_path: Path) -> None:
    precious = tmp_path / "results.json"
    precious.write_text('{"format": "a GPU run"}')
    r = run_cli(["calibrate", "--from", str(FRESH_OPS), "--score-only", "--scores-out", str(precious)])
    assert r.exit_code == 2 and "exists and is not a ktriage scores file" in r.stderr
    assert precious.read_text() == '{"format": "a GPU run"}'
    r = run_cli(["calibrate", "--from", str(FRESH_OPS), "--score-only", "--scores-out", str(tmp_path / "s.txt")])
    assert r.exit_code == 2 and "neither .json nor .md" in r.stderr


def test_the_model_named_is_the_model_scored(tmp_path: Path) -> None:
    """A model file whose interval is wide (+-65 %) calls nothing: every cell is predicted neutral."""
    data = json.loads(PARAMS_FILE.read_text())
    data["params"]["interval_a"] = 0.5
    wide = tmp_path / "wide.json"
    wide.write_text(json.dumps(data))
    shipped = kt.score_model(from_cells=FRESH_OPS)
    named = kt.score_model(from_cells=FRESH_OPS, model=wide)
    assert shipped.scoring.scores.matrix["improvement"]["improvement"] == 1
    assert {r.kind for r in named.scoring.results} == {"neutral"} and named.model.path == str(wide)
    with pytest.raises(KtriageError, match="model"):
        kt.score_model(from_cells=FRESH_OPS, model=tmp_path / "missing.json")


def test_a_fits_options_are_refused_with_score_only(run_cli, tmp_path: Path) -> None:
    r = run_cli(["calibrate", "--from", str(FRESH_OPS), "--score-only", "-o", str(tmp_path / "m.json")])
    assert r.exit_code == 2 and "-o belongs to a fit, and --score-only fits nothing" in r.stderr
    assert "--scores-out scores.json" in r.stderr and not (tmp_path / "m.json").exists()
    r = run_cli(["calibrate", "--from", str(FRESH_OPS), "--score-only", "--no-cv", "--level", "0.9"])
    assert r.exit_code == 2 and "--no-cv and --level belong to a fit" in r.stderr
    r = run_cli(["calibrate", "--from", str(FRESH_OPS), "--model", str(PARAMS_FILE), "--no-cv"])
    assert r.exit_code == 2 and "add --score-only to score that model" in r.stderr
    r = run_cli(["calibrate", "--from", str(FRESH_OPS), "--no-cv", "--scores-out", str(tmp_path / "s.json")])
    assert r.exit_code == 2 and "add --score-only to score the model as it is" in r.stderr
