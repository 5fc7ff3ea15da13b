"""The cells not compared, grouped by reason in the table and the markdown as in the HTML
(``ktriage.compare.not_compared``): past 20 reasons, one line counts the others and their cells, so
no cell goes unaccounted for while the verdicts stay in view."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from ktriage.compare.not_compared import group_not_compared
from ktriage.compare.run import compare
from tests.conftest import RunCli

# A real H200 run (Liger's layer_norm bwd, Triton 3.3.1, 3.4.0, 3.5.1 side by side)
LN_BWD = Path(__file__).parents[2] / "benchmarks/gpu/issue3/run2_layer_norm_aa/ln_bwd.json"


def _wrong_everywhere(tmp_path: Path) -> Path:
    """ln_bwd.json with every Triton 3.4.0 cell wrong, each by another error: 30 reasons of one cell."""
    doc = json.loads(LN_BWD.read_text())
    for c in doc["cells"]:
        if (c["key"]["toolchain"] or "").startswith("triton-3.4.0"):
            c.update(
                status="error", samples_ms=[], error=f"wrong: max_abs_err {c['key']['input_id'] + 1}.5 > atol 0.02"
            )
    path = tmp_path / "ln_bwd_wrong.json"
    path.write_text(json.dumps(doc))
    return path


def test_past_20_reasons_the_table_and_markdown_count_the_rest(tmp_path: Path, run_cli: RunCli) -> None:
    side = _wrong_everywhere(tmp_path)
    groups = group_not_compared(compare(str(side), toolchains=True).comparisons[0].not_compared_cells())
    assert groups.count == 30 and len(groups.reasons) == 20 and (groups.other_reasons, groups.other_cells) == (10, 10)
    assert len(groups.every) == 30  # every cell kept, with its reason

    r = run_cli(["compare", str(side), "--toolchains"])
    first = r.stdout[: r.stdout.index("\n\n")]  # the first comparison (3.3.1 -> 3.4.0)
    assert first.count("not compared: 1 cell: new error: wrong: max_abs_err") == 20
    assert "not compared: 10 cells for 10 other reasons (--format json lists every cell with its reason)" in first

    md = run_cli(["compare", str(side), "--toolchains", "--format", "markdown"]).stdout
    assert md.count("| 1 | new error: wrong: max_abs_err") == 20
    assert "... and 10 cells for 10 other reasons (the JSON report lists every cell with its reason)" in md


def test_compare_json_names_the_failed_side_and_lists_each_cell_with_its_reason_apart(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """compare's JSON had ``failed_side`` internally only, and its cells not compared as "<cell>: <why>" lines, which
    a CI script cannot split back (a label holds ": " too); triage's JSON had the structured list. Both now come from
    one encoder (``not_compared_json``), and each error pair says which side failed."""
    side = _wrong_everywhere(tmp_path)
    for reference, failed in ((None, "new"), ("triton==3.4.0", "ref")):
        argv = ["compare", str(side), "--toolchains", "--format", "json", "--allow-failures"]  # 1: regressions
        r = run_cli(argv + (["--reference", reference] if reference else []))
        assert r.exit_code in (0, 1), r.stderr
        first, other = json.loads(r.stdout)["comparisons"]  # 3.3.1 -> 3.4.0 (or 3.4.0 -> 3.3.1), then -> 3.5.1
        errors = [p for p in first["pairs"] if p["status"] == "error"]
        assert len(errors) == 30 and {p["failed_side"] for p in errors} == {failed}
        if reference is None:  # 3.3.1 -> 3.5.1: every cell compared, no side failed
            assert {p["status"] for p in other["pairs"]} == {"compared"}
            assert {p["failed_side"] for p in other["pairs"]} == {None} and other["not_compared_cells"] == []
        cells = first["not_compared_cells"]
        assert [f"{x['cell']}: {x['reason']}" for x in cells] == first["not_compared"]
        assert len(cells) == first["not_compared_count"] == 30
        assert all(x["reason"].startswith(f"{failed} error: wrong: ") and x["side"] == failed for x in cells)
        assert all(set(x) == {"cell", "reason", "side"} for x in cells)


def test_compare_csv_has_the_failed_side_and_one_turn_columns_of_the_json(tmp_path: Path, run_cli: RunCli) -> None:
    """The CSV had the pairs' missing side but not the failed one, nor the one-turn flag the JSON carries;
    both are added after the existing columns, so a reader of those by position reads what it did."""
    side = _wrong_everywhere(tmp_path)
    out = tmp_path / "verdicts.csv"
    r = run_cli(["compare", str(side), "--toolchains", "-o", str(out), "--allow-failures"])
    assert r.exit_code in (0, 1), r.output
    rows = list(csv.DictReader(out.read_text().splitlines()))
    assert list(rows[0])[-4:] == ["missing_side", "missing_toolchain", "failed_side", "one_turn"]
    failed = [x for x in rows if x["verdict"] == "error"]
    assert len(failed) == 30 and {x["failed_side"] for x in failed} == {"new"}
    assert {x["failed_side"] for x in rows if x not in failed} == {""}
    assert {x["one_turn"] for x in rows} <= {"0", "1"}
