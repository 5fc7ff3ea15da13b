"""The triage HTML report opened in a real headless Chromium: the sweep chart and the sections are in
the rendered DOM, and the page loads nothing from outside (no script, no network)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ktriage.report.triage import to_html
from ktriage.triage import TriageOptions, TriageReport, triage
from tests.browser import CHROMIUM, LOW_CONTRAST, STICKS_OUT, dump_dom, layout

DATA = (
    Path(__file__).resolve().parents[1] / "data" / "tritonbench"
)  # the real A/A pair of ../shared/data/tritonbench_outputs


def _aa_report() -> TriageReport:
    """The triage of the real A/A layer_norm bwd pair, which every test here renders."""
    return triage(
        DATA / "layer_norm_bwd_run1.csv",
        DATA / "layer_norm_bwd_run2.csv",
        TriageOptions(old_toolchain="triton==3.4.0", new_toolchain="triton==3.4.0"),
    )


def _page(tmp_path: Path) -> Path:
    """The A/A triage's HTML page, written for the browser to open."""
    page = tmp_path / "triage.html"
    page.write_text(to_html(_aa_report()), encoding="utf-8")
    return page


def test_html_is_self_contained_and_renders(tmp_path: Path) -> None:
    report = _aa_report()
    html = to_html(report)
    assert "<script" not in html and "src=" not in html and "<svg" in html
    assert len(report.sweep) == 60 and "Not the compiler" in html and "could not decide without a GPU" in html
    if CHROMIUM is None:
        pytest.skip("no chromium binary on PATH (apt-get install -y chromium)")
    page = tmp_path / "triage.html"
    page.write_text(html, encoding="utf-8")
    dom, _log = dump_dom(tmp_path, page)
    assert "ratio-chart" in dom and "layer_norm bwd: new/old latency ratio" in dom
    assert dom.count("<tr>") >= 13  # the header and the 12 flagged cells


def test_page_fits_a_narrow_window(tmp_path: Path) -> None:
    """At 800 px the sweep chart (a fixed 1120 px wide) stuck out, its legend cut off, and the page
    scrolled sideways. The chart scales to the window."""
    if CHROMIUM is None:
        pytest.skip("no chromium binary on PATH (apt-get install -y chromium)")
    got = layout(tmp_path, _page(tmp_path), STICKS_OUT, width=800)
    assert got == {"sideways": 0, "out": []}


def test_text_contrast(tmp_path: Path) -> None:
    """The "unsure" change column was amber #c77700 on white (3.5:1) and the footer grey #777
    (4.48:1): under the 4.5:1 body text needs (WCAG AA). Every text colour of the page now has it."""
    if CHROMIUM is None:
        pytest.skip("no chromium binary on PATH (apt-get install -y chromium)")
    assert layout(tmp_path, _page(tmp_path), LOW_CONTRAST) == {}
