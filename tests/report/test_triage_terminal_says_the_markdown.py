"""triage's terminal says what its markdown says: the regressions' cause sentences (explain's words, each
once) and the "nothing: every flagged cell was decided ..." line, which only the markdown had. Real
compiles (the embedding backward's REDG -> ATOMG pair, ptxas 12.4.131 against 12.8.93; the layer_norm
TritonBench pair of tests/data/tritonbench), real renderers, the same report in both forms."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

import ktriage.api as kt
from ktriage.errors import in_flags
from ktriage.report.triage import cause_summaries, undecided_lines
from tests.triage.test_triage_regressions import _embedding_csvs

OLD, NEW = "triton==3.4.0,ptxas==12.4.131", "triton==3.4.0"
TRITONBENCH = Path(__file__).resolve().parents[1] / "data" / "tritonbench"
RUN = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "h200" / "triage_run" / "results.json"


def _terminal(report: kt.TriageReport) -> str:
    console = Console(record=True, width=100_000)  # no wrapping: a sentence is found whole
    report.print_table(console)
    return console.export_text()


def test_terminal_gives_the_cause_summaries(tmp_path: Path) -> None:
    old, new = _embedding_csvs(tmp_path)
    report = kt.triage(old=old, new=new, old_toolchain=OLD, new_toolchain=NEW, bisect=False, fixes=False)
    causes = cause_summaries(report.regressions)
    assert causes and len(report.regressions) > len(causes), causes  # several cells, one cause
    markdown, terminal = report.to_markdown(), _terminal(report)
    for sentence in causes:
        assert sentence in markdown.replace("\\", ""), sentence
        assert terminal.count(sentence) == 1, sentence  # said once, though every cell has that cause


def test_terminal_says_nothing_was_left_undecided_as_the_markdown_does() -> None:
    """The committed H200 run that timed both toolchains side by side (triage --run's results.json),
    given as both sides: settled by its own interleaved samples, nothing left for a GPU."""
    report = kt.triage(old=RUN, new=RUN, bisect=False)
    nothing = "nothing: every flagged cell was decided, by the side-by-side GPU re-run or compile-side"
    assert report.gpu_needed == [] and undecided_lines(report) == [nothing]
    assert f"- {nothing}" in report.to_markdown()
    assert f"needs a GPU: {nothing}" in _terminal(report)


def test_terminal_gives_what_needs_a_gpu_as_the_markdown_does() -> None:
    run1, run2 = TRITONBENCH / "layer_norm_bwd_run1.csv", TRITONBENCH / "layer_norm_bwd_run2.csv"
    report = kt.triage(old=run1, new=run2, old_toolchain="triton==3.3.1", new_toolchain="triton==3.4.0", bisect=False)
    lines = undecided_lines(report)
    assert lines == [in_flags(x) for x in report.gpu_needed] and lines  # the command's words: flags alone
    terminal = _terminal(report)
    assert "nothing: every flagged cell" not in terminal
    for x in lines:
        assert f"needs a GPU: {x}" in terminal
