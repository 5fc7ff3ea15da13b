"""The note of a bisect whose "first bad" made the kernel faster (ktriage.bisect.improvement)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ktriage.bisect.candidate import Candidate, Observation
from ktriage.bisect.improvement import improvement_note
from ktriage.bisect.search import StageResult
from ktriage.cli import exit_codes
from ktriage.predict.model import Prediction
from tests.conftest import RunCli

# A user's row-normalisation kernel (the walkthrough's): one row of 32768 bf16 values per program, so
# it spills; Triton 3.4.0 spills less than 3.3.1 (stack 3080 -> 2744 B, 490 fewer LDL/STL).
KERNEL = """import triton
import triton.language as tl


@triton.jit
def rownorm_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    y = xc * rstd * w
    tl.store(y_ptr + row * n_cols + offs, y, mask=mask)
"""

SPEC = """[kernel]
name = "rownorm[N=32768]"
source = "kern.py:rownorm_kernel"
grid = [4096]

[kernel.args]
x_ptr = { dtype = "bf16", shape = [4096, 32768] }
w_ptr = { dtype = "bf16", shape = [32768] }
y_ptr = { dtype = "bf16", shape = [4096, 32768] }
n_cols = 32768
eps = 1e-5
BLOCK = 32768

[kernel.options]
num_warps = 4
"""


@pytest.mark.slow
def test_a_first_bad_predicted_faster_is_said_to_be_no_slowdown(
    tmp_path: Path, toolchain: Any, run_cli: RunCli
) -> None:
    """Bisecting the kernel by stack_bytes found 3.4.0, whose change the cost model predicts -16 %
    (faster), and the terminal, markdown and JSON read as a regression's report. Each says now that the
    change found makes the kernel faster. Real compiles (triton 3.3.1, 3.4.0) and the real cost model."""
    for v in ("3.3.1", "3.4.0"):
        toolchain(f"triton=={v}")
    (tmp_path / "kern.py").write_text(KERNEL)
    (tmp_path / "spec.toml").write_text(SPEC)
    md, js = tmp_path / "r.md", tmp_path / "r.json"
    r = run_cli(
        [
            "bisect",
            "--source",
            "pypi:triton",
            "--good",
            "3.3.1",
            "--bad",
            "3.4.0",
            "--spec",
            str(tmp_path / "spec.toml"),
        ]
        + ["--metric", "stack_bytes", "--state", str(tmp_path / "s.json"), "-o", str(md), "-o", str(js)]
    )
    assert r.exit_code == exit_codes.OK, r.output
    data = json.loads(js.read_text())
    assert data["culprit"]["id"] == "3.4.0"
    pred = data["explain"][0]["prediction"]
    # a release range of one kernel file: the toolchain changed, the kernel did not, and the attribution is the
    # compiler's (the kernel's source is named only where it changed, or where one toolchain compiled both)
    assert data["explain"][0]["source_change"] is None
    assert data["explain"][0]["attribution"] in ("frontend", "ptxas", "both"), data["explain"][0]["attribution"]
    assert pred["kind"] == "improvement", pred
    notes = [n for n in data["notes"] if "not a slowdown" in n]
    assert len(notes) == 1, data["notes"]
    head = "triton==3.4.0 changes stack_bytes (rownorm[N=32768] 3080 -> 2744) — predicted -"
    assert notes[0].startswith(head) and "(faster): this is the first change, not a slowdown" in notes[0], notes
    assert f"Note: {head}" in md.read_text()
    assert head in " ".join(r.stdout.split()), r.output


def _stage(values: list[float], metric: str = "spill_store_bytes") -> StageResult:
    """A fake stage (hand-made observations, no compile): good, culprit, bad with these values of one kernel."""
    cands = [Candidate(i, v, f"triton=={v}") for i, v in enumerate(["3.3.1", "3.4.0", "3.5.0"])]
    obs = [
        Observation(c, "good" if i == 0 else "bad", "", {"metric": metric, "values": {"k": v}})
        for i, (c, v) in enumerate(zip(cands, values))
    ]
    return StageResult("culprit", 0, 1, cands, [obs[0], obs[2], obs[1]], 1, 1)


def _p(ratio: float, kind: str) -> Prediction:
    return Prediction(ratio, ratio * 0.97, ratio * 1.03, kind, False, 0.05)


def test_a_metric_that_fell_the_usually_faster_way_is_said_to_be_no_slowdown() -> None:
    note = improvement_note(_stage([632, 0, 0]), "spill_store_bytes", [])
    assert note is not None and note.startswith("triton==3.4.0 changes spill_store_bytes (k 632 -> 0) — lower ")
    assert "this is the first change, not a slowdown" in note
    up = improvement_note(_stage([2, 4, 4], "ctas_per_sm"), "ctas_per_sm", [])
    assert up is not None and "— higher ctas_per_sm is usually faster" in up


def test_no_note_where_the_change_is_slower_or_its_direction_says_nothing() -> None:
    assert improvement_note(_stage([0, 632, 632]), "spill_store_bytes", []) is None  # spills appeared
    assert improvement_note(_stage([632, 0, 0]), "spill_store_bytes", [_p(1.2, "regression")]) is None
    assert improvement_note(_stage([40, 32, 32], "registers"), "registers", []) is None  # either way
    assert improvement_note(_stage([0, 32, 32], "sass:ATOMG"), "sass:ATOMG", [_p(1.0, "neutral")]) is None
    note = improvement_note(_stage([0, 32, 32], "sass:ATOMG"), "sass:ATOMG", [_p(0.8, "improvement")])
    assert note is not None and "— predicted -20% (faster)" in note


def test_the_first_bad_answer_leads_and_the_notes_follow_it() -> None:
    """The terminal printed the improvement note (a long paragraph) above "first bad", so the answer came
    after its qualification. The answer now leads, in the terminal and the markdown, and the note follows.
    A fake stage (hand-made observations) with the real note and the real renderers."""
    from rich.console import Console

    from ktriage.bisect.run import BisectOptions, BisectReport
    from ktriage.report.bisect import print_report, to_markdown

    stage = _stage([632, 0, 0])
    note = improvement_note(stage, "spill_store_bytes", [])
    assert note is not None
    opts = BisectOptions(source="pypi:triton", good="3.3.1", bad="3.5.0", metric="spill_store_bytes")
    report = BisectReport(opts, [stage], ["releases"])
    report.notes.append(note)
    console = Console(record=True, width=400)
    print_report(report, console)
    text = console.export_text()
    first_bad = "first bad: triton==3.4.0 (after triton==3.3.1)"
    assert text.index(first_bad) < text.index(f"note: {note}"), text
    markdown = to_markdown(report)
    assert markdown.rindex(first_bad) < markdown.index(f"Note: {note}"), markdown
    assert "0 samples" not in markdown  # a compile-only bisect takes no samples: the count said nothing
    assert "1 tested after the endpoints, 0 frontend compiles" in text  # a compile metric: the count means something


def test_a_command_bisect_reports_no_frontend_compiles() -> None:
    """A ``--command`` bisect compiles nothing; its stage line said "0 frontend compiles" all the same."""
    from rich.console import Console

    from ktriage.bisect.run import BisectOptions, BisectReport
    from ktriage.report.bisect import print_report, to_markdown

    opts = BisectOptions(source="git:.", good="v1", bad="main", command="./check.sh")
    report = BisectReport(opts, [_stage([0, 1, 1])], ["commits"])
    console = Console(record=True, width=400)
    print_report(report, console)
    for text in (console.export_text(), to_markdown(report)):
        assert "3 candidates, 1 round, 1 tested after the endpoints\n" in text and "frontend compile" not in text, text
