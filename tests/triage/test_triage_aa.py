"""`ktriage triage` on the real TritonBench A/A pair (same software twice, H200): no regression of the
software; the flagged cells are named no-compile-change / noise, unsure without a GPU re-run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ktriage.cli.app import main
from tests.conftest import RunCli

DATA = (
    Path(__file__).resolve().parents[1] / "data" / "tritonbench"
)  # the real A/A pair of ../shared/data/tritonbench_outputs


def test_the_aa_pair_has_no_regression_of_the_software(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outs = [tmp_path / "report.md", tmp_path / "report.json", tmp_path / "report.html"]
    code = main(
        [
            "triage",
            str(DATA / "layer_norm_bwd_run1.csv"),
            str(DATA / "layer_norm_bwd_run2.csv"),
            "--old-toolchain",
            "triton==3.4.0",
            "--new-toolchain",
            "triton==3.4.0",
            "--op",
            "layer_norm",
            "--mode",
            "bwd",
            "--threshold",
            "10",
            *sum((["-o", str(p)] for p in outs), []),
        ]
    )
    capsys.readouterr()
    assert code == 0
    report = json.loads(outs[1].read_text())
    assert report["counts"]["regression"] == 0 and report["compared"] == 60 and report["complete"]
    assert report["cells"], "the A/A pair moves by up to 53%: some cells pass the gate"
    assert {c["verdict"] for c in report["cells"]} == {"unsure_no_gpu"}
    assert all(
        c["compile_change"] is False and c["single_value"]
        for c in report["cells"]
        if c["backend"] == "liger_layer_norm"
    )
    worst = report["cells"][0]
    assert (
        worst["backend"] == "liger_layer_norm"
        and worst["input"] == "(4096, 1536)"
        and worst["change_pct"] == pytest.approx(53.2, abs=0.1)
    )
    assert any("one number per cell" in x for x in report["gpu_needed"])
    md = outs[0].read_text()
    assert "**0 compile-side regressions" in md and "unsure without a GPU re-run" in md and "Regressions" not in md
    html = outs[2].read_text()
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html and "src=" not in html and "<link" not in html


def test_a_file_without_op_or_mode_needs_the_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text((DATA / "layer_norm_bwd_run1.csv").read_text())
    b.write_text((DATA / "layer_norm_bwd_run2.csv").read_text())
    assert main(["triage", str(a), str(b), "--old-toolchain", "triton==3.4.0", "--new-toolchain", "triton==3.4.0"]) == 2
    assert "--op" in capsys.readouterr().err
    code = main(
        [
            "triage",
            str(a),
            str(b),
            "--old-toolchain",
            "triton==3.4.0",
            "--new-toolchain",
            "triton==3.4.0",
            "--op",
            "layer_norm",
            "--mode",
            "bwd",
            "--format",
            "json",
        ]
    )
    assert code == 0 and json.loads(capsys.readouterr().out)["counts"]["regression"] == 0


def test_unknown_toolchains_make_the_triage_incomplete(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["triage", str(DATA / "layer_norm_bwd_run1.csv"), str(DATA / "layer_norm_bwd_run2.csv"), "--format", "json"]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 4 and not report["complete"]
    # named as the command's flag and kt.triage's keyword (ktriage.errors.option)
    assert report["failures"][0] == (
        "the old and new side's toolchain is unknown (the files do not say): "
        "pass old_toolchain (--old-toolchain) and new_toolchain (--new-toolchain)"
    )
    # liger_layer_norm has catalog kernels: its cells say they were not compiled for want of the toolchains,
    # not that the backend has no kernels
    liger = [c for c in report["cells"] if c["backend"] == "liger_layer_norm"]
    assert liger and all(c["verdict"] == "unexplained" for c in liger)
    assert all(f"not compiled: {report['failures'][0]}" in c["notes"] for c in liger)
    assert all("no Triton kernels" not in c["verdict_text"] for c in liger)


def test_sides_without_the_baseline_say_how_to_get_it_not_compares_option(tmp_path: Path, run_cli: RunCli) -> None:
    """The A/A pair without its torch_layer_norm column: the baseline check's fix was compare's "pass
    --baseline", an option triage refuses; it names the op's baseline and how the runs keep it."""
    for name, src in (("old", "layer_norm_bwd_run1.csv"), ("new", "layer_norm_bwd_run2.csv")):
        rows = [line.split(";") for line in (DATA / src).read_text().splitlines()]
        (tmp_path / f"layer_norm_bwd_{name}.csv").write_text("".join(f"{r[0]};{r[2]}\n" for r in rows))
    same = ["--old-toolchain", "triton==3.4.0", "--new-toolchain", "triton==3.4.0"]
    files = [str(tmp_path / "layer_norm_bwd_old.csv"), str(tmp_path / "layer_norm_bwd_new.csv")]
    r = run_cli(["triage", *files, *same, "--format", "json"])
    assert r.exit_code == 0, r.stderr
    baseline = json.loads(r.stdout)["baseline"]
    assert baseline["status"] == "none" and "--baseline" not in baseline["message"]
    assert "layer_norm's torch_layer_norm not measured" in baseline["message"]
    assert "unless --only leaves it out" in baseline["message"]


