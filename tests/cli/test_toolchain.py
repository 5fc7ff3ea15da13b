"""`ktriage toolchain add|list|show|remove` through the real ``main(argv)`` and real wheels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ktriage.cli import exit_codes
from tests.conftest import RunCli

pytestmark = pytest.mark.slow


def test_add_list_show(ktriage_home: Path, run_cli: RunCli) -> None:
    added = run_cli(["toolchain", "add", "triton==3.4.0", "triton==3.4.0,ptxas==12.4.131"])
    assert added.exit_code == exit_codes.OK, added.output
    assert "triton-3.4.0.ptxas-12.8.93." in added.output and "triton-3.4.0.ptxas-12.4.131." in added.output

    listed = run_cli(["toolchain", "list", "--format", "json"])
    assert listed.exit_code == exit_codes.OK, listed.output
    rows = json.loads(listed.stdout)
    ids = {r["id"] for r in rows}
    assert any(i.startswith("triton-3.4.0.ptxas-12.4.131.") for i in ids)
    assert all(r["size_bytes"] > 100_000_000 for r in rows)  # a Triton venv is hundreds of MB

    table = run_cli(["toolchain", "list"], env={"COLUMNS": "200", "KTRIAGE_COLUMNS": "200"})
    assert table.exit_code == exit_codes.OK and "bundled" in table.output
    assert next(i for i in ids if i.startswith("triton-3.4.0.ptxas-12.4.131.")) in table.output

    shown = run_cli(["toolchain", "show", "triton==3.4.0,ptxas==12.4.131", "--format", "json"])
    assert shown.exit_code == exit_codes.OK, shown.output
    data = json.loads(shown.stdout)
    assert data["ptxas_version"] == "12.4.131" and data["triton_version"] == "3.4.0"
    assert "V12.4.131" in data["ptxas_version_text"] and data["ptxas_is_bundled"] is False

    text = run_cli(["toolchain", "show", data["id"]])
    assert text.exit_code == exit_codes.OK and "ptxas_version_text" in text.output


def test_show_unknown_is_a_user_error(ktriage_home: Path, run_cli: RunCli) -> None:
    res = run_cli(["toolchain", "show", "no-such-toolchain"])
    assert res.exit_code == exit_codes.USAGE, res.output  # a KtriageError, printed with its fix
    assert res.fix is not None and "ktriage toolchain add" in res.fix


def test_show_an_ambiguous_prefix_lists_the_ids_it_starts(toolchain, run_cli: RunCli) -> None:
    ids = {toolchain(spec).id for spec in ("triton==3.4.0", "triton==3.4.0,ptxas==12.4.131")}
    res = run_cli(["toolchain", "show", "triton-3.4"])
    assert res.exit_code == exit_codes.USAGE, res.output
    assert "'triton-3.4' is the start of" in res.problem and all(i in res.problem for i in ids)
    assert res.fix is not None and "longer prefix" in res.fix


def test_show_a_spec_with_an_unknown_key_says_so(ktriage_home: Path, run_cli: RunCli) -> None:
    res = run_cli(["toolchain", "show", "triton==3.4.0,foo=bar"])
    assert res.exit_code == exit_codes.USAGE, res.output
    assert "unknown toolchain spec key 'foo'" in res.problem  # not "build it with toolchain add"
    assert res.fix is not None and "known keys" in res.fix


def test_two_spellings_of_one_toolchain_are_named_both(toolchain, run_cli: RunCli) -> None:
    tc = toolchain("triton==3.4.0")
    res = run_cli(["explain", "tutorial.vector_add", "-t", "triton==3.4.0", "-t", "triton==3.4"])
    assert res.exit_code == exit_codes.USAGE, res.output
    assert res.problem == f"toolchains triton==3.4.0 and triton==3.4 resolve to the same toolchain, {tc.id}"
    from ktriage.toolchain.manager import ensure_toolchain

    assert ensure_toolchain("triton==3.4").env_root == tc.env_root  # the same virtualenv, not a second one


@pytest.mark.network  # asks the package index
def test_cli_prints_errors_without_traceback(ktriage_home: Path, run_cli: RunCli) -> None:
    """Through the real entry point: one error line plus the fix, exit 2, no traceback."""
    res = run_cli(["toolchain", "add", "triton==9.9.9"])
    assert res.exit_code == exit_codes.USAGE, res.output
    assert "triton==9.9.9 is not on the package index" in res.problem
    assert res.fix is not None and "3.4.0" in res.fix
    assert "Traceback" not in res.stderr


@pytest.mark.network  # builds two toolchains in a fresh home: installs from PyPI
def test_remove_collects_unused_venv_and_ptxas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: RunCli
) -> None:
    monkeypatch.setenv("KTRIAGE_HOME", str(tmp_path))  # a private home: removal must not touch the shared one
    res = run_cli(["toolchain", "add", "triton==3.3.1,ptxas==12.4.131", "triton==3.3.1"])
    assert res.exit_code == exit_codes.OK, res.output
    venv = tmp_path / "toolchains" / "envs" / "triton-3.3.1"
    release = tmp_path / "ptxas" / "12.4.131"
    assert venv.is_dir() and release.is_dir()

    gone = run_cli(["toolchain", "remove", "triton==3.3.1,ptxas==12.4.131"])
    assert gone.exit_code == exit_codes.OK, gone.output
    assert not release.exists()  # nobody else uses ptxas 12.4.131
    assert venv.is_dir()  # triton==3.3.1 still uses the venv

    gone = run_cli(["toolchain", "remove", "triton==3.3.1"])
    assert gone.exit_code == exit_codes.OK, gone.output
    assert not venv.exists()
    listed = run_cli(["toolchain", "list", "--format", "json"])
    assert json.loads(listed.stdout) == []
