"""Run a program with the launch hook injected from outside, then compact its journal into a workload.

Why ``sitecustomize`` on PYTHONPATH: Python imports it at interpreter start in every interpreter the
command starts (``python train.py``, ``torchrun ...``, a shell script that calls python), so the
user's code is unchanged. The shim (``launch_hook.SITECUSTOMIZE``) loads the hook by path and
chains to a sitecustomize the environment already had.

Process control (why each piece):

- **the folders of -o**: the missing ones are made before the program runs (the lock and the
  journal live beside ``W.json``), and removed again, while empty, when the recording is refused or
  fails, so a refusal leaves nothing behind; both while the lock is held (:func:`ktriage.record.lock.output_lock`), so
  a second recorder into the same new folder never finds it gone under its lock.
- **one writer per output**: a lock file next to ``-o`` (``W.json.lock``, an advisory ``flock``
  that dies with its holder) makes a second ``record -o W.json`` refuse at once; without it two
  programs' launches would be mixed into one file.
- **the program in its own session and process group** (``setsid``), so that a signal meant for it
  reaches every process it started (``torchrun``'s workers, a shell script's python): SIGINT, SIGTERM
  and SIGHUP sent to ``record`` (Ctrl-C reaches ``record``, the terminal's foreground group) are
  forwarded to the group; a second one kills the group. (Outside the terminal's job control, the
  program may still read the terminal: ``record`` does not read it meanwhile.) The journal the program wrote up
  to then is compacted into the workload, so Ctrl-C keeps what ran.
- **a watchdog** (a tiny process in its own session that waits for EOF on a pipe only ``record``
  holds): when ``record`` dies without cleaning up (SIGKILL, OOM killer) the pipe closes and the
  watchdog terminates the program's group, so no orphan keeps a GPU busy. The journal stays beside
  ``W.json`` and every reader takes it in its place.
- **the GPU probe**: a program that launched no kernel on a host without a CUDA driver or GPU
  could not have launched one (it often died on that): record refuses (:func:`refuse_no_gpu`) and
  writes no workload, since an empty W.json would read as "this program launches nothing". Asked
  after the program ran, not before: a program that launched kernels through a faked driver (the
  CPU tests' ``fakedriver``) is recorded as usual, and the refusal can name how the program ended.
  An interrupted run (Ctrl-C) still writes what ran, marked interrupted, with the probe's answer.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import NoReturn

from ktriage import __version__
from ktriage.errors import KtriageError
from ktriage.insitu import launch_hook
from ktriage.record.lock import output_lock
from ktriage.record.workload import Workload, compact, journal_path, read_journal, save_workload
from ktriage.schema.jsontypes import JSONObject

HOOK_FILE = Path(launch_hook.__file__).resolve()
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
GRACE_S = 10.0  # how long the watchdog lets the group end on SIGTERM before SIGKILL
PROBE_TIMEOUT_S = 20.0

# The watchdog: its stdin is a pipe whose write end only `record` holds. EOF means record is gone
# (normally: it closes the pipe once the program's group has ended). Stdlib only, no ktriage import.
WATCHDOG = """
import os, signal, sys, time
group = int(sys.argv[1]); grace = float(sys.argv[2])
signal.signal(signal.SIGINT, signal.SIG_IGN)
sys.stdin.buffer.read()
def alive():
    try:
        os.killpg(group, 0)
        return True
    except OSError:
        return False
if alive():
    try:
        os.killpg(group, signal.SIGTERM)
    except OSError:
        pass
    end = time.monotonic() + grace
    while alive() and time.monotonic() < end:
        time.sleep(0.05)
    if alive():
        try:
            os.killpg(group, signal.SIGKILL)
        except OSError:
            pass
"""

# The GPU probe, in a child so that a broken driver cannot hang or crash record (stdlib only).
GPU_PROBE = """
import ctypes, sys
try:
    lib = ctypes.CDLL("libcuda.so.1")
except OSError as exc:
    print("no CUDA driver on this host (libcuda.so.1 cannot be loaded: %s)" % exc); sys.exit()
rc = lib.cuInit(0)
if rc != 0:
    name = ctypes.c_char_p()
    lib.cuGetErrorName(rc, ctypes.byref(name))
    what = (name.value or b"").decode() or str(rc)
    print("the CUDA driver finds no usable GPU (cuInit: %s)" % what); sys.exit()
count = ctypes.c_int()
if lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
    print("the CUDA driver finds no GPU (0 devices)")
