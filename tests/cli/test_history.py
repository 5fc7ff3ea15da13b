"""`ktriage history` on a store of 30 synthetic nightly runs (written through the store's own API):
the planted +15% step at run 18 is shown in the table and the JSON with its runs, p-value and the
bisect between the two toolchains; the HTML holds the SVG; --fail-on-recent gates (exit 1). Every
test runs on SQLite and, with KTRIAGE_TEST_PG_URL set (CI), on PostgreSQL."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ktriage.cli.app import main
from ktriage.store import open_store
from ktriage.testing import fake_nightly_runs
from tests.conftest import RunCli
from tests.store.fixtures import store_url  # noqa: F401 - the fixture: SQLite, and PostgreSQL when configured

BASE = ["history", "--op", "layer_norm", "--backend", "liger_layer_norm"]


def fill(url: str, **kw: object) -> list[str]:
    runs = fake_nightly_runs(seed=kw.pop("seed", 11), **kw)  # type: ignore[arg-type]
    with open_store(url) as store:
        for run, cells in runs:
            store.import_run(run, cells)
    return [run.run_id for run, _ in runs]


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.setenv("KTRIAGE_COLUMNS", "1000")  # the headline names the store URL (the tmp path): no wrap
    code = main(args)
    return code, capsys.readouterr().out


def test_table_shows_the_planted_step(
    store_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = fill(store_url)
    code, out = run_cli([*BASE, "--input", "7", "--db", store_url], capsys, monkeypatch)
    assert code == 0, out  # no --fail-on-recent: informative only
    # the headline's end, pinned: "1 change point" is also the start of "1 change points"
    assert re.search(r": 1 series, 1 change point$", out, re.MULTILINE), out
    row = next(line for line in out.splitlines() if ids[18] in line and "triton-3.4.0" in line)
    assert "slower" in row and "+1" in row  # +1x.x%
    assert f"last run before: {ids[17]}" in out and f"first run after: {ids[18]}" in out
    assert "Triton 3.3.1 -> 3.4.0" in out
    assert "ktriage bisect --source pypi:triton --good 3.3.1 --bad 3.4.0" in out


def test_json_and_flat_input(
    store_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = fill(store_url)
    code, out = run_cli([*BASE, "--mode", "bwd", "--db", store_url, "--format", "json"], capsys, monkeypatch)
    assert code == 0
    doc = json.loads(out)
    assert doc["format"] == "ktriage-history"
    by_input = {s["input_id"]: s for s in doc["series"]}
    assert set(by_input) == {7, 8}
    assert [p["run_id"] for p in by_input[7]["points"]] == ids  # ordered by run time
    (cp,) = by_input[7]["change_points"]
    assert cp["index"] == 18 and cp["before"]["run_id"] == ids[17] and cp["after"]["run_id"] == ids[18]
    assert cp["before"]["triton"] == "3.3.1" and cp["after"]["triton"] == "3.4.0"
    assert 10 < cp["step_pct"] < 20 and cp["pvalue"] < 1e-6 and cp["direction"] == "slower"
    assert cp["bisect"]["argv"][:8] == [
        "ktriage",
        "bisect",
        "--source",
        "pypi:triton",
        "--good",
        "3.3.1",
        "--bad",
        "3.4.0",
    ]
    assert by_input[8]["change_points"] == []  # the flat, noisy input


def test_html_has_the_svg_and_markdown(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(store_url)
    html, md = tmp_path / "h.html", tmp_path / "h.md"
    code, _ = run_cli([*BASE, "-i", "7", "--db", store_url, "-o", str(html), "-o", str(md)], capsys, monkeypatch)
    assert code == 0
    page = html.read_text()
    assert "<svg" in page and 'class="changepoint-marker"' in page and "+1" in page
    assert "<script" not in page and "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    text = md.read_text()
    assert text.startswith("# ktriage history: layer_norm liger_layer_norm") and "| # | run |" in text
    assert "`ktriage bisect --source pypi:triton" in text


def test_fail_on_recent_gates(
    store_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(store_url, step_at=26)  # the step is in the last 4 runs
    code, out = run_cli([*BASE, "-i", "7", "--db", store_url, "--fail-on-recent", "5"], capsys, monkeypatch)
    assert code == 1, out
    assert "1 in the latest 5 runs" in " ".join(out.split())  # rich wraps the line holding the store's long URL
    code, _ = run_cli([*BASE, "-i", "7", "--db", store_url, "--fail-on-recent", "2"], capsys, monkeypatch)
    assert code == 0  # the step began 4 runs ago: not in the latest 2


def test_flat_history_passes_the_gate(
    store_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(store_url, step_at=None)
    code, out = run_cli([*BASE, "--db", store_url, "--fail-on-recent", "29"], capsys, monkeypatch)
    assert code == 0, out
    assert "2 series, 0 change points" in out


def test_min_segment_longer_than_the_series_says_nothing_can_be_detected(
    store_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--min-segment 20 on 30 runs: no level of 20 runs fits on both sides, so the planted step cannot
    be found. The series said "no change point", as a flat history does (and the gate passed)."""
    fill(store_url)
    code, out = run_cli([*BASE, "-i", "7", "--db", store_url, "--min-segment", "20"], capsys, monkeypatch)
    assert code == 0, out
    assert "no change point" not in out
    assert "30 measured runs: change points need at least 40 (20 on each side of a change, --min-segment)" in out
    code, out = run_cli([*BASE, "-i", "7", "--db", store_url, "--min-segment", "10"], capsys, monkeypatch)
    assert "1 change point" in out  # 10 a side fits the 18 and 12 runs around the step: found


