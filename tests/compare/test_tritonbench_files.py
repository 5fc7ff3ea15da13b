"""`ktriage compare` fed with real TritonBench output (the H200 A/A pair in tests/data/tritonbench) and
the mistakes a user makes with it: a file cut short, a file name with a prefix, a file of another operator."""

from __future__ import annotations

import gzip
import json
import os
import stat
from pathlib import Path

import pytest

import ktriage.api as kt
from ktriage.errors import KtriageError
from tests.conftest import RunCli

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "tritonbench"  # the real A/A pair


def _pairs(stdout: str) -> dict[tuple[str, str], dict[str, object]]:
    (comparison,) = json.loads(stdout)["comparisons"]
    return {(p["input_label"], p["backend"]): p for p in comparison["pairs"]}


def test_a_csv_cut_mid_row_makes_that_rows_cells_errors_and_keeps_the_others(tmp_path: Path, run_cli: RunCli) -> None:
    """A copy cut in the middle of a number ("4096;0.1" of "4096;0.15529599785804749;0.458...") read
    0.1 as torch's latency and the missing liger value as "no latency in the file": a cut number taken
    for a measurement, and no word of the truncation."""
    text = (DATA / "layer_norm_bwd_run2.csv").read_text()
    cut = tmp_path / "layer_norm_bwd_cut.csv"
    cut.write_text(text[: text.index("\n4096;") + len("\n4096;0.1")])
    r = run_cli(["compare", str(DATA / "layer_norm_bwd_run1.csv"), str(cut), "--format", "json"])
    assert r.exit_code == 4, r.output  # the cut row's cells were not compared: partial
    pairs = _pairs(r.stdout)
    for backend in ("torch_layer_norm", "liger_layer_norm"):
        p = pairs[("(4096, 4096)", backend)]
        assert p["status"] != "compared" and "line 8 of" in str(p["problem"]), p
        assert "cut short (2 of 3 columns)" in str(p["problem"]) and "truncated" in str(p["problem"])
    # the six whole rows before the cut keep their verdicts
    before = [p for (label, _), p in pairs.items() if p["status"] == "compared"]
    assert len(before) == 12 and all(p["verdict"]["n_new"] == 1 for p in before)  # type: ignore[index]

    # a last row that lost its end of line (and the average row after it) is cut too
    nonl = tmp_path / "layer_norm_bwd_nonl.csv"
    nonl.write_text(text[: text.index("\n4608;")])
    pairs = _pairs(run_cli(["compare", str(DATA / "layer_norm_bwd_run1.csv"), str(nonl), "--format", "json"]).stdout)
    assert "no end of line" in str(pairs[("(4096, 4096)", "liger_layer_norm")]["problem"])
    assert pairs[("(4096, 3584)", "liger_layer_norm")]["status"] == "compared"


def test_a_csv_named_after_another_operator_than_its_backends_is_refused(tmp_path: Path, run_cli: RunCli) -> None:
    """The real layer_norm CSVs under other names: ``old_layer_norm_bwd.csv`` read as an operator
    ``old_layer_norm`` (triage: "liger_layer_norm has no kernels in ktriage's catalog", exit 0), and
    ``embedding_bwd_*.csv`` compared layer_norm's cells as embedding's (60 unsure, "no baseline backend")."""
    text = [(DATA / f"layer_norm_bwd_run{i}.csv").read_text() for i in (1, 2)]
    for names, said, fix in (
        (
            ("my_layer_norm_bwd_old.csv", "my_layer_norm_bwd_new.csv"),
            "the file name says operator my_layer_norm",
            "name the file after the operator it measured (e.g. layer_norm_bwd_old.csv) or pass --op layer_norm",
        ),
        (
            ("embedding_bwd_old.csv", "embedding_bwd_new.csv"),
            "the file name says operator embedding",
            "name the file after the operator it measured (e.g. layer_norm_bwd_old.csv)",
        ),
    ):
        paths = [tmp_path / n for n in names]
        for path, t in zip(paths, text, strict=True):
            path.write_text(t)
        for verb in (["compare"], ["triage", "--old-toolchain", "triton==3.4.0", "--new-toolchain", "triton==3.4.0"]):
            r = run_cli([verb[0], *map(str, paths), *verb[1:]])
            assert r.exit_code == 2, r.output
            assert (
                r.problem
                == f"{paths[0]}: {said}, but its backends (liger_layer_norm, torch_layer_norm) are layer_norm's"
            )
            assert r.fix == fix and "Traceback" not in r.output
    # --op names an operator these backends are not
    plain = [tmp_path / "a.csv", tmp_path / "b.csv"]
    for path, t in zip(plain, text, strict=True):
        path.write_text(t)
    r = run_cli(["compare", *map(str, plain), "--op", "embedding", "--mode", "bwd"])
    assert r.exit_code == 2 and "--op embedding, but its backends" in r.problem
    assert r.fix == "pass --op layer_norm"
    # the fix works: --op layer_norm on the prefixed names compares the 60 cells
    r = run_cli(
        [
            "compare",
            str(tmp_path / "my_layer_norm_bwd_old.csv"),
            str(tmp_path / "my_layer_norm_bwd_new.csv"),
            "--op",
            "layer_norm",
        ]
    )
    assert r.exit_code == 0 and "30 unsure" in r.stdout, r.output


