"""`ktriage compare` end to end through the real ``main(argv)``, on results files and a real SQLite store
(fake runs from ktriage.testing)."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace
from pathlib import Path

import pytest

from ktriage.cli import exit_codes
from ktriage.measure.results_file import read_results, write_results
from ktriage.testing import fake_sweep_run
from tests.conftest import CliResult, RunCli

TCS = ("triton-3.3.1", "triton-3.4.0")


def cliff_at_7(tc: str, i: int) -> float:
    return 0.8 if tc == TCS[0] or i < 7 else 1.45


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, Path]:
    out = {}
    run, cells = fake_sweep_run(seed=1, speed=cliff_at_7, toolchains=TCS, broken={(TCS[1], 20): "wrong"})
    out["both"] = write_results(tmp_path / "both.json", run, cells)
    run, cells = fake_sweep_run(seed=2, toolchains=TCS[:1])
    out["old"] = write_results(tmp_path / "old.json", run, cells)
    run, cells = fake_sweep_run(seed=3, toolchains=TCS[1:], speed=lambda tc, i: 0.8 if i < 20 else 1.2)
    out["new"] = write_results(tmp_path / "new.json", run, cells)
    run, cells = fake_sweep_run(seed=4, toolchains=TCS[1:])
    out["same"] = write_results(tmp_path / "same.json", run, cells)
    return out


@pytest.fixture()
def invoke(run_cli: RunCli):  # type: ignore[no-untyped-def]
    """``invoke(*args, env=...)``: ``ktriage compare ARGS``."""

    def run(*args: str, env: dict[str, str] | None = None) -> CliResult:
        return run_cli(["compare", *args], env=env)

    return run


def test_results_file_round_trip(files: dict[str, Path]) -> None:
    run, cells = read_results(files["both"])
    assert run.settings["baseline"] == "torch_layer_norm" and len(cells) == 90
    assert cells[1].samples_ms and cells[1].key.toolchain == TCS[0]


def test_regressions_exit_1_table(files: dict[str, Path], invoke) -> None:
    r = invoke(str(files["old"]), str(files["new"]))
    assert r.exit_code == exit_codes.FINDING, r.output
    assert "10 regressions" in r.output and "baseline torch_layer_norm unchanged" in r.output
    assert "regression" in r.output and "N=11264" in r.output


def test_no_regression_exit_0(files: dict[str, Path], invoke) -> None:
    r = invoke(str(files["old"]), str(files["same"]))
    assert r.exit_code == exit_codes.OK, r.output
    assert "0 regressions" in r.output


def test_two_runs_that_share_no_input_are_refused_not_passed(files: dict[str, Path], tmp_path: Path, invoke) -> None:
    """Halves of one sweep (inputs 0..14 against 15..29) compare nothing: exit 2 naming both sides'
    inputs, never "0 regressions" with exit 0 for a CI job to pass."""
    run, cells = read_results(files["old"])
    low = write_results(tmp_path / "low.json", run, [c for c in cells if c.key.input_id < 15])
    high = write_results(tmp_path / "high.json", run, [c for c in cells if c.key.input_id >= 15])
    r = invoke(str(low), str(high))
    assert r.exit_code == exit_codes.USAGE, r.output
    assert "share no input: both measured layer_norm.bwd" in r.err_text and "fix:" in r.err_text
    other_op = write_results(tmp_path / "rms.json", run, [replace(c, key=replace(c.key, op="rms_norm")) for c in cells])
    r = invoke(str(files["old"]), str(other_op))
    assert r.exit_code == exit_codes.USAGE and "share no cell" in r.err_text and "rms_norm.bwd" in r.err_text
    assert "a results file carries its own" in r.err_text  # --op cannot rename a results file's operator


def test_toolchains_mode_json(files: dict[str, Path], invoke) -> None:
    r = invoke(str(files["both"]), "--toolchains", "--format", "json", "--allow-failures")  # one wrong cell
    assert r.exit_code == exit_codes.FINDING, r.output
    doc = json.loads(r.stdout)
    (c,) = doc["comparisons"]
    assert (c["ref"], c["new"]) == TCS and c["counts"]["regression"] == 22 and c["counts"]["error"] == 1
    assert any("cliff between N=4096 and N=4608" in f["text"] for f in c["cliffs"])


def test_csv_and_markdown_and_threshold(files: dict[str, Path], tmp_path: Path, invoke) -> None:
    r = invoke(str(files["old"]), str(files["new"]), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert len(rows) == 60 and sum(x["verdict"] == "regression" for x in rows) == 10
    # a 60% gate: the 1.5x slowdown (1.2 vs 0.8 of torch) is now "same"
    r = invoke(str(files["old"]), str(files["new"]), "--threshold", "0.6", "--format", "markdown")
    assert r.exit_code == exit_codes.OK and "**0 regressions" in r.stdout and "gate ±60%" in r.stdout
    md = tmp_path / "out" / "summary.md"
    summary = tmp_path / "gh_summary.md"
    summary.write_text("previous step\n")
    r = invoke(
        str(files["old"]),
        str(files["new"]),
        "--markdown",
        str(md),
        "--confidence",
        "0.95",
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert r.exit_code == exit_codes.FINDING
    assert "### Regressions, worst first" in md.read_text() and "95% confidence" in md.read_text()
    text = summary.read_text()
    assert text.startswith("previous step\n") and "### Regressions, worst first" in text  # appended, not overwritten


SUMMARIES = {
    "missing-folder": "{d}/no/such/summary.md",
    "a-folder": "{d}",
    "under-a-file": "{d}/afile/summary.md",
}


@pytest.mark.parametrize("name", list(SUMMARIES))
def test_a_step_summary_that_cannot_be_appended_to_is_refused_before_the_work(
    name: str, files: dict[str, Path], tmp_path: Path, invoke
) -> None:
    """As triage: refused up front (exit 2, nothing printed), where it was found after the report was
    printed, so that a CI compare with regressions exited 2 (bad input) where it means 1 (a finding)."""
    (tmp_path / "afile").write_text("a file")
    summary = SUMMARIES[name].format(d=tmp_path)
    r = invoke(str(files["old"]), str(files["new"]), env={"GITHUB_STEP_SUMMARY": summary})
    assert r.exit_code == exit_codes.USAGE, r.stderr
    assert r.stdout == "", "the report was printed before the summary was checked"
    assert "error: $GITHUB_STEP_SUMMARY " in r.stderr and "\nfix: " in r.stderr  # the problem and the fix
    assert invoke(str(files["old"]), str(files["new"]), env={"GITHUB_STEP_SUMMARY": ""}).exit_code == exit_codes.FINDING


def test_html_written(files: dict[str, Path], tmp_path: Path, invoke) -> None:
    html = tmp_path / "r.html"
    r = invoke(str(files["both"]), "--toolchains", "--html", str(html))
    assert r.exit_code == exit_codes.INCOMPLETE and html.exists()  # one wrong cell: written all the same
    text = html.read_text()
    assert (
        text.count("<svg") == 3
        and 'class="cliff-marker"' in text
        and "http" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.json", "other.json"], "cannot read results file"),
        (["A.json"], "compare needs two runs"),
        (["{both}", "--threshold", "5000"], "is a fraction here"),
        (
            ["{both}", "--threshold", "5"],
            "error: --threshold 5 is a fraction here: a 500% gate fix: for a 5% gate pass --threshold 0.05",
        ),
        (["{both}", "--confidence", "1.5"], "outside [0.5, 1)"),
        (["{old}", "--toolchains"], "needs two or more"),
        (["{old}", "{new}", "--toolchains"], "compares the toolchains of ONE run"),
        (["{garbage}", "{new}"], "is not a ktriage results file"),
    ],
)
def test_bad_input_exits_2(files: dict[str, Path], tmp_path: Path, args: list[str], message: str, invoke) -> None:
    garbage = tmp_path / "garbage.json"
    garbage.write_text('{"hello": 1}')
    names = {k: str(v) for k, v in files.items()} | {"garbage": str(garbage)}
    r = invoke(*[a.format(**names) for a in args])
    assert r.exit_code == exit_codes.USAGE, r.output
    assert message in r.err_text and r.fix, r.output


def test_run_ids_from_a_real_sqlite_store(files: dict[str, Path], tmp_path: Path, invoke) -> None:
    store_mod = pytest.importorskip("ktriage.store", reason="the results store module is not in this checkout")
    url = f"sqlite:///{tmp_path / 'store.db'}"
    store = store_mod.open_store(url)
    ids = []
    for name in ("old", "new"):
        run, cells = read_results(files[name])
        run.status = "finished"
        ids.append(store.import_run(run, cells))
    store.close()
    r = invoke(ids[0][:8], ids[1], "--db", url, "--format", "json")
    assert r.exit_code == exit_codes.FINDING, r.output
    (c,) = json.loads(r.stdout)["comparisons"]
    assert c["ref_run_id"] == ids[0] and c["new_run_id"] == ids[1] and c["counts"]["regression"] == 10
    r = invoke("nosuchrun", ids[1], "--db", url)
    assert r.exit_code == exit_codes.USAGE and "no run 'nosuchrun'" in r.problem


# Real H200 results (benchmarks/calibration/fresh): Liger's embedding bwd in bf16, Triton 3.3.1, 3.4.0
# and 3.6.0 in one run. Triton 3.3.1 cannot compile a bf16 atomic_add, so against the first toolchain
# nothing is compared; --reference picks one that ran.
BF16_EMBEDDING = Path(__file__).parents[2] / "benchmarks/calibration/fresh/h200/embedding_bwd_bf16.json"


def test_toolchains_reference_that_failed_everything_says_so(invoke) -> None:
    r = invoke(str(BF16_EMBEDDING), "--toolchains", "--format", "markdown")
    assert r.exit_code == exit_codes.INCOMPLETE, r.output  # "0 regressions" of nothing compared is no pass
    assert r.stdout.count("failed every kernel here") == 2 and "--reference TOOLCHAIN" in r.stdout
    assert "0 same" in r.stdout and "16 not compared" in r.stdout
    r = invoke(str(BF16_EMBEDDING), "--toolchains", "--format", "json")
    assert [c["reference_failed"] for c in json.loads(r.stdout)["comparisons"]] == [True, True]


# A real H200 run (benchmarks/corpus/h200/bench): Liger's DyT kernels recorded, in Triton 3.6.0, 3.3.1 and 3.4.0.
LIGER_DYT = Path(__file__).parents[2] / "benchmarks/corpus/h200/bench/liger_dyt.json"


def test_a_variant_without_samples_is_a_partial_result_exit_4_after_every_output(tmp_path: Path, invoke) -> None:
    """A toolchain with no cell for one kernel (a variant that never ran) left that cell out of every
    verdict and compare exited 0, "all fine", to a CI job gating on it; triage exits 4 there. Now the
    table, -o files and JSON are written in full, then compare exits 4 and says why on its last line;
    --allow-failures gives the status of the rest (0 here: no regression)."""
    doc = json.loads(LIGER_DYT.read_text())
    dropped = next(c for c in doc["cells"] if c["key"]["toolchain"].startswith("triton-3.4.0"))
    doc["cells"].remove(dropped)
    partial = tmp_path / "liger_dyt_missing.json"
    partial.write_text(json.dumps(doc))
    out = tmp_path / "out.json"
    r = invoke(str(partial), "--toolchains", "-o", str(out))
    assert r.exit_code == exit_codes.INCOMPLETE, r.output
    assert "0 regressions" in r.stdout and "not compared: 1 cell: on the reference side only" in r.stdout
    assert "\n    liger_dyt.recorded[" in r.stdout  # the cell, under its reason
    assert "incomplete: 1 cell not compared" in " ".join(r.stdout.split())
    assert "pass --allow-failures for 0" in " ".join(r.stdout.split())
    written = json.loads(out.read_text())
    assert written["complete"] is False and written["not_compared_count"] == 1
    assert [len(c["not_compared"]) for c in written["comparisons"]] == [0, 1]
    r = invoke(str(partial), "--toolchains", "--format", "json", "--allow-failures")
    assert r.exit_code == exit_codes.OK and json.loads(r.stdout)["complete"] is False, r.output
    assert "incomplete: 1 cell not compared" in r.err_text  # on stderr: the JSON on stdout stays whole
    # the message names both lists the JSON has (it named not_compared only), and each is there
    said = " ".join(r.err_text.split())
    assert "not_compared as lines, not_compared_cells as objects with cell, reason and side apart" in said, said
    (missing,) = json.loads(r.stdout)["comparisons"][1]["not_compared_cells"]
    assert set(missing) == {"cell", "reason", "side"}
    r = invoke(str(LIGER_DYT), "--toolchains", "--format", "json")  # the run as measured: every cell compared
    assert r.exit_code == exit_codes.OK and json.loads(r.stdout)["complete"] is True, r.output
    assert "incomplete" not in r.output


def _liger_dyt_without_k1_at_340(tmp_path: Path) -> Path:
    """The real Liger DyT run without Triton 3.4.0's cells of kernel K1: a kernel one toolchain has no cell of."""
    doc = json.loads(LIGER_DYT.read_text())
    doc["cells"] = [
        c
        for c in doc["cells"]
        if not (c["key"]["toolchain"].startswith("triton-3.4.0") and c["key"]["backend"] == "K1:_dyt_bwd_kernel")
    ]
    partial = tmp_path / "liger_dyt_no_k1.json"
    partial.write_text(json.dumps(doc))
    return partial