def test_fail_on_recent_holding_the_whole_series_is_refused(store_url: str, run_cli: RunCli) -> None:
    """--fail-on-recent 40 on 30 nightlies: the window holds every run, so the step planted at run 18
    (12 nights old) failed the gate every night, as a fresh one would. Refused with the series' length;
    a series too short to detect anything (5 runs here, and its own note) is not."""
    fill(store_url)
    r = run_cli([*BASE, "-i", "7", "--db", store_url, "--fail-on-recent", "40"])
    assert r.exit_code == 2, r.output
    assert r.problem == (
        "--fail-on-recent 40 holds the whole series layer_norm bwd liger_layer_norm input 7 "
        "(N=4608) (30 runs): "
        "every change point in it would count as recent, old ones too, so the gate could not tell a fresh change "
        "from an old one"
    )
    assert r.fix is not None and r.fix.startswith("give --fail-on-recent below 30, e.g. --fail-on-recent 3")
    assert run_cli([*BASE, "-i", "7", "--db", store_url, "--fail-on-recent", "30"]).exit_code == 2
    assert run_cli([*BASE, "-i", "7", "--db", store_url, "--fail-on-recent", "12"]).exit_code == 1  # run 18 is 12 back


def test_fail_on_recent_below_min_segment_is_refused(store_url: str, run_cli: RunCli) -> None:
    """--fail-on-recent 1 with the default --min-segment 2 passed every night: a change is reported once two
    runs hold the new level, so its first run is never the latest one. Refused before the store is read,
    naming both ways out; with --min-segment 1 the window of one run can hold a change, and is taken."""
    fill(store_url, step_at=28)  # the step's runs: the last two
    r = run_cli([*BASE, "-i", "7", "--db", store_url, "--fail-on-recent", "1"])
    assert r.exit_code == 2, r.output
    assert r.problem == (
        "--fail-on-recent 1 can never fire with --min-segment 2: a change is "
        "reported once 2 runs hold the new level, so its first run is never among the latest 1"
    )
    assert r.fix is not None and r.fix.startswith(
        "give --fail-on-recent 2 or more (e.g. --fail-on-recent 3), or lower --min-segment to 1"
    )
    assert run_cli([*BASE, "-i", "7", "--db", store_url, "--fail-on-recent", "2"]).exit_code == 1  # it fires
    assert run_cli([*BASE, "-i", "7", "--db", store_url, "--fail-on-recent", "3", "--min-segment", "4"]).exit_code == 2
    ok = run_cli([*BASE, "-i", "7", "--db", store_url, "--fail-on-recent", "1", "--min-segment", "1"])
    assert ok.exit_code in (0, 1), ok.output  # taken: the gate can fire


def test_fail_on_recent_on_a_series_too_short_to_detect_is_not_refused(store_url: str, run_cli: RunCli) -> None:
    fill(store_url, n_runs=3, step_at=None, toolchain_at=((0, "3.3.0"),))
    r = run_cli([*BASE, "-i", "7", "--db", store_url, "--fail-on-recent", "3"])
    assert r.exit_code == 0, r.output
    assert "change points need at least 4" in r.stdout