"""


@dataclass(frozen=True)
class RecordResult:
    workload: Workload
    path: Path
    returncode: int
    interrupted: int | None = None  # the signal record received and forwarded (SIGINT, SIGTERM), if any
    # why no kernel could run here (no driver, no GPU), when none was recorded and the run was
    # interrupted or some launches were not captured (else record refuses instead: refuse_no_gpu)
    gpu_problem: str | None = None

    @property
    def exit_note(self) -> str:
        """How the program ended, in words ("exited 0", "killed by SIGKILL")."""
        return ending(self.returncode)


def ending(returncode: int) -> str:
    """How a program with this return code ended, in words ("exited 0", "killed by SIGKILL")."""
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited {returncode}"


def hook_environment(journal: Path, shim_dir: Path, env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the shim first on PYTHONPATH and the hook's two variables set."""
    out = dict(env)
    out["PYTHONPATH"] = os.pathsep.join([str(shim_dir), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    out[launch_hook.ENV_JOURNAL] = str(journal)
    out[launch_hook.ENV_HOOK] = str(HOOK_FILE)
    return out


def _start_watchdog(group: int) -> subprocess.Popen[bytes] | None:
    try:
        return subprocess.Popen(
            [sys.executable, "-S", "-c", WATCHDOG, str(group), str(GRACE_S)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:  # pragma: no cover - cannot fork: record still runs, without the SIGKILL guard
        return None


class _Forwarder:
    """While installed, SIGINT/SIGTERM/SIGHUP to record go to the program's group; the second kills it."""

    def __init__(self, group: int) -> None:
        self.group = group
        self.received: int | None = None
        self._old: dict[int, object] = {}

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        again = self.received is not None
        self.received = self.received or signum
        try:
            os.killpg(self.group, signal.SIGKILL if again else signum)
        except OSError:
            pass

    def __enter__(self) -> _Forwarder:
        for sig in FORWARDED:
            try:
                self._old[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread (a test calling record from a thread): no forwarding
                pass
        return self

    def __exit__(self, *_exc: object) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)  # type: ignore[arg-type]


def gpu_problem(env: Mapping[str, str] | None = None) -> str | None:
    """Why kernels cannot run on this host (no CUDA driver, no GPU), or None when the driver sees a GPU
    (or the probe could not tell). Asked in a child process, bounded by :data:`PROBE_TIMEOUT_S`."""
    try:
        done = subprocess.run(
            [sys.executable, "-S", "-c", GPU_PROBE],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            env=dict(env) if env is not None else None,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None


def record(
    command: Sequence[str], output: Path, *, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> RecordResult:
    """Run ``command`` under the hook; write the workload to ``output`` (its journal next to it while
    the program runs, removed once the workload is written). The caller checks that ``output`` can be
    written before (``ktriage.api.paths.check_writable``; ``ktriage.api.record`` does)."""
    if not command:
        raise KtriageError("no command to record", "give it after --: ktriage record -o W.json -- python train.py")
    output = Path(output)
    with output_lock(output):
        return _record_locked(command, output, env=env, cwd=cwd)


def _record_locked(
    command: Sequence[str], output: Path, *, env: Mapping[str, str] | None, cwd: Path | None
) -> RecordResult:
    journal = journal_path(output)
    journal.unlink(missing_ok=True)
    started = time.time()
    environ = env if env is not None else os.environ
    with tempfile.TemporaryDirectory(prefix="ktriage-record-") as shim:
        (Path(shim) / "sitecustomize.py").write_text(launch_hook.SITECUSTOMIZE)
        try:
            proc = subprocess.Popen(
                list(command), env=hook_environment(journal, Path(shim), environ), cwd=cwd, start_new_session=True
            )
        except FileNotFoundError as exc:
            raise KtriageError(f"cannot run {command[0]}: not found", "check the command after --") from exc
        except PermissionError as exc:
            raise KtriageError(
                f"cannot run {command[0]}: {exc.strerror} (not an executable file)",
                "check the command after -- (a program, or python SCRIPT)",
            ) from exc
        except OSError as exc:
            raise KtriageError(f"cannot run {command[0]}: {exc.strerror or exc}", "check the command after --") from exc
        watchdog = _start_watchdog(proc.pid)
        with _Forwarder(proc.pid) as forwarder:
            try:
                returncode = proc.wait()
            finally:
                if proc.poll() is None:  # record itself failed while waiting: never leave the program behind
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except OSError:
                        pass
                    proc.wait()
                if watchdog is not None:  # EOF: the watchdog ends what is left of the group, then exits
                    assert watchdog.stdin is not None
                    watchdog.stdin.close()
                    watchdog.wait()
    recorded: JSONObject = {
        "command": list(command),
        "returncode": returncode,
        "started": started,
        "seconds": round(time.time() - started, 3),
        "ktriage": __version__,
    }
    if forwarder.received is not None:
        recorded["interrupted"] = signal.Signals(forwarder.received).name
    if journal.exists():
        workload = compact(read_journal(journal), recorded=recorded)
    else:  # the program never started Python (or exited before the hook installed)
        workload = Workload([], [], {}, {}, recorded)
    problem = gpu_problem(environ) if not workload.kernels else None
    # nothing launched, and nothing could have been. An interrupted run keeps record's promise (the
    # workload of what ran until Ctrl-C, exit 130), its empty workload marked interrupted.
    if problem and not workload.not_captured and forwarder.received is None:
        journal.unlink(missing_ok=True)
        refuse_no_gpu(problem, command, output, returncode)
    try:
        save_workload(workload, output)
    except OSError as exc:  # a full disk: the journal stays, and every reader of W.json takes it
        raise KtriageError(
            f"cannot write the workload {output}: {exc.strerror or exc}",
            f"free some space; the journal {journal} holds the recording (explain or "
            "`workload show` read it in place of W.json)",
        ) from exc
    journal.unlink(missing_ok=True)
    return RecordResult(workload, output, returncode, forwarder.received, problem)


def refuse_no_gpu(problem: str, command: Sequence[str], output: Path, returncode: int) -> NoReturn:
    """The refusal of a recording that holds no launch on a host without a usable GPU: the program
    could not have launched a Triton kernel here, so an empty workload would be no result, only a
    file that reads as "this program launches nothing". ``output`` is left as it was (a workload
    recorded earlier there is kept)."""
    import shlex

    kept = f"{output} is left as it was" if output.exists() else f"{output} was not created"
    raise KtriageError(
        f"no CUDA GPU here, so the program launched no Triton kernel (it {ending(returncode)}); {problem}; "
        f"nothing was recorded and no workload was written ({kept})",
        f"record on the GPU machine (ktriage record -o {output.name} -- {shlex.join(command)}), then copy "
        f"{output.name} here and explain it offline (ktriage explain {output.name} -t OLD -t NEW)",
    )