def test_a_release_the_index_does_not_have_is_refused_even_when_nothing_is_flagged(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--old-toolchain triton==9.9 exited 0 when no cell passed the gate (the toolchain was only built for a
    flagged cell), the report naming a toolchain that cannot exist. The index is asked (here: a stand-in for
    ``pip index versions``); a supported release needs no question, and an index that does not answer lets it
    through (only a known "no" is refused)."""
    from ktriage.toolchain import installer

    asked: list[str] = []

    def index(package: str, limit: int = 25) -> list[str]:
        asked.append(package)
        return ["3.6.0", "3.5.1", "3.4.0"] if package == "triton" else []

    monkeypatch.setattr(installer, "available_versions", index)
    copy = tmp_path / "copy.csv"  # the same numbers on both sides: nothing passes the gate
    copy.write_text((DATA / "layer_norm_bwd_run1.csv").read_text())
    argv = ["triage", str(DATA / "layer_norm_bwd_run1.csv"), str(copy), "--op", "layer_norm", "--mode", "bwd"]
    r = run_cli([*argv, "--old-toolchain", "triton==9.9", "--new-toolchain", "triton==3.4.0"])
    assert r.exit_code == 2, r.output
    # the command names its own flag; it printed "old_toolchain (--old-toolchain) triton==9.9.0", the library's words
    assert r.problem.startswith("--old-toolchain triton==9.9.0: triton==9.9.0 is not on the package index"), r.problem
    assert "pick one that exists: triton==3.6.0" in (r.fix or "")
    # kt.triage meets the same refusal: the keyword is named as well as the flag (ktriage.errors.option)
    import ktriage.api as kt
    from ktriage.errors import ToolchainError

    with pytest.raises(ToolchainError) as info:
        kt.triage(old=argv[1], new=argv[2], op="layer_norm", mode="bwd", old_toolchain="triton==9.9")
    assert info.value.problem.startswith(
        "old_toolchain (--old-toolchain) triton==9.9.0: triton==9.9.0 is not on the package index"
    ), info.value.problem
    asked.clear()
    r = run_cli([*argv, "--old-toolchain", "triton==3.4.0", "--new-toolchain", "triton==3.4.0"])
    assert r.exit_code == 0 and asked == [], r.output  # supported: no question to the index
    r = run_cli([*argv, "--old-toolchain", "triton==3.4.0", "--new-toolchain", "triton==3.4.0,ptxas==12.99.1"])
    assert r.exit_code == 0 and asked == ["nvidia-cuda-nvcc-cu12"], r.output  # no answer: let through


def test_a_toolchain_that_cannot_be_built_is_a_failure_that_names_its_fix(capsys: pytest.CaptureFixture[str]) -> None:
    """A step that fails without failing the triage lists its error among the report's failures: the line kept
    the problem only (``exc.problem`` in an f-string), so "ptxas binary /nonexistent/ptxas does not exist" came
    without the toolchain's fix."""
    argv = ["triage", str(DATA / "layer_norm_bwd_run1.csv"), str(DATA / "layer_norm_bwd_run2.csv")]
    more = ["--op", "layer_norm", "--mode", "bwd", "--no-bisect", "--format", "json"]
    spec = "triton==3.4.0,ptxas=/nonexistent/ptxas"
    code = main([*argv, "--old-toolchain", spec, "--new-toolchain", "triton==3.4.0", *more])
    report = json.loads(capsys.readouterr().out)
    assert code == 4 and not report["complete"]
    (failure,) = report["failures"]
    assert failure.startswith(f"toolchains {spec} / triton==3.4.0: ptxas binary /nonexistent/ptxas does not exist")
    assert "(fix: check the path, e.g. ptxas=" in failure, failure


def test_the_cells_not_compiled_name_the_commands_flags_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    """Without toolchains the flagged cells say why they were not compiled, by the failure's text: an f-string
    of the worded failure kept the library's spelling, so the command's table told its user to pass
    ``old_toolchain (--old-toolchain)``; the JSON (what kt.triage's callers read too) keeps both spellings."""
    argv = ["triage", str(DATA / "layer_norm_bwd_run1.csv"), str(DATA / "layer_norm_bwd_run2.csv")]
    assert main([*argv, "--format", "markdown"]) == 4
    markdown = capsys.readouterr().out
    said = "not compiled: the old and new side's toolchain is unknown (the files do not say): pass --old-toolchain"
    assert said in markdown and "old_toolchain (" not in markdown, markdown
    assert main([*argv, "--format", "json"]) == 4
    cells = json.loads(capsys.readouterr().out)["cells"]
    notes = [n for c in cells for n in c["notes"] if n.startswith("not compiled")]
    assert notes and all("pass old_toolchain (--old-toolchain) and new_toolchain (--new-toolchain)" in n for n in notes)
