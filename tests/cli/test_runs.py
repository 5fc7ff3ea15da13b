"""`ktriage runs list|show|export|import|delete` through the real ``main(argv)``, on SQLite and PostgreSQL stores."""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path

from ktriage.cli import exit_codes
from ktriage.store import open_store, read_json_export
from ktriage.store.samples import format_ms, summarize
from tests.conftest import RunCli
from tests.store.fixtures import store_url  # noqa: F401  (the fixture: every test runs on SQLite and PostgreSQL)
from tests.store.test_store import assert_cells_equal, make_cells, make_run


def fill(url: str) -> tuple[str, str]:
    """Two runs: a finished one with 5 cells (2 ok, 1 wrong, 2 error/timeout), a failed empty one."""
    done, failed = make_run("feedbeef0001"), make_run("cafe00000002", created="2020-01-01T00:00:00+00:00")
    with open_store(url) as store:
        with store.recording(done) as rec:
            for c in make_cells():
                rec.add(c)
        store.start_run(failed)
        store.finish_run(failed.run_id, "failed", error="RuntimeError: no GPU")
    return done.run_id, failed.run_id


def test_list(store_url: str, run_cli: RunCli) -> None:
    open_store(store_url).close()  # an empty store (a read does not create one: test_reads_never_create_a_store)
    empty = run_cli(["runs", "list", "--db", store_url])
    assert empty.exit_code == exit_codes.OK and "no runs in" in empty.output
    fill(store_url)
    result = run_cli(["runs", "list", "--db", store_url])
    assert result.exit_code == exit_codes.OK, result.output
    lines = result.output.splitlines()
    done = next(line for line in lines if "feedbeef0001" in line)
    assert "NVIDIA H200" in done and "triton-3.3.1, triton-3.4.0" in done and "2/1/2" in done and "finished" in done
    failed_line = next(line for line in lines if "cafe00000002" in line)
    assert "failed" in failed_line and "0/0/0" in failed_line
    assert lines.index(done) < lines.index(failed_line)  # newest first
    only_failed = run_cli(["runs", "list", "--db", store_url, "--status", "failed"])
    assert "cafe00000002" in only_failed.output and "feedbeef0001" not in only_failed.output


def test_list_says_a_gpu_that_was_not_recorded(store_url: str, run_cli: RunCli) -> None:
    """A run whose ``run.gpu`` names no GPU (NVML and torch could not name it) was listed with GPU "?": the
    list now says "GPU not recorded", as compare's run lines do (``ktriage.report.markdown.run_date_gpu``)."""
    run = make_run("0a0a00000003")
    run.gpu = {}
    with open_store(store_url) as store, store.recording(run) as rec:
        rec.add(make_cells()[0])
    result = run_cli(["runs", "list", "--db", store_url, "--format", "csv"])
    assert result.exit_code == exit_codes.OK, result.output
    (row,) = [r for r in csv.DictReader(io.StringIO(result.stdout)) if r["id"] == "0a0a00000003"]
    assert row["GPU"] == "GPU not recorded", row
    data = run_cli(["runs", "list", "--db", store_url, "--format", "json"]).stdout
    assert [r["gpu"] for r in json.loads(data)] == [None]  # the JSON is data: no name, null


def test_list_says_a_toolchain_with_neither_id_nor_spec_was_not_recorded(store_url: str, run_cli: RunCli) -> None:
    """A toolchain record with neither ``id`` nor ``spec`` (a run file cut or written by hand) was listed as
    "?" in the table and in the JSON; the table now says "toolchain not recorded", as the GPU column does,
    and the JSON (data) has null there."""
    run = make_run("0a0a00000005")
    for key in ("id", "spec"):
        run.toolchains[1].pop(key)
    with open_store(store_url) as store, store.recording(run) as rec:
        rec.add(make_cells()[0])
    table = run_cli(["runs", "list", "--db", store_url, "--format", "csv"])
    assert table.exit_code == exit_codes.OK, table.output
    (row,) = list(csv.DictReader(io.StringIO(table.stdout)))
    assert row["toolchains"] == "triton-3.3.1, toolchain not recorded", row
    data = run_cli(["runs", "list", "--db", store_url, "--format", "json"])
    assert data.exit_code == exit_codes.OK, data.output
    assert [r["toolchains"] for r in json.loads(data.stdout)] == [["triton-3.3.1", None]]
    md = run_cli(["runs", "list", "--db", store_url, "--format", "markdown"]).stdout
    rows = [line for line in md.splitlines() if line.startswith("| ") and "triton-3.3.1" in line]
    # the rows only: the heading names the store, whose PostgreSQL URL has a query ("?options=...")
    assert len(rows) == 1 and "toolchain not recorded" in rows[0] and "?" not in rows[0], md