def test_one_tritonbench_file_twice_is_not_sent_to_toolchains(run_cli: RunCli) -> None:
    """``compare F.csv F.csv`` was refused with the fix ``ktriage compare F.csv --toolchains``, which a
    TritonBench file (no toolchain timed side by side) refuses in turn: "0 toolchains with cells"."""
    csv = str(DATA / "layer_norm_bwd_run1.csv")
    r = run_cli(["compare", csv, csv])
    assert r.exit_code == 2 and "every cell would be compared with itself" in r.problem, r.output
    assert r.fix is not None and f"ktriage compare {csv} --toolchains" not in r.fix
    assert "give two different runs" in r.fix and "this one timed 0 toolchains" in r.fix
    assert run_cli(["compare", csv, "--toolchains"]).exit_code == 2  # what the old fix said to run


def test_an_output_folder_is_named_a_folder(tmp_path: Path, run_cli: RunCli) -> None:
    """``-o reports`` (a folder that exists) was refused as "no writer for 'a name without a suffix'"
    with the fix to add a suffix (reports.md: a file beside the folder the user meant to write in)."""
    folder = tmp_path / "reports"
    folder.mkdir()
    sides = [str(DATA / f"layer_norm_bwd_run{i}.csv") for i in (1, 2)]
    same = ["--old-toolchain", "triton==3.4.0", "--new-toolchain", "triton==3.4.0"]
    for argv in (["compare", *sides], ["triage", *sides, *same]):
        r = run_cli([*argv, "-o", str(folder)])
        assert r.exit_code == 2, r.output
        assert r.problem == f"--output {folder} is a folder" and r.fix == f"give a file name, e.g. {folder}/report.md"
    assert list(folder.iterdir()) == []


def test_output_to_dev_null_is_written_in_place(tmp_path: Path, run_cli: RunCli) -> None:
    """``-o /dev/null`` (to discard a report) was refused: "no writer for 'a name without a suffix'".
    A character device takes the verb's first writer and is written in place: it stays a device. A
    name without a suffix that is no device is still refused."""
    sides = [str(DATA / f"layer_norm_bwd_run{i}.csv") for i in (1, 2)]
    r = run_cli(["compare", *sides, "-o", os.devnull, "-o", str(tmp_path / "r.json")])
    assert r.exit_code == 0, r.output
    assert f"wrote {os.devnull}" in r.stderr and stat.S_ISCHR(os.stat(os.devnull).st_mode)
    assert json.loads((tmp_path / "r.json").read_text())["comparisons"]
    r = run_cli(["compare", *sides, "-o", str(tmp_path / "plain")])
    assert r.exit_code == 2 and "no writer for 'a name without a suffix'" in r.problem, r.output


