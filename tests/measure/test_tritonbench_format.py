"""TritonBench's CSV and JSON, both ways (issue 12 part 1): the real A/A CSVs, TritonBench's own JSON
reader (.ci/test_infra/oss_ci_benchmark_v3.py, imported by path) on what ktriage writes, and
`ktriage compare` on these files."""

from __future__ import annotations

import importlib.util
import json
import statistics
import sys
from pathlib import Path
from types import ModuleType

import pytest

from ktriage.cli.app import main
from ktriage.errors import FormatError, KtriageError
from ktriage.measure.results_file import read_results
from ktriage.measure.tritonbench_format import (
    op_mode_from_name,
    parse_csv,
    parse_json,
    read_run_file,
    read_tritonbench,
    to_tritonbench_json,
    tritonbench_metrics,
    write_tritonbench_json,
)

REPO = Path(__file__).resolve().parents[2]
DATA = (
    Path(__file__).resolve().parents[1] / "data" / "tritonbench"
)  # the real A/A pair of ../shared/data/tritonbench_outputs
# The TritonBench snapshot beside the checkout (../shared/thirdparty, see its README); its reader is
# third-party code, used by path and never copied here.
TRITONBENCH = next(
    (
        p
        for p in (REPO.parent / "shared" / "thirdparty" / "tritonbench", Path("/work/shared/thirdparty/tritonbench"))
        if p.exists()
    ),
    REPO.parent / "shared" / "thirdparty" / "tritonbench",
)
RESULTS = REPO / "benchmarks" / "gpu" / "issue3" / "run2_layer_norm_aa" / "ln_bwd.json"  # a real H200 results file


def _tritonbench_v3() -> ModuleType:
    """TritonBench's converter of its JSON to the dashboards' schema (stdlib only: imports on a CPU)."""
    path = TRITONBENCH / ".ci" / "test_infra" / "oss_ci_benchmark_v3.py"
    if not path.exists():
        pytest.skip(f"TritonBench's JSON reader is not at {path}")
    spec = importlib.util.spec_from_file_location("oss_ci_benchmark_v3", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["layer_norm_bwd_run1.csv", "layer_norm_bwd_run2.csv"])
def test_the_real_csvs_give_60_cells_without_the_average_row(name: str) -> None:
    run, cells = read_tritonbench(DATA / name)
    assert len(cells) == 60 and all(c.status == "ok" for c in cells)
    assert {c.key.op for c in cells} == {"layer_norm"} and {c.key.mode for c in cells} == {"bwd"}
    assert {c.key.backend for c in cells} == {"torch_layer_norm", "liger_layer_norm"}
    assert sorted({c.key.input_id for c in cells}) == list(range(30))  # x_val N -> the op's input ids
    first = next(c for c in cells if c.key.input_id == 0 and c.key.backend == "torch_layer_norm")
    assert first.key.input_label == "(4096, 1024)" and first.extra["x_val"] == "1024"
    expected = {"layer_norm_bwd_run1.csv": 0.08265600353479385, "layer_norm_bwd_run2.csv": 0.1125440001487732}[name]
    assert first.samples_ms == [pytest.approx(expected)] and first.extra["single_value"]
    assert not any("average" in (c.extra["x_val"], c.key.input_label) for c in cells)
    assert run.settings["source"] == "tritonbench" and run.settings["single_value"]


