"""A toolchain whose frontend virtualenv is there but incomplete: its record (``toolchain.json``) is
written once its virtualenv was whole, but the virtualenv may later lose its ``frontend.json`` (a
rebuild killed after ``uv venv``, before the marker) or files. `toolchain list` listed it as if it
worked and `toolchain show` said the virtualenv "is gone" while it was there. Both now say what is
wrong with it and the `toolchain add` that builds it again.

The state is made as an interrupted build leaves it: a real ``uv venv`` (the build's first step), no
Triton installed in it and no ``frontend.json``; the record is the one ``ensure_toolchain`` writes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ktriage.cli import exit_codes
from ktriage.toolchain.installer import uv_bin, write_json_atomic
from ktriage.toolchain.manager import MARKER, Toolchain
from ktriage.toolchain.spec import parse_toolchain
from tests.conftest import RunCli


def _interrupted_toolchain(home: Path) -> Toolchain:
    env = home / "toolchains" / "envs" / "triton-3.4.0"
    subprocess.run([uv_bin(), "venv", "--quiet", "--python", sys.executable, str(env)], check=True)
    tools = env / "lib" / "python3" / "site-packages" / "triton" / "backends" / "nvidia" / "bin"
    tc = Toolchain(
        spec=parse_toolchain("triton==3.4.0"),
        id="triton-3.4.0.ptxas-12.8.93.da4345e0",
        root=home / "toolchains" / "triton-3.4.0.ptxas-12.8.93.da4345e0",
        python=env / "bin" / "python",
        triton_version="3.4.0",
        ptxas=tools / "ptxas",
        ptxas_version="12.8.93",
        ptxas_version_text="Cuda compilation tools, release 12.8, V12.8.93",
        ptxas_options=(),
        ptxas_is_bundled=True,
        cuobjdump=tools / "cuobjdump",
        nvdisasm=tools / "nvdisasm",
        bundled_ptxas=tools / "ptxas",
        env_root=env,
    )
    write_json_atomic(tc.root / MARKER, tc.to_json())
    return tc


def test_a_toolchain_with_an_incomplete_virtualenv_is_named_with_the_rebuild(run_cli: RunCli, tmp_path: Path) -> None:
    home = tmp_path / "home"
    tc = _interrupted_toolchain(home)
    env = {"KTRIAGE_HOME": str(home)}
    said = f"its frontend virtualenv {tc.env_root} is incomplete: it has no frontend.json (its build was interrupted)"

    listed = run_cli(["toolchain", "list", "--format", "json"], env=env)
    assert listed.exit_code == exit_codes.OK, listed.output
    (row,) = json.loads(listed.stdout)
    assert row["id"] == tc.id and row["problem"] == said

    table = run_cli(["toolchain", "list"], env=env)
    assert table.exit_code == exit_codes.OK, table.output
    line = f"not usable: {tc.id}: {said}; ktriage toolchain add 'triton==3.4.0' builds it again"
    assert line in " ".join(table.stdout.split()), table.output

    shown = run_cli(["toolchain", "show", tc.id], env=env)
    assert shown.exit_code == exit_codes.USAGE, shown.output
    assert shown.problem == f"toolchain {tc.id}: {said}", shown.err_text
    assert "is gone" not in shown.err_text
    assert shown.fix is not None and shown.fix.startswith("build it again: ktriage toolchain add 'triton==3.4.0'")