def test_an_empty_file_or_one_that_is_no_tritonbench_csv_says_so(tmp_path: Path, run_cli: RunCli) -> None:
    """An empty CSV was "not a TritonBench CSV", an empty JSON "not valid JSON: Expecting value: line 1
    column 1"; a CSV that is no TritonBench output (notes.csv) was told to rename itself: "the operator
    and pass of this TritonBench CSV is not in its name"."""
    good = str(DATA / "layer_norm_bwd_run1.csv")
    same = ["--old-toolchain", "triton==3.4.0", "--new-toolchain", "triton==3.4.0"]
    for name, text in (("layer_norm_bwd_new.csv", ""), ("new.json", ""), ("new.json", " \n\n")):
        path = tmp_path / name
        path.write_text(text)
        for argv in (["compare", good, str(path)], ["triage", good, str(path), *same]):
            r = run_cli(argv)
            assert r.exit_code == 2 and r.problem == f"results file {path} is empty", r.output
            assert r.fix is not None and "python run.py ... --csv --output F" in r.fix
    notes = tmp_path / "notes.csv"
    notes.write_text("name,owner\nlayer norm,alice\n")
    r = run_cli(["compare", good, str(notes)])
    assert r.exit_code == 2 and r.problem.startswith(f"{notes} is not a TritonBench CSV"), r.output


