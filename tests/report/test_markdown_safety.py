"""Text from the input cannot inject HTML, images, links or mentions into ktriage's markdown
(compare's goes to $GITHUB_STEP_SUMMARY) nor its HTML report: a results file and a spec file
carrying them, through the real CLI."""

from __future__ import annotations

from html import unescape
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ktriage.cli.app import app
from ktriage.mdsafe import inert, md_code, md_code_span, md_text
from ktriage.measure.results_file import write_results
from ktriage.testing import fake_sweep_run

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"
REMOTE = "![x](http://evil/x.png)"
LINK = "[click](javascript:alert(1))"
MENTION = "@everyone"
HOSTILE = f"{SCRIPT} {IMG} {REMOTE} {LINK} {MENTION}"
RAW = ("<script", "<img", "](http://evil", "](javascript:", "![x]", " @everyone")
KERNELS = Path(__file__).resolve().parent.parent / "kernels_for_tests.py"


def assert_inert(md: str) -> None:
    for raw in RAW:
        assert raw not in md, raw
    assert "&lt;script>alert(1)&lt;/script>" in md and "&lt;img src=x onerror=alert(1)>" in md
    assert "!\\[x]\\(http://evil/x.png)" in md and "[click]\\(javascript:alert(1))" in md
    assert "@\u200beveryone" in md


def test_md_text_and_md_code() -> None:
    assert md_text(HOSTILE) == (
        "&lt;script>alert(1)&lt;/script> &lt;img src=x onerror=alert(1)> !\\[x]\\(http://evil/x.png) "
        "[click]\\(javascript:alert(1)) @\u200beveryone"
    )
    assert md_text("a|b\nc `d` \\](e)") == "a\\|b c \\`d\\` \\\\]\\(e)"
    assert md_text("liger_layer_norm@triton-3.4.0 N=4096 -> 4608") == "liger_layer_norm@triton-3.4.0 N=4096 -> 4608"
    assert md_code("triton-3.4.0") == "`triton-3.4.0`" and md_code("a`b") == "a\\`b"


