"""One output grammar on every verb (issue 10, points 2 and 5), through the real ``main(argv)``:
``--format`` on stdout and a repeatable ``-o PATH`` whose suffix picks the writer; stdout's json or
markdown is the text ``-o`` writes; a format or suffix without a writer is refused with the ones
the verb has; nothing is written to the working directory unless asked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ktriage.cli import exit_codes
from ktriage.cli.app import main
from ktriage.cli.docgen import support_matrix
from ktriage.measure.results_file import read_results, write_results
from ktriage.testing import fake_sweep_run

TMD = ("table", "markdown", "json")
MJ = (".md", ".json")

# The matrix the parsers must give (docs/cli.md's "Output formats per verb" is generated from them).
MATRIX: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "explain": (TMD, (".md", ".json", ".html")),
    "bench": ((*TMD, "csv"), (".csv", ".md", ".json")),
    "compare": ((*TMD, "csv"), (".md", ".json", ".html", ".csv")),
    "bisect": (TMD, MJ),
    "bisect-step": ((), ()),
    "tune": (TMD, MJ),
    "triage": (TMD, (".md", ".json", ".html")),
    "fidelity": (TMD, MJ),
    "occupancy": (TMD, MJ),
    "profile": (("markdown", "json"), MJ),
    "toolchain add": ((), ()),
    "toolchain list": (TMD, MJ),
    "toolchain show": (TMD, MJ),
    "toolchain remove": ((), ()),
    "catalog list": ((*TMD, "csv"), (".md", ".json", ".csv")),
    "catalog show": ((*TMD, "toml"), (".md", ".json", ".toml")),
    "runs list": ((*TMD, "csv"), (".md", ".json", ".csv")),
    "runs show": (TMD, MJ),
    "runs export": (("json", "csv"), (".json", ".csv")),
    "runs import": ((), ()),
    "runs delete": ((), ()),
    "history": (TMD, (".md", ".json", ".html")),
    "cache info": (TMD, MJ),
    "cache verify": (TMD, MJ),
    "cache gc": (TMD, MJ),
    "record": ((), ()),  # -o there names the workload it records, not a report writer
    "workload show": (TMD, MJ),
    "workload import": ((), ()),  # -o names the workload it writes, as for record
    "calibrate": ((), ()),  # -o writes the fitted model parameters (explain --model), not a report
}


@pytest.fixture()
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run in an empty working directory, so that anything written there is seen."""
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


def test_the_support_matrix_is_what_the_parsers_accept() -> None:
    assert support_matrix() == MATRIX


def test_every_verb_with_output_has_json_and_a_writer_for_each_stdout_document() -> None:
    """Each printed document has its file writer: markdown <-> .md, json <-> .json, csv <-> .csv."""
    for name, (formats, suffixes) in support_matrix().items():
        if not formats:
            continue
        assert "json" in formats and ".json" in suffixes, name
        for fmt, suffix in (("markdown", ".md"), ("csv", ".csv"), ("toml", ".toml")):
            assert (fmt in formats) == (suffix in suffixes), (name, fmt)