def test_unknown_cell_is_a_usage_error(
    store_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(store_url, n_runs=5)
    code = main(["history", "--op", "layer_norm", "--backend", "nope", "--db", store_url])
    err = capsys.readouterr().err
    assert code == 2 and "liger_layer_norm (bwd)" in err


def test_filters_that_match_nothing_name_what_is_stored(
    store_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A --toolchain (or --input, --gpu) that matches none of a stored cell's runs listed the op's
    backends, the one the user had given right: the fix names what the filter can take."""
    fill(store_url, n_runs=5)
    code = main([*BASE, "--toolchain", "9.9", "--db", store_url])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2 and "no stored cell of layer_norm liger_layer_norm with --toolchain 9.9" in err
    assert "stored toolchains: triton-3.3.0" in err and "backends (modes)" not in err
    code = main([*BASE, "--input", "N=1", "--gpu", "H200", "--db", store_url])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2 and "stored inputs: 7 (" in err and "stored GPUs" not in err  # --gpu H200 matches alone
    code = main([*BASE, "--gpu", "A100", "--db", store_url])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2 and "stored GPUs: NVIDIA H200" in err


def test_input_by_shape_facts_and_toolchain_filter(
    store_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(store_url, n_runs=8, step_at=None)
    code, out = run_cli([*BASE, "--input", "N=5120", "--db", store_url, "--format", "json"], capsys, monkeypatch)
    assert code == 0 and [s["input_id"] for s in json.loads(out)["series"]] == [8]
    code, out = run_cli([*BASE, "--toolchain", "3.3.0", "--db", store_url, "--format", "json"], capsys, monkeypatch)
    doc = json.loads(out)
    assert {p["toolchain"] for s in doc["series"] for p in s["points"]} == {"triton-3.3.0"}


def test_toolchain_filter_names_the_triton_version_not_a_ptxas_one(store_url: str, run_cli: RunCli) -> None:
    """``--toolchain 3.4`` matched any id holding "3.4": a cell of Triton 3.3.1 with ptxas 13.4.59 joined
    the 3.4.0 series. It names the Triton version now; an id without "3.4" in its Triton part is left out,
    and a selector that names no part of a toolchain is refused with the forms it may take."""
    from ktriage.measure.cells import Cell, CellKey, RunInfo

    ids = {"a": "triton-3.3.1.ptxas-13.4.59.0c9a828e", "b": "triton-3.4.0.ptxas-12.8.93.da4345e0"}
    with open_store(store_url) as store:
        for i, (run_id, tc) in enumerate(ids.items()):
            run = RunInfo(run_id=f"run_{run_id}", created=f"2025-01-0{i + 1}T00:00:00+00:00", status="finished")
            run.toolchains = [{"id": tc, "spec": f"triton=={tc.split('-')[1].split('.ptxas')[0]}"}]
            cell = Cell(CellKey("layer_norm", "bwd", 7, "(4096, 4608)", "liger_layer_norm", tc), "ok", [0.1] * 10)
            store.import_run(run, [cell])
    r = run_cli([*BASE, "--toolchain", "3.4", "--db", store_url, "--format", "json"])
    assert r.exit_code == 0, r.output
    assert [p["toolchain"] for s in json.loads(r.stdout)["series"] for p in s["points"]] == [ids["b"]]
    r = run_cli([*BASE, "--toolchain", "ptxas", "--db", store_url])
    assert r.exit_code == 2 and r.problem == "--toolchain 'ptxas' names no part of a toolchain", r.output


def test_input_by_shape_facts_and_range_on_the_labels_bench_stores(
    store_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ktriage bench` stores layer_norm's inputs as TritonBench's x_val, "(4096, 4608)", not as facts:
    `--input N=4608` (docs/history.md, the --input help) matched only the synthetic "N=4608" labels and
    refused a real store's cells. A catalog op's selectors go through the op's sweep, as in every verb."""
    fill(store_url, n_runs=8, step_at=None, inputs=((7, "(4096, 4608)", 0.412), (8, "(4096, 5120)", 0.455)))
    for selector, ids in (("N=4608", [7]), ("N=4608..5120", [7, 8]), ("8", [8]), ("(4096, 5120)", [8])):
        code, out = run_cli([*BASE, "--input", selector, "--db", store_url, "--format", "json"], capsys, monkeypatch)
        assert code == 0 and [s["input_id"] for s in json.loads(out)["series"]] == ids, selector
    code = main([*BASE, "--input", "N=1024", "--db", store_url])  # a catalog input this store has not measured
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2 and "stored inputs: 7 ((4096, 4608)), 8 ((4096, 5120))" in err