def test_a_kernel_one_toolchain_lacks_is_labelled_missing_not_host(tmp_path: Path, invoke) -> None:
    """A kernel Triton 3.4.0 has no cell of was labelled ``K1@triton-3.6.0...->host``, as if the other
    side were a host run; the missing side is now named as missing, in every output, either way round."""
    partial = _liger_dyt_without_k1_at_340(tmp_path)
    tc340, tc360 = "triton-3.4.0.ptxas-12.8.93.da4345e0", "triton-3.6.0.ptxas-12.8.93.682629b2"
    label = f"K1:_dyt_bwd_kernel@{tc360}->(no {tc340} cell)"
    table = invoke(str(partial), "--toolchains", "--allow-failures")
    markdown = invoke(str(partial), "--toolchains", "--allow-failures", "--format", "markdown")
    (_, partial_json) = json.loads(invoke(str(partial), "--toolchains", "--format", "json").stdout)["comparisons"]
    for text in (table.stdout, markdown.stdout, " ".join(partial_json["not_compared"])):
        assert label in text and "->host" not in text, text
    html = tmp_path / "report.html"
    invoke(str(partial), "--toolchains", "--allow-failures", "-o", str(html))
    assert label.replace("->", "-&gt;") in html.read_text() and "-&gt;host" not in html.read_text()
    reverse = invoke(str(partial), "--toolchains", "--reference", "triton==3.4.0", "--allow-failures").stdout
    assert f"K1:_dyt_bwd_kernel@(no {tc340} cell)->{tc360}" in reverse and "host->" not in reverse


