"""``ktriage triage --run``: from a program to one report (ktriage.triage.program).

On the CPU machine there is no GPU to record or bench on, so:
- the command itself must stop before any work with "no GPU" and the split workflow as the fix (exit 2);
- bad input is refused before that, each with its error and fix;
- the report is assembled from real pieces: the H200's recording of TritonBench's rms_norm bwd
  (benchmarks/record/h200/) and its side-by-side bench of Triton 3.3.1 and 3.6.0 on the H200
  (benchmarks/record/h200d/bench/), compiled into a real bundle and explained here with the real
  toolchains by the pipeline's own steps; the bench step, which needs the GPU, says where its
  numbers come from;
- the split workflow's last step (``triage results.json results.json --workload W.json``) triages
  one results file that timed two toolchains.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ktriage.errors import in_flags
from tests.conftest import gpu_present

REPO = Path(__file__).resolve().parents[2]
WORKLOAD = REPO / "benchmarks" / "record" / "h200" / "tb_rms_norm_bwd.workload.json.gz"
RESULTS = REPO / "benchmarks" / "record" / "h200d" / "bench" / "wl-tb_rms_norm_bwd.json"
OLD, NEW = "triton==3.3.1", "triton==3.6.0"
RUN = ["triage", "--run", "python train.py --steps 3", "--old-toolchain", OLD, "--new-toolchain", NEW]


@pytest.mark.skipif(gpu_present(), reason="this host has a GPU: --run would record and bench")
def test_without_a_gpu_it_stops_before_any_work_naming_the_split_workflow(run_cli, tmp_path: Path) -> None:
    work = tmp_path / "work"
    res = run_cli([*RUN, "--workdir", str(work)])
    assert res.exit_code == 2, res.output
    assert "no GPU to record and bench on here" in res.problem and "Traceback" not in res.output
    fix = res.fix or ""
    for step in (
        "ktriage record -o W.json -- python train.py --steps 3",
        f"ktriage bench W.json -t {OLD} -t {NEW} --compile-only --bundle B",
        "ktriage bench --bundle B -o results.json",
        "ktriage triage results.json results.json --workload W.json",
    ):
        assert step in fix, fix
    assert not work.exists()  # nothing was recorded, built or written


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        ([*RUN, "old.csv"], "OLD/NEW does not apply to --run"),
        (
            ["triage", "--run", "python train.py", "--old-toolchain", OLD],
            "--run needs --old-toolchain and --new-toolchain",  # the command's flags; kt.triage_run's keywords
        ),
        (["triage", "--run", "", "--old-toolchain", OLD, "--new-toolchain", NEW], "--run is empty"),
        (
            ["triage", "--run", "python 'train.py", "--old-toolchain", OLD, "--new-toolchain", NEW],
            "cannot be split into words",
        ),
        (
            ["triage", "--run", "python train.py", "--old-toolchain", OLD, "--new-toolchain", "tritn==3.6.0"],
            "unknown toolchain spec key",
        ),
        ([*RUN, "--measure"], "--measure does not apply to --run"),
        ([*RUN, "--measure", "--arch", "9.0"], "--measure, --arch do not apply to --run"),  # two: the verb agrees
        # --arch sm_90 (the two-sides default) spelt out was taken, any other target refused
        ([*RUN, "--arch", "sm_90"], "--arch does not apply to --run"),
        ([*RUN, "--arch", "9.0"], "--arch does not apply to --run"),
        ([*RUN, "-o", "report.html"], "not HTML"),
        (["triage"], "triage needs OLD and NEW"),
        ([*RUN, "--threshold", "0.05"], "--threshold 0.05 is in percent: a 0.05% gate"),
        ([*RUN, "--threshold", "150"], "--threshold 150 would be a 150% gate"),
    ],
)
def test_bad_input_is_refused_with_a_fix(run_cli, argv: list[str], problem: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    res = run_cli(argv)
    assert res.exit_code == 2, res.output
    assert problem in res.problem and res.fix and "Traceback" not in res.output
    assert not list(tmp_path.iterdir())


def test_a_workdir_that_is_a_file_is_refused(run_cli, tmp_path: Path) -> None:
    file = tmp_path / "work"
    file.write_text("")
    res = run_cli([*RUN, "--workdir", str(file)])
    assert res.exit_code == 2 and "is a file" in res.problem


@pytest.mark.parametrize("name", ["report.md", "report.json", "results.json", "bundle"])
def test_a_workdir_holding_a_file_the_run_writes_is_refused_and_left_as_it_was(
    run_cli, tmp_path: Path, name: str
) -> None:
    """``--workdir .`` in a project replaced its ``report.md`` (and results.json, bundle/) without a word:
    files the user never named. Refused before any work, naming them and the fix; the file is intact."""
    work = tmp_path / "project"
    work.mkdir()
    mine = work / name
    mine.write_text("my notes\n")
    res = run_cli([*RUN, "--workdir", str(work)])
    assert res.exit_code == 2, res.output
    assert f"--workdir {work} already holds {name}, which this run would replace" in res.problem, res.problem
    assert f"give a new folder (it is created), or move {name} out of {work}" in (res.fix or ""), res.fix
    assert mine.read_text() == "my notes\n" and sorted(p.name for p in work.iterdir()) == [name]


def test_one_results_file_splits_into_its_toolchains() -> None:
    from ktriage.compare.sides import load_side
    from ktriage.errors import KtriageError
    from ktriage.triage.program import split_toolchains

    side = load_side(RESULTS)
    run, cells = side.run, side.cells
    half_old, half_new = split_toolchains(run, cells, OLD, NEW)
    old, new = half_old.cells, half_new.cells
    assert (half_old.label, half_new.label) == (OLD, NEW) and half_old.run is run
    assert old and new and {c.key.toolchain for c in old} != {c.key.toolchain for c in new}
    assert len(old) == len(new) == len(cells) // 3  # the run timed three toolchains, 12 entries each
    first, second = split_toolchains(run, cells, None, None)  # the run's order: its reference first
    assert (first.label, second.label) == ("triton==3.6.0", "triton==3.3.1")
    with pytest.raises(KtriageError) as err:
        split_toolchains(run, cells, "triton==3.5.1", None)
    assert "names no toolchain" in err.value.problem and "triton==3.3.1" in (err.value.fix or "")


@pytest.mark.slow
def test_the_report_is_assembled_from_the_pipelines_steps(toolchain, tmp_path: Path) -> None:
    """The steps after the GPU ones, for real: the bundle compiled, every kernel input explained with the
    cost model, the two sides triaged; the bench's numbers are the H200's. Every step is in the report
    with its status and wall time, the skipped ones with why, and every cell with both numbers."""
    from ktriage.compare.sides import load_side
    from ktriage.record.workload import load_workload
    from ktriage.report.triage_run import print_table, to_json, to_markdown
    from ktriage.triage.program import STEPS, ProgramOptions, ProgramReport, _Clock, _compile, _explain_all, _triage

    work = tmp_path / "work"
    work.mkdir()
    name = "tb_rms_norm_bwd.workload.json"  # the workload's name is the cells' op
    shutil.copy(WORKLOAD, work / name)
    tcs = [toolchain(OLD), toolchain(NEW)]
    options = ProgramOptions(
        command="python run.py --op rms_norm --bwd",
        old_toolchain=OLD,
        new_toolchain=NEW,
        workdir=work,
        fixes=True,
        bisect=True,
    )
    report = ProgramReport(options.command, OLD, NEW, str(work), name)
    said: list[str] = []
    clock = _Clock(report, said.append)
    clock.timed("toolchains", 0.0, "; ".join(t.id for t in tcs))
    clock.timed("record", None, f"recorded on the H200: {WORKLOAD.relative_to(REPO)}", "skipped")
    recorded = _compile(load_workload(work / name), tcs, options, clock)
    side = load_side(RESULTS)
    run, cells = side.run, side.cells
    clock.timed("bench", None, f"measured on the H200: {RESULTS.relative_to(REPO)}", "skipped")
    _explain_all(recorded, tcs, cells, options, report, clock)
    _triage(run, cells, tcs, options, report, clock, said.append)

    assert [s.name for s in report.steps] == list(STEPS)
    for s in report.steps:
        if s.status != "skipped":
            assert s.wall_s is not None and s.wall_s >= 0, s
        assert s.detail, s
    assert report.step("compile").status == "ok" and "24 of 24 compiles ok" in report.step("compile").detail
    assert report.step("compare").status == "ok" and report.step("compare").detail.startswith("12 cells compared")
    bisect = report.step("bisect")
    # both are releases, K9/K11 are slower side by side, and K11's compile-side change (spills 660 -> 816 B, stack
    # 480 -> 544 B) is predicted a regression by the cost model (+17 % [+10 %, +23 %], measured +11 %): its cause is
    # bisected compile-only; K9's change is predicted neutral, so it is no cause and not bisected
    assert bisect.status == "ok" and bisect.detail == "1 real regression bisected, 1 culprit found", bisect
    assert len(report.cells) == len(recorded.entries) == 12
    for row in report.cells:
        assert row.measured_verdict is not None and row.old_ms and row.new_ms
        assert row.predicted is not None and row.compile_change is not None
    k11 = next(r for r in report.cells if r.kernel == "K11")
    assert k11.measured_verdict == "regression" and k11.compile_change
    assert k11.measured_ratio is not None and k11.measured_ratio > 1.05
    assert report.triage is not None and report.triage.cells  # the flagged cells, explained
    # the sides are one run's interleaved samples: the flagged cells are measured side by side, no GPU re-run asked for
    assert all(c.measured is not None and c.measured.how == "side_by_side" for c in report.triage.cells)
    assert {c.backend.split(":")[0] for c in report.triage.cells if c.verdict == "measured_regression"} == {"K9"}
    (k11_cell,) = [c for c in report.triage.cells if c.backend.startswith("K11:")]
    assert k11_cell.verdict == "regression" and k11_cell.cause is not None and k11_cell.cause.kind == "spills"
    assert k11_cell.culprit is not None and k11_cell.culprit.found and k11_cell.culprit.culprit == "triton==3.4.0"
    assert not any("only re-measuring on the GPU" in x for x in report.triage.gpu_needed)
    assert report.exit_code() == 1  # measured regressions fail a CI job

    doc = json.loads(to_json(report))
    assert [s["name"] for s in doc["steps"]] == list(STEPS) and doc["total_s"] >= 0
    assert doc["triage"]["cells"] and len(doc["cells"]) == 12 and doc["files"]["workload"].endswith(name)
    assert [s["step"] for s in doc["split"]][0] == "record"
    md = to_markdown(report)
    for text in (
        "## Steps",
        "| compile | ok |",
        "| bench | skipped |",
        "wall s",
        "| total |",
        "## Every kernel input: measured side by side, predicted by the cost model",
        "## The same steps, split across machines",
        "ktriage triage results.json results.json --workload W.json",
        "ktriage triage:",
    ):
        assert text in md, text
    from rich.console import Console

    console = Console(record=True, width=200)
    print_table(report, console)
    text = console.export_text()
    assert "steps" in text and "K11" in text and "every kernel input" in text


@pytest.mark.slow
def test_the_split_workflows_last_step_triages_one_results_file(run_cli, toolchain, tmp_path: Path) -> None:
    toolchain(OLD), toolchain(NEW)
    out = tmp_path / "t.json"
    res = run_cli(
        [
            "triage",
            str(RESULTS),
            str(RESULTS),
            "--old-toolchain",
            OLD,
            "--new-toolchain",
            NEW,
            "--workload",
            str(WORKLOAD),
            "--no-bisect",
            "--no-fixes",
            "-o",
            str(out),
        ]
    )
    assert res.exit_code in (0, 1), res.output
    doc = json.loads(out.read_text())
    assert doc["old_toolchain"] == OLD and doc["new_toolchain"] == NEW
    k11 = [c for c in doc["cells"] if c["backend"].startswith("K11:")]
    assert k11 and k11[0]["ratio"] > 1.05  # 3.3.1 -> 3.6.0: K11 is slower on the H200, side by side
    assert "the recorded bench's own entry 11" in " ".join(k11[0]["notes"])
    # slower side by side, and its spills are predicted a regression (the cost model): a compile-side regression
    assert k11[0]["measured"]["how"] == "side_by_side" and k11[0]["verdict"] == "regression"
    assert k11[0]["cause"]["kind"] == "spills" and any(
        n.startswith("the compile-side change predicts +") for n in k11[0]["notes"]
    )
    k9 = [c for c in doc["cells"] if c["backend"].startswith("K9:")]
    assert k9 and k9[0]["verdict"] == "measured_regression" and k9[0]["cause"] is None
    assert res.exit_code == 1


def test_the_bisect_step_says_why_it_is_skipped(tmp_path: Path) -> None:
    """Pure logic (no fake of what it decides): which cells a bisect is for, and each reason it has none."""
    from ktriage.toolchain.spec import parse_toolchain
    from ktriage.triage.model import Cause, CellTriage
    from ktriage.triage.program import bisect_skip_reason, real_regressions

    def cell(ratio: float, stats: str, cause: bool) -> CellTriage:
        c = CellTriage("w", "recorded", 0, "4096", "K0:f", 1.0, ratio, ratio, "measured_regression", stats, False)
        c.cause = Cause("spills", "frontend", "spill stores 0 B -> 512 B") if cause else None
        return c

    releases = [parse_toolchain("triton==3.5.1"), parse_toolchain("triton==3.6.0,ptxas==12.9.86")]
    ptxas = tmp_path / "ptxas"
    ptxas.write_text("#!/bin/sh\n")
    ptxas.chmod(0o755)
    host = [parse_toolchain(f"triton=host,ptxas={ptxas}"), parse_toolchain("triton=host")]
    real, unsure, no_cause = cell(1.3, "regression", True), cell(1.3, "unsure", True), cell(1.2, "regression", False)
    assert real_regressions([real, unsure, no_cause]) == [real]
    assert bisect_skip_reason(True, releases, [real, unsure]) is None  # runs
    skipped = bisect_skip_reason(False, releases, [real])
    assert skipped == "not asked: bisect=False (--no-bisect)" and in_flags(skipped) == "not asked: --no-bisect"
    why = bisect_skip_reason(True, host, [real])
    assert why is not None and f"triton=host,ptxas={ptxas}, triton=host are not a release" in why
    assert "no cell is slower" in (bisect_skip_reason(True, releases, [unsure]) or "")
    assert "none with a compile-side cause" in (bisect_skip_reason(True, releases, [no_cause]) or "")


def test_a_program_that_launches_no_kernel_ends_the_run_at_record(tmp_path: Path, probe_sees_a_gpu: None) -> None:
    """The record step for real (the hook injected, the program run) on a host whose CUDA driver sees a
    GPU (the driver probe faked: ``probe_sees_a_gpu``): nothing launched, so the run ends there with
    exit 4, the reason in the step, and every later step skipped with why."""
    import sys

    from ktriage.report.triage_run import to_markdown
    from ktriage.triage.program import STEPS, ProgramOptions, ProgramReport, _Clock, _record, workload_file

    argv = [sys.executable, "-c", "print('no kernels here')"]
    options = ProgramOptions(command=" ".join(argv), old_toolchain=OLD, new_toolchain=NEW, workdir=tmp_path)
    report = ProgramReport(options.command, OLD, NEW, str(tmp_path), workload_file(argv))
    seen: list[list[str]] = []  # what the CLI's report files hold after each step
    clock = _Clock(report, lambda _m: None, on_step=lambda r: seen.append([f"{s.name}:{s.status}" for s in r.steps]))
    clock.timed("toolchains", 0.0, "as the run's first step would")
    assert _record(argv, options, report, clock) is None
    record = report.step("record")
    assert record is not None and record.status == "failed" and record.wall_s is not None
    assert "0 kernels" in record.detail and "the program exited 0" in record.detail
    assert "has no kernel to compile" in record.detail and report.failures
    assert [s.name for s in report.steps] == list(STEPS)
    assert all(s.status == "skipped" and s.detail == "not run: nothing was recorded" for s in report.steps[2:])
    assert report.triage is None and report.exit_code() == 4 and report.exit_code(allow_failures=True) == 0
    assert report.headline().startswith("stopped at record:")
    assert seen[0] == ["toolchains:ok"] and seen[-1][:3] == ["toolchains:ok", "record:failed", "compile:skipped"]
    assert len(seen[-1]) == len(STEPS)
    assert "| compile | skipped | - | not run: nothing was recorded |" in to_markdown(report)


def test_a_run_on_a_host_without_a_gpu_ends_at_record_as_a_failed_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no GPU (the real driver probe; CUDA_VISIBLE_DEVICES="" hides any), record refuses the
    recording: that is the record step failing with record's reason and fix, the later steps skipped
    and the report kept (exit 4), not an exception out of the run."""
    import sys

    from ktriage.triage.program import STEPS, ProgramOptions, ProgramReport, _Clock, _record, workload_file

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    argv = [sys.executable, "-c", "print('no kernels here')"]
    options = ProgramOptions(command=" ".join(argv), old_toolchain=OLD, new_toolchain=NEW, workdir=tmp_path)
    report = ProgramReport(options.command, OLD, NEW, str(tmp_path), workload_file(argv))
    clock = _Clock(report, lambda _m: None)
    clock.timed("toolchains", 0.0, "as the run's first step would")
    assert _record(argv, options, report, clock) is None
    record = report.step("record")
    assert record is not None and record.status == "failed" and record.wall_s is not None
    assert "no CUDA GPU here, so the program launched no Triton kernel" in record.detail
    assert report.failures and "record on the GPU machine" in report.failures[0]
    assert [s.name for s in report.steps] == list(STEPS)
    assert all(s.status == "skipped" and s.detail == "not run: nothing was recorded" for s in report.steps[2:])
    assert report.exit_code() == 4 and not (tmp_path / workload_file(argv)).exists()