def test_op_and_mode_from_the_name_or_the_flags(tmp_path: Path) -> None:
    assert op_mode_from_name("layer_norm_bwd_run1") == ("layer_norm", "bwd")
    assert op_mode_from_name("embedding_fwd_bwd") == ("embedding", "fwd_bwd")
    assert op_mode_from_name("op_rope_abc") == ("rope", None)
    assert op_mode_from_name("swiglu_fwd_x") == ("swiglu", "fwd")
    text = (DATA / "layer_norm_bwd_run1.csv").read_text()
    with pytest.raises(FormatError, match="not in its name") as info:
        parse_csv(text, origin=str(tmp_path / "out.csv"))
    assert "--op" in (info.value.fix or "")
    _run, cells = parse_csv(text, op="layer_norm", mode="bwd", origin=str(tmp_path / "out.csv"))
    assert len(cells) == 60
    # flags that repeat the name are fine; flags that contradict a known operator's name are refused
    assert len(parse_csv(text, op="layer_norm", mode="bwd", origin="layer_norm_bwd_run1.csv")[1]) == 60
    with pytest.raises(
        FormatError, match=r"op='nosuch' \(--op nosuch\) contradicts the file name layer_norm_bwd_run1.csv"
    ):
        parse_csv(text, op="nosuch", origin="layer_norm_bwd_run1.csv")
    with pytest.raises(FormatError, match=r"mode='fwd' \(--mode fwd\) contradicts"):
        parse_csv(text, mode="fwd", origin="layer_norm_bwd_run1.csv")
    # a name that says no known operator leaves --op the say
    assert len(parse_csv(text, op="layer_norm", mode="bwd", origin="nightly_fwd.csv")[1]) == 60


def test_error_and_empty_cells_are_not_numbers(tmp_path: Path) -> None:
    text = (
        "x_val;torch_embedding-latency;torch_embedding-speedup;liger_embedding-latency;liger_embedding-speedup\n"
        "(32, 512, 768, 1024);0.5;;CUDA out of memory;\n(32, 512, 768, 2048);0.6;;;\naverage;;;;\n"
    )
    _run, cells = parse_csv(text, origin=str(tmp_path / "embedding_bwd.csv"))
    by = {(c.key.input_id, c.key.backend): c for c in cells}
    assert len(cells) == 4 and by[(0, "torch_embedding")].status == "ok"
    assert by[(0, "liger_embedding")].status == "error" and by[(0, "liger_embedding")].error == "CUDA out of memory"
    assert by[(1, "liger_embedding")].status == "skipped"
    assert (
        by[(1, "torch_embedding")].key.input_label == "(32, 512, 768, 2048)"
        and by[(1, "torch_embedding")].key.input_id == 1
    )


def test_written_json_is_read_by_tritonbench_and_back_by_ktriage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    v3 = _tritonbench_v3()
    run, cells = read_results(RESULTS)
    paths = write_tritonbench_json(tmp_path / "ln.tritonbench.json", run, cells)
    assert [p.name for p in paths] == [
        f"ln.{t}.tritonbench.json"
        for t in (
            "triton-3.3.1.ptxas-12.4.99.0c9a828e",
            "triton-3.4.0.ptxas-12.8.93.da4345e0",
            "triton-3.5.1.ptxas-12.8.93.e7ae978a",
        )
    ]
    doc = json.loads(paths[1].read_text())
    assert doc["env"]["ktriage_toolchain"] == "triton==3.4.0" and doc["env"]["ptxas_version"] == "12.8.93"
    for key in doc["metrics"]:  # TritonBench's own key grammar
        op, mode, x, backend, metric = v3.parse_metric_id(key)
        assert (op, mode) == ("layer_norm", "bwd") and backend in ("torch_layer_norm", "liger_layer_norm")
        assert metric in ("latency", "speedup") or metric == "speedup-avg"
    doc["github"] = {"RUNNER_NAME": "h200", "RUNNER_TYPE": "gcp-h100-runner"}
    entries = v3.generate_oss_ci_benchmark_v3_json(doc)
    capsys.readouterr()
    latency = [e for e in entries if e["metric"]["name"] == "latency" and e["metric"]["benchmark_values"] != [0.0]]
    assert len(latency) == 60 and {e["model"]["name"] for e in entries} == {"layer_norm"}
    assert {e["dependencies"]["triton"]["sha"] for e in entries} == {"unknown"}
    # and back: the same cells, one value each (the median of the samples)
    back_run, back = read_run_file(paths[1])
    assert len(back) == 60 and back_run.toolchains[0]["spec"] == "triton==3.4.0"
    tc = "triton-3.4.0.ptxas-12.8.93.da4345e0"
    src = {
        (c.key.input_id, c.key.backend): c
        for c in cells
        if c.key.toolchain == tc or c.key.backend == "torch_layer_norm"
    }
    for c in back:
        assert c.samples_ms == [pytest.approx(statistics.median(src[(c.key.input_id, c.key.backend)].samples_ms))]
        assert c.key.input_label == src[(c.key.input_id, c.key.backend)].key.input_label