def test_the_json_and_csv_name_the_toolchain_a_one_sided_cell_lacks(tmp_path: Path, invoke) -> None:
    """A kernel Triton 3.4.0 has no cell of: the pair's ``new_toolchain`` is null (empty in the CSV), as it
    was, and only the label said which toolchain was missing; a JSON or CSV reader had to parse it. Now
    ``missing_side`` and ``missing_toolchain`` say it, either way round; the existing fields keep their
    meaning, and every other pair has both null (empty)."""
    partial = _liger_dyt_without_k1_at_340(tmp_path)
    tc340 = "triton-3.4.0.ptxas-12.8.93.da4345e0"
    for reference, side, one_sided in (
        ([], "new", 1),  # 3.6.0 (the run's first) against 3.3.1, and against 3.4.0, which lacks K1
        (["--reference", "triton==3.4.0"], "ref", 2),  # 3.4.0, which lacks K1, against 3.6.0 and 3.3.1
    ):
        r = invoke(str(partial), "--toolchains", *reference, "--format", "json")
        pairs = [p for c in json.loads(r.stdout)["comparisons"] for p in c["pairs"]]
        missing = [p for p in pairs if p["status"] == "missing"]
        assert len(missing) == one_sided and all(p["backend"] == "K1:_dyt_bwd_kernel" for p in missing)
        for p in missing:  # the missing side's toolchain is null, as before; the other side's is named
            assert p[f"{side}_toolchain"] is None and p["ref_toolchain" if side == "new" else "new_toolchain"]
            assert (p["missing_side"], p["missing_toolchain"]) == (side, tc340)
        assert all(p["missing_side"] is None and p["missing_toolchain"] is None for p in pairs if p not in missing)
        out = invoke(str(partial), "--toolchains", *reference, "--format", "csv").stdout
        rows = list(csv.DictReader(io.StringIO(out)))
        lacking = [x for x in rows if x["verdict"] == "missing"]
        assert len(lacking) == one_sided and all(x[f"{side}_toolchain"] == "" for x in lacking)
        assert {(x["missing_side"], x["missing_toolchain"]) for x in lacking} == {(side, tc340)}
        assert {(x["missing_side"], x["missing_toolchain"]) for x in rows if x not in lacking} == {("", "")}


