"""The terminal says what a verdict was judged with, as the markdown and HTML do: compare's gate and
confidence (its markdown said "(gate +-5%, 95% confidence, ...)", its terminal only the CI column's
level, and only with rows), triage's target and gate and baseline check (its markdown and HTML said
"Toolchains: ...; gate ±10%; target sm_90." and the baseline check; its terminal the toolchains only).
Real comparisons of fake runs (ktriage.testing), real renderers."""

from __future__ import annotations

from rich.console import Console

from ktriage.compare.pairing import Comparison, compare_cells
from ktriage.compare.report import CompareReport
from ktriage.report.markdown import comparison_markdown
from ktriage.report.tabular import print_table
from ktriage.report.triage import print_table as print_triage_table
from ktriage.report.triage import to_markdown
from ktriage.testing import fake_sweep_run
from ktriage.triage.model import TriageOptions, TriageReport

TCS = ("triton-3.3.1", "triton-3.4.0")


def _comparison(factor: float) -> Comparison:
    ref_run, ref = fake_sweep_run(seed=3, toolchains=TCS[:1])
    new_run, new = fake_sweep_run(seed=4, toolchains=TCS[1:], baseline_factor=factor)
    return compare_cells(ref, new, ref_run=ref_run, new_run=new_run, ref_label="monday", new_label="tuesday")


def _compare_terminal(c: Comparison) -> str:
    console = Console(record=True, width=400)
    print_table(console, CompareReport([c]))
    return console.export_text()


def _triage_terminal(report: TriageReport) -> str:
    console = Console(record=True, width=400)
    print_triage_table(report, console)
    return console.export_text()


def test_compare_terminal_says_its_gate_and_confidence() -> None:
    c = _comparison(1.0)
    method = "gate ±5%, 99% confidence, Mann-Whitney U on raw samples"
    assert method in comparison_markdown(c)
    assert method in _compare_terminal(c)


def test_triage_terminal_says_its_target_gate_and_moved_baseline() -> None:
    c = _comparison(1.12)
    assert c.baseline.status == "moved"
    options = TriageOptions(old_toolchain="triton==3.3.1", new_toolchain="triton==3.4.0", threshold=0.07, arch="sm_100")
    triage = TriageReport("a.json", "b.json", "triton==3.3.1", "triton==3.4.0", options, [], 0, baseline=c.baseline)
    terminal = _triage_terminal(triage)
    assert "Toolchains: triton==3.3.1 -> triton==3.4.0; gate ±7%; target sm_100." in terminal
    assert "Toolchains: `triton==3.3.1` -> `triton==3.4.0`; gate ±7%; target sm_100." in to_markdown(triage)
    assert c.baseline.message in terminal
