"""`ktriage toolchain add|list|remove` as an administrator meets them after a failure: several specs of
which some fail, the virtualenv a failed or killed build left, a ktriage killed while uv builds. Real
uv, the real CLI entry point (``run_cli``), real processes and signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ktriage.cli import exit_codes
from ktriage.toolchain.installer import run_uv
from ktriage.toolchain.manager import find_toolchain
from tests.conftest import RunCli

REPO = Path(__file__).resolve().parents[2]


def test_add_tries_every_spec_and_keeps_what_built(ktriage_home: Path, run_cli: RunCli) -> None:
    """`toolchain add A B C` stopped at A's error: B was never tried. Now each spec is tried, each
    failure is its own error line with its fix, what built is kept, and the exit code says one failed."""
    res = run_cli(["toolchain", "add", "triton==2.0.0", "triton==3.4.0", "triton==3.1.0"])
    assert res.exit_code == exit_codes.USAGE, res.output
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error: ")]
    assert [ln.split(":", 2)[1].strip() for ln in errors] == ["triton==2.0.0", "triton==3.1.0"], res.stderr
    assert res.stderr.count("fix: pick Triton 3.2 or newer") == 2, res.stderr
    assert "2 of 3 toolchains failed: triton==2.0.0, triton==3.1.0" in res.err_text
    assert "ready triton-3.4.0.ptxas-12.8.93." in res.stdout
    assert find_toolchain("triton==3.4.0") is not None


@pytest.mark.network  # the ptxas release is asked of the package index (it has none such)
def test_a_failed_builds_virtualenv_is_listed_and_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: RunCli
) -> None:
    """A build that failed after making its Triton's virtualenv (here: a ptxas release that does not
    exist) left ~540 MB under toolchains/envs/ that `toolchain list` did not show and no command removed;
    so did a killed build (a virtualenv without frontend.json). `list` now names them and `toolchain
    remove` takes the failed spec or the listed name."""
    home = tmp_path / "home"
    monkeypatch.setenv("KTRIAGE_HOME", str(home))
    failed = run_cli(["toolchain", "add", "triton==3.4.0,ptxas==12.99.1"])
    assert failed.exit_code == exit_codes.USAGE, failed.output
    envs = home / "toolchains" / "envs"
    assert (envs / "triton-3.4.0" / "frontend.json").is_file()  # the failure this test is about
    killed = envs / "triton-3.5.1"  # what a build killed after `uv venv` leaves: no frontend.json
    assert run_uv(["venv", "--quiet", str(killed)], what="make a virtualenv").returncode == 0

    listed = run_cli(["toolchain", "list"])
    assert listed.exit_code == exit_codes.OK, listed.output
    text = " ".join(listed.stdout.split())
    assert "no toolchains yet" in text
    assert "leftover: envs/triton-3.4.0 (" in text and "ktriage toolchain remove envs/triton-3.4.0 removes it" in text
    assert "leftover: envs/triton-3.5.1 (" in text and "incomplete: it has no frontend.json" in text
    md = run_cli(["toolchain", "list", "--format", "markdown"])
    assert "**leftover:** envs/triton-3.4.0" in md.stdout
    as_json = run_cli(["toolchain", "list", "--format", "json"])  # stdout stays the list scripts parse
    assert as_json.exit_code == exit_codes.OK and json.loads(as_json.stdout) == []
    assert "leftover: envs/triton-3.4.0 (" in as_json.err_text

    by_spec = run_cli(["toolchain", "remove", "triton==3.4.0,ptxas==12.99.1"])
    assert by_spec.exit_code == exit_codes.OK, by_spec.output
    assert "removed envs/triton-3.4.0" in by_spec.stdout and not (envs / "triton-3.4.0").exists()
    by_name = run_cli(["toolchain", "remove", "envs/triton-3.5.1"])
    assert by_name.exit_code == exit_codes.OK, by_name.output
    assert not killed.exists()
    assert "leftover" not in run_cli(["toolchain", "list"]).stdout
    again = run_cli(["toolchain", "remove", "envs/triton-3.5.1"])
    assert again.exit_code == exit_codes.USAGE and "is no leftover virtualenv" in again.problem


def test_a_virtualenv_a_toolchain_uses_is_no_leftover(toolchain, run_cli: RunCli) -> None:
    tc = toolchain("triton==3.4.0")
    assert tc.env_root is not None
    name = f"envs/{tc.env_root.name}"
    assert f"leftover: {name} " not in " ".join(run_cli(["toolchain", "list"]).stdout.split())
    res = run_cli(["toolchain", "remove", name])
    assert res.exit_code == exit_codes.USAGE and "is no leftover virtualenv" in res.problem
    assert tc.env_root.is_dir()


# A ktriage process that runs a real uv that waits (reading its requirements from a FIFO no one writes).
_PARENT = """
import sys
from ktriage.toolchain.installer import run_uv
run_uv(["pip", "install", "--python", sys.argv[1], "-r", sys.argv[2]], what="wait on a FIFO")
"""


def _children(pid: int) -> list[tuple[int, str]]:
    """(pid, name) of the live processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            name, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
            if int(rest[1]) == pid and rest[0] != "Z":
                found.append((int(entry.name), name))
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :].split()[0] != "Z"  # a zombie is dead, waiting to be reaped


def _wait_until(check: Callable[[], object], what: str, deadline_s: float = 60.0) -> None:
    end = time.monotonic() + deadline_s
    while not check():
        if time.monotonic() > end:
            pytest.fail(f"gave up waiting: {what}")
        time.sleep(0.05)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_uv_dies_with_a_ktriage_killed_by_sigkill(tmp_path: Path) -> None:
    """SIGKILL of ktriage during a build left its uv running; the next build, its lock free, wiped the
    virtualenv folder while the orphaned uv still wrote into it. uv now gets SIGKILL with its parent."""
    venv = tmp_path / "venv"
    assert run_uv(["venv", "--quiet", str(venv)], what="make a virtualenv").returncode == 0
    fifo = tmp_path / "requirements.txt"
    os.mkfifo(fifo)
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, str(venv), str(fifo)], cwd=REPO)
    uv: list[int] = []
    try:
        _wait_until(lambda: uv.extend(p for p, name in _children(parent.pid) if name == "uv") or uv, "uv to start")
        assert parent.poll() is None
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        _wait_until(lambda: not _alive(uv[0]), f"uv (pid {uv[0]}) to die with its parent")
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        for pid in uv:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)  # the uv this test started, left running by a broken fix
