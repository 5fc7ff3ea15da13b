"""Recorded workloads as a library: ``workload_show(path=...)`` (what one holds) and
``workload_import(traces=[...], output=...)`` (a workload from tritonparse traces) (docs/workloads.md).

Why entry points: ``ktriage workload`` loaded, converted, checked and wrote workloads itself, so a
script that imports a TritonBench ``--tritonparse`` run had only the command line. ``workload_show``
returns a typed report with the renderers ``ktriage workload show`` writes with; ``workload_import``
checks the output path before it reads a trace, and the workload against the schema before it is
written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ktriage.api._args import entry_point
from ktriage.api.paths import check_replaceable, check_writable
from ktriage.brief import brief
from ktriage.errors import KtriageError, option, worded
from ktriage.mdsafe import markdown_writer

if TYPE_CHECKING:
    from rich.console import Console

    from ktriage.record.workload import NotCaptured, Workload

__all__ = ["WorkloadImported", "WorkloadShow", "workload_import", "workload_show"]


@dataclass(frozen=True)
class WorkloadShow:
    """A loaded workload: its kernels, their inputs, launch counts and autotune choices, what was
    not captured and why, the host's versions."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    workload: Workload

    def json_text(self) -> str:
        from ktriage.report.workload import show_json

        return show_json(self.workload)

    @markdown_writer
    def to_markdown(self) -> str:
        from ktriage.report.workload import show_markdown

        return show_markdown(self.workload)

    def print_table(self, console: Console) -> None:
        from ktriage.report.workload import print_show

        print_show(self.workload, console)


@dataclass(frozen=True)
class WorkloadImported:
    """The workload converted from traces and the file it was written to."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    workload: Workload
    output: Path

    @property
    def kernels(self) -> int:
        return len(self.workload.kernels)

    @property
    def inputs(self) -> int:
        return sum(len(k.inputs) for k in self.workload.kernels)

    @property
    def launches(self) -> int:
        return sum(k.launches for k in self.workload.kernels)

    @property
    def not_captured(self) -> list[NotCaptured]:
        """What the traces could not carry: each kernel function and why."""
        return list(self.workload.not_captured)


@entry_point
def workload_show(*, path: str | Path) -> WorkloadShow:
    """The workload file ``path`` (``ktriage record -o W.json``, gzipped or its ``.journal``), read
    through the schema layer."""
    from ktriage.api._args import path_or_name
    from ktriage.record.workload import load_workload

    return WorkloadShow(load_workload(path_or_name(path, "path", example="W.json")))


@entry_point
def workload_import(*, traces: Path | Sequence[str | Path], output: str | Path) -> WorkloadImported:
    """Convert tritonparse's raw traces (``.ndjson``, gzip ``.bin.ndjson`` / ``.ndjson.gz``, all of one
    run) into a workload and write it to ``output`` (``.json``; an existing file is replaced only when
    it is a ktriage workload). A damaged or foreign trace is a KtriageError. A lone str or Path is one
    trace."""
    from ktriage.api._args import path_or_name
    from ktriage.api._args import paths as path_list
    from ktriage.record.tritonparse import convert
    from ktriage.record.workload import WORKLOAD_KIND, check_workload, save_workload

    output = Path(path_or_name(output, "output", "-o", example="W.json"))
    paths = list(path_list(traces, "traces", "TRACE"))
    if output.suffix != ".json":
        raise KtriageError(
            worded(lambda o: f"{o('output', '-o', str(output))}: a workload file ends in .json"),
            worded(lambda o: f"write it as {o('output', '-o', 'W.json')}"),
        )
    check_writable(output, option("output", "-o"))
    check_replaceable(output, option("output", "-o"), WORKLOAD_KIND.encode(), "a ktriage workload")
    w = convert(paths)
    check_workload(w.to_json(), f"the workload of {', '.join(map(str, paths))}")
    try:
        save_workload(w, output)
    except OSError as exc:
        raise KtriageError(
            f"cannot write the workload {output}: {exc.strerror or exc}",
            worded(lambda o: f"choose a writable {o('output', '-o')} path"),
        ) from exc
    return WorkloadImported(w, output)
