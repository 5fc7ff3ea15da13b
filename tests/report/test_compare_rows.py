"""What a row of a compare report says, and says once.

``compare --toolchains`` heads each comparison "A -> B" and its rows read ``K0:kernel@A->B``: two toolchain ids of
~35 characters restated per row (the terminal folded each backend over three lines), in the table, the markdown
and the HTML alike. The rows now name the backend alone where its toolchains are the heading's; the JSON keeps the
whole label, a row of two runs keeps its toolchains (no heading names them there). Around it: the terminal's
numbers right-aligned, the HTML's CI headed with its level as the other outputs head it, what the "ms" and
"change" columns are (a median pair 0.01693 -> 0.01696 next to -0.9% read as a contradiction), and one shared
run named as both sides' ("ref: run ..." alone looked like the new side's run was missing).

The committed H100 bench of fla's rotary embedding (``benchmarks/corpus/fla2/bench/``, three Triton versions in
one run), compared with the real pairing and renderers; two runs of the fake sweep (``ktriage.testing``) for the
two-run case."""

from __future__ import annotations

import json
import re
from pathlib import Path

from rich.console import Console

from ktriage.api import compare
from ktriage.compare.pairing import compare_cells
from ktriage.compare.report import CompareReport
from ktriage.report.html import to_html
from ktriage.report.markdown import to_markdown
from ktriage.report.tabular import print_table
from ktriage.testing import fake_sweep_run

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "fla2" / "bench"
ROTARY, RWKV6 = BENCH / "fla2_rotary.json", BENCH / "fla2_rwkv6.json"


def _terminal(report: CompareReport) -> str:
    console = Console(record=True, width=250)
    print_table(console, report, show_same=True)
    return console.export_text()


def _rows(text: str, marker: str) -> list[str]:
    return [line for line in text.splitlines() if marker in line]


def test_a_toolchains_row_names_the_backend_once_under_the_heading_that_names_the_toolchains() -> None:
    report = compare(old=ROTARY, toolchains=True)
    assert len(report.comparisons) == 2
    for c in report.comparisons:
        ids = (c.ref_label, c.new_label)
        assert c.side_toolchains == ids
        for p in c.pairs:
            assert c.row_backend(p) == p.backend  # every pair of this run is one of the two toolchains
            assert p.backend_label == f"{p.backend}@{ids[0]}->{ids[1]}"  # the whole label, as the JSON gives it

    terminal = _terminal(report)
    rows = _rows(terminal, "fla2_rotary.recorded")
    assert len(rows) == 8, terminal  # 4 inputs x kernels, two comparisons, each row on one line
    assert not [r for r in rows if "triton-" in r], rows
    markdown = to_markdown(report)
    md_rows = _rows(markdown, "| fla2_rotary.recorded |")
    assert len(md_rows) == 7 and not [r for r in md_rows if "triton-" in r], md_rows  # the 8th is unsure, listed
    unsure = _rows(markdown, "- fla2_rotary.recorded[")
    assert len(unsure) == 1 and "K1:rotary_embedding_kernel: new samples are bimodal" in unsure[0], unsure
    html = to_html(report)
    cells = re.findall(r"<td>(K\d:rotary_embedding_kernel[^<]*)</td>", html)
    assert len(cells) == 7 and set(cells) == {f"K{i}:rotary_embedding_kernel" for i in range(4)}, cells
    # each toolchain id once per comparison's heading in the markdown, not once per row
    for c in report.comparisons:
        assert markdown.count(c.new_label) == 1, c.new_label


def test_the_json_keeps_whole_labels_and_the_not_compared_rows_name_the_backend_once() -> None:
    """fla2_rwkv6: 3.3.1 compiles one kernel of ten (10 cells not compared), 3.4.0 five regressions. The JSON is
    data, read apart from any heading: its labels keep both toolchains; the reports' lists do not repeat them."""
    report = compare(old=RWKV6, toolchains=True)
    data = json.loads(report.json_text())
    labels = [x for comp in data["comparisons"] for x in comp["not_compared"] + comp["regressions"]]
    assert len(labels) == 15, labels
    for comp in data["comparisons"]:
        assert all(f"@{comp['ref']}->{comp['new']}" in x for x in comp["not_compared"] + comp["regressions"])
    terminal, markdown = _terminal(report), to_markdown(report)
    listed = [line.strip() for line in terminal.splitlines() if line.startswith("    fla2_rwkv6.recorded[")]
    assert listed and all(re.fullmatch(r"fla2_rwkv6\.recorded\[.*\] K\d+:\w+", x) for x in listed), listed
    assert "K0:chunk_rwkv6_fwd_cumsum_kernel" in markdown
    assert "K0:chunk_rwkv6_fwd_cumsum_kernel@" not in markdown and "K0:chunk_rwkv6_fwd_cumsum_kernel@" not in terminal


def test_a_row_of_two_runs_keeps_its_toolchains() -> None:
    """No heading names the toolchains of two runs ("monday -> tuesday"): the rows do."""
    ref_run, ref = fake_sweep_run(seed=3, toolchains=("triton-3.3.1",))
    new_run, new = fake_sweep_run(seed=4, toolchains=("triton-3.4.0",))
    c = compare_cells(ref, new, ref_run=ref_run, new_run=new_run, ref_label="monday", new_label="tuesday")
    built = [p for p in c.pairs if p.ref_toolchain]
    assert built and all(c.row_backend(p).endswith("@triton-3.3.1->triton-3.4.0") for p in built)
    assert "@triton-3.3.1->triton-3.4.0 |" in to_markdown(CompareReport([c]))


