"""The GPU step records a TritonBench operator's own run where ktriage has no replay and no workload
for it (issue 23, point 3): the real ``ktriage record`` around a stand-in TritonBench checkout whose
``run.py`` hands over to a toolchain's interpreter, where the kernel launches on Triton's real launch
path with only the GPU driver faked; the flagged cell then has its recorded kernels, matched by shape,
and the plan bundles them."""

from __future__ import annotations

from pathlib import Path

import pytest

from ktriage.insitu import fakedriver
from ktriage.triage.measure_plan import no_target_reason, plan_measurement
from ktriage.triage.measure_record import ENV_TRITONBENCH, Recording, record_missing, recordings
from ktriage.triage.model import CellTriage, TriageOptions, TriageReport

INSITU = Path(fakedriver.__file__).resolve().parent

KERNELS = """
import triton
import triton.language as tl


@triton.jit
def _row_scale_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols)
    tl.store(out_ptr + row * n_cols + offs, x * 2, mask=offs < n_cols)
"""

PROGRAM = """
import sys
sys.path.insert(0, {insitu!r})
import fakedriver  # stands in for the GPU
fakedriver.install(90)
sys.path.insert(0, {here!r})
import my_rms_kernels

assert sys.argv[1:3] == ["--op", "my_rms"] and "--bwd" in sys.argv and "--only" in sys.argv, sys.argv
x, out = fakedriver.FakeTensor("fp32", shape=(2048, 4096)), fakedriver.FakeTensor("fp32", shape=(2048, 4096))
for _ in range(3):
    my_rms_kernels._row_scale_kernel[(2048,)](x, out, 4096, BLOCK=4096)
"""

RUN_PY = """
import os, sys
# a TritonBench checkout's run.py, standing in: the GPU host's python has Triton; here a toolchain's has
os.execv({python!r}, [{python!r}, {program!r}, *sys.argv[1:]])
"""


def _cell(op: str, backend: str, input_id: int, label: str) -> CellTriage:
    return CellTriage(op, "bwd", input_id, label, backend, 1.0, 1.2, 1.2, "unexplained", "regression", False)


def _report(cells: list[CellTriage]) -> TriageReport:
    options = TriageOptions(old_toolchain="triton==3.3.1", new_toolchain="triton==3.4.0", measure=True)
    return TriageReport("a.json", "b.json", "triton==3.3.1", "triton==3.4.0", options, cells, len(cells))


def test_cells_of_an_op_without_replay_are_grouped_into_tritonbench_runs() -> None:
    report = _report(
        [
            _cell("my_rms", "my_triton", 3, "(2048, 4096)"),
            _cell("my_rms", "my_triton", 1, "(1024, 4096)"),
            _cell("my_rms", "torch_base", 1, "(1024, 4096)"),
        ]
    )
    (rec,) = recordings(report, [0, 1, 2], {"my_rms": "torch_base"})  # the baseline is never recorded
    assert (rec.cells, rec.input_ids) == ([0, 1], [3, 1])
    assert rec.argv("python") == [
        "python",
        "run.py",
        "--op",
        "my_rms",
        "--bwd",
        "--metrics",
        "latency",
        "--only",
        "my_triton",
        "--input-id",
        "1",
        "--num-inputs",
        "3",
    ]
    assert "measure=True (--measure) on a GPU host with TritonBench" in no_target_reason(report.cells[0])


def test_the_gpu_step_records_the_operators_run_and_matches_the_cell(
    toolchain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tc = toolchain("triton==3.4.0")
    tb = tmp_path / "tritonbench"
    tb.mkdir()
    (tb / "my_rms_kernels.py").write_text(KERNELS)
    program = tb / "program.py"
    program.write_text(PROGRAM.format(insitu=str(INSITU), here=str(tb)))
    (tb / "run.py").write_text(RUN_PY.format(python=str(tc.python), program=str(program)))
    monkeypatch.setenv(ENV_TRITONBENCH, str(tb))
    report = _report([_cell("my_rms", "my_triton", 0, "(2048, 4096)")])
    said: list[str] = []
    written = record_missing(report, [0], tmp_path / "recordings", said.append)
    assert written == [str(tmp_path / "recordings" / "tb-my_rms-bwd-my_triton.workload.json")], report.cells[0].notes
    assert any("recording TritonBench my_rms bwd --only my_triton" in s for s in said)
    match = report.cells[0].recorded
    assert match is not None, report.cells[0].notes
    assert [k.function for k in match.kernels] == ["_row_scale_kernel"] and match.kernels[0].launches == 3
    plan = plan_measurement(report, report.options)
    assert [g.name for g in plan.recorded] == ["tb-my_rms-bwd-my_triton"] and 0 in plan.recorded_targets


def test_a_recording_that_fails_is_a_note_and_a_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tb = tmp_path / "tritonbench"
    tb.mkdir()
    (tb / "run.py").write_text("import sys\nsys.exit('no such op: my_rms')\n")
    monkeypatch.setenv(ENV_TRITONBENCH, str(tb))
    report = _report([_cell("my_rms", "my_triton", 0, "(2048, 4096)")])
    assert record_missing(report, [0], tmp_path / "rec", lambda _: None) == []
    assert report.cells[0].recorded is None
    assert any("no such op: my_rms" in n for n in report.cells[0].notes), report.cells[0].notes
    assert report.failures and "recording my_rms bwd my_triton" in report.failures[0]


def test_without_tritonbench_the_cell_says_how_to_give_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_TRITONBENCH, str(tmp_path / "nowhere"))
    report = _report([_cell("my_rms", "my_triton", 0, "(2048, 4096)")])
    assert record_missing(report, [0], tmp_path / "rec", lambda _: None) == []
    assert any(ENV_TRITONBENCH in n and "--workload" in n for n in report.cells[0].notes)
    assert isinstance(Recording("a", "bwd", "b", [], [0]).name, str)