def test_regressions_and_cells_not_compared_exit_4_and_1_with_allow_failures(files: dict[str, Path], invoke) -> None:
    """Both hold (22 regressions, one wrong cell): the partial result wins, as in triage and explain;
    --allow-failures gives 1, the regressions' status."""
    r = invoke(str(files["both"]), "--toolchains")
    assert r.exit_code == exit_codes.INCOMPLETE, r.output
    assert "exit code 4 (pass --allow-failures for 1: 22 regressions found)" in " ".join(r.stdout.split())
    r = invoke(str(files["both"]), "--toolchains", "--allow-failures")
    assert r.exit_code == exit_codes.FINDING, r.output


def test_toolchains_reference_picks_the_reference(invoke) -> None:
    r = invoke(str(BF16_EMBEDDING), "--toolchains", "--reference", "triton==3.4.0", "--format", "json")
    assert r.exit_code == exit_codes.INCOMPLETE, r.output  # 3.3.1's cells failed
    comparisons = json.loads(r.stdout)["comparisons"]
    assert [(c["ref"].split(".ptxas")[0], c["new"].split(".ptxas")[0]) for c in comparisons] == [
        ("triton-3.4.0", "triton-3.3.1"),
        ("triton-3.4.0", "triton-3.6.0"),
    ]
    against_36 = comparisons[1]["counts"]
    assert against_36["error"] == 0 and against_36["same"] + against_36["unsure"] == 16
    # 3.3.1 failing as the NEW side is an error per cell, not a failed reference
    assert [c["reference_failed"] for c in comparisons] == [False, False]
    # ...and the headline says that the new side failed every kernel, not just "16 not compared"
    assert [c["new_failed"] for c in comparisons] == [True, False]
    r = invoke(str(BF16_EMBEDDING), "--toolchains", "--reference", "triton==3.4.0", "--format", "markdown")
    assert "triton-3.3.1" in r.stdout.split("failed every kernel here: nothing of it was measured")[0].splitlines()[-1]


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--toolchains", "--reference", "triton==3.9.0"], "is not a toolchain of the run (it has: triton-3.3.1"),
        (["--toolchains", "--reference", "ptxas-12.8.93"], "names 2 toolchains of the run"),
        (["--reference", "triton==3.4.0"], "but --toolchains was not given"),
    ],
)
def test_toolchains_reference_bad_input(invoke, args: list[str], problem: str) -> None:
    r = invoke(str(BF16_EMBEDDING), *args)
    assert r.exit_code == exit_codes.USAGE and problem in r.output and "Traceback" not in r.output