def test_delete_says_a_gpu_that_was_not_recorded(store_url: str, run_cli: RunCli) -> None:
    """``runs delete`` of a run whose ``run.gpu`` names no GPU printed "(2026-..., ?, finished, 1 cells)";
    it says "GPU not recorded", as ``runs list`` and the unknown-run hint do."""
    run = make_run("0a0a00000006")
    run.gpu = {"driver": "570.124.06"}
    with open_store(store_url) as store, store.recording(run) as rec:
        rec.add(make_cells()[0])
    gone = run_cli(["runs", "delete", "0a0a00000006", "--db", store_url])
    assert gone.exit_code == exit_codes.OK, gone.output
    assert f"deleted run 0a0a00000006 ({run.created}, GPU not recorded, finished, 1 cell) from" in gone.stdout, (
        gone.stdout
    )
    assert "?" not in gone.stdout.split(" from ")[0], gone.stdout


def test_show_and_the_unknown_run_hint_say_what_was_not_recorded(store_url: str, run_cli: RunCli) -> None:
    """A run whose GPU has no name and one of whose toolchains has no Triton or ptxas version: the "no run ..."
    hint listed it as "(2026-..., ?, finished)" and ``runs show`` wrote "?" in its toolchain table, while
    ``runs list`` said "GPU not recorded". Now the hint and the table say "not recorded" too."""
    run = make_run("0a0a00000004")
    run.gpu = {"driver": "570.124.06"}
    for key in ("triton_version", "ptxas_version"):
        run.toolchains[1].pop(key)
    with open_store(store_url) as store, store.recording(run) as rec:
        rec.add(make_cells()[0])
    missing = run_cli(["runs", "show", "nosuchrun", "--db", store_url])
    assert missing.exit_code != exit_codes.OK and missing.fix is not None, missing.output
    assert f"0a0a00000004 ({run.created}, GPU not recorded, finished)" in missing.fix, missing.fix
    assert "?" not in missing.fix.split("(all:")[0], missing.fix
    shown = run_cli(["runs", "show", "0a0a", "--db", store_url, "--format", "markdown"])
    assert shown.exit_code == exit_codes.OK, shown.output
    assert "| triton-3.4.0 | not recorded | not recorded | - |" in shown.stdout, shown.stdout
    assert "| triton-3.3.1 | 3.3.1 | 12.4.99 | - |" in shown.stdout  # what was recorded is still shown


def test_list_says_when_the_limit_hides_runs(store_url: str, tmp_path: Path, run_cli: RunCli) -> None:
    """97 runs imported, `runs list` showed 20 rows and nothing else: the default --limit 20 hid 77 runs
    without a word. The table and the Markdown say that more runs are stored and how to list them."""
    fill(store_url)
    note = "newest 1 run shown: the store has more (--limit N lists up to N)"
    cut = run_cli(["runs", "list", "--db", store_url, "--limit", "1"])
    assert cut.exit_code == exit_codes.OK, cut.output
    assert "feedbeef0001" in cut.stdout and "cafe00000002" not in cut.stdout and note in cut.stdout
    md = tmp_path / "runs.md"
    assert run_cli(["runs", "list", "--db", store_url, "--limit", "1", "-o", str(md)]).exit_code == exit_codes.OK
    assert note in md.read_text()
    whole = run_cli(["runs", "list", "--db", store_url, "--limit", "2"])
    assert "cafe00000002" in whole.stdout and "the store has more" not in whole.output
    filtered = run_cli(["runs", "list", "--db", store_url, "--limit", "1", "--status", "failed"])
    assert "cafe00000002" in filtered.stdout and "the store has more" not in filtered.output  # one run matches


