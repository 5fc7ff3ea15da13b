"""`ktriage triage`'s cells not compared, grouped by reason in every output as compare groups them
(``ktriage.compare.not_compared.group_not_compared``), on the real TritonBench layer_norm bwd pair cut
so that each side has inputs the other lacks (docs/compare.md's example).

Before, triage kept only "<cell>: <why>" lines and listed them flat (the terminal's first 20, the
markdown's first 200, the HTML all of them in one list): a side without a whole operator buried the
verdicts under one line per cell. The JSON keeps every cell, as lines and as cell and reason apart."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.conftest import RunCli

DATA = Path(__file__).resolve().parents[1] / "data" / "tritonbench"  # ../shared/data/tritonbench_outputs
SAME = ["--old-toolchain", "triton==3.4.0", "--new-toolchain", "triton==3.4.0"]  # nothing to compile
NEW_ONLY = "on the new side only (the other has no such cell)"
REF_ONLY = "on the reference side only (the other has no such cell)"


def _cut_pair(tmp_path: Path) -> tuple[Path, Path]:
    """run1's first 20 inputs against run2's inputs 4 to 30: 3 inputs on the old side only, 10 on the
    new side only, each for both backends (26 cells not compared), 17 inputs compared."""
    run1 = (DATA / "layer_norm_bwd_run1.csv").read_text().splitlines(keepends=True)
    run2 = (DATA / "layer_norm_bwd_run2.csv").read_text().splitlines(keepends=True)
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    old, new = tmp_path / "old" / "layer_norm_bwd.csv", tmp_path / "new" / "layer_norm_bwd.csv"
    old.write_text("".join(run1[:21]))
    new.write_text("".join(run2[:1] + run2[4:31]))
    return old, new


def test_triage_groups_its_cells_not_compared_by_reason_in_every_output(tmp_path: Path, run_cli: RunCli) -> None:
    old, new = _cut_pair(tmp_path)
    md, html, js = tmp_path / "r.md", tmp_path / "r.html", tmp_path / "r.json"
    r = run_cli(["triage", str(old), str(new), *SAME, "-o", str(md), "-o", str(html), "-o", str(js)])
    assert r.exit_code == 4, r.output  # cells nobody compared: incomplete

    # the terminal: a count per reason, most cells first, its first 5 cells and "and N more"
    assert r.stdout.count("not compared:") == 2
    out = " ".join(r.stdout.split())
    assert out.index(f"not compared: 20 cells: {NEW_ONLY}") < out.index(f"not compared: 6 cells: {REF_ONLY}")
    cells = [line.strip() for line in r.stdout.splitlines() if line.startswith("    layer_norm.bwd[")]
    assert len(cells) == 10 and cells[0] == "layer_norm.bwd[(4096, 11264)] liger_layer_norm"
    assert "and 15 more" in out and "and 1 more" in out
    assert "--format json lists every cell not compared" in out

    # the markdown: one row per reason under triage's own heading
    text = md.read_text()
    assert "### Not compared: 26 cells (the report is incomplete)" in text and "| cells | why | which |" in text
    (row_new,) = [line for line in text.splitlines() if line.startswith(f"| 20 | {NEW_ONLY}")]
    assert row_new.count("<br>") == 5 and row_new.endswith("<br>and 15 more |")
    (row_ref,) = [line for line in text.splitlines() if line.startswith(f"| 6 | {REF_ONLY}")]
    assert row_ref.endswith("<br>and 1 more |")
    assert text[text.index("### Not compared") :].count("layer_norm.bwd[(4096, ") == 10

    # the HTML: the same table per reason as compare's page, every cell in a folded list
    page = html.read_text()
    assert "<h2>Not compared: 26 cells (the report is incomplete)</h2>" in page
    (reasons,) = re.findall(r'<table class="not-compared-reasons">(.*?)</table>', page, re.S)
    assert f'<td class="num">20</td><td>{NEW_ONLY}</td>' in reasons and 'class="more">and 15 more</li>' in reasons
    (folded,) = re.findall(r'<details class="not-compared-all">(.*?)</details>', page, re.S)
    assert folded.count("<tr><td>layer_norm.bwd[") == 26

    # the JSON: every cell, as before ("<cell>: <why>"), and cell and reason apart
    doc = json.loads(js.read_text())
    assert doc["not_compared_count"] == 26 and len(doc["not_compared"]) == 26
    assert f"layer_norm.bwd[(4096, 15872)] torch_layer_norm: {NEW_ONLY}" in doc["not_compared"]
    split = doc["not_compared_cells"]
    assert [f"{x['cell']}: {x['reason']}" for x in split] == doc["not_compared"]
    assert sum(x["reason"] == NEW_ONLY for x in split) == 20 and sum(x["reason"] == REF_ONLY for x in split) == 6
    # and the side each lacks it on, without parsing the reason (the reference lacks a cell on the new side only)
    assert {(x["reason"], x["side"]) for x in split} == {(NEW_ONLY, "ref"), (REF_ONLY, "new")}
