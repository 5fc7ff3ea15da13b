"""`ktriage triage` on the real TritonBench layer_norm backward pair (H200, tests/data/tritonbench = shared/data/
tritonbench_outputs) named as triton==3.3.1 -> triton==3.4.0, as a user runs it: what the report says of the baseline,
of the compile-side changes and of the cells left for a GPU, in every form (terminal, markdown, HTML, JSON).

In this pair torch_layer_norm, the op's baseline, which no toolchain compiles, moved past the 10 % gate at 5 of its
30 inputs (+51, +36, -21, -16, -14 %), the inputs of 5 of the 7 flagged liger cells: the strongest evidence the pair
has that the machine or the environment changed. compare's statistics can only call it "unsure" (one value a side),
so the report led with "could not be confirmed unchanged (30 unsure; median ratio 1.000)" and gave the baseline's
own cells the words of a compiled kernel ("no compile-side change predicts it"). Real compiles (both wheels), real
renderers; nothing faked."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

import ktriage.api as kt
from tests.conftest import RunCli

DATA = Path(__file__).resolve().parents[1] / "data" / "tritonbench"
RUN1, RUN2 = DATA / "layer_norm_bwd_run1.csv", DATA / "layer_norm_bwd_run2.csv"
CROSS = ("--old-toolchain", "triton==3.3.1", "--new-toolchain", "triton==3.4.0")
# explain's sentence of the liger backward's change at N=2560..4096, shared by four flagged cells
REGISTERS = "registers 200 -> 232"


@pytest.fixture(scope="module")
def report() -> kt.TriageReport:
    return kt.triage(
        old=RUN1, new=RUN2, old_toolchain="triton==3.3.1", new_toolchain="triton==3.4.0", bisect=False, fixes=False
    )


def _terminal(report: kt.TriageReport) -> str:
    console = Console(record=True, width=100_000)  # no wrapping: a sentence is found whole
    report.print_table(console)
    return console.export_text()


def _visible(page: str) -> str:
    """The page's text as read: tags dropped, entities (&#39;) read."""
    return html.unescape(re.sub(r"<[^>]*>", " ", page))


def test_the_moved_baseline_leads_every_form(report: kt.TriageReport) -> None:
    (moves,) = report.baseline_moves
    assert (moves.backend, moves.inputs, len(moves.moved)) == ("torch_layer_norm", 30, 5)
    assert [round(m.change_pct) for m in moves.moved] == [51, 36, -21, -16, -14]  # largest first
    # the liger cells at (4096, 1024), 1536, 2048, 3072, 4096; at 1024, 2048 and 4096 they moved as the baseline did
    assert (moves.flagged, moves.flagged_here, moves.same_way, moves.leads) == (7, 5, 3, True)
    lead = moves.text[0].upper() + moves.text[1:]
    assert lead.startswith("The baseline moved: torch_layer_norm") and "+50.7% at (4096, 2048)" in lead
    assert "at 5 of 30 inputs" in lead and "the machine or the environment changed" in lead
    # right under the headline, before the setup line and compare's weak "could not be confirmed unchanged"
    markdown = report.to_markdown()
    lines = [x for x in markdown.splitlines() if x]
    assert lines[1] == f"**{report.headline()}**" and lines[2] == f"**{lead}**", lines[:3]
    terminal = _terminal(report).splitlines()
    assert terminal[0] == report.headline() and terminal[1] == lead, terminal[:2]
    page = _visible(report.to_html())
    assert page.index(lead) < page.index("Toolchains:") < page.index("could not be confirmed unchanged")
    data = json.loads(report.json_text())
    assert data["baseline_moves"][0]["text"] == moves.text and data["baseline_moves"][0]["flagged_here"] == 5
    assert "(5 of them the baseline's)" in report.headline()