def test_list_names_the_ops_of_each_run(store_url: str, run_cli: RunCli) -> None:
    """97 imported runs listed as id, date, GPU, toolchains and counts, all "NVIDIA H200" with the same three
    toolchains: which run measured what took a `runs show` per id. Each row names the ops it measured."""
    done, failed = fill(store_url)
    table = run_cli(["runs", "list", "--db", store_url])
    row = next(line for line in table.stdout.splitlines() if done in line)
    assert "layer_norm" in row
    rows = {
        r["id"]: r
        for r in csv.DictReader(io.StringIO(run_cli(["runs", "list", "--db", store_url, "--format", "csv"]).stdout))
    }
    assert rows[done]["ops"] == "layer_norm" and rows[failed]["ops"] == "-"  # the failed run measured nothing
    listed = {r["id"]: r for r in json.loads(run_cli(["runs", "list", "--db", store_url, "--format", "json"]).stdout)}
    assert listed[done]["ops"] == ["layer_norm"] and listed[failed]["ops"] == []
    with open_store(store_url) as store:  # the library's one-run summary says the same
        assert store.summary(done[:6]).ops == ["layer_norm"] and store.summary(failed).ops == []


def test_list_refuses_a_limit_below_1_and_an_unknown_status(store_url: str, run_cli: RunCli) -> None:
    fill(store_url)
    for limit in ("0", "-5"):
        res = run_cli(["runs", "list", "--db", store_url, "--limit", limit])
        assert res.exit_code == exit_codes.USAGE, res.output
        assert res.problem == f"--limit {limit} lists no run" and "feedbeef0001" not in res.output
    res = run_cli(["runs", "list", "--db", store_url, "--status", "bogus"])
    assert res.exit_code == exit_codes.USAGE, res.output
    assert res.problem == "--status bogus is not a run status"
    assert res.fix is not None and "running, finished, interrupted, failed" in res.fix


def test_show_by_prefix(store_url: str, run_cli: RunCli) -> None:
    run_id, _ = fill(store_url)
    result = run_cli(["runs", "show", "feed", "--db", store_url])
    assert result.exit_code == exit_codes.OK, result.output
    out = result.output
    for text in (
        "feedbeef0001",
        "finished",
        "570.124.06",
        "triton-3.4.0",
        "12.8.93",
        "liger-kernel",
        "0.5.10",
        "l2_flush",
        "6eb029e",
        "5 cells",
    ):
        assert text in out, text
    with open_store(store_url) as store:
        _, cells = store.load_run(run_id)
    medians = [format_ms(summarize(c.samples_ms).median_ms) for c in cells[:2]]
    assert all(m in out for m in medians)
    assert "CUDA_ERROR_ILLEGAL_ADDRESS in worker" in out and "(host)" in out
    failed = run_cli(["runs", "show", "cafe", "--db", store_url])
    assert failed.exit_code == exit_codes.OK and "RuntimeError: no GPU" in failed.output


def test_export_csv_stdout_and_json_file(store_url: str, tmp_path: Path, run_cli: RunCli) -> None:
    run_id, _ = fill(store_url)
    result = run_cli(["runs", "export", run_id, "--db", store_url, "--format", "csv"])
    assert result.exit_code == exit_codes.OK, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [r["status"] for r in rows] == ["ok", "ok", "wrong", "error", "timeout"]
    assert rows[1]["toolchain"] == "triton-3.3.1" and rows[1]["samples"] == "2000"
    out = tmp_path / "out" / "run.json"
    result = run_cli(["runs", "export", run_id[:5], "--db", store_url, "--format", "json", "--output", str(out)])
    assert result.exit_code == exit_codes.OK, result.output
    run, cells = read_json_export(out.read_text())
    assert run.run_id == run_id and run.status == "finished"
    with open_store(store_url) as store:
        assert_cells_equal(cells, store.load_run(run_id)[1])
    assert json.loads(out.read_text())["run"]["gpu"]["name"] == "NVIDIA H200"


