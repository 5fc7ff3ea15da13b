"""Two user-facing fixes of issue 26, through the real ``main(argv)``: ``ktriage --version``, and an
output option named after its format (``--json``, ``--markdown``, ``--html``, ``--output-json``) writes
that format whatever the path's suffix (``--json PATH`` used to refuse a path without ``.json``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import ktriage
from ktriage.cli import exit_codes
from ktriage.cli.app import main
from ktriage.cli.options import check_outputs, merge_outputs, output_suffix, write_outputs
from ktriage.errors import KtriageError
from ktriage.measure.results_file import write_results
from ktriage.testing import fake_sweep_run


def test_version_prints_the_version_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == exit_codes.OK
    assert capsys.readouterr().out == f"ktriage {ktriage.__version__}\n"


def test_version_as_a_process() -> None:
    proc = subprocess.run([sys.executable, "-m", "ktriage", "--version"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == f"ktriage {ktriage.__version__}", proc.stderr


def test_a_format_named_option_picks_the_writer_not_the_suffix(tmp_path: Path) -> None:
    """What bisect's ``--json`` and ``--markdown`` go through (bisect itself needs a git history and a
    toolchain: tests/cli/test_bisect.py runs it with .json/.md names)."""
    outputs = merge_outputs(None, md=tmp_path / "report.txt", json=tmp_path / "result")
    assert [output_suffix(p) for p in outputs] == [".md", ".json"]
    check_outputs(outputs, (".md", ".json"))  # refused before the fix: no writer for ''
    write_outputs(outputs, {".md": lambda: "# title\n", ".json": lambda: '{"a": 1}\n'})
    assert (tmp_path / "report.txt").read_text() == "# title\n"
    assert json.loads((tmp_path / "result").read_text()) == {"a": 1}
    # -o still goes by suffix: a name without one is refused with the fix
    with pytest.raises(KtriageError, match="no writer"):
        check_outputs(merge_outputs([tmp_path / "plain"]), (".md", ".json"))


def test_compare_markdown_and_html_options_whatever_the_suffix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, cells = fake_sweep_run(seed=2, toolchains=("triton-3.3.1",))
    old = write_results(tmp_path / "old.json", run, cells)
    run, cells = fake_sweep_run(seed=3, toolchains=("triton-3.4.0",), speed=lambda tc, i: 0.8 if i < 20 else 1.2)
    new = write_results(tmp_path / "new.json", run, cells)
    md, html = tmp_path / "summary.txt", tmp_path / "page"
    code = main(["compare", str(old), str(new), "--markdown", str(md), "--html", str(html)])
    assert code == exit_codes.FINDING, capsys.readouterr()
    assert "Regressions" in md.read_text() and "<svg" in html.read_text()
