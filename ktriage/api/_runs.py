"""The results store as a library: ``runs_list(...)``, ``runs_show(run=...)``, ``runs_export(run=...)``,
``runs_import(path=...)`` and ``runs_delete(run=...)`` (docs/store.md).

Why entry points: ``ktriage runs`` opened the store, filtered, loaded and imported runs itself, so a
dashboard script or a notebook had only the command line. Each returns a typed report with the
renderers ``ktriage runs`` writes with; ``db``: the store's URL (None: the SQLite file under the
ktriage home, or ``$KTRIAGE_DB``). The reading ones open the store read-only: a SQLite path that is not
a store already is refused, never created or converted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from ktriage.api import _args as args
from ktriage.brief import brief
from ktriage.errors import KtriageError, joined, run_as, worded
from ktriage.mdsafe import markdown_writer

if TYPE_CHECKING:  # the store imports SQLAlchemy: loaded when a function here runs, not for `ktriage runs --help`
    from rich.console import Console

    from ktriage.measure.cells import Cell, RunInfo
    from ktriage.store.store import RunSummary, Store

__all__ = [
    "RunDeleted",
    "RunExport",
    "ImportInterrupted",
    "RunImported",
    "RunList",
    "RunShow",
    "runs_delete",
    "runs_export",
    "runs_import",
    "runs_list",
    "runs_show",
]


@dataclass(frozen=True)
class RunList:
    """Stored runs, newest first, from the store at ``url``; ``filtered``: some filter was given;
    ``more``: the store has more runs that match than the ``limit`` shown."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    summaries: list[RunSummary]
    url: str
    filtered: bool = False
    more: bool = False

    @markdown_writer
    def to_markdown(self) -> str:
        from ktriage.report.runs import list_markdown

        return list_markdown(self.summaries, self.url, more=self.more)

    def json_text(self) -> str:
        from ktriage.report.runs import list_json

        return list_json(self.summaries)

    def to_csv(self) -> str:
        from ktriage.report.runs import list_csv

        return list_csv(self.summaries)

    def print_table(self, console: Console) -> None:
        from ktriage.report.runs import print_list

        print_list(self.summaries, self.url, console, filtered=self.filtered, more=self.more)


@dataclass(frozen=True)
class RunShow:
    """One run: its summary, environment and cells (with their raw samples)."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    summary: RunSummary
    info: RunInfo
    cells: list[Cell]

    @markdown_writer
    def to_markdown(self) -> str:
        from ktriage.report.runs import show_markdown

        return show_markdown(self.summary, self.info, self.cells)

    def json_text(self) -> str:
        """The run's export (raw samples; ``runs import`` and ``compare`` read it)."""
        from ktriage.report.runs import show_json

        return show_json(self.info, self.cells)

    def print_table(self, console: Console) -> None:
        from ktriage.report.runs import print_show

        print_show(self.summary, self.info, self.cells, console)


@dataclass(frozen=True)
class RunExport:
    """A run and its cells, as a results file (:meth:`json_text`) or a TritonBench-like CSV."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    info: RunInfo
    cells: list[Cell]

    def json_text(self) -> str:
        from ktriage.store.export import export_json

        return export_json(self.info, self.cells)

    def to_csv(self) -> str:
        from ktriage.store.export import export_csv

        return export_csv(self.info, self.cells)


@dataclass(frozen=True)
class RunImported:
    """What ``runs_import`` stored: the run id, its cell count and the store's URL."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    run_id: str
    cells: int
    url: str