def test_cells_on_one_side_only_are_grouped_by_why_in_the_table_and_markdown_listed_in_the_json(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """Inputs one file has and the other lacks were table rows after every verdict (cut off past 500 rows)
    with "no new cell", the headline counting those of the baseline backend out, and the JSON had no list
    of them; then one line per cell, 20 in the terminal and 200 in the markdown, buried the verdicts when
    a side lacked a whole operator. Now the table and the markdown count them per reason (most cells
    first) with the first 5 cells and "and N more", as the HTML does; the JSON lists every one."""
    run1 = (DATA / "layer_norm_bwd_run1.csv").read_text().splitlines(keepends=True)
    run2 = (DATA / "layer_norm_bwd_run2.csv").read_text().splitlines(keepends=True)
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    old, new = tmp_path / "old" / "layer_norm_bwd.csv", tmp_path / "new" / "layer_norm_bwd.csv"
    old.write_text("".join(run1[:21]))  # header, inputs N=1024..10752 (20)
    new.write_text("".join(run2[:1] + run2[4:31]))  # header, N=2560..15872 (27): 3 inputs fewer, 10 more
    r = run_cli(["compare", str(old), str(new)])
    assert r.exit_code == 4, r.output  # cells nobody compared: a partial result, as triage exits
    out = " ".join(r.stdout.split())
    assert "17 unsure, 26 not compared" in out  # 13 inputs x 2 backends, the baseline's included
    new_only = "not compared: 20 cells: on the new side only (the other has no such cell)"
    ref_only = "not compared: 6 cells: on the reference side only (the other has no such cell)"
    assert r.stdout.count("not compared:") == 2 and out.index(new_only) < out.index(ref_only)
    cells = [line.strip() for line in r.stdout.splitlines() if line.startswith("    layer_norm.bwd[")]
    assert cells[0] == "layer_norm.bwd[(4096, 11264)] liger_layer_norm"  # in the order of the pairs
    assert len(cells) == 10 and "layer_norm.bwd[(4096, 1024)] liger_layer_norm" in cells
    assert "and 15 more" in out and "and 1 more" in out
    assert "--format json lists every cell not compared" in out
    md = run_cli(["compare", str(old), str(new), "--format", "markdown"]).stdout
    assert "### Errors and missing cells (not compared): 26" in md and "| cells | why | which |" in md
    (row_new,) = [line for line in md.splitlines() if line.startswith("| 20 | on the new side only")]
    assert row_new.count("<br>") == 5 and row_new.endswith("<br>and 15 more |")
    (row_ref,) = [line for line in md.splitlines() if line.startswith("| 6 | on the reference side only")]
    assert "layer_norm.bwd[(4096, 1024)] liger_layer_norm" in row_ref and row_ref.endswith("<br>and 1 more |")
    section = md[md.index("(not compared): 26") : md.index("Unsure (17)")]
    assert section.count("layer_norm.bwd[(4096, ") == 10  # the first 5 of each reason; the JSON has all 26
    (comparison,) = json.loads(run_cli(["compare", str(old), str(new), "--format", "json"]).stdout)["comparisons"]
    assert comparison["not_compared_count"] == 26 and len(comparison["not_compared"]) == 26
    assert "layer_norm.bwd[(4096, 15872)] torch_layer_norm: on the new side only" in " ".join(
        comparison["not_compared"]
    )
    # each pair says which side lacks its input; no side lacks a whole backend, so no toolchain is missing
    missing = [(p["missing_side"], p["missing_toolchain"]) for p in comparison["pairs"] if p["status"] == "missing"]
    assert sorted(missing, key=str) == [("new", None)] * 6 + [("ref", None)] * 20


def test_a_backend_one_file_lacks_names_its_side_where_both_toolchains_are_null(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """A backend run without a toolchain (torch) in the old file only: both sides' toolchains are null (the
    old side's: host; the new side's: no cell), so only ``missing_side`` says which side lacks it, and
    ``missing_toolchain`` that it lacks the host run (the label's "(no host cell)")."""
    run1 = (DATA / "layer_norm_bwd_run1.csv").read_text().splitlines(keepends=True)
    run2 = (DATA / "layer_norm_bwd_run2.csv").read_text().splitlines(keepends=True)
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    old, new = tmp_path / "old" / "layer_norm_bwd.csv", tmp_path / "new" / "layer_norm_bwd.csv"
    old.write_text("".join(run1[:4]))  # header (x_val, torch, liger), 3 inputs
    new.write_text("".join(";".join(line.split(";")[::2]) for line in run2[:4]))  # x_val and liger only
    (comparison,) = json.loads(run_cli(["compare", str(old), str(new), "--format", "json"]).stdout)["comparisons"]
    missing = [p for p in comparison["pairs"] if p["status"] == "missing"]
    assert len(missing) == 3 and {p["backend"] for p in missing} == {"torch_layer_norm"}
    assert {(p["ref_toolchain"], p["new_toolchain"], p["missing_side"], p["missing_toolchain"]) for p in missing} == {
        (None, None, "new", "host")
    }


def test_gzipped_results_files_compare_as_the_plain_ones(tmp_path: Path, run_cli: RunCli) -> None:
    """``compare`` refused a ``.json.gz`` results file ("gzip-compressed ... gunzip -k"), and a missing
    ``old.json.gz`` was looked up as a run id. A gzipped TritonBench CSV (its op and pass read from the
    name before ``.csv.gz``) and a gzipped ktriage results file compare as the plain files do."""
    plain = [DATA / f"layer_norm_bwd_run{i}.csv" for i in (1, 2)]
    packed = []
    for p in plain:
        packed.append(tmp_path / f"{p.name}.gz")
        packed[-1].write_bytes(gzip.compress(p.read_bytes()))
    want = _pairs(run_cli(["compare", *map(str, plain), "--format", "json"]).stdout)
    r = run_cli(["compare", *map(str, packed), "--format", "json"])
    assert r.exit_code == 0, r.output
    assert _pairs(r.stdout) == want
    (comparison,) = json.loads(r.stdout)["comparisons"]
    assert (comparison["ref"], comparison["new"]) == ("layer_norm_bwd_run1", "layer_norm_bwd_run2")

    bench = REPO / "benchmarks" / "calibration" / "replicate" / "h200_run3" / "corpus" / "tb_sum_fwd.json.gz"
    unpacked = tmp_path / "tb_sum_fwd.json"
    unpacked.write_bytes(gzip.decompress(bench.read_bytes()))
    got, want_tc = (run_cli(["compare", str(p), "--toolchains", "--format", "json"]) for p in (bench, unpacked))
    assert got.exit_code == want_tc.exit_code and got.exit_code in (0, 1), got.output
    assert json.loads(got.stdout)["comparisons"] == json.loads(want_tc.stdout)["comparisons"]
    missing = run_cli(["compare", str(tmp_path / "old.json.gz"), str(bench)])
    assert missing.exit_code == 2, missing.output
    assert missing.problem == f"cannot read results file {tmp_path / 'old.json.gz'}: No such file or directory"


def test_a_library_caller_is_told_the_op_mode_and_baseline_keywords_not_only_the_flags(tmp_path: Path) -> None:
    """kt.compare on TritonBench files was told "pass --op layer_norm", "pass --op NAME --mode
    fwd|bwd|fwd_bwd" and, in the report, "pass --baseline to check...": flags a Python caller does not
    pass. Each now names the keyword and the flag (the real H200 A/A pair, renamed)."""
    text = [(DATA / f"layer_norm_bwd_run{i}.csv").read_text() for i in (1, 2)]

    def files(*names: str, backends: str = "") -> list[Path]:
        paths = [tmp_path / n for n in names]
        for path, t in zip(paths, text, strict=True):
            path.write_text(t.replace("layer_norm-", f"{backends}-") if backends else t)
        return paths

    prefixed = files("my_layer_norm_bwd_old.csv", "my_layer_norm_bwd_new.csv")
    with pytest.raises(KtriageError) as renamed:
        kt.compare(old=prefixed[0], new=prefixed[1])
    assert (renamed.value.fix or "").endswith(" or pass op='layer_norm' (--op layer_norm)"), renamed.value.fix
    with pytest.raises(KtriageError) as other:
        kt.compare(old=prefixed[0], new=prefixed[1], op="embedding", mode="bwd")
    assert other.value.problem.startswith(f"{prefixed[0]}: op='embedding' (--op embedding), but its backends")
    assert other.value.fix == "pass op='layer_norm' (--op layer_norm)"

    plain = files("a.csv", "b.csv")
    with pytest.raises(KtriageError) as unnamed:
        kt.compare(old=plain[0], new=plain[1])
    assert unnamed.value.fix == (
        "name the file <op>_<mode>[...].csv (e.g. layer_norm_bwd.csv) or pass op='NAME' (--op NAME) "
        "and mode (--mode) as fwd, bwd or fwd_bwd"
    )
    named = files("layer_norm_bwd_old.csv", "layer_norm_bwd_new.csv")
    with pytest.raises(KtriageError) as contradicted:
        kt.compare(old=named[0], new=named[1], mode="fwd")
    assert contradicted.value.problem.startswith("mode='fwd' (--mode fwd) contradicts the file name")

    # an operator ktriage does not know, whose backends are no catalog's: no baseline backend to check
    unknown = files("myop_bwd_old.csv", "myop_bwd_new.csv", backends="myop")  # torch_myop, liger_myop
    report = kt.compare(old=unknown[0], new=unknown[1])
    (comparison,) = report.comparisons
    assert comparison.baseline.message == (
        "no baseline backend in the results: pass baseline (--baseline) to check that the machine did not change"
    )


def test_sides_that_share_no_input_or_backend_are_told_how_both_benches_choose_them(tmp_path: Path) -> None:
    """ "the same --input / --num-inputs" and "(bench --only)" named the flags of the earlier run only; a
    library caller benches with kt.bench or kt.bench_recorded, whose keywords the fix now names too."""
    header, *rows = (DATA / "layer_norm_bwd_run1.csv").read_text().splitlines()
    rows = [r for r in rows if r.split(";")[0].isdigit()]  # the inputs (not the average row)
    sides = {
        "layer_norm_bwd_low.csv": [header, *rows[:5]],
        "layer_norm_bwd_high.csv": [header, *rows[5:]],
        "layer_norm_bwd_torch.csv": ["x_val;torch_layer_norm-latency", *(";".join(r.split(";")[:2]) for r in rows)],
        "layer_norm_bwd_liger.csv": [
            "x_val;liger_layer_norm-latency",
            *(r.split(";")[0] + ";" + r.split(";")[2] for r in rows),
        ],
    }
    for name, lines in sides.items():
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    with pytest.raises(KtriageError) as inputs:
        kt.compare(old=tmp_path / "layer_norm_bwd_low.csv", new=tmp_path / "layer_norm_bwd_high.csv")
    assert "share no input" in inputs.value.problem
    assert inputs.value.fix == (
        "measure both sides at the same inputs: bench them with the same inputs (--input), or the same input_id "
        "(--input-id) and num_inputs (--num-inputs) (kt.bench, `ktriage bench --op OP`); a recorded workload with "
        "the same inputs (--input) (kt.bench_recorded, `ktriage bench W.json`); TritonBench with the same x_vals"
    )
    with pytest.raises(KtriageError) as backends:
        kt.compare(old=tmp_path / "layer_norm_bwd_torch.csv", new=tmp_path / "layer_norm_bwd_liger.csv")
    assert "share no backend" in backends.value.problem
    assert backends.value.fix == (
        "measure both sides with the same backends: the same only (--only) in kt.bench (`ktriage bench --op`)"
    )


def _nightly(csv_path: Path, env: dict[str, str] | None) -> dict[str, object]:
    """The real CSV's latencies in TritonBench's JSON shape (``tritonbench_{op}_{mode}[x_{x_val}-{backend}]_latency``),
    wrapped as the nightly runner does (``{"name", "env", "metrics"}``) when ``env`` is given, else flat as
    ``run.py --output-json`` writes it. The env's keys are get_run_env's (tritonbench/utils/run_utils.py)."""
    rows = [line.split(";") for line in csv_path.read_text().splitlines()]
    backends = [h.removesuffix("-latency") for h in rows[0][1:]]
    metrics = {
        f"tritonbench_layer_norm_bwd[x_{row[0]}-{backend}]_latency": value
        for row in rows[1:]
        if row[0] != "average"
        for backend, value in zip(backends, row[1:], strict=True)
    }
    return {"name": "nightly", "env": env, "metrics": metrics} if env is not None else metrics


def test_a_tritonbench_runs_date_and_gpu_are_what_its_file_says(tmp_path: Path, run_cli: RunCli) -> None:
    """compare printed a TritonBench CSV's run as "(<the time of reading>, ?, status finished)": a date no
    run had and no word of the GPU. A CSV (and a flat --output-json) says neither, and each output now says
    "not in the file"; the nightly JSON's env says both (benchmark_date, device), and those are printed;
    its device "unknown" (no GPU visible to TritonBench) is no GPU either."""
    import datetime

    csvs = [DATA / f"layer_norm_bwd_run{i}.csv" for i in (1, 2)]
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    md, html = tmp_path / "c.md", tmp_path / "c.html"
    r = run_cli(["compare", *map(str, csvs)])
    assert r.exit_code in (0, 1), r.output
    outputs = [r.stdout]
    for written in (md, html):
        assert run_cli(["compare", *map(str, csvs), "-o", str(written)]).exit_code in (0, 1)
        outputs.append(written.read_text())
    for out in outputs:
        said = " ".join(out.split())
        assert said.count("date not in the file") == 2 and said.count("GPU not in the file") == 2, said[-600:]
        assert today not in said and ", ?," not in said

    env = {"benchmark_date": "2025-08-14 03:12:09", "device": "NVIDIA H200", "cuda_version": "12.8"}
    sides = []
    for i, (csv_path, side_env) in enumerate(zip(csvs, (env, {**env, "device": "unknown"}), strict=True)):
        sides.append(tmp_path / f"layer_norm_bwd_nightly{i}.json")
        sides[-1].write_text(json.dumps(_nightly(csv_path, side_env)))
    flat = tmp_path / "layer_norm_bwd_flat.json"
    flat.write_text(json.dumps(_nightly(csvs[1], None)))
    said = " ".join(run_cli(["compare", *map(str, sides)]).stdout.split())
    assert "ref: run" in said and "(2025-08-14 03:12:09, NVIDIA H200, status finished)" in said, said[-600:]
    assert "(2025-08-14 03:12:09, GPU not in the file, status finished)" in said, said[-600:]
    said = " ".join(run_cli(["compare", str(sides[0]), str(flat)]).stdout.split())
    assert "(date not in the file, GPU not in the file, status finished)" in said and today not in said, said[-600:]