def test_bad_run_id_lists_recent_runs(store_url: str, run_cli: RunCli) -> None:
    fill(store_url)
    for cmd in (["show", "nope"], ["export", "nope", "--format", "csv"]):
        result = run_cli(["runs", *cmd, "--db", store_url])
        assert result.exit_code == exit_codes.USAGE, result.output  # a KtriageError, printed with its fix
        assert "no run 'nope'" in result.problem
        assert "feedbeef0001" in (result.fix or "") and "cafe00000002" in (result.fix or "")
    bad_format = run_cli(["runs", "export", "feed", "--db", store_url, "--format", "xlsx"])
    assert bad_format.exit_code == exit_codes.USAGE and "xlsx" in bad_format.output


def _exported(tmp_path: Path, run_cli: RunCli, name: str) -> tuple[str, str, Path]:
    """A run measured "there" (a SQLite file on the GPU host) and exported by `runs export -o NAME`: the
    store's URL, the run's id and the exported file."""
    gpu_host = f"sqlite:///{tmp_path / 'gpu-host.db'}"
    run_id, _ = fill(gpu_host)
    out = tmp_path / name
    assert run_cli(["runs", "export", run_id, "--db", gpu_host, "-o", str(out)]).exit_code == exit_codes.OK
    return gpu_host, run_id, out


def test_import_moves_a_run_between_stores(store_url: str, tmp_path: Path, run_cli: RunCli) -> None:
    """Measure there (a SQLite file on the GPU host), export, import here (any store), compare exactly."""
    gpu_host, run_id, export = _exported(tmp_path, run_cli, "run.json")
    result = run_cli(["runs", "import", str(export), "--db", store_url])
    assert result.exit_code == exit_codes.OK, result.output
    with open_store(gpu_host) as src, open_store(store_url) as dst:
        a, b = src.load_run(run_id), dst.load_run(run_id)
    assert a[0] == b[0] and b[0].status == "finished"
    assert_cells_equal(b[1], a[1])


def test_import_of_a_gzipped_export_reads_it_as_the_plain_one(store_url: str, tmp_path: Path, run_cli: RunCli) -> None:
    """A results file kept gzipped (run.json.gz, as benchmarks/calibration commits them) was refused
    ("gzip-compressed ... gunzip -k"), while workload files read gzipped: it imports as the plain file does."""
    gpu_host, run_id, export = _exported(tmp_path, run_cli, "run.json")
    packed = tmp_path / "run.json.gz"
    packed.write_bytes(gzip.compress(export.read_bytes()))
    result = run_cli(["runs", "import", str(packed), "--db", store_url])
    assert result.exit_code == exit_codes.OK, result.output
    with open_store(gpu_host) as src, open_store(store_url) as dst:
        a, b = src.load_run(run_id), dst.load_run(run_id)
    assert_cells_equal(b[1], a[1])
    cut = tmp_path / "cut.json.gz"  # a damaged one names the file and the damage, and imports nothing
    cut.write_bytes(packed.read_bytes()[:-12])
    result = run_cli(["runs", "import", str(cut), "--db", f"sqlite:///{tmp_path / 'other.db'}"])
    assert result.exit_code == exit_codes.USAGE, result.output
    assert result.problem.startswith(f"results file {cut} is damaged: its gzip data is cut short")
    assert (result.fix or "").startswith("copy it again from the machine that wrote it"), result.fix


def test_import_of_a_folder_says_it_is_a_folder(store_url: str, tmp_path: Path, run_cli: RunCli) -> None:
    """`runs import DIR` said "no such file: DIR", of a folder that is there; a workload file that is a
    folder was "not a file ... record it again". Both say it is a folder and to give the file."""
    folder = tmp_path / "exports"
    folder.mkdir()
    result = run_cli(["runs", "import", str(folder), "--db", store_url])
    assert result.exit_code == exit_codes.USAGE, result.output
    assert result.problem == f"results file {folder} is a folder, not a file"
    assert result.fix == "give the path of the file itself"
    (tmp_path / "W.json").mkdir()
    shown = run_cli(["workload", "show", str(tmp_path / "W.json")])
    assert shown.exit_code == exit_codes.USAGE and shown.problem.endswith("W.json is a folder, not a file")
    assert "record it again" not in (shown.fix or "")


