"""`ktriage history` HTML in real headless Chromium, from real H200 runs (the committed replicate runs of
tb_cross_entropy_bwd, imported with `ktriage runs import` into a SQLite store)."""

from __future__ import annotations

import gzip
from pathlib import Path

from ktriage.cli.app import main
from tests.browser import layout, needs_chromium
from tests.report.test_html import CLIPPED_CHART_TEXT

REPLICATE = Path(__file__).parents[2] / "benchmarks/calibration/replicate"


def _store(tmp_path: Path) -> str:
    """The two replicate runs (2026-12-04 15:25 and 15:50, one day) imported into a SQLite store."""
    db = f"sqlite:///{tmp_path / 'store.db'}"
    for run in ("h200", "h200_run3"):
        path = tmp_path / f"{run}.json"
        path.write_bytes(gzip.decompress((REPLICATE / run / "corpus/tb_cross_entropy_bwd.json.gz").read_bytes()))
        assert main(["runs", "import", str(path), "--db", db]) == 0
    return db


ARGS = ["history", "--op", "tb_cross_entropy_bwd", "--backend", "K0:liger_cross_entropy_kernel", "--toolchain", "3.6.0"]

# the x labels below the history chart, and each table cell's column name with its computed alignment
X_LABELS_AND_ALIGNMENT = """(() => {
  const labels = [...document.querySelectorAll('svg.history-chart text.tick[transform]')].map(t => t.textContent);
  const heads = [...document.querySelectorAll('section.series table tr:first-child th')].map(h => h.textContent);
  const align = {};
  for (const row of document.querySelectorAll('section.series table tr'))
    [...row.children].forEach((c, k) => { (align[heads[k]] ??= new Set()).add(getComputedStyle(c).textAlign); });
  return {labels, align: Object.fromEntries(Object.entries(align).map(([k, v]) => [k, [...v].sort().join()]))};
})()"""


@needs_chromium
def test_runs_of_one_day_have_distinct_x_labels_and_numbers_align_right(tmp_path: Path) -> None:
    """The two replicate runs of 2026-12-04 were both labelled "2026-12-04" on the chart's x axis (the
    table showed 15:25 and 15:50), and the ms columns were left-aligned like the text beside them."""
    db = _store(tmp_path)
    page = tmp_path / "history.html"
    assert main([*ARGS, "--db", db, "-o", str(page)]) == 0
    found = layout(tmp_path, page, X_LABELS_AND_ALIGNMENT, width=1280)
    assert isinstance(found, dict)
    assert found["labels"] == ["2026-12-04 15:25", "2026-12-04 15:50"]
    assert layout(tmp_path, page, CLIPPED_CHART_TEXT, width=1280) == []
    align = found["align"]
    assert [c for c, a in align.items() if a == "right"] == ["#", "median ms", "p20-p80 ms"]
    assert align["run"] == align["toolchain"] == align["change"] == "left"


def test_markdown_names_the_change_point_method_and_right_aligns_numbers(tmp_path: Path) -> None:
    """Only the HTML said how change points are found (Apache Otava, p \u2264 0.001); the markdown now says it,
    and its ms columns are right-aligned."""
    db = _store(tmp_path)
    md = tmp_path / "history.md"
    assert main([*ARGS, "--db", db, "-o", str(md)]) == 0
    text = md.read_text()
    assert "Change points: Apache Otava (E-divisive split, t-test merge), p \u2264 0.001." in text
    head = next(line for line in text.splitlines() if line.startswith("| # | run |"))
    rule = text.splitlines()[text.splitlines().index(head) + 1]
    columns = [c.strip() for c in head.strip("|").split("|")]
    aligned = dict(zip(columns, rule.strip("|").split("|"), strict=True))
    assert [c for c, a in aligned.items() if a == "---:"] == ["#", "median ms", "p20-p80 ms"]


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