def _rendered(md: str) -> str:
    """``md`` as a CommonMark renderer makes it HTML (markdown-it-py, which rich depends on; GitHub's is
    CommonMark too): what a reader of the summary sees."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").render(md)


@pytest.mark.parametrize(
    ("snippet", "code"),
    [
        ("grad_output,", "grad_output,"),
        ("s = `a` + ``b``", "s = `a` + ``b``"),
        ("`x`", "`x`"),
        ("  x  ", "  x  "),
        (HOSTILE, HOSTILE),
        ("a\nb", "a b"),
    ],
)
def test_md_code_span_shows_any_text_as_code_and_stays_inert(snippet: str, code: str) -> None:
    """A quoted source line is a code span whatever it holds (backticks of any run, spaces at its ends),
    and the hostile lot inside one is shown as text: no tag, image, link or mention comes out."""
    md = inert(f"- at f.py:7 ({md_code_span(snippet)}) +3")
    html = _rendered(md)
    assert html.count("<code>") == 1, html
    assert unescape(html.split("<code>")[1].split("</code>")[0]) == code
    for raw in ("<script", "<img", "<a ", "href="):
        assert raw not in html, raw
    assert md_code_span("") == ""


@pytest.mark.slow
def test_explain_markdown_quotes_source_lines_as_code(toolchain: Any) -> None:
    """The line evidence's quoted source line (embedding bwd's ``grad_output,``) went through md_text:
    the raw markdown read ``(\\`grad_output,\\`)`` and rendered as text between backticks, not code."""
    import ktriage.api as kt

    toolchain("triton==3.4.0,ptxas==12.4.131"), toolchain("triton==3.4.0")
    report = kt.explain(
        target="liger.embedding",
        mode="bwd",
        inputs="0",
        arch="sm_90",
        toolchains=["triton==3.4.0,ptxas==12.4.131", "triton==3.4.0"],
    )
    md = report.to_markdown()
    assert "embedding.py:71 (`grad_output,`)" in md and "\\`" not in md, md
    assert "embedding.py:71 (<code>grad_output,</code>)" in _rendered(md)


@pytest.fixture()
def hostile_results(tmp_path: Path) -> Path:
    run, cells = fake_sweep_run(
        seed=1,
        n_inputs=12,
        speed=lambda tc, i: 0.8 if tc.endswith("3.3.1") or i < 6 else 1.5,
        broken={("triton-3.4.0", 3): "error"},
    )
    run.gpu["name"] = HOSTILE
    for c in cells:
        c.key.op = f"ln {HOSTILE}"
        c.key.input_label = f"{c.key.input_label} {HOSTILE}"
        if c.key.toolchain:
            c.key.backend = f"liger {HOSTILE}"
        if c.status == "error":
            c.error = f"CUDA error {HOSTILE}"
    return write_results(tmp_path / "hostile.json", run, cells)


def test_compare_markdown_and_html_are_inert(hostile_results: Path, tmp_path: Path) -> None:
    md_file, html_file = tmp_path / "out.md", tmp_path / "out.html"
    summary = tmp_path / "summary.md"
    r = CliRunner().invoke(
        app,
        [
            "compare",
            str(hostile_results),
            "--toolchains",
            "--format",
            "markdown",
            "--baseline",
            "torch_layer_norm",
            "-o",
            str(md_file),
            "-o",
            str(html_file),
        ],
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert r.exit_code == 4, r.output  # regressions, and the error cell not compared: partial wins
    assert "Regressions" in r.stdout and "cliff" in r.stdout.lower()
    for md in (r.stdout, md_file.read_text(), summary.read_text()):
        assert_inert(md)
    html = html_file.read_text()
    for raw in ("<script>alert", "<img src=x", "<img "):
        assert raw not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html or "&lt;script&gt;" in html


def test_explain_markdown_is_inert(tmp_path: Path, toolchain: Any) -> None:
    """A spec whose kernel name carries the lot; 3.3.1 cannot compile it, so the error message is
    in the report too."""
    toolchain("triton==3.3.1"), toolchain("triton==3.4.0")
    name = f"tdesc {HOSTILE} [BN=64]".replace('"', "'")
    spec = tmp_path / "hostile.toml"
    spec.write_text(
        f'[[kernel]]\nname = "{name}"\nsource = "{KERNELS}:tensor_descriptor_kernel"\n'
        '[kernel.signature]\nx_ptr = "*fp32"\ny_ptr = "*fp32"\nM = "i32"\nN = "i32"\nBM = "constexpr"\nBN = "constexpr"\n'
        "[kernel.constexprs]\nBM = 64\nBN = 64\n"
    )
    report = tmp_path / "report.md"
    out = CliRunner().invoke(
        app, ["explain", str(spec), "--report", str(report), "-j", "2", "-t", "triton==3.3.1", "-t", "triton==3.4.0"]
    )
    assert report.exists(), out.output
    md = report.read_text()
    assert "tdesc" in md
    assert_inert(md)


def test_emphasis_in_outside_text_shows_as_written() -> None:
    """An error message's ``__init__`` and ``*x*`` rendered as a bold "init" and italics in a table cell,
    ``~~a~~`` as struck-through text. Only runs that could close emphasis are escaped: kernel names
    (``K0:_softmax_kernel``, ``liger_layer_norm``) and ``f(*args, **kwargs)`` stay as written in the raw file."""
    from markdown_it import MarkdownIt

    error = "TypeError in __init__: f(*args, **kwargs) got *x* and ~~a~~ for K0:_softmax_kernel_"
    md = f"| why |\n|---|\n| {md_text(error)} |\n"
    html = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(md)
    assert "<em>" not in html and "<strong>" not in html and "<s>" not in html and "<del>" not in html
    assert unescape(html.split("<td>")[1].split("</td>")[0]) == error
    for raw in ("liger_layer_norm x_val", "K0:_softmax_kernel@triton-3.4.0", "f(*args, **kwargs)"):
        assert md_text(raw) == raw