def test_import_of_a_file_that_is_not_json_says_so(store_url: str, tmp_path: Path, run_cli: RunCli) -> None:
    """A TOML file (its first line `[build-system]`) was "not a ktriage results file: top level: expected
    object, got array": msgspec stopped at the `[` before reading on. It is said to be no JSON."""
    toml = tmp_path / "pyproject.toml"
    toml.write_text('[build-system]\nrequires = ["setuptools>=68"]\n')
    result = run_cli(["runs", "import", str(toml), "--db", store_url])
    assert result.exit_code == exit_codes.USAGE, result.output
    assert result.problem.startswith(f"results file {toml} is not valid JSON"), result.err_text
    assert "array" not in result.err_text and "Traceback" not in result.output
    with open_store(store_url) as store:
        assert store.list_runs() == []  # nothing imported


def test_import_of_a_csv_export_names_it_and_the_json_export(store_url: str, tmp_path: Path, run_cli: RunCli) -> None:
    """`runs export RUN -o run.csv` then `runs import run.csv` said only "not valid JSON: Expecting value"
    (and compare, "not a TritonBench CSV"): the file is named as the run's CSV export, which cannot be
    imported, and the fix is the JSON export of the same run."""
    gpu_host, run_id, table = _exported(tmp_path, run_cli, "run.csv")
    result = run_cli(["runs", "import", str(table), "--db", store_url])
    assert result.exit_code == exit_codes.USAGE, result.output
    assert result.problem.startswith(
        f"results file {table} is a run's CSV export, written by `ktriage runs export RUN --format csv` for people"
    )
    assert "cannot be imported" in result.problem and "not valid JSON" not in result.err_text
    # the command line is shown the commands, not the kt.runs_export call (tests/api names that one)
    assert (
        result.fix
        == "export the run as JSON where it is stored and give that file: `ktriage runs export RUN -o run.json`"
    )
    assert "kt." not in result.err_text
    compared = run_cli(["compare", str(table), str(table)])
    assert compared.exit_code == exit_codes.USAGE and compared.problem.startswith(f"{table} is a run's CSV export")
    assert "kt." not in compared.err_text
    with open_store(store_url) as store:
        assert store.list_runs() == []  # nothing imported


def test_import_of_a_run_without_cells_is_refused(store_url: str, tmp_path: Path, run_cli: RunCli) -> None:
    """A run without cells was "imported run X (0 cells)", exit 0, then refused by compare and triage (and its
    id blocked a later import of the measured file): refused before the store is written."""
    gpu_host = f"sqlite:///{tmp_path / 'gpu-host.db'}"
    _, failed = fill(gpu_host)  # the failed run measured nothing
    export = tmp_path / "run.json"
    assert run_cli(["runs", "export", failed, "--db", gpu_host, "-o", str(export)]).exit_code == exit_codes.OK
    result = run_cli(["runs", "import", str(export), "--db", store_url])
    assert result.exit_code == exit_codes.USAGE, result.output
    assert result.problem.startswith(f"{export} holds run {failed} with no cells (status failed): nothing measured")
    assert "export a run that measured something" in (result.fix or "")
    with open_store(store_url) as store:
        assert store.list_runs() == []  # nothing imported


def test_import_of_a_file_that_repeats_a_cell_is_refused(store_url: str, tmp_path: Path, run_cli: RunCli) -> None:
    """A results file holding one cell twice (two files' cells pasted into one) was "imported run X (6 cells)",
    exit 0, while the store kept 5: the second replaced the first, one measurement gone without a word. The
    store holds one cell per key, so the import is refused before the store is written, naming both cells."""
    gpu_host, run_id, export = _exported(tmp_path, run_cli, "run.json")
    doc = json.loads(export.read_text())
    again = json.loads(json.dumps(doc["cells"][1]))
    again["samples_ms"] = [v * 1.5 for v in again["samples_ms"]]  # a second measurement of the same cell
    doc["cells"].append(again)
    export.write_text(json.dumps(doc))
    result = run_cli(["runs", "import", str(export), "--db", store_url])
    assert result.exit_code == exit_codes.USAGE, result.output
    label = "layer_norm.bwd[N=4608] liger_layer_norm@triton-3.3.1"
    assert result.problem == (
        f"run {run_id} has cell {label} twice (cells[1] and cells[5]): the store keeps one cell per "
        "(op, mode, input, backend, toolchain), so one of the two measurements would be dropped"
    ), result.err_text
    assert "nothing was imported" in (result.fix or "") and "samples_ms" in (result.fix or "")
    with open_store(store_url) as store:
        assert store.list_runs() == []  # nothing imported