@dataclass(frozen=True)
class RunDeleted:
    """What ``runs_delete`` removed: the run (its summary, cell counts included) and the store's URL."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    summary: RunSummary
    url: str

    @property
    def cells(self) -> int:
        return sum(self.summary.counts.values())

    def line(self) -> str:
        """``deleted run ID (date, GPU, status, N cells) from URL``: what ``ktriage runs delete`` prints."""
        from ktriage.report.runs import deleted_line

        return deleted_line(self.summary, self.cells, self.url)


@args.entry_point
def runs_list(
    *,
    db: str | None = None,
    limit: int = 20,
    status: str | None = None,
    gpu: str | None = None,
    op: str | None = None,
    toolchain: str | None = None,
) -> RunList:
    """At most ``limit`` stored runs, newest first; every filter given must match (``gpu``, ``op``:
    case-insensitive substrings; ``toolchain``: a toolchain of the run by its parts, ``ktriage.toolchain.select``:
    ``3.4``, ``triton==3.4.0``, an id; ``status``: running, finished, interrupted, failed).
    A ``limit`` below 1 or another status is refused (a filter that can match nothing is a typo)."""
    from ktriage.store import RunFilters, open_store
    from ktriage.store.store import RUN_STATUSES

    limit = args.LIMIT(limit)
    # toolchain=[...] was AttributeError: 'list' object has no attribute 'strip' from the selector
    status = args.optional_text(status, "status", "--status", example="finished")
    gpu = args.optional_text(gpu, "gpu", "--gpu", example="H100")
    op = args.optional_text(op, "op", "--op", example="layer_norm")
    toolchain = args.optional_text(toolchain, "toolchain", "--toolchain", example="triton==3.4.0")
    if status is not None and status not in RUN_STATUSES:
        raise KtriageError(
            worded(lambda o: f"{o('status', '--status', status)} is not a run status"),
            f"give one of: {', '.join(RUN_STATUSES)} (a run whose writer is gone is stored as running)",
        )
    if toolchain is not None:  # a selector that names no part of a toolchain would list nothing, silently
        from ktriage.toolchain.select import check_selector

        check_selector(toolchain)
    with open_store(db, must_exist=True) as store:
        # one run past the limit tells whether the limit hid some (97 runs listed as 20 rows, without a word)
        summaries = store.summaries(limit + 1, RunFilters(status=status, gpu=gpu, toolchain=toolchain, op=op))
        url = store.url
    filtered = any((status, gpu, op, toolchain))
    return RunList(summaries[:limit], url, filtered=filtered, more=len(summaries) > limit)


@args.entry_point
def runs_show(*, run: str, db: str | None = None) -> RunShow:
    """The run ``run`` (an id or a unique prefix of one)."""
    from ktriage.store import open_store

    run = args.text(run, "run", example="a1b2c3")
    with open_store(db, must_exist=True) as store:
        summary = store.summary(run)
        info, cells = store.load_run(summary.run.run_id)
    return RunShow(summary, info, cells)


@args.entry_point
def runs_export(*, run: str, db: str | None = None) -> RunExport:
    """The run ``run`` (an id or a unique prefix of one) and its cells, to export."""
    from ktriage.store import open_store

    run = args.text(run, "run", example="a1b2c3")
    with open_store(db, must_exist=True) as store:
        info, cells = store.load_run(run)
    return RunExport(info, cells)


@args.entry_point
def runs_import(*, path: str | Path, db: str | None = None) -> RunImported:
    """Import an exported run (``runs_export(...).json_text()``, e.g. measured on the GPU host) into
    the store, in one transaction; the file goes through the schema layer (every field checked)."""
    from ktriage.measure.results_file import parse_results, read_results_text
    from ktriage.store import open_store

    path = Path(args.path_or_name(path, "path", example="run.json"))
    db = args.db(db)
    if not path.exists():  # a folder is named by read_results_text, through the schema layer
        raise KtriageError(f"no such file: {path}", "give the path of a JSON export")
    text = read_results_text(path)
    _refuse_tritonbench(path, text)
    info, cells = parse_results(text, origin=f"results file {path}")
    if not cells:
        _refuse_empty_import(path, info.run_id, info.status)
    store: Store | None = None
    try:
        with open_store(db) as store:
            store.import_run(info, cells)
            url = store.url
    except KeyboardInterrupt as exc:
        raise ImportInterrupted.check(store, info.run_id, db) from exc
    return RunImported(info.run_id, len(cells), url)


class ImportInterrupted(KeyboardInterrupt):  # still a KeyboardInterrupt: Ctrl-C exits 130 as before
    """Ctrl-C during ``runs_import``, and whether the run was stored when it came (``stored``; None when
    the store could not be asked). Why: an import interrupted just after its transaction committed
    exited 130 with nothing printed, and the user could not tell whether to import the file again (a
    second import of a stored run is refused; one of a run not stored is needed). The import is one
    transaction, so the run is in the store whole or not at all: the store is asked which."""

    def __init__(self, run_id: str, stored: bool | None, url: str, why: str = "") -> None:
        super().__init__(run_id, stored, url, why)
        self.run_id, self.stored, self.url, self.why = run_id, stored, url, why

    @classmethod
    def check(cls, store: Store | None, run_id: str, db: str | None) -> ImportInterrupted:
        """Ask ``store`` whether it holds ``run_id`` now, the unfinished import rolled back; None: Ctrl-C
        came while the store was being opened, before the import began. A read: it waits for no writer
        (opening the store anew would, behind the lock an import queued on)."""
        if store is None:
            return cls(run_id, False, db or "the store")
        try:
            return cls(run_id, store.has_run(run_id), store.url)
        except Exception as exc:  # the outcome is said as unknown; the interrupt stays the error
            return cls(run_id, None, store.url, " ".join(str(exc).split()))
        finally:
            store.close()

    def __str__(self) -> str:
        return imported_interrupted_text(self.run_id, self.stored, self.url, self.why)


def imported_interrupted_text(run_id: str, stored: bool | None, url: str, why: str = "") -> str:
    """The one line an interrupted ``runs import`` ends with: whether the run was stored, and so whether
    to import the file again."""
    if stored:
        return (
            f"interrupted: run {run_id} was stored whole in {url} before Ctrl-C; do not import it again "
            f"(`ktriage runs show {run_id}` shows it)"
        )
    if stored is None:
        return (
            f"interrupted: whether run {run_id} was stored in {url} could not be checked ({why}); an import is "
            f"stored whole or not at all: `ktriage runs show {run_id}` tells which, and if it is not there, "
            "run the same command again"
        )
    return (
        f"interrupted: nothing of run {run_id} was stored in {url} (an import is stored whole or not at all); "
        "run the same command again to import it"
    )


def _refuse_tritonbench(path: Path, text: str) -> None:
    """A TritonBench CSV or JSON given to ``runs import`` was "not valid JSON: Expecting value" (the CSV)
    or "has no 'run' and no 'cells'" (the JSON). The store holds ktriage's results (every cell's samples,
    the run's provenance); a TritonBench file has one latency per cell and no provenance, and the verbs
    that take it read it where it is."""
    from ktriage.measure.tritonbench_format import tritonbench_kind

    kind = tritonbench_kind(text)
    if kind is None:
        return
    raise KtriageError(
        f"{path} is a TritonBench {kind}, not a ktriage results file: the store keeps ktriage's runs (every "
        "cell's samples and the run's provenance), and runs import reads only their JSON export",
        joined(
            "compare it where it is (",
            run_as("kt.compare(old=..., new=...)", f"ktriage compare OLD.{kind.lower()} NEW.{kind.lower()}"),
            "; triage takes it too), or measure with ktriage bench, whose runs land in the store",
        ),
    )


def _refuse_empty_import(path: Path, run_id: str, status: str) -> NoReturn:
    """A run without cells was imported ("imported run X (0 cells)", exit 0), and then every reader refused
    it: compare and triage ("has no cells: there is nothing to compare"), history (no point). Refused here,
    before the store is written, rather than kept with a warning: no verb reads anything from it, and its
    id, once in the store, blocks the import of a measured file of that run until `runs delete`. A failed
    run's record stays in the GPU host's store (``runs list --status failed`` there)."""
    raise KtriageError(
        f"{path} holds run {run_id} with no cells (status {status}): nothing measured, so nothing to import "
        "(compare, triage and history read cells)",
        "export a run that measured something (`ktriage runs show RUN` on the GPU host lists its cells), or "
        "measure again there: ktriage bench ... -o results.json",
    )


@args.entry_point
def runs_delete(*, run: str, db: str | None = None) -> RunDeleted:
    """Delete the run ``run`` (its whole id, or a prefix of exactly one id) and its cells from the
    store, in one transaction; what was deleted comes back. A run still being written on this host is
    refused. The way to replace a run before importing it again (``runs import`` refuses an id the
    store has)."""
    from ktriage.store import open_store

    run = args.text(run, "run", example="a1b2c3")
    with open_store(db, must_exist=True) as store:  # deleting from a store that is not there creates none
        summary = store.delete_run(run)
        url = store.url
    return RunDeleted(summary, url)
