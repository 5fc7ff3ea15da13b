"""A real headless Chromium for the HTML report tests (compare, explain, triage): one place that
finds the binary and runs it. Tests skip only when no Chromium binary exists (Debian: chromium)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


CHROMIUM = chromium()
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary on PATH (apt-get install -y chromium)")


def run_chromium(tmp_path: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """Chromium headless with a private profile under ``tmp_path`` and no network or sync."""
    assert CHROMIUM
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)


def dump_dom(tmp_path: Path, page: Path) -> tuple[str, str]:
    """The rendered DOM of ``page`` and Chromium's log (script errors show up there)."""
    proc = run_chromium(tmp_path, "--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri())
    return proc.stdout, proc.stderr


# a layout probe: how far the page scrolls sideways, and each chart or table that sticks out of the window
STICKS_OUT = """(() => {
  const de = document.documentElement;
  const out = [...document.querySelectorAll('svg.chart, table')]
    .filter(e => e.getBoundingClientRect().right > de.clientWidth + 1)
    .map(e => e.tagName + '.' + e.getAttribute('class'));
  return {sideways: de.scrollWidth - de.clientWidth, out};
})()"""

# a layout probe: each text colour whose contrast with the background behind it is under WCAG AA's
# 4.5:1 for body text (SVG chart labels aside), once per (colour, background, element) with an example
LOW_CONTRAST = """(() => {
  const lum = c => { const m = c.match(/[\\d.]+/g).map(Number);
    const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return [0.2126 * f(m[0]) + 0.7152 * f(m[1]) + 0.0722 * f(m[2]), m.length > 3 ? m[3] : 1]; };
  const behind = el => { for (; el; el = el.parentElement) { const c = getComputedStyle(el).backgroundColor;
    const [l, a] = lum(c); if (a > 0.5) return [l, c]; } return [1, 'white']; };
  const low = {};
  for (const el of document.querySelectorAll('body *')) {
    if (el.closest('svg') || ![...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
    const s = getComputedStyle(el), [fg] = lum(s.color), [bg, bc] = behind(el);
    const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
    if (ratio < 4.5) low[`${s.color} on ${bc} ${el.tagName}.${el.className}`] = [+ratio.toFixed(2), el.textContent.trim().slice(0, 30)];
  }
  return low;
})()"""


def layout(tmp_path: Path, page: Path, expression: str, width: int = 1280) -> object:
    """``expression`` (JavaScript) evaluated in ``page`` as laid out in a ``width``-px-wide window, as
    JSON: the reports have no script, so a copy of the page gets one that writes the value into the
    DOM, read back with ``--dump-dom``. For what only layout shows (overflow, overlap)."""
    probe = tmp_path / f"probe-{width}-{page.name}"
    script = (
        "<script>window.addEventListener('load', () => { const p = document.createElement('pre');"
        f" p.id = 'ktriage-probe'; p.textContent = JSON.stringify(({expression})); document.body.append(p); }});"
        "</script>"
    )
    probe.write_text(page.read_text().replace("</body>", script + "</body>"))
    proc = run_chromium(
        tmp_path, f"--window-size={width},900", "--virtual-time-budget=5000", "--dump-dom", probe.as_uri()
    )
    found = re.search(r'<pre id="ktriage-probe">(.*?)</pre>', proc.stdout, re.S)
    assert found, f"the layout probe did not run in {page.name}"
    return json.loads(html.unescape(found.group(1)))