def test_baseline_cells_are_worded_as_the_baseline_not_as_a_compiled_kernel(report: kt.TriageReport) -> None:
    base = [c for c in report.cells if c.backend == "torch_layer_norm"]
    assert len(base) == 5 and all(c.is_baseline for c in base)
    words = (
        "the baseline moved: the machine or the environment, or noise (no toolchain compiles it; one value per side)"
    )
    assert all(c.verdict_text == words for c in base)
    markdown, terminal, page = report.to_markdown(), _terminal(report), _visible(report.to_html())
    data = json.loads(report.json_text())
    for c in base:
        row = next(x for x in markdown.splitlines() if x.startswith(f"| {c.label()} |"))
        assert f"| {words} |" in row and "no compile-side change predicts" not in row, row
        term_row = next(x for x in terminal.splitlines() if c.label() in x)
        assert words in term_row and "no compile-side change predicts" not in term_row, term_row
        (cell,) = [x for x in data["cells"] if (x["backend"], x["input"]) == (c.backend, c.input_label)]
        assert cell["verdict_text"] == words and cell["is_baseline"] is True
    assert page.count(words) == 5 + 5  # each row, and each point's title on the sweep chart
    # the liger cells keep theirs: their kernels were compiled, and nothing predicts the move
    assert all("no compile-side change predicts" in c.verdict_text for c in report.cells if not c.is_baseline)


def test_a_shared_compile_side_change_is_said_once_and_referred_to(report: kt.TriageReport) -> None:
    sharing = [c for c in report.cells if c.changes and REGISTERS in c.changes]
    assert len(sharing) == 4  # N=2560..4096: the flagged liger cells at 2560, 3072, 3584, 4096
    data = json.loads(report.json_text())
    (sentence,) = [x for x in data["changes"] if REGISTERS in x]
    n = data["changes"].index(sentence) + 1
    assert sentence.startswith("compile-side changes, none worse: N=2560..4096 (4 inputs)")
    markdown, terminal, page = report.to_markdown(), _terminal(report), _visible(report.to_html())
    for form, text in (("markdown", markdown.replace("\\", "")), ("terminal", terminal), ("html", page)):
        assert text.count(REGISTERS) == 1, form  # once, under the table
        assert f"[{n}] {sentence}" in text, form
        assert text.count(f"compile-side changes, none worse [{n}]") == 4, form  # each row refers to it
    assert all(not any(REGISTERS in note for note in c.notes) for c in report.cells)
    assert [x["changes"] for x in data["cells"] if x["changes"] and REGISTERS in x["changes"]] == [sentence] * 4


def test_the_cells_left_unsure_are_said_as_what_they_are(report: kt.TriageReport) -> None:
    """All 7 liger cells changed compile-side (predicted neutral) and 5 are the baseline: none of them is a cell "with
    no compile-side change", which the line said of them all."""
    (line,) = [x for x in report.gpu_needed if x.startswith("cells left unsure")]
    assert "7 whose kernels changed compile-side, predicted neutral (within the ±10% gate)" in line
    assert "5 of the op's baseline, which no toolchain compiles: the machine or the environment" in line
    assert "no compile-side change" not in line
    assert f"needs a GPU: {line}" in _terminal(report) and f"- {line}" in report.to_markdown()
    assert line in _visible(report.to_html()) and line in json.loads(report.json_text())["gpu_needed"]


def test_the_aa_pair_left_unsure_has_no_compile_side_change() -> None:
    """The same toolchain on both sides: identical kernels, so here the line does say "no compile-side change"."""
    report = kt.triage(old=RUN1, new=RUN2, old_toolchain="triton==3.4.0", new_toolchain="triton==3.4.0", bisect=False)
    (line,) = [x for x in report.gpu_needed if x.startswith("cells left unsure")]
    assert "7 with no compile-side change" in line and "changed compile-side" not in line, line


def test_the_bundle_command_is_said_once(tmp_path: Path, run_cli: RunCli) -> None:
    out = tmp_path / "tri"
    md = tmp_path / "report.md"
    result = run_cli(["triage", str(RUN1), str(RUN2), *CROSS, "--no-bisect", "--bundle", str(out), "-o", str(md)])
    assert result.exit_code == 0, result.stderr
    command = f"bash {out / 'measure.sh'}"
    terminal = (result.stdout + result.stderr).replace("\n", "")
    assert terminal.count(command) == 1, terminal
    assert md.read_text().count(command) == 1