# ------------------------------------------------------------------------------------------ refusals
@pytest.mark.parametrize(
    "argv, says",
    [
        (["occupancy", "-r", "128", "-w", "8", "-o", "occ.txt"], "name the file with one of: .md, .json"),
        (["occupancy", "-r", "128", "-w", "8", "-o", "occ"], "no writer for 'a name without a suffix'"),
        (["occupancy", "-r", "128", "-w", "8", "-f", "csv"], "use --format table | markdown | json"),
        # a format no verb has: the verb's own formats, not every one ktriage knows
        (["occupancy", "-r", "128", "-w", "8", "-f", "xml"], "use --format table | markdown | json"),
        (["runs", "export", "feed", "-f", "xml"], "xml is not a format of ktriage runs export"),
        (
            ["tune", "liger.layer_norm", "-t", "triton==3.4.0", "-i", "N=4608", "--compile-only", "-o", "t.html"],
            "name the file with one of: .md, .json",
        ),
        (["catalog", "list", "-o", "ops.html"], "name the file with one of: .md, .json, .csv"),
        (["catalog", "show", "liger.layer_norm", "-f", "csv"], "use --format table | markdown | json | toml"),
        (["toolchain", "list", "-f", "csv"], "use --format table | markdown | json"),
        (["runs", "export", "feed", "-f", "markdown"], "use --format json | csv"),
        (["bench", "--op", "layer_norm", "-o", "r.html"], "name the file with one of: .csv, .md, .json"),
        (["compare", "a.json", "b.json", "-o", "c.txt"], "name the file with one of: .md, .json, .html, .csv"),
        (
            ["history", "--op", "layer_norm", "--backend", "liger_layer_norm", "-f", "csv"],
            "use --format table | markdown | json",
        ),
    ],
)
def test_a_format_or_suffix_without_a_writer_is_refused_with_the_supported_ones(
    argv: list[str], says: str, in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == exit_codes.USAGE
    err = capsys.readouterr().err
    assert "error:" in err and "fix:" in err and says in err
    assert list(in_tmp.iterdir()) == []


# ------------------------------------------------------------------------------------------ occupancy
OCC = ["occupancy", "-r", "128", "-w", "8", "--shared", "4096"]


def test_occupancy_markdown_json_and_files_are_one_text(
    tmp_path: Path, in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*OCC, "-f", "markdown"]) == exit_codes.OK
    md = capsys.readouterr().out
    assert md.startswith("## Occupancy on sm_90")
    assert "| **registers** | 2 |" in md and "limited by registers" in md and "lift:" in md
    assert main([*OCC, "-f", "json"]) == exit_codes.OK
    js = capsys.readouterr().out
    data = json.loads(js)
    assert (data["ctas_per_sm"], data["limiter"]) == (2, "registers")
    outs = [tmp_path / "o" / "occ.md", tmp_path / "o" / "occ.json"]
    assert main([*OCC, *[w for p in outs for w in ("-o", str(p))]]) == exit_codes.OK
    captured = capsys.readouterr()
    assert "limited by" in captured.out and "wrote" in captured.err  # the table stays on stdout
    assert outs[0].read_text() == md and outs[1].read_text() == js
    assert list(in_tmp.iterdir()) == []


# ------------------------------------------------------------------------------------------ tune
TUNE = [
    "tune",
    "liger.layer_norm",
    "-t",
    "triton==3.4.0",
    "-i",
    "N=4608",
    "--compile-only",
    "--warps",
    "4,8",
    "--stages",
    "3",
    "--top-k",
    "2",
]