def test_reading_runs_from_a_store_that_is_not_there_creates_none(tmp_path: Path, invoke) -> None:
    """compare RUN_A RUN_B reads the store: a --db path with no store is refused and left as it was, never
    made into an empty store (nor an empty file into a SQLite database)."""
    missing = tmp_path / "none.db"
    r = invoke("abc123", "def456", "--db", f"sqlite:///{missing}")
    assert r.exit_code == exit_codes.USAGE and "the file does not exist" in r.err_text
    assert not missing.exists()
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    r = invoke("abc123", "def456", "--db", f"sqlite:///{empty}")
    assert r.exit_code == exit_codes.USAGE and "is not a SQLite database" in r.err_text
    assert empty.read_bytes() == b""


def test_op_and_mode_that_a_results_file_contradicts_are_refused(files: dict[str, Path], invoke) -> None:
    """--op/--mode are for a TritonBench CSV whose name does not say them; on ktriage's results they were
    ignored (--op softmax compared the layer_norm cells as they were)."""
    r = invoke(str(files["old"]), str(files["new"]), "--op", "softmax")
    assert (
        r.exit_code == exit_codes.USAGE and "--op softmax does not match" in r.err_text and "layer_norm" in r.err_text
    )
    r = invoke(str(files["old"]), str(files["new"]), "--op", "layer_norm", "--mode", "bwd")
    assert r.exit_code == exit_codes.FINDING, r.output  # the same words as the file: fine


