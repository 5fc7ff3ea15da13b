"""`ktriage history` HTML in real headless Chromium, from real H200 runs (the committed replicate runs of
tb_cross_entropy_bwd, imported with `ktriage runs import` into a SQLite store)."""

from __future__ import annotations

import gzip
from pathlib import Path

from ktriage.cli.app import main
from tests.browser import layout, needs_chromium
from tests.report.test_html import CLIPPED_CHART_TEXT

REPLICATE = Path(__file__).parents[2] / "benchmarks/calibration/replicate"


@needs_chromium
def test_a_recorded_inputs_chart_title_stays_inside_the_chart(tmp_path: Path) -> None:
    """A recorded input's series label (tb_cross_entropy_bwd recorded K0:liger_cross_entropy_kernel input 0
    (16384x4096,16384 n_cols=4096 n_non_ignore=16384)) made the chart's title run off the SVG's right edge,
    "median latency p" the last words shown. The title is now cut in the middle to the chart's width, the
    full text in the chart's <title>."""
    db = f"sqlite:///{tmp_path / 'store.db'}"
    for run in ("h200", "h200_run3"):
        path = tmp_path / f"{run}.json"
        path.write_bytes(gzip.decompress((REPLICATE / run / "corpus/tb_cross_entropy_bwd.json.gz").read_bytes()))
        assert main(["runs", "import", str(path), "--db", db]) == 0
    page = tmp_path / "history.html"
    args = ["history", "--op", "tb_cross_entropy_bwd", "--backend", "K0:liger_cross_entropy_kernel"]
    assert main([*args, "--toolchain", "3.6.0", "--db", db, "-o", str(page)]) == 0
    assert layout(tmp_path, page, CLIPPED_CHART_TEXT, width=1280) == []
    assert "(whiskers p20-p80)</title>" in page.read_text() and "n_non_ignore=16384): median" in page.read_text()
