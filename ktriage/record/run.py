"""Run a program with the launch hook injected from outside, then compact its journal into a workload.

Why ``sitecustomize`` on PYTHONPATH: Python imports it at interpreter start in every interpreter the
command starts (``python train.py``, ``torchrun ...``, a shell script that calls python), so the
user's code is unchanged. The shim (``record_hook.SITECUSTOMIZE``) loads the hook by path and
chains to a sitecustomize the environment already had.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ktriage import __version__
from ktriage.errors import KtriageError
from ktriage.insitu import record_hook
from ktriage.record.workload import Workload, compact, journal_path, read_journal, save_workload

HOOK_FILE = Path(record_hook.__file__).resolve()


@dataclass(frozen=True)
class RecordResult:
    workload: Workload
    path: Path
    returncode: int

    @property
    def exit_note(self) -> str:
        """How the program ended, in words ("exited 0", "killed by SIGKILL")."""
        if self.returncode < 0:
            try:
                return f"killed by {signal.Signals(-self.returncode).name}"
            except ValueError:
                return f"killed by signal {-self.returncode}"
        return f"exited {self.returncode}"


def hook_environment(journal: Path, shim_dir: Path, env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the shim first on PYTHONPATH and the hook's two variables set."""
    out = dict(env)
    out["PYTHONPATH"] = os.pathsep.join([str(shim_dir), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    out[record_hook.ENV_JOURNAL] = str(journal)
    out[record_hook.ENV_HOOK] = str(HOOK_FILE)
    return out


def record(command: Sequence[str], output: Path, *, env: Mapping[str, str] | None = None,
           cwd: Path | None = None) -> RecordResult:
    """Run ``command`` under the hook; write the workload to ``output`` (its journal next to it while
    the program runs, removed once the workload is written)."""
    if not command:
        raise KtriageError("no command to record", "give it after --: ktriage record -o W.json -- python train.py")
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    journal = journal_path(output)
    journal.unlink(missing_ok=True)
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="ktriage-record-") as shim:
        (Path(shim) / "sitecustomize.py").write_text(record_hook.SITECUSTOMIZE)
        try:
            proc = subprocess.run(list(command), env=hook_environment(journal, Path(shim), env or os.environ),
                                  cwd=cwd, check=False)
        except FileNotFoundError as exc:
            raise KtriageError(f"cannot run {command[0]}: not found", "check the command after --") from exc
    recorded = {"command": list(command), "returncode": proc.returncode, "started": started,
                "seconds": round(time.time() - started, 3), "ktriage": __version__}
    if journal.exists():
        workload = compact(read_journal(journal), recorded=recorded)
    else:  # the program never started Python (or exited before the hook installed)
        workload = Workload([], [], {}, {}, recorded)
    save_workload(workload, output)
    journal.unlink(missing_ok=True)
    return RecordResult(workload, output, proc.returncode)
