"""The explain HTML report's source view (explain/html_view.py, report/explain.html.j2) in a real
headless Chromium: per-line deltas of both toolchains side by side, a line that opens to its SASS in
both cubins (a ``<details>``: navigating to it opens it, no script), findings linking to their top
line, and source text with markup (``</script>``, ``<img onerror>``) shown as text. Skips only when no
Chromium binary exists (Debian package: chromium)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from ktriage.cli.app import main
from tests.browser import dump_dom, needs_chromium

pytestmark = pytest.mark.slow


def explain_html(tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "report.html"
    assert main(["explain", *args, "--arch", "sm_90", "-f", "json", "-o", str(out)]) == 0
    return out


def source_rows(dom: str) -> dict[str, str]:
    """Each source-view line's place (``file:line`` as its first cell shows it) -> its whole
    ``<details>`` element (only a line a finding links to has an id: its SASS's)."""
    rows = re.finditer(
        r'<details class="src-line[^"]*"[^>]*><summary><span class="where">(.*?)</span>.*?</details>', dom, re.S
    )
    return {html.unescape(re.sub(r"<[^>]+>", "", m.group(1))): m.group(0) for m in rows}


def check_page(dom: str, stderr: str) -> None:
    assert "<html" in dom and "</html>" in dom
    assert "<script" not in dom.lower()
    assert "Uncaught" not in stderr and "SyntaxError" not in stderr


@needs_chromium
def test_layer_norm_source_view_shows_the_spilling_lines_and_their_sass(tmp_path: Path) -> None:
    page = explain_html(
        tmp_path, "liger.layer_norm", "--bwd", "-i", "N=4608", "-t", "triton==3.3.1", "-t", "triton==3.4.0"
    )
    dom, err = dump_dom(tmp_path, page)
    check_page(dom, err)
    rows = source_rows(dom)
    assert len(rows) > 10
    where, row = next((w, row) for w, row in rows.items() if w.endswith("liger_kernel/ops/layer_norm.py:126"))
    assert "dx = (wdy - (x_hat * c1 + c2)) * rstd" in html.unescape(row)
    # the per-line deltas, side by side: instructions 270 -> 546, LDL/STL 62 -> 345
    text = html.unescape(re.sub(r"<[^>]+>", "", row))
    assert "270 → 546 (+276)" in text and "62 → 345 (+283)" in text
    assert 'class="src-line changed spill in-loop"' in row
    # each side's SASS of that line: LDL/STL in both, many more in 3.4.0's
    ref_sass = re.search(r'<pre class="sass-a">(.*?)</pre>', row, re.S)
    new_sass = re.search(r'<pre class="sass-b">(.*?)</pre>', row, re.S)
    assert ref_sass and new_sass
    assert new_sass.group(1).count("LDL") > 3 * ref_sass.group(1).count("LDL") > 0
    assert re.search(r"/\*[0-9a-f]{4}\*/ (?:@!?P\d )?STL", new_sass.group(1))
    assert ' open=""' not in row.split(">", 1)[0]  # closed until asked
    # the finding links to that line; following the link opens it (Chromium expands a <details> on navigation)
    links = re.findall(r'<a class="evidence-link" href="#([^"]+)">([^<]+)</a>', dom)
    target = re.search(r'<div class="line-sass" id="([^"]+)">', row)
    assert target, "the line the finding names has no anchor"
    to_line = [(href, text) for href, text in links if href == target.group(1)]
    assert to_line and "layer_norm.py:126 (+283)" in to_line[0][1]
    assert "at local memory (LDL/STL per main-loop iteration): liger_kernel/ops/layer_norm.py:126" in html.unescape(dom)
    opened, err = _dump_at(tmp_path, page, target.group(1))
    check_page(opened, err)
    assert ' open=""' in source_rows(opened)[where].split(">", 1)[0]
    others = [w for w, r in source_rows(opened).items() if w != where and ' open=""' in r.split(">", 1)[0]]
    assert not others


def _dump_at(tmp_path: Path, page: Path, fragment: str) -> tuple[str, str]:
    from tests.browser import run_chromium

    proc = run_chromium(tmp_path, "--enable-logging=stderr", "--v=0", "--dump-dom", f"{page.as_uri()}#{fragment}")
    return proc.stdout, proc.stderr


HOSTILE = """import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n  # </script><script>alert(1)</script>
    x = tl.load(x_ptr + offs, mask=mask)  # <img src=x onerror=alert(2)>
    tl.store(y_ptr + offs, x * 2.0, mask=mask)
"""

SPEC = """[kernel]
name = "add"
source = "k.py:add_kernel"
target = "sm_90"

[kernel.signature]
x_ptr = "*fp32"
y_ptr = "*fp32"
n = "i32"
BLOCK = "constexpr"

[kernel.constexprs]
BLOCK = 1024
"""


@needs_chromium
def test_markup_in_the_kernel_source_is_shown_as_text(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(HOSTILE)
    (tmp_path / "k.toml").write_text(SPEC)
    page = explain_html(tmp_path, str(tmp_path / "k.toml"), "-t", "triton==3.3.1", "-t", "triton==3.4.0")
    raw = page.read_text()
    assert "<script" not in raw.lower() and "<img" not in raw.lower()
    dom, err = dump_dom(tmp_path, page)
    check_page(dom, err)
    assert "<img" not in dom.lower()
    rows = source_rows(dom)
    texts = [html.unescape(re.sub(r"<[^>]+>", "", r)) for r in rows.values()]
    # the lines with markup have instructions, so they are rows, their text shown as written
    assert any("mask = offs < n  # </script><script>alert(1)</script>" in t for t in texts)
    assert any("# <img src=x onerror=alert(2)>" in t and "LDG" in t for t in texts)
