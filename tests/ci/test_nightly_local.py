"""examples/ci/nightly_local.sh end to end on the CPU: a SQLite store filled with `ktriage runs import`,
the last-good lookup, the (guarded) triage step, the history gate and the bisect it would run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_nightly_local_script_gates_on_a_recent_step(tmp_path: Path) -> None:
    ktriage = Path(sys.executable).parent / "ktriage"
    env = dict(
        os.environ,
        KTRIAGE=str(ktriage),
        PYTHON=sys.executable,
        N_RUNS="12",
        STEP_AT="10",
        RECENT="3",
        PYTHONPATH=str(REPO),
        KTRIAGE_HOME=str(tmp_path / "home"),
    )
    result = subprocess.run(
        ["bash", str(REPO / "examples" / "ci" / "nightly_local.sh"), str(tmp_path / "work")],
        capture_output=True,
        text=True,
        env=env,
        timeout=400,
    )
    assert result.returncode == 1, result.stdout + result.stderr  # the gate fired: a change point at run 10 of 12
    reports = tmp_path / "work" / "reports"
    doc = json.loads((reports / "history.json").read_text())
    (series,) = [s for s in doc["series"] if s["input_id"] == 7]
    (cp,) = series["change_points"]
    assert cp["index"] == 10 and cp["recent"]
    assert (reports / "history.html").read_text().count("<svg") == 2  # one chart per input
    summary = (tmp_path / "work" / "summary.md").read_text()
    assert "ktriage bisect --source pypi:triton --good 3.3.1 --bad 3.4.0" in summary
    assert "# ktriage history: layer_norm liger_layer_norm" in summary