def test_op_and_mode_that_one_run_contradicts_are_refused_with_toolchains(
    files: dict[str, Path], tmp_path: Path, invoke
) -> None:
    """With --toolchains (one side) --op/--mode were never checked: --op softmax on a layer_norm run, or --mode
    fwd on a bwd one, compared the run as it was and said nothing; so did a run id from the store."""
    r = invoke(str(files["both"]), "--toolchains", "--op", "softmax")
    assert r.exit_code == exit_codes.USAGE and "--op softmax does not match" in r.err_text, r.output
    r = invoke(str(files["both"]), "--toolchains", "--mode", "fwd")
    assert r.exit_code == exit_codes.USAGE and "--mode fwd does not match" in r.err_text, r.output
    r = invoke(str(files["both"]), "--toolchains", "--op", "layer_norm", "--mode", "bwd", "--allow-failures")
    assert r.exit_code == exit_codes.FINDING, r.output  # the same words as the file: fine
    store_mod = pytest.importorskip("ktriage.store", reason="the results store module is not in this checkout")
    url = f"sqlite:///{tmp_path / 'store.db'}"
    store = store_mod.open_store(url)
    run, cells = read_results(files["both"])
    run.status = "finished"
    run_id = store.import_run(run, cells)
    store.close()
    r = invoke(run_id, "--toolchains", "--db", url, "--op", "softmax")
    assert r.exit_code == exit_codes.USAGE and "--op softmax does not match run" in r.err_text, r.output


# The real H200 run of Liger's layer_norm bwd (Triton 3.3.1, 3.4.0, 3.5.1 side by side, torch as the baseline).
LN_BWD = Path(__file__).parents[2] / "benchmarks/gpu/issue3/run2_layer_norm_aa/ln_bwd.json"


def test_a_baseline_the_toolchains_compiled_is_refused(invoke) -> None:
    """--baseline names the backend that does not change with the compiler; the baseline's pairs are kept apart
    from the counts. --baseline liger_layer_norm (the backend the toolchains compiled) turned this run's 8 + 23
    regressions into "0 regressions, 0 improvements, 0 same" and exit 0."""
    r = invoke(str(LN_BWD), "--toolchains", "--baseline", "liger_layer_norm")
    assert r.exit_code == exit_codes.USAGE, r.output
    assert "--baseline liger_layer_norm is compiled by the toolchains being compared" in r.err_text
    assert "name a backend that runs without a toolchain: torch_layer_norm" in r.err_text
    r = invoke(str(LN_BWD), "--toolchains", "--baseline", "torch_layer_norm")
    assert r.exit_code == exit_codes.FINDING and "8 regressions" in r.stdout, r.output


def test_a_run_compared_with_itself_is_refused(files: dict[str, Path], invoke) -> None:  # type: ignore[no-untyped-def]
    """``compare F F`` (or a run id twice) compared every cell with itself and reported 'all same', exit 0: a
    wrong path read as a clean comparison."""
    r = invoke(str(files["both"]), str(files["both"]))
    assert r.exit_code == exit_codes.USAGE and "every cell would be compared with itself" in r.err_text, r.output
    assert "--toolchains" in r.err_text, r.output


FRESH = Path(__file__).parents[2] / "benchmarks/calibration/fresh/h200"


def test_two_precisions_are_refused_by_compare_and_triage(invoke, run_cli: RunCli) -> None:  # type: ignore[no-untyped-def]
    """Cells are keyed by op, pass, input and backend, not dtype: the H200's bf16 and fp16 runs of Liger's
    layer_norm bwd compared as "72 improvements", the dtype's difference read as the compiler's."""
    bf16, fp16 = FRESH / "layer_norm_bwd_bf16.json", FRESH / "layer_norm_bwd_fp16.json"
    r = invoke(str(bf16), str(fp16))
    assert r.exit_code == exit_codes.USAGE, r.output
    assert "layer_norm_bwd_bf16 was measured in bf16 and layer_norm_bwd_fp16 in fp16" in r.err_text
    assert "bench both sides with --precision bf16; or pass --allow-precision-mismatch" in r.err_text
    t = run_cli(["triage", str(bf16), str(fp16)])
    assert t.exit_code == exit_codes.USAGE and "the dtype's, not the compiler's" in t.err_text, t.output
    assert invoke(str(bf16), "--toolchains").exit_code != exit_codes.USAGE  # one run: one precision


