"""The shared options and the output grammar (ktriage/cli/options.py), through the real ``main(argv)``:
``--arch`` read by parse_arch everywhere, the op's own pass as the default mode, ``-o`` by suffix
(repeatable), ``--format json`` on stdout, ``--db``/``KTRIAGE_DB`` in compare, and nothing written to
the working directory unless asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ktriage.cli import exit_codes
from ktriage.cli.app import main
from ktriage.measure.results_file import read_results, write_results
from ktriage.testing import fake_sweep_run
from tests.conftest import RunCli

VECTOR_ADD = ["explain", "tutorial.vector_add", "-t", "triton==3.4.0"]


@pytest.fixture()
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run in an empty working directory, so that anything written there is seen."""
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


def test_explain_defaults_to_the_ops_own_pass_and_writes_nothing_unasked(
    toolchain, in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[no-untyped-def]
    """tutorial.vector_add has only a forward kernel: explain used to ask for bwd and fail."""
    toolchain("triton==3.4.0")
    assert main([*VECTOR_ADD, "--arch", "90", "--format", "json"]) == exit_codes.OK
    data = json.loads(capsys.readouterr().out)
    assert data["kernels"] and {k["spec"]["meta"]["mode"] for k in data["kernels"]} == {"fwd"}
    assert list(in_tmp.iterdir()) == []  # no ./ktriage-reports any more


def test_explain_writes_every_output_by_its_suffix(
    toolchain,
    in_tmp: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
    capsys: pytest.CaptureFixture[str],
) -> None:
    toolchain("triton==3.4.0")
    assert main([*VECTOR_ADD, "-o", "x.json", "-o", str(tmp_path / "sub" / "x.md")]) == exit_codes.OK
    assert json.loads((in_tmp / "x.json").read_text())["kernels"]
    assert (tmp_path / "sub" / "x.md").read_text().startswith("# ktriage explain tutorial.vector_add")
    capsys.readouterr()
    # --report keeps its old meaning (markdown here, the JSON next to it), as scripts/main.sh uses it
    assert main([*VECTOR_ADD, "--report", "r/report.md"]) == exit_codes.OK
    assert (in_tmp / "r" / "report.md").exists() and (in_tmp / "r" / "report.json").exists()
    capsys.readouterr()
    # a --report name without a suffix is the markdown report (it was refused as "--output r: no writer")
    assert main([*VECTOR_ADD, "--report", "plain"]) == exit_codes.OK
    assert (in_tmp / "plain").read_text().startswith("# ktriage explain") and (in_tmp / "plain.json").exists()
    capsys.readouterr()
    # the report names the GPU its cubins are for (an --arch what-if reads as another GPU's numbers)
    assert main([*VECTOR_ADD, "--arch", "80", "-o", "a80.md"]) == exit_codes.OK
    assert "Compiled for: `sm_80`" in (in_tmp / "a80.md").read_text()


def test_report_never_replaces_an_unrelated_file_beside_it_that_was_not_named(
    toolchain, in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[no-untyped-def]
    """``--report r.md`` also writes ``r.json``, which the user did not type: it replaced any r.json there
    (``overwrote r.json``). Now an r.json that is not an earlier explain report is refused before any
    work, naming it and the ways on; named with -o it is replaced, as -o replaces; an earlier report
    is replaced, so a nightly ``--report`` still rewrites both."""
    toolchain("triton==3.4.0")
    mine = in_tmp / "r.json"
    mine.write_text('{"my": "settings"}\n')
    assert main([*VECTOR_ADD, "--report", "r.md"]) == exit_codes.USAGE
    err = " ".join(capsys.readouterr().err.split())
    assert "error: --report r.md also writes r.json, which exists and is not an explain JSON report" in err, err
    assert "fix: add -o r.json to replace it, or give --report another path" in err, err
    assert mine.read_text() == '{"my": "settings"}\n' and not (in_tmp / "r.md").exists()
    # named, it is the user's choice: replaced as -o replaces
    assert main([*VECTOR_ADD, "--report", "r.md", "-o", "r.json"]) == exit_codes.OK
    assert json.loads(mine.read_text())["tool"] == "ktriage explain"
    # an earlier report beside it is replaced without being named (a nightly rewriting its reports)
    assert main([*VECTOR_ADD, "--report", "r.md"]) == exit_codes.OK
    assert json.loads(mine.read_text())["tool"] == "ktriage explain" and (in_tmp / "r.md").exists()


def test_explain_says_overwrote_for_a_file_it_replaces(
    toolchain, in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[no-untyped-def]
    """explain's -o and --report replaced a file and said only "report: PATH", where every other verb says
    `overwrote PATH` (docs/cli.md): it writes through the shared output code now, as they do."""
    toolchain("triton==3.4.0")
    mine = in_tmp / "notes.md"
    mine.write_text("my notes\n")
    assert main([*VECTOR_ADD, "-o", "notes.md", "-o", "new.json"]) == exit_codes.OK
    said = " ".join(capsys.readouterr().out.split())
    assert "overwrote notes.md" in said and "wrote new.json" in said and "overwrote new.json" not in said, said
    assert mine.read_text().startswith("# ktriage explain tutorial.vector_add")
    # --report PATH writes PATH and the JSON beside it, both said; with --format json they go to stderr
    assert main([*VECTOR_ADD, "--report", "notes.md", "--format", "json"]) == exit_codes.OK
    err = " ".join(capsys.readouterr().err.split())
    assert "overwrote notes.md" in err and "wrote notes.json" in err, err


def test_an_output_is_said_on_stderr_where_the_verb_gives_no_console(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The shared writer says every file it writes: a verb that passes no console (bisect, fidelity) had
    its -o written without a word; it is said on stderr, so stdout's --format output stays whole."""
    from ktriage.cli.options import Format, emit

    out = tmp_path / "r.md"
    out.write_text("older\n")
    emit(Format.json, {".json": lambda: "{}\n", ".md": lambda: "# r\n"}, lambda: None, [out, tmp_path / "r.json"])
    captured = capsys.readouterr()
    assert captured.out == "{}\n"
    assert f"overwrote {out}" in " ".join(captured.err.split()) and f"wrote {tmp_path / 'r.json'}" in captured.err
    assert out.read_text() == "# r\n"


@pytest.mark.parametrize(
    "argv, says",
    [
        (["explain", "tutorial.vector_add", "-t", "triton==3.4.0", "--arch", "sm_42"], "sm_90, sm_90a, 90"),
        (["occupancy", "--arch", "volta2", "--registers", "32", "--warps", "4"], "supported:"),
        (
            ["explain", "tutorial.vector_add", "-t", "triton==3.4.0", "-o", "x.txt"],
            "name the file with one of: .md, .json, .html",
        ),
        (
            ["explain", "tutorial.vector_add", "-t", "triton==3.4.0", "--format", "csv"],
            "use --format table | markdown | json",
        ),
        (["explain", "tutorial.vector_add", "-t", "triton==3.4.0", "--fwd", "--mode", "bwd"], "choose one"),
    ],
)
def test_bad_options_are_refused_with_the_fix(
    argv: list[str], says: str, in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == exit_codes.USAGE
    err = capsys.readouterr().err
    assert "error:" in err and "fix:" in err and says in err
    assert list(in_tmp.iterdir()) == []


def test_arch_spellings_are_one_option(capsys: pytest.CaptureFixture[str]) -> None:
    """Every verb's --arch goes through parse_arch: 90, 9.0 and sm_90 are the same target."""
    outs = []
    for spelling in ("90", "9.0", "sm_90", "cuda:90"):
        assert main(["occupancy", "--arch", spelling, "-r", "128", "-w", "8", "-f", "json"]) == exit_codes.OK
        outs.append(json.loads(capsys.readouterr().out))
    assert all(o == outs[0] for o in outs)


def test_occupancy_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "occ.json"
    assert main(["occupancy", "-r", "128", "-w", "8", "-o", str(out)]) == exit_codes.OK
    assert json.loads(out.read_text())["ctas_per_sm"] >= 1


def _results(tmp_path: Path) -> tuple[Path, Path]:
    run, cells = fake_sweep_run(seed=2, toolchains=("triton-3.3.1",))
    old = write_results(tmp_path / "old.json", run, cells)
    run, cells = fake_sweep_run(seed=3, toolchains=("triton-3.4.0",), speed=lambda tc, i: 0.8 if i < 20 else 1.2)
    new = write_results(tmp_path / "new.json", run, cells)
    return old, new


def test_compare_honours_ktriage_db(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ktriage.store import open_store

    url = f"sqlite:///{tmp_path / 'env.db'}"
    ids = []
    with open_store(url) as store:
        for path in _results(tmp_path):
            run, cells = read_results(path)
            run.status = "finished"
            ids.append(store.import_run(run, cells))
    monkeypatch.setenv("KTRIAGE_DB", url)
    assert main(["compare", ids[0], ids[1], "--format", "json"]) == exit_codes.FINDING
    (c,) = json.loads(capsys.readouterr().out)["comparisons"]
    assert c["ref_run_id"] == ids[0] and c["new_run_id"] == ids[1]


def test_compare_outputs_by_suffix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = _results(tmp_path)
    paths = [tmp_path / f"out.{s}" for s in ("md", "json", "csv", "html")]
    assert (
        main(["compare", str(old), str(new), "-f", "csv", *[w for p in paths for w in ("-o", str(p))]])
        == exit_codes.FINDING
    )
    assert capsys.readouterr().out.startswith("ref,new,op,")
    assert "Regressions" in paths[0].read_text() and json.loads(paths[1].read_text())["regressions"] > 0
    assert paths[2].read_text().startswith("ref,new,op,") and "<svg" in paths[3].read_text()


@pytest.mark.parametrize(
    "verb, workload",
    [
        (["explain"], True),
        (["bench"], True),
        (["tune"], True),
        (["bisect"], True),
        (["bisect-step"], True),
        (["catalog", "show"], False),
        (["history"], False),
    ],
)
def test_input_help_names_the_workload_forms_where_the_verb_reads_a_workload(
    verb: list[str], workload: bool, run_cli: RunCli
) -> None:
    """``-i`` was described only as "a TritonBench input id (7), shape facts (N=4608)" in every verb, so a
    workload's selectors (``K7``, ``K7:fn``, ``K7[label]``, ``K7[X_ptr=4096x{4608..6144}]``) appeared in no
    help; catalog show and history read only a catalog op, and keep its forms alone."""
    r = run_cli([*verb, "--help"], env={"COLUMNS": "2000", "KTRIAGE_COLUMNS": "2000"})
    assert r.exit_code == exit_codes.OK, r.output
    line = next(" ".join(x.strip(" │").split()) for x in r.stdout.splitlines() if "--input" in x and " -i " in x)
    assert "input id (7)" in line and "N=4608..8192" in line
    forms = ("K7:fn", "fn.K7", "K7[X_ptr=4096x4608]", "K7[X_ptr=4096x{4608..6144}]")
    assert all(f in line for f in forms) if workload else not any(f in line for f in forms), line


def test_a_named_output_wins_over_the_same_file_written_beside_another(tmp_path: Path) -> None:
    """Whichever comes first, a path the user named is replaced as -o replaces; the same path only
    written beside another (``--report``'s JSON) is refused over an unrelated file."""
    from ktriage.cli import options as opt
    from ktriage.errors import KtriageError

    report, mine = tmp_path / "r.md", tmp_path / "r.json"
    mine.write_text('{"my": "settings"}\n')
    made = opt.beside(f"--report {report}", report, ".json", marker=b'"tool": "ktriage explain"', what="a report")
    writers = (".md", ".json")
    with pytest.raises(KtriageError, match="was not named"):
        opt.check_outputs(opt.merge_outputs(None, [report, made]), writers)
    for outputs, aliases in (([mine], [report, made]), (None, [[report, made], [Path(mine)]])):
        merged = opt.merge_outputs(outputs, *aliases)
        assert merged.count(mine) == 1
        opt.check_outputs(merged, writers)  # named: no refusal
