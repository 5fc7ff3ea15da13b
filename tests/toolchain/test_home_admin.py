"""What a user meets administering toolchains in a home: a release this machine cannot fetch, a Triton
too old to build, an install killed half-way, a home that cannot be written. Real uv, real pip index
queries, the real CLI entry point; each case in a private home so that the shared test home is not
touched (the uv cache makes a rebuild there cheap)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ktriage.cli import exit_codes
from ktriage.errors import ToolchainError
from ktriage.toolchain.manager import ensure_toolchain
from ktriage.toolchain.releases import ensure_ptxas_release

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.network  # asks the package index with pip; uv is pointed at an empty one
def test_a_release_the_index_lists_but_uv_cannot_fetch_is_not_called_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node whose uv reaches only a mirror without the release (here: an empty local index) was told
    "nvidia-cuda-nvcc-cu12==12.5.82 is not on the package index", and the fix offered ptxas==12.5.82 among
    the versions to pick. The index (pip's answer) lists it: the problem is this machine's access."""
    empty = tmp_path / "empty-index"
    empty.mkdir()
    monkeypatch.setenv("KTRIAGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("UV_INDEX_URL", empty.as_uri())
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))  # nothing cached: the mirror is all uv has
    with pytest.raises(ToolchainError) as info:
        ensure_ptxas_release("12.5.82")
    problem, fix = info.value.problem, info.value.fix or ""
    assert "not on the package index" not in problem, problem
    assert problem.startswith(
        "ptxas==12.5.82: nvidia-cuda-nvcc-cu12==12.5.82: the package index lists it, but uv could not install it "
        "on this machine ("
    ), problem
    assert "not found in the package registry" in problem  # uv's own reason, on the same line
    assert "\n" not in problem and "UV_INDEX_URL" in fix
    assert "ptxas==12.5.82" not in fix, fix  # never offered as the one to pick
    assert "ptxas==12." in fix  # another release is
    assert not (tmp_path / "home" / "ptxas" / "12.5.82").exists()


def test_a_triton_older_than_3_2_is_refused_before_a_virtualenv_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """triton==2.0.0 installed a 4 GB virtualenv (it requires torch), then failed its probe with "remove and
    re-add the toolchain", a toolchain that was never recorded; the virtualenv stayed, listed nowhere.
    Now the version is refused first: no network, nothing written under envs/."""
    monkeypatch.setenv("KTRIAGE_HOME", str(tmp_path))
    monkeypatch.setenv("UV_OFFLINE", "1")  # a build would fail loudly: none may start
    for old in ("2.0.0", "3.1.0"):
        with pytest.raises(ToolchainError) as info:
            ensure_toolchain(f"triton=={old}")
        assert info.value.problem == (
            f"Triton {old} is older than ktriage supports: ktriage compiles with Triton 3.2 and newer"
        )
        assert "remove" not in (info.value.fix or "")
    envs = tmp_path / "toolchains" / "envs"
    assert not envs.exists() or [p.name for p in envs.iterdir() if not p.name.startswith(".")] == []


@pytest.mark.network  # installs a ptxas release in a fresh home (from uv's cache when warm)
def test_a_killed_ptxas_install_leaves_no_staging_folder_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``toolchain add ...,ptxas==X`` killed (SIGKILL) while uv downloaded the nvcc wheel left
    ``ptxas/.X.staging-<pid>/`` (tens of MB, up to the whole wheel), named by a dead pid and removed by no
    later command. The next install of that release removes it (it holds the release's lock)."""
    monkeypatch.setenv("KTRIAGE_HOME", str(tmp_path))
    dead = tmp_path / "ptxas" / ".12.4.131.staging-999999999" / "wheel" / "nvidia"
    dead.mkdir(parents=True)
    (dead / "half-written").write_bytes(b"\0" * 4096)
    exe = ensure_ptxas_release("12.4.131")
    assert exe.is_file()
    assert [p.name for p in (tmp_path / "ptxas").iterdir() if "staging" in p.name] == []


def _read_only(home: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run ``ktriage ARGV`` with ``home`` read-only: a read-only bind mount in a private mount namespace
    for root (who writes through permission bits), the permission bits otherwise."""
    env = {**os.environ, "KTRIAGE_HOME": str(home), "KTRIAGE_COLUMNS": "400"}
    cmd = [sys.executable, "-m", "ktriage", *argv]
    if os.geteuid() != 0:
        for path in [home, *home.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)
        try:
            return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
        finally:
            for path in [home, *home.rglob("*")]:
                path.chmod(path.stat().st_mode | 0o200)
    if shutil.which("unshare") is None:
        pytest.skip("root without unshare(1): no way to make a read-only folder here")
    script = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" "$0" && exec "$@"'
    proc = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, str(home), *cmd], capture_output=True, text=True, env=env, cwd=REPO
    )
    if "mount:" in proc.stderr or "unshare:" in proc.stderr:
        pytest.skip(f"cannot make a read-only mount here: {proc.stderr.strip()[:200]}")
    return proc


def test_a_read_only_home_is_a_one_line_error_not_an_internal_one(tmp_path: Path) -> None:
    """`toolchain add` / `remove` on a home that cannot be written failed taking their file lock, reported as
    "internal error: OSError: [Errno 30] Read-only file system ... this is a bug in ktriage"."""
    home = tmp_path / "home"
    for sub in ("toolchains/envs", "ptxas", "artifacts"):
        (home / sub).mkdir(parents=True)
    proc = _read_only(home, ["toolchain", "add", "triton==3.4.0,ptxas==12.4.131"])
    assert proc.returncode == exit_codes.USAGE, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("error: cannot write to the ktriage home at "), proc.stderr
    assert "KTRIAGE_HOME" in lines[1] and lines[1].startswith("fix: ")
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
