"""``ktriage.api.record(command=[...], output=...) -> RecordReport``: run a program with the launch
hook injected and write every distinct Triton kernel it launched into a workload file.

Why an entry point: the checks on the output (a ``.json`` name, writable, not another kind of
file that would be overwritten) and the summary's facts (the inputs bench could not replay) were
made by the CLI; a CI script that records a workload now gets them from one call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ktriage.api._args import entry_point, path_or_name, texts
from ktriage.api.paths import check_replaceable, check_writable
from ktriage.brief import brief
from ktriage.errors import KtriageError, option, worded
from ktriage.record.run import RecordResult
from ktriage.record.workload import WORKLOAD_KIND, Workload
from ktriage.workload.recorded.bundle import BenchBlocker, bench_blockers


@dataclass(frozen=True)
class RecordReport:
    """What a recording produced: the run (``result``: the workload, its path, how the program
    ended) and the recorded inputs ``bench`` could not replay (said now rather than on the GPU host)."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    result: RecordResult
    blockers: list[BenchBlocker]

    @property
    def workload(self) -> Workload:
        return self.result.workload

    @property
    def path(self) -> Path:
        return self.result.path

    @property
    def complete(self) -> bool:
        """The program exited 0 and was not interrupted: everything it would launch was recorded."""
        return self.result.returncode == 0 and self.result.interrupted is None


@entry_point
def record(
    *,
    command: Sequence[str],
    output: str | Path,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
) -> RecordReport:
    """Run ``command`` (e.g. ``["python", "train.py"]``) with the hook and write the workload to
    ``output`` (``W.json``; docs/record.md). A ``command`` given as one str is split into words as a
    POSIX shell splits them (``shlex.split``: ``"python -c 'import x'"`` is three words) and run
    without a shell: pipes, redirections and ``$VARS`` need ``["bash", "-c", "..."]``.
    ``env``: the program's whole environment, a mapping (default: this process's); ``cwd``: the
    folder it runs in (default: this process's), which must exist.

    Raises :class:`~ktriage.errors.KtriageError` for a bad argument or output before the program
    starts, and after it when it launched nothing on a host without a usable CUDA GPU (no workload is
    written: an empty one would read as a recording). The program failing is not an error: see
    :attr:`RecordReport.complete` (what it launched is written)."""
    from ktriage.record.run import record as run_record

    argv = _command(command)
    _check_env(env)
    folder = Path(path_or_name(cwd, "cwd", example="/path/to/project")) if cwd is not None else None
    if folder is not None and not folder.is_dir():
        raise KtriageError(
            f"cwd {folder} is {'not a folder' if folder.exists() else 'missing'}: the program cannot run in it",
            "pass the folder the program runs in (an existing one), or leave cwd out",
        )
    path = Path(path_or_name(output, "output", "-o", example="W.json"))
    if path.suffix.lower() != ".json":
        raise KtriageError(
            worded(lambda o: f"{o('output', '-o', str(path))}: a workload file ends in .json"),
            worded(lambda o: f"write it as {o('output', '-o', 'W.json')}"),
        )
    check_writable(path, option("output", "-o"))
    check_replaceable(path, option("output", "-o"), WORKLOAD_KIND.encode(), "a ktriage workload")
    result = run_record(argv, path, env=env, cwd=folder)
    return RecordReport(result=result, blockers=bench_blockers(result.workload))


def _command(command: object) -> list[str]:
    """The program's argv: a sequence of str, or one str split as a shell splits words."""
    import shlex

    if command is None:  # not "empty": say what was given
        raise KtriageError("command is None: there is no program to run", "pass e.g. command=['python', 'train.py']")
    if isinstance(command, str):
        try:
            argv = shlex.split(command)
        except ValueError as exc:  # an unclosed quote
            raise KtriageError(
                f"command {command!r} cannot be split into words: {exc}", "close the quote, or pass a list"
            ) from exc
    else:
        argv = list(texts(command, "command", "COMMAND after --"))
    if not argv:
        raise KtriageError("command is empty: there is no program to run", "pass e.g. command=['python', 'train.py']")
    return argv


def _check_env(env: object) -> None:
    """``env`` is the program's whole environment: a mapping of str to str (``"A=1"`` is not one)."""
    if env is None:
        return
    if not isinstance(env, Mapping):
        raise KtriageError(
            f"env is a {type(env).__name__}, not a mapping: it is the program's whole environment",
            "pass env={**os.environ, 'A': '1'} (only the variables it holds are set)",
        )
    bad = next(((k, v) for k, v in env.items() if not (isinstance(k, str) and isinstance(v, str))), None)
    if bad is not None:
        raise KtriageError(
            f"env[{bad[0]!r}] = {bad[1]!r}: an environment maps str to str", f"pass env[{bad[0]!r}] as a str"
        )
