"""The explain HTML report (`ktriage explain ... -o report.html`) opened in a real headless Chromium,
as tests/test_report_html.py does for compare: it renders, has no script, the side-by-side diff
lines are there with spills and the main loop marked, every finding's evidence link lands on a row
that shows it, and markup from the input is escaped. Both motivating regressions, plus a spec file
whose names carry markup. Skips only when no Chromium binary exists (Debian package: chromium)."""

from __future__ import annotations

import dataclasses
import html
import re
from pathlib import Path

import pytest

import ktriage.api as kt
from ktriage.cli.app import main
from ktriage.explain.findings import Finding
from ktriage.explain.html_view import build_view
from ktriage.report.explain_html import to_html
from tests.browser import LOW_CONTRAST, STICKS_OUT, dump_dom, layout, needs_chromium


def explain_html(tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "report.html"
    assert main(["explain", *args, "--arch", "sm_90", "-f", "json", "-o", str(out)]) == 0
    return out


def rows_by_id(dom: str) -> dict[str, str]:
    return {m.group(1): m.group(0) for m in re.finditer(r'<tr [^>]*id="([^"]+)"[^>]*>.*?</tr>', dom, re.S)}


def diff_rows(dom: str) -> list[tuple[list[str], list[str]]]:
    """Each side-by-side diff row: its classes (the tag, class-change, spill-a/-b, loop-a/-b: the
    marks of its cells) and its four cells (ref line, ref code, new line, new code)."""
    found = re.finditer(r'<tr class="([^"]*)"[^>]*>((?:<td>[^<]*</td>){4})</tr>', dom)
    return [(m.group(1).split(), re.findall(r"<td>([^<]*)</td>", m.group(2))) for m in found]


def check_page(dom: str, stderr: str) -> None:
    assert "<html" in dom and "</html>" in dom
    assert "<script" not in dom.lower()  # no script at all, so none can fail
    assert "Uncaught" not in stderr and "SyntaxError" not in stderr
    assert not re.search(r'(src|href)="https?:', dom)  # self-contained


def evidence_targets(dom: str) -> dict[str, str]:
    """Each evidence link's text -> the row (or heading) its anchor names; every anchor must exist."""
    rows = rows_by_id(dom)
    out = {}
    for href, text in re.findall(r'<a class="evidence-link" href="#([^"]+)">([^<]+)</a>', dom):
        assert f'id="{href}"' in dom, f"evidence link {text!r} points at a missing anchor #{href}"
        out[html.unescape(text)] = rows.get(href, href)
    return out


@needs_chromium
def test_layer_norm_spills_report(tmp_path: Path) -> None:
    page = explain_html(
        tmp_path, "liger.layer_norm", "--bwd", "-i", "N=4608", "-t", "triton==3.3.1", "-t", "triton==3.4.0"
    )
    dom, err = dump_dom(tmp_path, page)
    check_page(dom, err)
    findings = re.findall(r'<li class="finding (\w+)">', dom)
    assert findings and findings[0] == "regression"
    assert "spill stores 632 B -&gt; 3712 B" in dom and "the frontend (Triton/LLVM PTX) is responsible" in dom
    assert "Compiled for: <code>sm_90</code>" in dom  # the GPU the numbers are for
    # the side-by-side SASS diff: spills marked on the 3.4.0 side, the main loop marked, unchanged runs collapsed
    rows = diff_rows(dom)
    assert any("spill-b" in c and re.match(r"/\*[0-9a-f]{4}\*/ (?:@!?P\d )?STL", cells[3]) for c, cells in rows)
    assert any("loop-b" in c for c, _ in rows) and "unchanged lines" in dom
    assert dom.count('class="diff sass-diff"') == 1 and dom.count('class="diff ptx-diff"') == 1
    # the PTX diff shows both sides; the declared register classes are a table apart (3.3.1 has .f32)
    regs = re.search(r'<table class="reg-classes">.*?</table>', dom, re.S)
    assert regs and "<code>.reg .f32</code>" in regs.group(0) and ".reg .b32" in regs.group(0)
    assert not any(cells[1].startswith(".reg ") or cells[3].startswith(".reg ") for _, cells in rows)  # not in it
    # cross matrix (PTX x ptxas) and occupancy with its limiter
    cross = re.search(r'<table class="cross">.*?</table>', dom, re.S)
    assert cross and "<td>spill_store_bytes</td>" in cross.group(0) and "3728" in cross.group(0)
    occ = re.search(r'<table class="occupancy">.*?</table>', dom, re.S)
    assert occ and "<td>registers</td>" in occ.group(0) and "<td>warps</td>" in occ.group(0)  # 3.3.1 / 3.4.0
    # the links land on rows that show the evidence
    targets = evidence_targets(dom)
    spill = next(row for text, row in targets.items() if text.startswith("spill stores"))
    assert re.search(r"\b(LDL|STL)", spill) and re.match(r'<tr class="(delete|insert|replace)\b', spill)
    loop = next(row for text, row in targets.items() if "main loop" in text)
    assert re.match(r'<tr class="[^"]*\bloop-[ab]\b', loop)


@needs_chromium
def test_embedding_atomics_report(tmp_path: Path) -> None:
    page = explain_html(
        tmp_path, "liger.embedding", "--bwd", "-i", "0", "-t", "triton==3.4.0,ptxas==12.4.131", "-t", "triton==3.4.0"
    )
    dom, err = dump_dom(tmp_path, page)
    check_page(dom, err)
    assert "ptxas is responsible" in dom
    rows = diff_rows(dom)
    assert any(re.match(r"/\*[0-9a-f]{4}\*/ [^<]*REDG\.E\.ADD\.F32x4", cells[1]) for _, cells in rows)
    assert any(re.match(r"/\*[0-9a-f]{4}\*/ [^<]*ATOMG\.E\.ADD\.F32x4", cells[3]) for _, cells in rows)
    assert "PTX diff: identical after normalization" in dom  # the same PTX: ptxas changed
    targets = evidence_targets(dom)
    atomg = next(row for text, row in targets.items() if "ATOMG" in text)
    assert "ATOMG" in atomg and "class-change" in atomg


KERNEL = """import triton
import triton.language as tl


# <script>alert("source")</script> & a comment with markup
@triton.jit
def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)
"""

SPEC = """[kernel]
name = "add<script>alert(1)</script>"
source = "k.py:add_kernel"
target = "sm_90"

[kernel.signature]
x_ptr = "*fp32"
y_ptr = "*fp32"
n = "i32"
BLOCK = "constexpr"

[kernel.constexprs]
BLOCK = 1024

[kernel.meta]
note = "<img src=x onerror=alert(2)>"
"""


@needs_chromium
def test_markup_in_the_input_is_escaped(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(KERNEL)
    (tmp_path / "k.toml").write_text(SPEC)
    page = explain_html(tmp_path, str(tmp_path / "k.toml"), "-t", "triton==3.3.1", "-t", "triton==3.4.0")
    raw = page.read_text()
    assert "<script" not in raw.lower() and "<img" not in raw.lower()
    assert "add&lt;script&gt;alert(1)&lt;/script&gt;" in raw
    dom, err = dump_dom(tmp_path, page)
    check_page(dom, err)
    assert "<img" not in dom.lower()
    assert 'class="diff sass-diff"' in dom  # the kernel has its diff section (unchanged or not)
    assert "add_kernel" in dom


@needs_chromium
def test_fixes_asked_for_are_in_the_page(tmp_path: Path) -> None:
    """`--fixes -o report.html` wrote the same page as without --fixes: the verified fix the terminal
    and the markdown show was silently missing from the HTML. The page has its Fixes section (after
    the findings) with the fix, whether it was verified, its effect and caveats."""
    page = explain_html(
        tmp_path,
        "liger.embedding",
        "--bwd",
        "-i",
        "0",
        "-t",
        "triton==3.4.0,ptxas==12.4.131",
        "-t",
        "triton==3.4.0",
        "--fixes",
    )
    dom, err = dump_dom(tmp_path, page)
    check_page(dom, err)
    section = re.search(r'<h2 id="fixes">Fixes \(verified by compiling, not timed\)</h2>(.*?)(?=<h2)', dom, re.S)
    assert section, "no Fixes section in the HTML report of explain --fixes"
    fix = re.search(r'<li class="fix[^"]*">(.*?)</li>', section.group(1), re.S)
    assert fix and "relaxed-atomic" in fix.group(1) and 'sem="relaxed"' in html.unescape(fix.group(1))
    assert "verified" in fix.group(1) and "ATOMG 32 -&gt; 0" in fix.group(1) and "caveat" in fix.group(1)


@needs_chromium
def test_no_fixes_section_unless_asked(tmp_path: Path) -> None:
    page = explain_html(
        tmp_path, "liger.embedding", "--bwd", "-i", "0", "-t", "triton==3.4.0,ptxas==12.4.131", "-t", "triton==3.4.0"
    )
    dom, err = dump_dom(tmp_path, page)
    check_page(dom, err)
    assert 'id="fixes"' not in dom


# every cell of the source view whose text runs past its box, and how far the page scrolls sideways
OVERFLOW = """(() => {
  const de = document.documentElement;
  const cells = [...document.querySelectorAll('.source-view .row > span, .source-view summary > span')];
  const over = cells.filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent.slice(0, 40));
  return {cells: cells.length, sideways: de.scrollWidth - de.clientWidth, over: [...new Set(over)].slice(0, 6)};
})()"""


@needs_chromium
@pytest.mark.parametrize("width", [1280, 800])
def test_source_view_fits_its_columns_and_the_window(tmp_path: Path, width: int) -> None:
    """The source view's grid had fixed columns 1156 px wide at least: at 1280 px its header
    "global/shared/atomic" ran into "main loop (per iteration)", and at 800 px the last three columns
    stuck out of the page, which scrolled sideways. Each cell's text now stays in its cell and the
    page in the window, at a laptop's and at a narrow window's width."""
    page = explain_html(
        tmp_path, "liger.embedding", "--bwd", "-i", "0", "-t", "triton==3.4.0,ptxas==12.4.131", "-t", "triton==3.4.0"
    )
    got = layout(tmp_path, page, OVERFLOW, width=width)
    assert isinstance(got, dict) and got["cells"] > 8 * 10  # the header and the lines, 8 cells each
    assert got["over"] == [], f"text past its cell at {width} px: {got['over']}"
    assert got["sideways"] <= 0, f"the page scrolls {got['sideways']} px sideways at {width} px"


# each source line's place (file:line) as laid out: the characters a line break falls after, whether
# any wrapped, and how far each source view scrolls sideways inside itself
PLACE_BREAKS = """(() => {
  const breaks = [], wrapped = new Set();
  for (const el of document.querySelectorAll('.source-view summary .where')) {
    const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    let top = null, prev = '', n;
    while ((n = walk.nextNode())) for (let i = 0; i < n.length; i++) {
      const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1);
      const box = r.getClientRects()[0]; if (!box) continue;
      if (top !== null && box.top > top + 2) { wrapped.add(el.textContent); if (prev !== '/') breaks.push(el.textContent + ' after ' + prev); }
      top = box.top; prev = n.data[i];
    }
  }
  const views = [...document.querySelectorAll('div.source-view')].map(d => d.scrollWidth - d.clientWidth);
  return {inside: [...new Set(breaks)].slice(0, 6), wrapped: wrapped.size, scrolls: Math.max(0, ...views)};
})()"""


@needs_chromium
def test_source_line_places_break_after_a_slash_only(tmp_path: Path) -> None:
    """The source view's first column broke a line's place anywhere (overflow-wrap: anywhere): at
    800 px, liger_kernel/ops/layer_norm.py:126 wrapped inside "layer_norm.py" and embedding.py:41
    inside "embedding". It breaks after a slash only now, and nothing sticks out of the window."""
    page = explain_html(
        tmp_path, "liger.layer_norm", "--bwd", "-i", "N=4608", "-t", "triton==3.3.1", "-t", "triton==3.4.0"
    )
    got = layout(tmp_path, page, PLACE_BREAKS, width=800)
    assert isinstance(got, dict) and got["wrapped"] > 10  # the long places do wrap at 800 px
    assert got["inside"] == [], f"a place broken inside a name: {got['inside']}"
    assert got["scrolls"] <= 0, f"the source view scrolls {got['scrolls']} px sideways at 800 px"
    assert layout(tmp_path, page, STICKS_OUT, width=800) == {"sideways": 0, "out": []}


@needs_chromium
def test_inputs_with_the_same_compiled_kernels_show_their_diffs_once(tmp_path: Path) -> None:
    """N=4608 and N=5120 compile to the same kernels (BLOCK_SIZE 8192 both, N a runtime argument):
    the page repeated the same 1.3 MB of diffs and source lines for each (3.0 MB for N=4096..5120).
    The second section keeps its resources and cross matrix and links to the first one's diffs;
    every evidence link still lands on a row that shows it."""
    page = explain_html(
        tmp_path,
        "liger.layer_norm",
        "--bwd",
        "-i",
        "N=4608",
        "-i",
        "N=5120",
        "-t",
        "triton==3.3.1",
        "-t",
        "triton==3.4.0",
    )
    dom, err = dump_dom(tmp_path, page)
    check_page(dom, err)
    assert dom.count('class="diff sass-diff"') == 1 and dom.count('class="diff ptx-diff"') == 1
    assert dom.count('class="source-view"') == 1
    first, second = re.findall(r'<section class="comparison" id="([^"]+)">', dom)
    same = re.search(rf'<section class="comparison" id="{second}">.*?</section>', dom, re.S)
    assert same and f'<a href="#{first}">N=4608</a>' in same.group(0) and '<table class="cross">' in same.group(0)
    targets = evidence_targets(dom)  # every link's anchor exists
    spill = next(row for text, row in targets.items() if text.startswith("spill stores"))
    assert re.search(r"\b(LDL|STL)", spill)
    assert page.stat().st_size < 2_000_000


# the page of the layer_norm sweep (-i N=4096..5120) before its diff rows lost their per-cell classes
# and unlinked ids (f117c856): 1,726,887 bytes, of them 432 KB class attributes on cells, 155 KB ids
SWEEP_PAGE_BYTES_BEFORE = 1_726_887


@needs_chromium
def test_sweep_page_ids_only_where_linked(tmp_path: Path) -> None:
    """The layer_norm sweep's page was 1.7 MB: each of its 7300 diff rows had an id nothing linked to,
    and each of their 29000 cells a class its row already said (line, code a/b, spill, main loop). A
    row's marks are now classes of the row, and only the rows a link points at have an id: every link
    of the page lands, and the page is over a quarter smaller."""
    page = explain_html(
        tmp_path, "liger.layer_norm", "--bwd", "-i", "N=4096..5120", "-t", "triton==3.3.1", "-t", "triton==3.4.0"
    )
    dom, err = dump_dom(tmp_path, page)
    check_page(dom, err)
    ids = re.findall(r' id="([^"]+)"', dom)
    hrefs = set(re.findall(r'href="#([^"]+)"', dom))
    assert len(ids) == len(set(ids)), "an id given twice"
    assert hrefs and not hrefs - set(ids), f"links to no anchor: {sorted(hrefs - set(ids))[:5]}"
    # ids of rows: of the diffs, of the source lines and of their SASS (sections and headings keep theirs)
    rows = re.findall(r'<(?:tr|details class="src-line|div class="line-sass)\b[^>]* id="([^"]+)"', dom)
    unlinked = sorted(set(rows) - hrefs)
    assert len(diff_rows(dom)) > 5000 and rows and not unlinked, (
        f"{len(unlinked)} rows nothing links to: {unlinked[:5]}"
    )
    assert not re.search(r'<td class="(ln|code)', dom)
    assert page.stat().st_size <= 0.75 * SWEEP_PAGE_BYTES_BEFORE, page.stat().st_size


def only_at(finding: Finding, label: str) -> Finding:
    """``finding`` as a run where only the input ``label`` had it: each per-input list (inputs,
    examples, predictions, a detail finding's texts) cut to that input's entry."""
    j, n = finding.inputs.index(label), len(finding.inputs)
    per_input = {
        f.name: [getattr(finding, f.name)[j]]
        for f in dataclasses.fields(finding)
        if isinstance(getattr(finding, f.name), list) and len(getattr(finding, f.name)) == n
    }
    return dataclasses.replace(finding, **per_input)


@needs_chromium
def test_a_finding_at_a_deduplicated_later_input_links_into_the_first(tmp_path: Path) -> None:
    """N=4608 and N=5120 compile to the same kernels, so N=5120's section shows no diffs or source
    lines and points at N=4608's. A finding whose worst input is N=5120 (here N=5120's own findings,
    as a sweep where N=4608 had no such change would give them) links into N=4608's rows, and every
    link lands on a row showing its evidence; only the case where the finding's input holds the
    diffs was tested."""
    report = kt.explain(
        target="liger.layer_norm",
        mode="bwd",
        arch="sm_90",
        inputs=["N=4608", "N=5120"],
        toolchains=["triton==3.3.1", "triton==3.4.0"],
    )
    later = [only_at(f, "N=5120") for f in report.findings]
    page = tmp_path / "later.html"
    page.write_text(to_html(build_view(report.result, later)))
    dom, err = dump_dom(tmp_path, page)
    check_page(dom, err)
    first, second = re.findall(r'<section class="comparison" id="([^"]+)">', dom)
    assert dom.count('class="diff sass-diff"') == 1 and dom.count('class="source-view"') == 1
    links = re.findall(r'<a class="evidence-link" href="#([^"]+)">([^<]+)</a>', dom)
    assert links and all(text.endswith("N=5120") for _, text in links), links
    # its diff rows and source lines are the first section's; its own tables (registers, occupancy) its own
    rows = [href for href, _ in links if re.search(r"-(sass|ptx)-r\d+$|-L\d+-sass$", href)]
    assert rows and all(href.startswith(f"{first}-") for href in rows), f"{second} shows no rows: {rows}"
    kernel = second.split("-")[0]
    assert {f"{kernel}-regs", f"{kernel}-occupancy"} <= {href for href, _ in links}
    targets = evidence_targets(dom)  # every link's anchor exists
    spill = next(row for text, row in targets.items() if text.startswith("spill stores"))
    assert re.search(r"\b(LDL|STL)", spill) and re.match(r'<tr class="(delete|insert|replace)\b', spill)
    loop = next(row for text, row in targets.items() if "main loop" in text)
    assert re.match(r'<tr class="[^"]*\bloop-[ab]\b', loop)
    line = next(href for href, text in links if "layer_norm.py:" in text)
    assert re.search(rf'<div class="line-sass" id="{line}">', dom)


@needs_chromium
def test_text_contrast(tmp_path: Path) -> None:
    """The diffs' line numbers were #999 on white (2.8:1) and the footer #777 (4.48:1): under the
    4.5:1 body text needs (WCAG AA). Every text colour of the page now has it."""
    page = explain_html(
        tmp_path, "liger.embedding", "--bwd", "-i", "0", "-t", "triton==3.4.0,ptxas==12.4.131", "-t", "triton==3.4.0"
    )
    assert layout(tmp_path, page, LOW_CONTRAST) == {}
