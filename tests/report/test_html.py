"""The HTML report opened in a real headless Chromium: the plots and the cliff marker must be in the
rendered DOM, and a screenshot must come out. Skips only when no Chromium binary exists
(Debian package: chromium)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ktriage.compare.pairing import compare_cells, compare_toolchains
from ktriage.compare.report import CompareReport
from ktriage.report.html import write_html
from ktriage.testing import fake_sweep_run
from tests.browser import needs_chromium, run_chromium

TCS = ("triton-3.3.1", "triton-3.4.0")


@pytest.fixture()
def report(tmp_path: Path) -> Path:
    run, cells = fake_sweep_run(
        seed=1,
        speed=lambda tc, i: 0.8 if tc == TCS[0] or i < 7 else 1.45,
        toolchains=TCS,
        broken={(TCS[1], 20): "wrong"},
    )
    comps = compare_toolchains(cells, run=run)
    return write_html(tmp_path / "report.html", CompareReport(comps))


@needs_chromium
def test_rendered_dom_has_plots_and_cliff_marker(report: Path, tmp_path: Path) -> None:
    dom = run_chromium(tmp_path, "--dump-dom", report.as_uri()).stdout
    assert "<html" in dom and "triton-3.3.1 → triton-3.4.0" in dom
    svgs = re.findall(r'<svg[^>]*class="([^"]*)"', dom)
    assert sorted(svgs) == ["chart baseline-chart", "chart latency-chart", "chart ratio-chart"]
    assert dom.count('class="cliff-marker"') == 2  # ratio chart (new/ref) and baseline chart (vs torch)
    assert "cliff between N=4096 and N=4608" in dom
    assert dom.count('class="ci-whisker"') == 29  # every compared input of the one backend
    assert dom.count("<polyline") >= 5
    assert "max_abs_err 0.5" in dom  # the wrong cell is listed, not plotted as a time
    assert not re.search(r'(src|href)="https?:', dom)  # self-contained


@needs_chromium
def test_screenshot(report: Path, tmp_path: Path) -> None:
    png = tmp_path / "report.png"
    run_chromium(tmp_path, "--window-size=1200,2600", f"--screenshot={png}", report.as_uri())
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000  # a blank page is a few KB


@needs_chromium
def test_baseline_moved_warning_renders(tmp_path: Path) -> None:
    ref_run, ref = fake_sweep_run(seed=3, toolchains=TCS[:1])
    new_run, new = fake_sweep_run(seed=4, toolchains=TCS[1:], baseline_factor=1.12)
    c = compare_cells(ref, new, ref_run=ref_run, new_run=new_run, ref_label="monday", new_label="tuesday")
    path = write_html(tmp_path / "moved.html", CompareReport([c]))
    dom = run_chromium(tmp_path, "--dump-dom", path.as_uri()).stdout
    assert re.search(
        r'class="warn baseline-check">Baseline check \(moved\): baseline torch_layer_norm itself moved', dom
    )
    assert dom.count("<svg") == 3
