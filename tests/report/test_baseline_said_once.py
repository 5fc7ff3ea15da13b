"""The baseline check's message is said once in every report. Its messages name the baseline in their
first words ("baseline torch_layer_norm could not be confirmed unchanged", "the baseline was measured
once", "no baseline backend ..."), and the renderers put a label before them: compare's terminal read
"baseline: baseline torch_layer_norm ...", its markdown and HTML and triage's "Baseline check (moved):
baseline torch_layer_norm ...". Real comparisons of fake runs (ktriage.testing), real renderers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.console import Console

from ktriage.compare.pairing import Comparison, compare_cells
from ktriage.compare.report import CompareReport
from ktriage.report.html import write_html
from ktriage.report.markdown import comparison_markdown
from ktriage.report.tabular import print_table
from ktriage.report.triage import print_table as print_triage_table
from ktriage.report.triage import to_html, to_markdown
from ktriage.testing import fake_sweep_run
from ktriage.triage.model import TriageOptions, TriageReport
from tests.browser import needs_chromium, run_chromium

TCS = ("triton-3.3.1", "triton-3.4.0")
# "baseline" twice with only a label's punctuation or "the"/"Baseline check (status)" between
TWICE = re.compile(r"\bbaseline(?:\W+check(?:\W+\(\w+\))?)?\W+(?:the\s+|no\s+)?baseline\b", re.IGNORECASE)


def _comparison(factor: float) -> Comparison:
    ref_run, ref = fake_sweep_run(seed=3, toolchains=TCS[:1])
    new_run, new = fake_sweep_run(seed=4, toolchains=TCS[1:], baseline_factor=factor)
    return compare_cells(ref, new, ref_run=ref_run, new_run=new_run, ref_label="monday", new_label="tuesday")


def _visible(html: str) -> str:
    """The page's text as read (tags and their attributes dropped: a class name is not read)."""
    return re.sub(r"<[^>]*>", " ", html)


@pytest.mark.parametrize(("factor", "status"), [(1.12, "moved"), (1.0, "unchanged")])
def test_every_report_says_the_baseline_once(factor: float, status: str, tmp_path: Path) -> None:
    c = _comparison(factor)
    assert c.baseline.status == status and c.baseline.message.startswith("baseline torch_layer_norm")
    console = Console(record=True, width=400)
    print_table(console, CompareReport([c]))
    options = TriageOptions(old_toolchain="triton==3.3.1", new_toolchain="triton==3.4.0")
    triage = TriageReport("a.json", "b.json", "triton==3.3.1", "triton==3.4.0", options, [], 0, baseline=c.baseline)
    triage_console = Console(record=True, width=400)
    print_triage_table(triage, triage_console)
    renderings = {
        "compare terminal": console.export_text(),
        "triage terminal": triage_console.export_text(),
        "compare markdown": comparison_markdown(c),
        "compare html": _visible(write_html(tmp_path / "c.html", CompareReport([c])).read_text()),
        "triage markdown": to_markdown(triage),
        "triage html": _visible(to_html(triage)),
    }
    assert all("baseline torch_layer_norm" in text for text in renderings.values())
    doubled = {where: m.group(0) for where, text in renderings.items() if (m := TWICE.search(text))}
    assert not doubled


@needs_chromium
def test_triage_says_the_baseline_before_the_verdicts(tmp_path: Path) -> None:
    """A moved baseline changes how every row is read: triage's HTML (as Chromium renders it) and terminal
    said it at the top, its markdown at the end, after the sections. Both now say it before the first."""
    c = _comparison(1.12)
    options = TriageOptions(old_toolchain="triton==3.3.1", new_toolchain="triton==3.4.0")
    triage = TriageReport("a.json", "b.json", "triton==3.3.1", "triton==3.4.0", options, [], 0, baseline=c.baseline)
    markdown = to_markdown(triage)
    assert markdown.index(c.baseline.message) < markdown.index("\n### ")
    page = tmp_path / "t.html"
    page.write_text(to_html(triage))
    dom = run_chromium(tmp_path, "--dump-dom", page.as_uri()).stdout
    assert dom.index(c.baseline.message) < dom.index("<h2>")
