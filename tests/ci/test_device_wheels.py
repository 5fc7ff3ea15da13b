"""scripts/device_wheels.sh: the wheels a GPU device call carries (.whl/) are ktriage's dependencies the device
image lacks, with their own, for the image's Python; a call that lacked one (typer 0.29's new pydantic, before
ktriage kept typer below 0.29) failed at import. Real pip downloads from the index, as the script runs them; the stale wheel of the last test is a fake
file (the check reads only its name)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "device_wheels.sh"


def _run(out: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OUT": str(out), "PYTHON": sys.executable}
    return subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, env=env, timeout=600)


def test_the_device_wheels_cover_the_dependencies_the_image_lacks(tmp_path: Path) -> None:
    out = tmp_path / "whl"
    proc = _run(out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    names = {w.name.split("-")[0].lower() for w in out.glob("*.whl")}
    # ktriage's own dependencies, the transitive ones typer and rich bring, and the no-deps one
    assert {"typer", "rich", "sqlalchemy", "msgspec", "jinja2", "apache_otava"} <= names
    assert not names & {"pydantic", "pydantic_core"}  # typer < 0.29 needs neither
    assert not names & {"numpy", "scipy", "torch", "triton", "uv"}  # the image has them, or a run never imports it
    binary = [w.name for w in out.glob("*.whl") if "-cp312-" in w.name]
    assert binary and all("x86_64" in w for w in binary)  # the image's Python and platform, not this machine's


def test_a_stale_second_version_is_refused_with_the_fix(tmp_path: Path) -> None:
    out = tmp_path / "whl"
    out.mkdir()
    (out / "typer-0.1.0-py3-none-any.whl").write_bytes(b"a fake: only its name is read")
    proc = _run(out)
    assert proc.returncode != 0
    assert "two versions of" in proc.stderr and "typer" in proc.stderr and "delete the older wheels" in proc.stderr


def test_the_script_passes_shellcheck() -> None:
    exe = shutil.which("shellcheck")
    if exe is None:
        pytest.skip("shellcheck is not installed: .ci/run installs it (apt-get install shellcheck)")
    result = subprocess.run([exe, str(SCRIPT)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