def test_two_precisions_compared_on_purpose_with_the_flag(invoke, run_cli: RunCli) -> None:  # type: ignore[no-untyped-def]
    """A user comparing bf16 against fp16 on purpose had no way through the refusal above. The refusal
    names --allow-precision-mismatch; with it every output says that cells of different dtypes are
    compared (the table's and the markdown's headline, the JSON's "warnings", triage's notes)."""
    bf16, fp16 = FRESH / "layer_norm_bwd_bf16.json", FRESH / "layer_norm_bwd_fp16.json"
    refused = invoke(str(bf16), str(fp16))
    assert refused.fix is not None and "pass --allow-precision-mismatch to compare" in refused.fix, refused.err_text
    warning = (
        "WARNING: cells of different dtypes are compared: layer_norm_bwd_bf16 was measured in bf16 and "
        "layer_norm_bwd_fp16 in fp16 (on purpose: allow_precision_mismatch=True (--allow-precision-mismatch))"
    )
    r = invoke(str(bf16), str(fp16), "--allow-precision-mismatch")
    assert r.exit_code in (exit_codes.OK, exit_codes.FINDING), r.output
    assert warning in " ".join(r.stdout.split()), r.stdout
    doc = json.loads(invoke(str(bf16), str(fp16), "--allow-precision-mismatch", "--format", "json").stdout)
    (comparison,) = doc["comparisons"]
    assert len(comparison["warnings"]) == 1 and warning.removeprefix("WARNING: ") in comparison["warnings"][0]
    quick = ["--allow-precision-mismatch", "--no-bisect", "--no-fixes"]
    t = run_cli(["triage", str(bf16), str(fp16), *quick, "-f", "json"])
    assert t.exit_code in (exit_codes.OK, exit_codes.FINDING, exit_codes.INCOMPLETE), t.err_text
    (note,) = json.loads(t.stdout)["notes"]
    assert note.startswith(
        "WARNING: cells of different dtypes are compared: layer_norm_bwd_bf16.json was measured in bf16"
    )
    assert "note: WARNING: cells of different dtypes" in run_cli(["triage", str(bf16), str(fp16), *quick]).stdout


def test_the_precision_warning_comes_first_among_triage_notes(run_cli: RunCli) -> None:
    """docs/triage.md: the report's notes start with the warning. It was appended after the notes triage
    had already made (here "both sides name the same toolchain"), so it came last, below them."""
    bf16, fp16 = FRESH / "layer_norm_bwd_bf16.json", FRESH / "layer_norm_bwd_fp16.json"
    same = ["--old-toolchain", "triton==3.6.0", "--new-toolchain", "triton==3.6.0"]
    t = run_cli(
        ["triage", str(bf16), str(fp16), *same, "--allow-precision-mismatch", "--no-bisect", "--no-fixes", "-f", "json"]
    )
    assert t.exit_code in (exit_codes.OK, exit_codes.FINDING, exit_codes.INCOMPLETE), t.err_text
    notes = json.loads(t.stdout)["notes"]
    assert len(notes) == 2 and "both sides name the same toolchain" in notes[1], notes
    assert notes[0].startswith("WARNING: cells of different dtypes are compared"), notes


CORPUS_RUN = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "h200" / "triage_run" / "results.json"


def test_the_terminal_names_the_runs_gpu_and_driver_as_the_markdown_does(tmp_path: Path, invoke) -> None:
    """The markdown's "Runs:" lines (run id, GPU, driver) are where the numbers come from; the terminal had
    none. The committed H200 run, its two toolchains compared."""
    from ktriage.api import compare
    from ktriage.report.markdown import run_lines

    run, _ = read_results(CORPUS_RUN)
    report = compare(old=CORPUS_RUN, toolchains=True)
    lines = [x for c in report.comparisons for x in run_lines(c)]
    assert lines and all(run.run_id in x and "H200" in x and "driver " in x for x in lines), lines
    md = tmp_path / "c.md"
    r = invoke(str(CORPUS_RUN), "--toolchains", "-o", str(md))
    assert r.exit_code in (exit_codes.OK, exit_codes.FINDING), r.output
    assert "Runs:" in md.read_text() and f"run `{run.run_id}`" in md.read_text()
    for x in lines:
        assert x in r.stdout, (x, r.stdout)