def test_tune_markdown_on_stdout_and_in_a_file(
    toolchain: Any, tmp_path: Path, in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toolchain("triton==3.4.0")
    md_file, json_file = tmp_path / "tune.md", tmp_path / "tune.json"
    assert main([*TUNE, "-f", "markdown", "-o", str(md_file), "-o", str(json_file)]) == exit_codes.OK
    md = capsys.readouterr().out
    assert md.startswith("## tune liger.layer_norm.bwd[N=4608] with triton==3.4.0")
    assert "| config | status | regs | spill B |" in md
    assert "**recommended: BLOCK_SIZE=8192,warps=8,stages=3**" in md
    assert "| BLOCK_SIZE=8192,warps=4,stages=3 (default) | dropped | 32 | 3712 |" in md
    assert "- scaling: num_warps 4 -> 8" in md
    assert md_file.read_text() == md
    assert main([*TUNE, "-f", "json"]) == exit_codes.OK
    js = capsys.readouterr().out
    assert json_file.read_text() == js
    assert json.loads(js)["recommended"]["config"]["num_warps"] == 8
    assert list(in_tmp.iterdir()) == []


# ------------------------------------------------------------------------------------------ bench
def _fake_run_bench(
    plan: Any,
    *,
    store_url: str | None,
    results_path: Path | None,
    toolchains: list[dict[str, Any]],
    on_cell: Any = None,
    on_input_done: Any = None,
    timeout_s: float = 60.0,
    gpus: Any = None,
) -> tuple[Any, list[Any]]:
    """Stands in for the GPU session (ktriage.bench.session.run_bench): synthetic cells, the results
    file streamed as the real one does (after each input, then once more when finished)."""
    run, cells = fake_sweep_run(seed=5, n_inputs=3, samples=5, toolchains=())
    so_far: list[Any] = []
    for cell in cells:
        so_far.append(cell)
        if results_path is not None:
            write_results(results_path, run, so_far)
    run.status = "finished"
    if results_path is not None:
        write_results(results_path, run, cells)
    return run, cells


def test_bench_json_on_stdout_is_the_results_file(
    tmp_path: Path, in_tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """bench measures on a GPU only: the session is faked, everything after it (the one JSON writer
    for stdout, -o PATH.json and --output-json) is the real code."""
    import ktriage.api._bench
    import ktriage.bench.session

    monkeypatch.setattr(ktriage.api._bench, "require_torch", lambda: None)
    monkeypatch.setattr(ktriage.bench.session, "run_bench", _fake_run_bench)
    first, second, table = tmp_path / "r1.json", tmp_path / "sub" / "r2.json", tmp_path / "r.md"
    argv = [
        "bench",
        "--op",
        "layer_norm",
        "--bwd",
        "--only",
        "torch_layer_norm",
        "--db",
        f"sqlite:///{tmp_path / 'k.db'}",
    ]
    assert (
        main([*argv, "-f", "json", "-o", str(first), "--output-json", str(second), "-o", str(table)]) == exit_codes.OK
    )
    out = capsys.readouterr().out
    assert out == first.read_text() == second.read_text()
    run, cells = read_results(first)
    assert run.status == "finished" and len(cells) == 3 and all(c.samples_ms for c in cells)
    assert table.read_text().startswith("## layer_norm bwd (fp32)")
    assert main([*argv, "-f", "markdown"]) == exit_codes.OK
    assert capsys.readouterr().out == table.read_text()
    assert list(in_tmp.iterdir()) == []


def test_bench_report_json_is_the_results_file_writer(tmp_path: Path) -> None:
    from ktriage.report.bench import to_json

    run, cells = fake_sweep_run(seed=1, n_inputs=2, samples=4)
    assert to_json(run, cells) == write_results(tmp_path / "r.json", run, cells).read_text()


# ------------------------------------------------------------------------------------------ catalog, runs
def test_catalog_formats_and_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outs = [tmp_path / f"ops.{s}" for s in ("md", "json", "csv")]
    assert main(["catalog", "list", "-f", "csv", *[w for p in outs for w in ("-o", str(p))]]) == exit_codes.OK
    out = capsys.readouterr().out
    assert out.startswith("op,aliases,modes,") and "liger.layer_norm" in out and outs[2].read_text() == out
    assert outs[0].read_text().startswith("## ktriage catalog") and "| liger.layer_norm |" in outs[0].read_text()
    assert any(op["op"] == "liger.layer_norm" and op["default_mode"] == "bwd" for op in json.loads(outs[1].read_text()))
    toml_file = tmp_path / "ln.toml"
    assert (
        main(["catalog", "show", "liger.layer_norm", "-i", "7", "-f", "markdown", "-o", str(toml_file)])
        == exit_codes.OK
    )
    md = capsys.readouterr().out
    assert "| 7 | liger.layer_norm.bwd[N=4608] | (132,) |" in md
    assert 'name = "liger.layer_norm.bwd[N=4608]"' in toml_file.read_text()


def test_runs_list_and_show_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ktriage.store import open_store

    url = f"sqlite:///{tmp_path / 'k.db'}"
    run, cells = fake_sweep_run(seed=4, n_inputs=2, samples=4)
    run.status = "finished"
    with open_store(url) as store:
        run_id = store.import_run(run, cells)
    assert main(["runs", "list", "--db", url, "-f", "csv"]) == exit_codes.OK
    assert capsys.readouterr().out.splitlines()[1].startswith(f"{run_id},")
    assert main(["runs", "list", "--db", url, "-f", "json"]) == exit_codes.OK
    assert json.loads(capsys.readouterr().out)[0]["id"] == run_id
    shown = tmp_path / "run.json"
    assert main(["runs", "show", run_id, "--db", url, "-f", "markdown", "-o", str(shown)]) == exit_codes.OK
    md = capsys.readouterr().out
    assert md.startswith(f"# run {run_id}") and "## 6 cells" in md and "| layer_norm | bwd |" in md
    assert read_results(shown)[0].run_id == run_id
    exported = tmp_path / "export.csv"
    assert main(["runs", "export", run_id, "--db", url, "-o", str(exported)]) == exit_codes.OK
    assert capsys.readouterr().out == ""  # -o without --format: the file only
    assert exported.read_text().startswith("op,mode,input_id,")


def test_compare_all_lists_the_same_pairs_in_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """compare --all reaches the table renderer (show_and_write used to drop it)."""
    run, cells = fake_sweep_run(seed=2, toolchains=("triton-3.3.1",))
    old = write_results(tmp_path / "old.json", run, cells)
    run, cells = fake_sweep_run(seed=3, toolchains=("triton-3.4.0",), speed=lambda tc, i: 0.8 if i < 20 else 1.2)
    new = write_results(tmp_path / "new.json", run, cells)
    main(["compare", str(old), str(new)])
    short = capsys.readouterr().out
    main(["compare", str(old), str(new), "--all"])
    full = capsys.readouterr().out
    assert len(full.splitlines()) > len(short.splitlines())


def test_an_output_that_is_a_file_the_command_reads_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`explain W.json -o W.json` replaced the recording with the report (only a GPU host can record it
    again), `compare run.json --toolchains -o run.json` the results, `bench W.json -o W.json` the
    workload: refused before any work, and the file is left as it was."""
    workload = tmp_path / "W.json"
    workload.write_bytes(
        (Path(__file__).resolve().parents[1] / "data" / "workloads" / "liger_step.workload.json").read_bytes()
    )
    run, cells = fake_sweep_run(seed=1, toolchains=("triton-3.3.1", "triton-3.4.0"))
    results = write_results(tmp_path / "run.json", run, cells)
    before = {p: p.read_bytes() for p in (workload, results)}
    for argv, path in (
        (["explain", str(workload), "-t", "triton==3.4.0", "-o", str(workload)], workload),
        (["explain", str(workload), "-t", "triton==3.4.0", "--report", str(tmp_path / "W.md")], workload),
        (["compare", str(results), "--toolchains", "-o", str(results)], results),
        (["bench", str(workload), "-t", "triton==3.4.0", "--compile-only", "-o", str(workload)], workload),
        (["tune", str(workload), "-t", "triton==3.4.0", "--compile-only", "-o", str(workload)], workload),
    ):
        assert main(argv) == exit_codes.USAGE, argv
        err = " ".join(capsys.readouterr().err.split())
        # a workload or a results file is also ktriage data the report may not replace: either refusal
        assert f"error: --output {path} is a file this command reads" in err or (
            f"error: --output {path} exists and is a ktriage" in err
        ), err
        assert all(p.read_bytes() == data for p, data in before.items())


def test_an_output_never_replaces_ktriage_data_of_another_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`-o` replaced whatever it named without a word: `runs list -o run.json` destroyed a results file
    measured on a GPU, `occupancy -o W.json` a recorded workload. An existing results file, workload,
    bisect state or model file is refused (exit 2, the file left as it was), before any work for the
    `-o` of every verb, after rendering for a format-named alias (`--json`)."""
    from ktriage.store import open_store

    run, cells = fake_sweep_run(seed=1, toolchains=("triton-3.4.0",))
    results = write_results(tmp_path / "run.json", run, cells)
    workload = tmp_path / "W.json"
    workload.write_bytes(
        (Path(__file__).resolve().parents[1] / "data" / "workloads" / "liger_step.workload.json").read_bytes()
    )
    state = tmp_path / "state.json"
    state.write_text('{\n "format_version": 1,\n "fingerprint": {"source": "pypi:triton"},\n "stages": []\n}\n')
    db = tmp_path / "k.db"
    with open_store(f"sqlite:///{db}") as store:
        store.import_run(run, cells)
    before = {p: p.read_bytes() for p in (results, workload, state)}
    occ = ["occupancy", "--arch", "sm_90", "--registers", "64", "--warps", "4", "--shared", "0"]
    for argv, path, kind in (
        (["runs", "list", "--db", f"sqlite:///{db}", "-o", str(results)], results, "a ktriage results file"),
        ([*occ, "-o", str(workload)], workload, "a ktriage workload"),
        ([*occ, "--format", "json", "-o", str(state)], state, "a bisect state file"),
        (["runs", "show", run.run_id, "--db", f"sqlite:///{db}", "-o", str(workload)], workload, "a ktriage workload"),
        (["runs", "export", run.run_id, "--db", f"sqlite:///{db}", "-o", str(state)], state, "a bisect state file"),
        (
            ["bisect", "--source", "pypi:triton", "--good", "3.3.1", "--bad", "3.4.0", "--json", str(results)],
            results,
            "a ktriage results file",
        ),
    ):
        assert main(argv) == exit_codes.USAGE, argv
        err = " ".join(capsys.readouterr().err.split())
        assert f"error: --output {path} exists and is {kind}" in err, err
        assert (
            f"fix: write the report to another file, e.g. --output {path.with_name(path.stem + '-report.json')}" in err
        )
        assert all(p.read_bytes() == data for p, data in before.items())


def test_an_output_never_replaces_a_results_file_of_the_older_layout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A results file written before format_version (``{"run": {...``: the committed H200 A/A runs) is
    still read as one, but -o took it for a report: `explain ... -o aa_1.json` replaced the GPU measurements
    without a word. Refused as a results file now."""
    committed = (
        Path(__file__).resolve().parents[2] / "benchmarks" / "gpu" / "issue3" / "run2_layer_norm_aa" / "aa_1.json"
    )
    older = tmp_path / "aa_1.json"
    older.write_bytes(committed.read_bytes())
    assert older.read_text().lstrip().startswith('{\n "run": {')  # no format_version
    occ = ["occupancy", "--arch", "sm_90", "--registers", "64", "--warps", "4", "--format", "json", "-o", str(older)]
    assert main(occ) == exit_codes.USAGE
    err = " ".join(capsys.readouterr().err.split())
    assert f"error: --output {older} exists and is a ktriage results file (measured cells)" in err, err
    assert older.read_bytes() == committed.read_bytes()


def test_an_output_replaces_its_own_kind_and_says_overwrote(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A nightly rewrites its reports, and `runs export -o run.json` an earlier export: replaced, and
    the message says `overwrote` where it said `wrote` for a file that was not there."""
    from ktriage.store import open_store

    run, cells = fake_sweep_run(seed=1, toolchains=("triton-3.4.0",))
    db = tmp_path / "k.db"
    with open_store(f"sqlite:///{db}") as store:
        store.import_run(run, cells)
    export, notes = tmp_path / "run.json", tmp_path / "notes.md"
    argv = ["runs", "export", run.run_id, "--db", f"sqlite:///{db}", "-o", str(export)]
    assert main(argv) == exit_codes.OK
    assert f"wrote {export}" in capsys.readouterr().err
    assert main(argv) == exit_codes.OK
    assert f"overwrote {export}" in " ".join(capsys.readouterr().err.split())
    notes.write_text("my notes\n")
    assert main(["runs", "show", run.run_id, "--db", f"sqlite:///{db}", "-o", str(notes)]) == exit_codes.OK
    assert f"overwrote {notes}" in " ".join(capsys.readouterr().err.split())
    assert notes.read_text().startswith(f"# run {run.run_id}")
