"""A full disk while `runs import` writes (issue 27: a traceback before): simulated for real with
RLIMIT_FSIZE on the importing process (writes past the limit fail with EFBIG, as on a full disk; the
SIGXFSZ signal ignored). The import is one transaction: it fails with exit 2, says what to do, and
leaves the store readable and without a half-imported run."""

from __future__ import annotations

import json
import resource
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path


def _limited() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (60_000, 60_000))


def test_a_full_disk_on_runs_import_is_a_user_error_and_keeps_nothing(tmp_path: Path) -> None:
    from ktriage.measure.results_file import results_to_json
    from ktriage.testing import fake_sweep_run

    run, cells = fake_sweep_run(seed=1, n_inputs=40, samples=200, toolchains=("triton-3.4.0",))
    export = tmp_path / "big.json"
    export.write_text(json.dumps(results_to_json(run, cells)))
    db = tmp_path / "k.db"
    done = subprocess.run(
        [sys.executable, "-m", "ktriage", "runs", "import", str(export), "--db", f"sqlite:///{db}"],
        preexec_fn=_limited,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "error: cannot write to the store" in done.stderr and "fix: free some space" in done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    con = sqlite3.connect(db)
    assert con.execute("select count(*) from ktriage_runs").fetchone() == (0,)
    con.close()