def test_delete_then_import_again(store_url: str, tmp_path: Path, run_cli: RunCli) -> None:
    """`runs import` of an id the store has says to delete it first: `runs delete` does, by a unique prefix."""
    run_id, other = fill(store_url)
    export = tmp_path / "run.json"
    assert run_cli(["runs", "export", run_id, "--db", store_url, "-o", str(export)]).exit_code == exit_codes.OK
    again = run_cli(["runs", "import", str(export), "--db", store_url])
    assert again.exit_code == exit_codes.USAGE and f"ktriage runs delete {run_id}" in (again.fix or "")
    ambiguous = run_cli(["runs", "delete", "", "--db", store_url])
    assert ambiguous.exit_code == exit_codes.USAGE, ambiguous.output  # an empty ref names no run
    gone = run_cli(["runs", "delete", run_id[:6], "--db", store_url])
    assert gone.exit_code == exit_codes.OK, gone.output
    assert f"deleted run {run_id} (" in gone.stdout and "5 cells" in gone.stdout
    with open_store(store_url) as store:
        assert [r.run_id for r in store.list_runs()] == [other]  # the other run and its cells stay
    missing = run_cli(["runs", "delete", run_id, "--db", store_url])
    assert missing.exit_code == exit_codes.USAGE and f"no run {run_id!r}" in missing.problem
    back = run_cli(["runs", "import", str(export), "--db", store_url])
    assert back.exit_code == exit_codes.OK, back.output
    with open_store(store_url) as store:
        assert len(store.load_run(run_id)[1]) == 5


def test_reads_never_create_or_convert_a_store(tmp_path: Path, run_cli: RunCli) -> None:
    """runs list/show/export, history and delete refuse a SQLite path that is not a store, and leave it as it was."""
    missing = tmp_path / "none" / "ktriage.db"
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n")
    other = tmp_path / "other.db"
    import sqlite3

    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
    other_bytes = other.read_bytes()
    cases = [
        (missing, "the file does not exist"),
        (empty, "is not a SQLite database (the file is empty)"),
        (text, "is not a SQLite database"),
        (other, "is a SQLite database but not a ktriage store"),
    ]
    for path, problem in cases:
        url = f"sqlite:///{path}"
        for argv in (
            ["runs", "list", "--db", url],
            ["runs", "show", "feed", "--db", url],
            ["runs", "export", "feed", "--db", url],
            ["runs", "delete", "feed", "--db", url],
            ["history", "--op", "layer_norm", "--backend", "liger_layer_norm", "--db", url],
        ):
            res = run_cli(argv)
            assert res.exit_code == exit_codes.USAGE, (argv, res.output)
            assert problem in res.problem, (argv, res.problem)
            assert res.fix is not None and "ktriage bench" in res.fix
    assert not missing.parent.exists()
    assert empty.read_bytes() == b"" and text.read_text() == "not a database\n" and other.read_bytes() == other_bytes
    assert not any(p.name.endswith(("-wal", "-shm")) for p in tmp_path.iterdir())


def test_export_ends_with_a_newline_on_stdout_and_in_files(store_url: str, tmp_path: Path, run_cli: RunCli) -> None:
    """A text file (and a shell's next prompt) needs its final newline: the JSON export had none."""
    run_id, _ = fill(store_url)
    shown = run_cli(["runs", "export", run_id, "--db", store_url])
    assert shown.exit_code == exit_codes.OK and shown.stdout.endswith("}\n") and not shown.stdout.endswith("\n\n")
    out = tmp_path / "run.json"
    assert run_cli(["runs", "export", run_id, "--db", store_url, "-o", str(out)]).exit_code == exit_codes.OK
    assert out.read_text() == shown.stdout  # the file holds the bytes stdout showed
    as_shown = run_cli(["runs", "show", run_id, "--db", store_url, "--format", "json"])
    assert as_shown.stdout == shown.stdout  # `runs show --format json` is the run's export (docs/store.md)