def test_the_terminal_right_aligns_its_numbers() -> None:
    """ "0.0168 " under "0.01659" put the digits of one column at different places; right-aligned, and with
    the column's decimal places (the trailing zero kept: "0.01680"), they line up."""
    terminal = _terminal(compare(old=ROTARY, toolchains=True))
    row = next(r for r in _rows(terminal, "K0:rotary_embedding_kernel") if "0.01680 " in r or " 0.01680" in r)
    assert "│ 0.01680 │" in row and "│  -1.1% │" in row, row
    header = next(line for line in terminal.splitlines() if "ref ms" in line)
    assert "│  ref ms │" in header or "┃  ref ms ┃" in header, header


def test_every_output_says_what_the_ms_and_change_columns_are_and_the_html_heads_its_ci_with_the_level() -> None:
    report = compare(old=ROTARY, toolchains=True)
    said = "ms: each side's median; change: Hodges-Lehmann new/ref, not the medians' ratio"
    assert said in to_markdown(report)
    assert said in _terminal(report).replace("\n", "")
    html = to_html(report)
    assert said.replace("'", "&#39;") in html
    assert "<th>CI</th>" not in html and html.count("<th>99% CI</th>") == 2  # the same tables of both comparisons


def test_one_run_of_both_sides_is_named_as_both_sides() -> None:
    report = compare(old=ROTARY, toolchains=True)
    terminal, markdown = _terminal(report), to_markdown(report)
    assert "both sides: run 319ea2538abd (" in terminal and "- both sides: run `319ea2538abd` (" in markdown
    assert "ref: run" not in terminal and "ref: run" not in markdown


def test_an_unsure_row_says_why_without_repeating_its_change_and_interval() -> None:
    """fla2_rwkv6 at 3.6.0 -> 3.4.0: K0's ref samples are bimodal. Its row showed +1.6% and [+0.6%, +2.6%] in
    the change and CI columns, and its why ended "(+1.6% (99% CI [+0.6%, +2.6%], U-test p=0.00023))"; the why
    now says only the cause. The markdown's unsure list, which has no columns, keeps the numbers."""
    report = compare(old=RWKV6, toolchains=True)
    terminal = _terminal(report)
    (row,) = [r for r in _rows(terminal, "K0:chunk_rwkv6_fwd_cumsum_kernel") if "unsure" in r]
    assert "+1.6%" in row and "[+0.6%, +2.6%]" in row and "ref samples are bimodal" in row, row
    assert row.count("+1.6%") == 1 and "CI" not in row.split("unsure", 1)[1] and "U-test" not in terminal, row
    (listed,) = _rows(to_markdown(report), "K0:chunk_rwkv6_fwd_cumsum_kernel: ref samples are bimodal")
    assert "+1.6% (99% CI [+0.6%, +2.6%]" in listed, listed


def _ms_cells(lines: list[str], sep: str, columns: tuple[int, int]) -> list[str]:
    """The ref ms and new ms cells of each table row, as printed (padding kept)."""
    return [line.split(sep)[i] for line in lines for i in columns]


def test_the_ms_columns_line_up_their_decimal_points_in_the_terminal_and_the_markdown() -> None:
    """``fmt_ms`` (four significant digits, trailing zeros dropped) wrote "2.77" over "2.765", "2.8" under
    "2.817" and "0.0423" next to "0.1268": right-aligned, the decimal points of one column stood at different
    places. Every time of a table now has that table's decimal places (four significant digits of its
    smallest time), so the points line up, in the terminal and in the markdown (whose number columns are
    now right-aligned, ``---:``). The real TritonBench A/A pair of layer_norm bwd (tests/data/tritonbench: all
    unsure, in the terminal's table) and the rotary bench ("0.0168" next to "0.01693" in the markdown's tables)."""
    data = Path(__file__).resolve().parents[1] / "data" / "tritonbench"
    report = compare(old=data / "layer_norm_bwd_run1.csv", new=data / "layer_norm_bwd_run2.csv")
    rows = [line for line in _terminal(report).splitlines() if line.startswith("│ layer_norm.bwd")]
    cells = _ms_cells(rows, "│", (4, 5))
    assert len(cells) > 40 and any(c.strip() == "2.7700" for c in cells), cells  # was "2.77"
    assert len({len(c) for c in cells}) == 1 and len({c.index(".") for c in cells}) == 1, cells
    assert len({len(c.strip().split(".")[1]) for c in cells}) == 1, cells
    markdown = to_markdown(compare(old=ROTARY, toolchains=True))
    table = [line for line in markdown.splitlines() if line.startswith("| fla2_rotary.recorded")]
    figures = [c.strip() for c in _ms_cells(table, "|", (4, 5))]
    assert "0.01680" in figures and len({len(f.split(".")[1]) for f in figures}) == 1, figures  # was "0.0168"
    assert "|---|---|---|---:|---:|---:|---:|---:|" in markdown
