"""The HTML report opened in a real headless Chromium: the plots and the cliff marker must be in the
rendered DOM, and a screenshot must come out. Skips only when no Chromium binary exists
(Debian package: chromium)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from ktriage.compare.pairing import compare_cells, compare_toolchains
from ktriage.compare.report import CompareReport
from ktriage.compare.run import compare
from ktriage.report.html import write_html
from ktriage.report.markdown import to_markdown
from ktriage.testing import fake_sweep_run
from tests.browser import LOW_CONTRAST, STICKS_OUT, layout, needs_chromium, run_chromium

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
        r'class="warn baseline-check" title="baseline check: moved">baseline torch_layer_norm itself moved', dom
    )
    assert dom.count("<svg") == 3


# A real H200 run (Liger's layer_norm bwd, Triton 3.3.1, 3.4.0, 3.5.1 side by side), edited into a partial one.
LN_BWD = Path(__file__).parents[2] / "benchmarks/gpu/issue3/run2_layer_norm_aa/ln_bwd.json"


def _partial_ln_bwd(tmp_path: Path, error: Callable[[int], str]) -> Path:
    """ln_bwd.json with every Triton 3.4.0 cell failed (``error(input_id)``) and 3.5.1's even inputs gone."""
    doc = json.loads(LN_BWD.read_text())
    cells = []
    for c in doc["cells"]:
        tc, i = c["key"]["toolchain"] or "", c["key"]["input_id"]
        if tc.startswith("triton-3.4.0"):
            c.update(status="error", samples_ms=[], error=error(i))
        if not (tc.startswith("triton-3.5.1") and i % 2 == 0):
            cells.append(c)
    path = tmp_path / "ln_bwd_partial.json"
    path.write_text(json.dumps({**doc, "cells": cells}))
    return path


@needs_chromium
def test_cells_not_compared_are_counted_per_reason_and_listed_in_full_folded(tmp_path: Path) -> None:
    """Every cell not compared was one row of one table, before the charts: hundreds of them (a side
    without a whole operator) buried the report. Now a count per reason with the first 5 cells, the
    whole list in a closed <details>, and the page's headline says the result is incomplete."""
    side = _partial_ln_bwd(tmp_path, lambda i: "CompilationError: atomic_add does not support bf16")
    path = write_html(tmp_path / "partial.html", compare(str(side), toolchains=True))
    dom = run_chromium(tmp_path, "--dump-dom", path.as_uri()).stdout
    assert "12 regressions in 2 comparisons; incomplete: 45 cells not compared" in dom
    assert "Errors and missing cells (not compared): 30" in dom and "(not compared): 15" in dom
    reasons = re.findall(r'<table class="not-compared-reasons">(.*?)</table>', dom, re.S)
    assert len(reasons) == 2
    assert re.search(r'<td class="num">30</td><td>new error: CompilationError: atomic_add', reasons[0])
    assert reasons[0].count("<li>layer_norm.bwd[") == 5 and 'class="more">and 25 more</li>' in reasons[0]
    assert "on the reference side only" in reasons[1] and 'class="more">and 10 more</li>' in reasons[1]
    folded = re.findall(r'<details class="not-compared-all">(.*?)</details>', dom, re.S)
    assert [f.count("<tr><td>layer_norm.bwd[") for f in folded] == [30, 15]  # every cell, kept
    assert "<details open" not in dom  # folded until opened; no script needed to open it


@needs_chromium
def test_past_20_reasons_the_rest_are_counted_and_left_to_the_full_list(tmp_path: Path) -> None:
    side = _partial_ln_bwd(tmp_path, lambda i: f"wrong: max_abs_err {i + 1}.5 > atol 0.02")
    path = write_html(tmp_path / "partial.html", compare(str(side), toolchains=True))
    dom = run_chromium(tmp_path, "--dump-dom", path.as_uri()).stdout
    first = re.findall(r'<table class="not-compared-reasons">(.*?)</table>', dom, re.S)[0]
    assert first.count('<tr><td class="num">1</td>') == 20 and "and 10 other reasons, in the full list below" in dom
    assert re.findall(r'<details class="not-compared-all">(.*?)</details>', dom, re.S)[0].count("max_abs_err") == 30


@needs_chromium
def test_page_fits_a_narrow_window(tmp_path: Path) -> None:
    """At 800 px the charts (a fixed 1120 px wide) and the runs table (a file path in its command
    column) stuck out and the page scrolled sideways, the charts' legends cut off. The charts scale
    to the window and long cells wrap."""
    data = Path(__file__).resolve().parents[1] / "data" / "tritonbench"
    page = tmp_path / "compare.html"
    from ktriage.cli.app import main

    assert (
        main(["compare", str(data / "layer_norm_bwd_run1.csv"), str(data / "layer_norm_bwd_run2.csv"), "-o", str(page)])
        == 0
    )
    got = layout(tmp_path, page, STICKS_OUT, width=800)
    assert got == {"sideways": 0, "out": []}


