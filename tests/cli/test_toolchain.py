"""`ktriage toolchain add|list|show|remove` through typer's CliRunner on the real app and real wheels."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ktriage.cli.app import app
from ktriage.errors import KtriageError

pytestmark = pytest.mark.slow

runner = CliRunner()


def test_add_list_show(ktriage_home: Path) -> None:
    added = runner.invoke(app, ["toolchain", "add", "triton==3.4.0", "triton==3.4.0,ptxas==12.4.131"])
    assert added.exit_code == 0, added.output
    assert "triton-3.4.0.ptxas-12.8.93." in added.output and "triton-3.4.0.ptxas-12.4.131." in added.output

    listed = runner.invoke(app, ["toolchain", "list", "--format", "json"])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.output)
    ids = {r["id"] for r in rows}
    assert any(i.startswith("triton-3.4.0.ptxas-12.4.131.") for i in ids)
    assert all(r["size_bytes"] > 100_000_000 for r in rows)  # a Triton venv is hundreds of MB

    table = runner.invoke(app, ["toolchain", "list"], env={"COLUMNS": "200"})
    assert table.exit_code == 0 and "bundled" in table.output
    assert next(i for i in ids if i.startswith("triton-3.4.0.ptxas-12.4.131.")) in table.output

    shown = runner.invoke(app, ["toolchain", "show", "triton==3.4.0,ptxas==12.4.131", "--format", "json"])
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.output)
    assert data["ptxas_version"] == "12.4.131" and data["triton_version"] == "3.4.0"
    assert "V12.4.131" in data["ptxas_version_text"] and data["ptxas_is_bundled"] is False

    text = runner.invoke(app, ["toolchain", "show", data["id"]])
    assert text.exit_code == 0 and "ptxas_version_text" in text.output


def test_show_unknown_is_a_user_error(ktriage_home: Path) -> None:
    res = runner.invoke(app, ["toolchain", "show", "no-such-toolchain"])
    assert res.exit_code != 0
    assert isinstance(res.exception, KtriageError)
    assert res.exception.fix is not None and "ktriage toolchain add" in res.exception.fix


def test_cli_prints_errors_without_traceback(ktriage_home: Path) -> None:
    """Through the real entry point: one error line plus the fix, exit 2, no traceback."""
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from ktriage.cli.app import main; sys.exit(main())", "toolchain", "add", "triton==9.9.9"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "triton==9.9.9 is not on the package index" in proc.stderr
    assert "fix:" in proc.stderr and "3.4.0" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_remove_collects_unused_venv_and_ptxas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KTRIAGE_HOME", str(tmp_path))  # a private home: removal must not touch the shared one
    res = runner.invoke(app, ["toolchain", "add", "triton==3.3.1,ptxas==12.4.131", "triton==3.3.1"])
    assert res.exit_code == 0, res.output
    venv = tmp_path / "toolchains" / "envs" / "triton-3.3.1"
    release = tmp_path / "ptxas" / "12.4.131"
    assert venv.is_dir() and release.is_dir()

    gone = runner.invoke(app, ["toolchain", "remove", "triton==3.3.1,ptxas==12.4.131"])
    assert gone.exit_code == 0, gone.output
    assert not release.exists()  # nobody else uses ptxas 12.4.131
    assert venv.is_dir()  # triton==3.3.1 still uses the venv

    gone = runner.invoke(app, ["toolchain", "remove", "triton==3.3.1"])
    assert gone.exit_code == 0, gone.output
    assert not venv.exists()
    listed = runner.invoke(app, ["toolchain", "list", "--format", "json"])
    assert json.loads(listed.output) == []