def test_flat_output_json_reads_like_the_csv() -> None:
    _run, csv_cells = read_tritonbench(DATA / "layer_norm_bwd_run1.csv")
    flat = tritonbench_metrics(csv_cells)  # the --output-json object: no env
    assert "tritonbench_layer_norm_bwd[x_average-liger_layer_norm]_latency" in flat
    assert any(k.endswith("[liger_layer_norm]-speedup-avg") for k in flat)
    _run2, cells = parse_json(flat)
    assert sorted((c.key.input_id, c.key.backend, c.samples_ms[0]) for c in cells) == sorted(
        (c.key.input_id, c.key.backend, c.samples_ms[0]) for c in csv_cells
    )


def test_compare_takes_tritonbench_files_and_says_one_value_gives_no_confidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, cells = read_results(RESULTS)
    path = tmp_path / "run.tritonbench.json"
    path.write_text(json.dumps(to_tritonbench_json(run, cells, toolchain="triton-3.4.0.ptxas-12.8.93.da4345e0")))
    code = main(["compare", str(DATA / "layer_norm_bwd_run1.csv"), str(path), "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0  # one value a side: never a regression verdict
    pairs = out["comparisons"][0]["pairs"] if "comparisons" in out else out[0]["pairs"]
    assert len(pairs) == 60 and {p["verdict"]["verdict"] for p in pairs} == {"unsure"}
    assert all(
        "too few samples (1 ref, 1 new" in p["verdict"]["reason"] and "single_value" in p["verdict"]["flags"]
        for p in pairs
    )


def test_ktriage_bench_csv_table_is_named_as_such_not_sent_to_tritonbench(tmp_path: Path) -> None:
    """ktriage bench -o F.csv writes TritonBench's layout comma-separated (the committed H200 run's ln_bwd.csv).
    Given to compare (or triage) it was "not a TritonBench CSV ... give the file of `python run.py ... --csv`", or,
    named results.csv, "the operator and pass of this TritonBench CSV is not in its name": the file is named for
    what it is, and the fix is the results JSON of the same run."""
    table = RESULTS.with_suffix(".csv")
    assert table.read_text().startswith("x_val,liger_layer_norm-latency,")
    renamed = tmp_path / "results.csv"
    renamed.write_bytes(table.read_bytes())
    for path in (table, renamed):
        with pytest.raises(FormatError, match="is a comma-separated results table") as info:
            read_run_file(path)
        assert "ktriage bench -o R.json" in (info.value.fix or "")
    _run, cells = parse_csv(table.read_text().replace(",", ";"), origin=str(tmp_path / "layer_norm_bwd.csv"))
    assert len(cells) > 0  # the same table ';'-separated is TritonBench's and reads


def test_a_nightly_json_without_metrics_is_named_as_tritonbenchs(tmp_path: Path) -> None:
    """The nightly's {"name", "env", "metrics"} whose metrics hold no tritonbench_ key (an empty run) was
    told "not a ktriage results file: it has no 'run' and no 'cells'", with the fix to give a file of
    `ktriage bench`: it is TritonBench's file, and the error says what it lacks."""
    path = tmp_path / "result.json"
    for metrics in ({}, {"foo": 1}):
        path.write_text(json.dumps({"name": "nightly", "env": {"device": "H200"}, "metrics": metrics}))
        with pytest.raises(KtriageError) as info:
            read_run_file(path)
        assert "has no tritonbench_<op>_<mode>[x_<input>-<backend>]_<metric> keys" in info.value.problem
        assert "ktriage results file" not in info.value.problem and "--output-json" in (info.value.fix or "")


def test_a_file_without_latency_names_the_metrics_it_has(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A TritonBench run with ``--metrics speedup,accuracy`` has no latency: the CSV was told only "has no
    <backend>-latency column", and the JSON read as "has no cells: there is nothing to compare". Each now
    names the metrics the file has, and the fix the --metrics that gives latency too."""
    csv_file = tmp_path / "layer_norm_bwd.csv"
    csv_file.write_text(
        "x_val;torch_layer_norm-speedup;liger_layer_norm-speedup;liger_layer_norm-accuracy\n1024;1.0;2.1;1\n"
    )
    json_file = tmp_path / "layer_norm_bwd.json"
    key = "tritonbench_layer_norm_bwd[x_1024-liger_layer_norm]_"
    json_file.write_text(json.dumps({key + "speedup": 2.1, key + "gbps": 310.0}))
    for path, held in ((csv_file, "accuracy, speedup"), (json_file, "gbps, speedup")):
        with pytest.raises(FormatError) as info:
            read_run_file(path)
        assert info.value.problem.startswith(f"{path} has no latency metric"), info.value.problem
        assert info.value.problem.endswith(f"the metrics it has: {held}")
        assert f"--metrics latency,{held.replace(', ', ',')}" in (info.value.fix or "")
        assert main(["compare", str(path), str(DATA / "layer_norm_bwd_run1.csv")]) == 2  # the user's error
        assert f"the metrics it has: {held}" in " ".join(capsys.readouterr().err.split())


def test_a_backend_without_latency_is_named_in_the_comparisons_warnings(tmp_path: Path) -> None:
    """A file where one backend has only other metrics (speedup, accuracy) while the others have latency:
    that backend had no cell and was dropped without a word, so the comparison read as one of every
    backend in the file. The comparison's warnings now name it, the metrics it has, and the fix."""
    import ktriage.api as kt

    old_csv, new_csv = tmp_path / "layer_norm_bwd_old.csv", tmp_path / "layer_norm_bwd_new.csv"
    head = "x_val;torch_layer_norm-latency;liger_layer_norm-latency"
    old_csv.write_text(f"{head};triton_layer_norm-latency\n1024;0.05;0.19;0.07\n1536;0.07;0.24;0.09\n")
    new_csv.write_text(
        f"{head};triton_layer_norm-speedup;triton_layer_norm-accuracy\n1024;0.05;0.18;0.7;1\n1536;0.07;0.25;0.8;1\n"
    )
    old_json, new_json = tmp_path / "layer_norm_bwd_old.json", tmp_path / "layer_norm_bwd_new.json"
    key = "tritonbench_layer_norm_bwd[x_1024-{}]_{}"
    old_json.write_text(json.dumps({key.format("liger_layer_norm", "latency"): "0.19"}))
    new_json.write_text(
        json.dumps(
            {
                key.format("liger_layer_norm", "latency"): "0.18",
                key.format("triton_layer_norm", "speedup"): 0.7,
                key.format("triton_layer_norm", "gbps"): 310.0,
            }
        )
    )
    for old, new, held in ((old_csv, new_csv, "accuracy, speedup"), (old_json, new_json, "gbps, speedup")):
        report = kt.compare(old=old, new=new)
        (comparison,) = report.comparisons
        assert comparison.warnings == [
            f"{new}: backend triton_layer_norm has no latency (only {held}), so it is not compared; run TritonBench "
            f"again with latency among --metrics (e.g. --metrics latency,{held.replace(', ', ',')})"
        ], comparison.warnings
        shown = kt.CompareView(report).to_markdown().replace("\\", "")  # as `ktriage compare` writes it
        assert "WARNING: " in shown and "triton_layer_norm has no latency" in shown
