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

from ktriage.api.paths import check_replaceable, check_writable
from ktriage.errors import KtriageError
from ktriage.record.run import RecordResult
from ktriage.record.workload import WORKLOAD_KIND, Workload
from ktriage.workload.recorded.bundle import BenchBlocker, bench_blockers


@dataclass(frozen=True)
class RecordReport:
    """What a recording produced: the run (``result``: the workload, its path, how the program
    ended) and the recorded inputs ``bench`` could not replay (said now rather than on the GPU host)."""

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


def record(
    *,
    command: Sequence[str],
    output: str | Path,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
) -> RecordReport:
    """Run ``command`` (e.g. ``["python", "train.py"]``) with the hook and write the workload to
    ``output`` (``W.json``; docs/record.md). ``env``/``cwd``: the program's (default: this process's).

    Raises :class:`~ktriage.errors.KtriageError` for a bad output before the program starts. The
    program failing is not an error: see :attr:`RecordReport.complete` (what it launched is written)."""
    from ktriage.record.run import record as run_record

    path = Path(output)
    if path.suffix.lower() != ".json":
        raise KtriageError(f"-o {path}: a workload file ends in .json", "write it as -o W.json")
    check_writable(path, "-o")
    check_replaceable(path, "-o", WORKLOAD_KIND.encode(), "a ktriage workload")
    result = run_record(command, path, env=env, cwd=Path(cwd) if cwd is not None else None)
    return RecordReport(result=result, blockers=bench_blockers(result.workload))
