"""Every report of explain and triage names the cost model that priced its predictions (``--model FILE``,
``$KTRIAGE_MODEL``, or the shipped fit) and what its intervals cover (``cv.level``): no report said which
model it used, not even the JSON, and "+63 % [+57 %, +68 %]" carried no coverage. Real compiles of the
embedding backward's REDG -> ATOMG pair (ptxas 12.4.131 against 12.8.93), a model file written as
``ktriage calibrate -o`` writes one, real renderers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

import ktriage.api as kt
from ktriage.predict.model import MODEL_ENV, PARAMS_FILE
from tests.triage.test_triage_regressions import _embedding_csvs

OLD, NEW = "triton==3.4.0,ptxas==12.4.131", "triton==3.4.0"


def _model_file(d: Path) -> Path:
    """The shipped fit with a wider interval fitted for 90 % coverage, as another calibration writes it."""
    data = json.loads(PARAMS_FILE.read_text())
    data["params"]["interval_a"] = 0.05
    data["params"]["cv"]["level"] = 0.9
    path = d / "team-model.json"
    path.write_text(json.dumps(data))
    return path


def _terminal(print_table: object) -> str:
    console = Console(record=True, width=400)
    print_table(console)  # type: ignore[operator]
    return console.export_text()


def test_explain_names_its_model_file_and_coverage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MODEL_ENV, raising=False)
    model = _model_file(tmp_path)
    report = kt.explain(target="liger.embedding", mode="bwd", inputs="0", toolchains=[OLD, NEW], model=model)
    doc = json.loads(report.json_text())
    assert doc["model"] == {
        "path": str(model),
        "shipped": False,
        "interval_a": 0.05,
        "interval_b": 0.0,
        "interval_level": 0.9,
        "interval_held_out": True,
    }
    markdown, terminal = report.to_markdown(), _terminal(report.print_table)
    for text in (markdown, terminal):
        assert "wholly beyond it (predicted intervals cover 90% of held-out measurements)" in text
        assert f"Model: {model} (predicted intervals ±5.1%)" in text.replace("\\", "")

    shipped = kt.explain(target="liger.embedding", mode="bwd", inputs="0", toolchains=[OLD, NEW])
    assert shipped.to_json()["model"]["path"] is None  # type: ignore[index]
    assert "Model: the shipped model (predicted intervals ±3.4%)" in shipped.to_markdown()
    assert "cover 80% of held-out measurements" in _terminal(shipped.print_table)


def test_triage_names_the_model_it_priced_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = _model_file(tmp_path)
    monkeypatch.setenv(MODEL_ENV, str(model))
    old, new = _embedding_csvs(tmp_path)
    report = kt.triage(old=old, new=new, old_toolchain=OLD, new_toolchain=NEW, bisect=False, fixes=False)
    doc = json.loads(report.json_text())
    assert doc["model"]["path"] == str(model) and doc["model"]["interval_level"] == 0.9
    line = f"Model: {model} (predicted intervals ±5.1%); predicted intervals cover 90% of held-out measurements"
    assert line in report.to_markdown().replace("\\", "")
    assert line in _terminal(report.print_table)
    assert line in report.to_html()


def test_triage_model_option_prices_with_that_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli) -> None:
    """``triage --model FILE`` (and ``kt.triage(model=...)``): the file prices the predictions and the report
    names it, over $KTRIAGE_MODEL (the fallback); triage took the model only from the variable."""
    monkeypatch.delenv(MODEL_ENV, raising=False)
    model = _model_file(tmp_path)
    old, new = _embedding_csvs(tmp_path)
    common = [str(old), str(new), "--old-toolchain", OLD, "--new-toolchain", NEW, "--no-bisect", "--no-fixes"]
    shipped = run_cli(["triage", *common, "-f", "json"])
    given = run_cli(["triage", *common, "-f", "json", "--model", str(model)])
    assert (shipped.exit_code, given.exit_code) == (1, 1), given.stderr
    doc, ref = json.loads(given.stdout), json.loads(shipped.stdout)
    assert doc["model"]["path"] == str(model) and doc["model"]["interval_level"] == 0.9
    assert ref["model"]["path"] is None
    # the wider interval of the file is the one the cells' predictions carry
    widths = [
        [c["predicted"]["high"] - c["predicted"]["low"] for c in d["cells"] if c["predicted"]] for d in (ref, doc)
    ]
    assert widths[0] and len(widths[0]) == len(widths[1])
    assert all(w > r for r, w in zip(widths[0], widths[1], strict=True))
    # the variable is the fallback: the option wins over it
    monkeypatch.setenv(MODEL_ENV, str(PARAMS_FILE))
    api = kt.triage(old=old, new=new, old_toolchain=OLD, new_toolchain=NEW, bisect=False, fixes=False, model=model)
    assert api.to_json()["model"]["path"] == str(model)  # type: ignore[index]


def test_triage_refuses_a_model_file_that_is_none_before_any_compile(tmp_path: Path, run_cli) -> None:
    bad = tmp_path / "not-a-model.json"
    bad.write_text("{}")
    old, new = _embedding_csvs(tmp_path)
    r = run_cli(["triage", str(old), str(new), "--old-toolchain", OLD, "--new-toolchain", NEW, "--model", str(bad)])
    assert r.exit_code != 0 and "no 'params' object" in r.stderr and "ktriage calibrate -o FILE" in r.stderr
    assert "Traceback" not in r.stderr