@needs_chromium
def test_text_contrast(tmp_path: Path) -> None:
    """The verdict "unsure" was amber #c77700 on white (3.5:1) and the footer and "same" grey #777
    (4.48:1): under the 4.5:1 body text needs (WCAG AA). Every text colour of the page now has it."""
    data = Path(__file__).resolve().parents[1] / "data" / "tritonbench"
    page = tmp_path / "compare.html"
    from ktriage.cli.app import main

    assert (
        main(["compare", str(data / "layer_norm_bwd_run1.csv"), str(data / "layer_norm_bwd_run2.csv"), "-o", str(page)])
        == 0
    )
    assert layout(tmp_path, page, LOW_CONTRAST) == {}


# every text of every chart that does not lie wholly inside its <svg>: cut off where the page shows it
CLIPPED_CHART_TEXT = """(() => {
  const out = [];
  for (const svg of document.querySelectorAll('svg.chart')) {
    const b = svg.getBoundingClientRect();
    for (const t of svg.querySelectorAll('text')) {
      const r = t.getBoundingClientRect();
      if (r.left < b.left - 1 || r.right > b.right + 1 || r.top < b.top - 1 || r.bottom > b.bottom + 1)
        out.push(t.textContent);
    }
  }
  return out;
})()"""

CORPUS = Path(__file__).parents[2] / "benchmarks/corpus/h200/bench"


@needs_chromium
@pytest.mark.parametrize("name", ["fla_ops", "tb_embedding_bwd"])
def test_chart_labels_and_legends_stay_inside_the_chart(name: str, tmp_path: Path) -> None:
    """Real H200 runs of recorded workloads: fla_ops' input labels (2x4096x8x128,2x64x8x128x128,... T=4096)
    leaned off the chart's bottom, their shapes cut away, and its legend names (K0:chunk_fwd_kernel_h@
    triton-3.6.0.ptxas-12.8.93.682629b2) ran off its right edge, the toolchain that tells two series apart
    cut; tb_embedding_bwd's 22 series ran past the chart's foot. Labels are now shortened in the middle
    (the full text is their hover title) and the chart grows to hold them and every legend line."""
    path = write_html(tmp_path / f"{name}.html", compare(str(CORPUS / f"{name}.json"), toolchains=True))
    assert layout(tmp_path, path, CLIPPED_CHART_TEXT, width=1400) == []
    dom = path.read_text()
    assert "<title>2x4096x8x128,2x64x8x128x128,8,2x8x128x128 T=4096</title>" in dom or name != "fla_ops"
    assert dom.count('class="legend-item"') == len(re.findall(r'class="legend">[^<]*</text>', dom))


@needs_chromium
def test_same_pairs_are_listed_and_a_failed_side_draws_no_empty_ratio_chart(tmp_path: Path) -> None:
    """fla_ops (H200): Triton 3.3.1 failed every kernel, and its comparison drew an empty new/ref ratio
    frame; Triton 3.4.0's 4 "same" pairs were counted in the headline but listed only in the markdown.
    The HTML lists them (folded, as the markdown) and draws no chart with nothing in it."""
    path = write_html(tmp_path / "fla.html", compare(str(CORPUS / "fla_ops.json"), toolchains=True))
    dom = run_chromium(tmp_path, "--dump-dom", path.as_uri()).stdout
    sections = dom.split('<section class="comparison">')[1:]
    assert len(sections) == 2 and "failed every kernel here" in sections[0]
    assert 'class="chart ratio-chart"' not in sections[0] and 'class="chart ratio-chart"' in sections[1]
    same = re.findall(r'<details class="same-pairs"><summary>Same \((\d+)\)', dom)
    assert same == ["4"]
    rows = re.findall(r'<table class="same">(.*?)</table>', dom, re.S)[0]
    assert rows.count("<tr><td>fla_ops.recorded</td>") == 4


@needs_chromium
def test_recorded_kernels_are_listed_by_their_number(tmp_path: Path) -> None:
    """tb_kl_div_bwd (H200): 11 recorded kernels K0..K10. The "Same" rows, the legends and the markdown
    listed them as text sorts (K0, K10, K1, K2, ...); they now read K0, K1, ..., K9, K10 in the page as
    Chromium renders it and in the markdown."""
    report = compare(str(CORPUS / "tb_kl_div_bwd.json"), toolchains=True)
    path = write_html(tmp_path / "kl.html", report)
    dom = run_chromium(tmp_path, "--dump-dom", path.as_uri()).stdout
    same_rows = re.findall(r'<table class="same">(.*?)</table>', dom, re.S)
    assert same_rows

    def numbers(text: str) -> list[int]:
        return [int(n) for n in re.findall(r"\bK(\d+):", text)]

    assert max(len(set(numbers(rows))) for rows in same_rows) > 10  # K10 is among them
    assert all(numbers(rows) == sorted(numbers(rows)) for rows in same_rows)
    legends = re.findall(r'class="legend">([^<]*)</text>', dom)
    assert numbers(" ".join(legends[:11])) == sorted(numbers(" ".join(legends[:11])))
    markdown = to_markdown(report)
    blocks = re.findall(r"<summary>Same \(\d+\)</summary>(.*?)</details>", markdown, re.S)
    assert [numbers(b) for b in blocks] == [numbers(rows) for rows in same_rows]  # as the page, in its order
