"""One time, change and run written alike in every report of compare and triage.

- compare's HTML tables wrote each time with its own four significant digits ("0.0168" above "0.01693")
  while the terminal and the markdown give a table one number of decimal places ("0.01680"): the decimal
  points of the HTML's right-aligned columns did not line up, and one pair read differently per format.
- A ktriage run whose GPU was not recorded printed "?" for it (and "?" for the driver in the HTML, a
  TritonBench file's too): the reports now say "GPU not recorded" / "not in the file".
- triage's tables wrote every time with four places ("0.0748" where compare writes "0.07480") and its own
  percent; they now share compare's ``fmt_ms``/``ms_decimals``/``fmt_pct``, right-aligned.

Real committed results (the H100 bench of fla's rotary embedding, the TritonBench layer_norm pair), the real
renderers and, for the layout, a real headless Chromium."""

from __future__ import annotations

import json
import re
from pathlib import Path

from rich.console import Console

import ktriage.api as kt
from ktriage.report.html import write_html
from ktriage.report.markdown import to_markdown
from ktriage.report.tabular import print_table
from ktriage.wording import fmt_pct
from tests.browser import layout, needs_chromium

ROOT = Path(__file__).resolve().parents[2]
ROTARY = ROOT / "benchmarks" / "corpus" / "fla2" / "bench" / "fla2_rotary.json"
TRITONBENCH = ROOT / "tests" / "data" / "tritonbench"

# each table's ms cells (columns "ref ms"/"new ms", or "old ms"/"new ms"): the x of its decimal point, per column
POINTS = """(() => {
  const out = [];
  for (const table of document.querySelectorAll('table')) {
    const heads = [...table.querySelectorAll('th')].map(th => th.textContent);
    for (const name of heads.filter(h => h.endsWith(' ms'))) {
      const col = heads.indexOf(name), xs = [];
      for (const tr of [...table.querySelectorAll('tr')].slice(1)) {
        const node = tr.children[col].firstChild, at = node ? node.textContent.indexOf('.') : -1;
        if (at < 0) continue;
        const r = document.createRange(); r.setStart(node, at); r.setEnd(node, at + 1);
        xs.push(Math.round(r.getBoundingClientRect().left * 10) / 10);
      }
      out.push({table: table.className, column: name, xs});
    }
  }
  return out;
})()"""


def _html_ms(html: str) -> list[tuple[str, str]]:
    return re.findall(r'<td class="num">([\d.]+)</td><td class="num">([\d.]+)</td>', html)


@needs_chromium
def test_the_html_tables_write_the_markdowns_times_and_their_points_line_up(tmp_path: Path) -> None:
    report = kt.compare(old=ROTARY, toolchains=True)
    page = write_html(tmp_path / "rotary.html", report)
    html = page.read_text()
    pairs = _html_ms(html)
    markdown = to_markdown(report)
    md_pairs = re.findall(r"\| ([\d.]+) \| ([\d.]+) \| \**[+-]", markdown)
    assert pairs and pairs == md_pairs, (pairs, md_pairs)  # the same rows, the same figures, in the same order
    assert ("0.01693", "0.01680") in pairs, pairs  # the HTML wrote "0.0168"
    columns = layout(tmp_path, page, POINTS)
    assert isinstance(columns, list) and len(columns) >= 4, columns
    multi = [c for c in columns if len(c["xs"]) > 1]
    assert multi and all(len(set(c["xs"])) == 1 for c in multi), multi


def _without_gpu(tmp_path: Path) -> Path:
    """The rotary bench with its run's GPU record taken out: a results file that does not name its GPU."""
    data = json.loads(ROTARY.read_text())
    del data["run"]["gpu"]
    path = tmp_path / "rotary_no_gpu.json"
    path.write_text(json.dumps(data))
    return path


def test_a_run_without_a_recorded_gpu_says_so_in_every_format(tmp_path: Path) -> None:
    report = kt.compare(old=_without_gpu(tmp_path), toolchains=True)
    console = Console(record=True, width=300)
    print_table(console, report)
    terminal, markdown = console.export_text(), to_markdown(report)
    html = write_html(tmp_path / "r.html", report).read_text()
    for text in (terminal, markdown):
        (line,) = set(x for x in text.splitlines() if "both sides: run" in x)
        assert "GPU not recorded, status finished)" in line and "?" not in line, line
    assert "<td>GPU not recorded</td><td>not recorded</td>" in html, html[-800:]
    assert "<td>?</td>" not in html


def test_a_tritonbench_files_driver_is_not_in_the_file(tmp_path: Path) -> None:
    """The HTML's driver column read "?" where the GPU and date columns said "not in the file"."""
    run1, run2 = TRITONBENCH / "layer_norm_bwd_run1.csv", TRITONBENCH / "layer_norm_bwd_run2.csv"
    html = write_html(tmp_path / "tb.html", kt.compare(old=run1, new=run2)).read_text()
    assert html.count("<td>GPU not in the file</td><td>not in the file</td>") == 2 and "<td>?</td>" not in html


def _ms_cells(line: str, sep: str) -> list[str]:
    return [x.strip() for x in line.split(sep) if re.fullmatch(r"\s*\d+\.\d+\s*", x)]


def test_triage_writes_times_and_changes_as_compare_does() -> None:
    """The TritonBench layer_norm pair: the torch baseline's 0.07478 ms was "0.0748" in triage's tables next to
    "0.2291"; now every time of a table has its places (compare's ``ms_decimals``) and the change is ``fmt_pct``'s,
    right-aligned in the markdown and the terminal."""
    run1, run2 = TRITONBENCH / "layer_norm_bwd_run1.csv", TRITONBENCH / "layer_norm_bwd_run2.csv"
    report = kt.triage(old=run1, new=run2, old_toolchain="triton==3.3.1", new_toolchain="triton==3.4.0", bisect=False)
    assert report.cells
    markdown = report.to_markdown()
    rows = [x for x in markdown.splitlines() if x.startswith("| layer_norm.bwd[")]
    assert len(rows) == len(report.cells), rows
    figures = [f for r in rows for f in _ms_cells(r, "|")]
    assert "0.07478" in figures and "0.0748" not in figures, figures
    assert len({len(f.split(".")[1]) for f in figures}) == 1, figures
    for c in report.cells:
        assert any(c.label() in r and f"| {fmt_pct(c.ratio)} |" in r for r in rows), c.label()
    assert "|---|---:|---:|---:|---|---|" in markdown
    console = Console(record=True, width=400)
    report.print_table(console)
    lines = [x for x in console.export_text().splitlines() if x.startswith("│ layer_norm.bwd[")]
    cells = [x.split("│")[i] for x in lines for i in (2, 3)]
    assert cells and len({c.index(".") for c in cells}) == 1 and len({len(c) for c in cells}) == 1, cells
    assert '<td class="num">0.07478</td>' in report.to_html()
