"""The results store: runs and their cells, written as they are measured, read by runs/compare.

Every ``add_cell`` is its own committed transaction, so whatever happens to the measuring process
afterwards (Ctrl-C, SIGKILL, a kernel that takes the process down) the cells measured so far are on
disk. ``Store.recording`` wraps a run so that its final status says how it ended.
"""

from __future__ import annotations

import datetime as _dt
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import msgspec
from sqlalchemy import Connection, Engine, RowMapping, delete, func, insert, select, update
from sqlalchemy.exc import DatabaseError, IntegrityError, OperationalError

from ktriage.errors import StoreError, Worded, run_as, spelled, worded
from ktriage.measure.cells import Cell, CellKey, RunInfo
from ktriage.measure.provenance import run_date_gpu
from ktriage.schema.jsontypes import JSONObject, JSONValue
from ktriage.store.engine import WRITE_OPTION, display_url, make_store_engine
from ktriage.store.export import export_run
from ktriage.store.fixes import DAMAGED_FIX, DB
from ktriage.store.liveness import this_host, writer_alive
from ktriage.store.samples import summarize
from ktriage.store.schema import cells as cells_t
from ktriage.store.schema import ensure_schema
from ktriage.store.schema import runs as runs_t

RUN_STATUSES = ("running", "finished", "interrupted", "failed")


@dataclass
class RunFilters:
    """What ``list_runs`` keeps; every given field must match (substrings and selectors are case-insensitive)."""

    status: str | None = None
    gpu: str | None = None  # substring of the GPU name
    toolchain: str | None = None  # a toolchain of the run (ktriage.toolchain.select: its parts, not a substring)
    op: str | None = None  # runs with at least one cell of this op
    host: str | None = None  # substring of the host name


@dataclass
class RunSummary:
    """A run as ``runs list/show`` present it: provenance, cell counts, and whether its writer lives."""

    run: RunInfo
    counts: dict[str, int] = field(default_factory=dict)  # cells per status
    writer_host: str = ""
    writer_pid: int = 0
    updated: float = 0.0  # epoch seconds of the last write
    finished: float | None = None
    error: str | None = None
    writer_alive: bool | None = None  # None: written from another host, cannot tell
    ops: list[str] = field(default_factory=list)  # the ops its cells measured, sorted: which run is which

    @property
    def run_id(self) -> str:
        """The run's id, as ``runs show``/``compare`` take it. Why a property: a notebook lists the ids as
        ``[s.run_id for s in kt.runs_list().summaries]``; the id itself stays in :attr:`run` alone."""
        return self.run.run_id

    @property
    def display_status(self) -> str:
        """The stored status, except a "running" run whose writer is gone: it will never finish."""
        if self.run.status != "running":
            return self.run.status
        if self.writer_alive is False:
            return "interrupted (writer gone)"
        if self.writer_alive is None:
            return f"running (on {self.writer_host})"
        return "running"


def open_store(url: str | None = None, *, must_exist: bool = False) -> Store:
    """Open (and on first use create) the store at ``url``; None: the SQLite file under the ktriage home.

    ``must_exist``: for the verbs that only read (runs list/show/export, history) or delete (runs
    delete). A SQLite store must then exist: a missing file, a file that is not a SQLite database (an empty one included) or a
    SQLite database without the store's tables is refused with the fix, never created or converted.
    (A database server's store is still created on first use: there is no file to mistake for it.)"""
    from ktriage.store.engine import FIRST_QUERY_TIMEOUT_S, first_query_guard

    engine = make_store_engine(url, must_exist=must_exist)
    fired = [False]
    try:
        if engine.dialect.name == "sqlite":
            ensure_schema(engine, display_url(engine))
        else:
            with first_query_guard(engine) as fired:
                ensure_schema(engine, display_url(engine))
    except OperationalError as exc:
        engine.dispose()
        if fired[0]:
            raise StoreError(
                f"the database server of {display_url(engine)} accepted the connection but did not answer "
                f"its first queries within {FIRST_QUERY_TIMEOUT_S} s",
                "check that the server (not a proxy or another service on that port) is up and not "
                "overloaded, then try again",
            ) from exc
        raise open_error(engine, exc) from exc
    except DatabaseError as exc:  # e.g. SQLite's "file is not a database": some other file at that path
        engine.dispose()
        raise StoreError(
            f"cannot open the store {display_url(engine)}: {exc.orig}",
            worded(
                lambda o: (
                    f"point {spelled(DB, o)} at a ktriage store, or at a path where a new one may be created (the file there is not a "
                    "database)"
                )
            ),
        ) from exc
    except BaseException:
        engine.dispose()  # a refused store (e.g. a newer schema) leaves no connection open behind
        raise
    return Store(engine)


def open_error(engine: Engine, exc: DatabaseError, *, writing: bool = False) -> StoreError:
    """The StoreError of a store that cannot be opened, with the fix of its kind: a SQLite file is a
    path and its folder (there is no server), a database server a URL, a server and a timeout."""
    from ktriage.store.engine import CONNECT_TIMEOUT_S

    url = display_url(engine)
    text = " ".join(str(exc.orig).split())
    doing = "write to" if writing else "open"
    if engine.dialect.name == "sqlite":
        if "readonly" in text or "read-only" in text:
            fix = worded(
                lambda o: (
                    f"the SQLite file or its folder is read-only here: give {spelled(DB, o)} a writable path (or copy the store)"
                )
            )
        elif "locked" in text:
            fix = worded(
                lambda o: (
                    f"another process holds the store's write lock: wait for it, or give {spelled(DB, o)} another store"
                )
            )
        elif "disk" in text or "full" in text:
            fix = worded(
                lambda o: (
                    f"free some space on the store's disk (nothing of this write was kept), or give {spelled(DB, o)} another store"
                )
            )
        else:
            fix = worded(
                lambda o: (
                    f"check the path given as {spelled(DB, o)}: a SQLite file (created if missing) in a folder that exists and can be written"
                )
            )
        return StoreError(f"cannot {doing} the store {url}: {text}", fix)
    if "timeout" in text.lower() or "timed out" in text.lower():
        return StoreError(
            f"the database server of {url} did not answer within its connect timeout "
            f"({CONNECT_TIMEOUT_S} s unless the URL sets connect_timeout): {text}",
            "check the host and port (a firewall or another service may hold the port) and that the "
            "server is running; a slow link may add ?connect_timeout=SECONDS to the URL",
        )
    return StoreError(
        f"cannot {doing} the store {url}: {text}",
        worded(
            lambda o: (
                f"check the URL given as {spelled(DB, o)} (host, port, user, password, database) and that the server is running"
            )
        ),
    )


def _started_epoch(created: str) -> float:
    try:
        stamp = _dt.datetime.fromisoformat(created)
    except ValueError:
        return time.time()
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=_dt.timezone.utc)
    return stamp.timestamp()


def _key_where(run_id: str, key: CellKey) -> list[Any]:
    c = cells_t.c
    return [
        c.run_id == run_id,
        c.op == key.op,
        c.mode == key.mode,
        c.input_id == key.input_id,
        c.backend == key.backend,
        c.toolchain == (key.toolchain or ""),
    ]


def _cell_key_values(run_id: str, ordinal: int, key: CellKey) -> dict[str, object]:
    """A cell row's identity columns: its run, its place in the run, its key ("" for a native toolchain)."""
    return {
        "run_id": run_id,
        "ordinal": ordinal,
        "op": key.op,
        "mode": key.mode,
        "input_id": key.input_id,
        "backend": key.backend,
        "toolchain": key.toolchain or "",
    }


def _cell_values(cell: Cell, now: float) -> dict[str, object]:
    """A cell row's measured columns: the raw samples and, beside them, their summary (queryable in SQL)."""
    s = summarize(cell.samples_ms)
    return {
        "input_label": cell.key.input_label,
        "status": cell.status,
        "error": cell.error,
        "accuracy": cell.accuracy,
        "bytes_moved": cell.bytes_moved,
        "flops": cell.flops,
        "extra": cell.extra,
        "samples_ms": [float(v) for v in cell.samples_ms],
        "n_samples": s.n,
        "median_ms": s.median_ms,
        "min_ms": s.min_ms,
        "p20_ms": s.p20_ms,
        "p80_ms": s.p80_ms,
        "recorded": now,
    }


def _refuse_repeated_cells(run_id: str, cells: list[Cell]) -> None:
    """A results file with one cell twice (the cells of two files pasted into one) imported "N cells" while
    the store kept N-1: a cell's key is unique in the store and a re-added cell replaces the old one (the
    bench runner's re-sampling). An import has no such second measurement to prefer, so it says which two."""
    seen: dict[tuple[str, str, int, str, str], int] = {}
    for i, cell in enumerate(cells):
        k = cell.key
        first = seen.setdefault((k.op, k.mode, k.input_id, k.backend, k.toolchain or ""), i)
        if first != i:
            raise StoreError(
                f"run {run_id} has cell {k.label()} twice (cells[{first}] and cells[{i}]): the store keeps one "
                "cell per (op, mode, input, backend, toolchain), so one of the two measurements would be dropped",
                "nothing was imported; keep one of the two cells in the file (or merge their samples_ms into one "
                "cell), then import it again",
            )


def _checked(value: Mapping[str, object], schema: type[msgspec.Struct], what: str) -> None:
    """A row read back through the results file's schema (one schema for a run and a cell, in a file
    or in the store): a value of the wrong shape is a StoreError naming the run, the cell and the field."""
    import msgspec

    from ktriage.schema.core import field_path

    try:
        msgspec.convert(value, schema, strict=True)
    except msgspec.ValidationError as exc:
        path, msg = field_path(str(exc))
        raise StoreError(f"the store holds a damaged {what}: {path or 'top level'}: {msg}", DAMAGED_FIX) from None


def _run_from_row(row: RowMapping) -> RunInfo:
    from ktriage.schema.results import RunSchema

    data = {
        k: row[k]
        for k in (
            "run_id",
            "created",
            "command",
            "host",
            "gpu",
            "toolchains",
            "packages",
            "workload_git_sha",
            "settings",
            "status",
        )
    }
    if not isinstance(data["run_id"], str) or not data["run_id"]:
        raise StoreError(f"the store holds a run whose id is {str(data['run_id'])[:40]!r}", DAMAGED_FIX)
    # the id's pattern is that of a results file; the store keeps whatever id a run was started with
    _checked({**data, "run_id": "x"}, RunSchema, f"run {data['run_id'][:64]}")
    if data["status"] not in RUN_STATUSES:
        raise StoreError(
            f"the store holds a damaged run {data['run_id']}: status {str(data['status'])[:40]!r} is not one of "
            f"{', '.join(RUN_STATUSES)}",
            DAMAGED_FIX,
        )
    return RunInfo(**data)


def _cell_from_row(row: RowMapping) -> Cell:
    from ktriage.schema.results import CellSchema

    key = {
        "op": row["op"],
        "mode": row["mode"],
        "input_id": row["input_id"],
        "input_label": row["input_label"],
        "backend": row["backend"],
        "toolchain": row["toolchain"] or None,
    }
    data = {
        "key": key,
        "status": row["status"],
        "samples_ms": row["samples_ms"],
        "error": row["error"],
        "accuracy": row["accuracy"],
        "bytes_moved": row["bytes_moved"],
        "flops": row["flops"],
        "extra": row["extra"],
    }
    _checked(
        data,
        CellSchema,
        f"cell ({row['run_id']}, {str(row['op'])[:40]}, input {str(row['input_id'])[:20]}, {str(row['backend'])[:60]})",
    )
    return Cell(
        key=CellKey(**key),
        status=data["status"],
        samples_ms=list(data["samples_ms"]),
        error=data["error"],
        accuracy=data["accuracy"],
        bytes_moved=data["bytes_moved"],
        flops=data["flops"],
        extra=data["extra"],
    )


class Recording:
    """What ``Store.recording`` yields: add cells to the run; set ``gpu_after`` before leaving."""

    def __init__(self, store: Store, run: RunInfo) -> None:
        self.store = store
        self.run = run
        self.gpu_after: JSONValue = None  # NVML's readings after the run (GpuRecorder), stored as run.gpu['after']

    @property
    def run_id(self) -> str:
        return self.run.run_id

    def add(self, cell: Cell) -> None:
        self.store.add_cell(self.run.run_id, cell)


class Store:
    """A results store on one database. Thread-compatible, not thread-safe: one Store per thread."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.url = display_url(engine)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """One committed write transaction (BEGIN IMMEDIATE on SQLite: queues behind other writers).
        A write the database refuses (a read-only file, a full disk, a lost server) is a StoreError
        with the fix of the store's kind."""
        try:
            with self.engine.connect().execution_options(**{WRITE_OPTION: True}) as conn, conn.begin():
                yield conn
        except OperationalError as exc:
            raise open_error(self.engine, exc, writing=True) from exc

    # --- writing -------------------------------------------------------------------------------

    def start_run(self, run: RunInfo) -> str:
        """Record a new run (its provenance) before the first cell; returns its id."""
        now = time.time()
        values = run.to_json() | {
            "started": _started_epoch(run.created),
            "writer_host": this_host(),
            "writer_pid": os.getpid(),
            "updated": now,
        }
        try:
            with self._write() as conn:
                conn.execute(insert(runs_t).values(**values))
        except IntegrityError as exc:
            raise StoreError(
                f"run {run.run_id} is already in the store {self.url}",
                "give the new run a fresh run_id (RunInfo() makes one)",
            ) from exc
        return run.run_id

    def add_cell(self, run_id: str, cell: Cell) -> None:
        """Commit one measured cell now. A cell whose key the run already has replaces it (resampling)."""
        with self._write() as conn:
            self._add_cell(conn, run_id, cell)

    def _add_cell(self, conn: Connection, run_id: str, cell: Cell) -> None:
        k = cell.key
        now = time.time()
        values = _cell_values(cell, now)
        found = conn.execute(update(runs_t).where(runs_t.c.run_id == run_id).values(updated=now)).rowcount
        if not found:
            raise StoreError(f"no run {run_id} in the store {self.url}", "call Store.start_run(run) first")
        existing = conn.execute(select(cells_t.c.id).where(*_key_where(run_id, k))).scalar()
        if existing is not None:
            conn.execute(update(cells_t).where(cells_t.c.id == existing).values(**values))
            return
        last = conn.execute(select(func.max(cells_t.c.ordinal)).where(cells_t.c.run_id == run_id)).scalar()
        conn.execute(insert(cells_t).values(**_cell_key_values(run_id, 0 if last is None else last + 1, k), **values))

    def finish_run(self, run_id: str, status: str, gpu_after: JSONValue = None, error: str | None = None) -> None:
        """Set the final status (finished/interrupted/failed); ``gpu_after`` lands in ``run.gpu["after"]``."""
        if status not in RUN_STATUSES:
            raise StoreError(f"unknown run status {status!r}", f"use one of {', '.join(RUN_STATUSES)}")
        now = time.time()
        with self._write() as conn:
            gpu = conn.execute(select(runs_t.c.gpu).where(runs_t.c.run_id == run_id)).scalar()
            if gpu is None:
                raise StoreError(f"no run {run_id} in the store {self.url}", "call Store.start_run(run) first")
            values: dict[str, object] = {"status": status, "finished": now, "updated": now, "error": error}
            if gpu_after is not None:
                values["gpu"] = dict(gpu) | {"after": gpu_after}
            conn.execute(update(runs_t).where(runs_t.c.run_id == run_id).values(**values))

    def attach_profiles(self, run_id: str, cells: list[Cell], settings: JSONObject | None = None) -> int:
        """Store the profile sections (``cell.extra["profile"]``, ktriage.profile.attach) of ``cells``
        into run ``run_id``'s cells of the same keys, after the timing (a finished run is fine), and
        ``settings`` (the run's profile notes) as the run's settings, in ONE transaction. The section
        goes into the cell's existing ``extra`` JSON column, so no migration and no new table: older
        stores take it as they are and older ktriage versions read the cells unchanged. Returns the
        number of cells updated; a key the run does not have is skipped (not an error: the timing of
        that cell may have failed before it was stored)."""
        from ktriage.measure.results_file import PROFILE_KEY

        updated = 0
        with self._write() as conn:
            if conn.execute(select(runs_t.c.run_id).where(runs_t.c.run_id == run_id)).scalar() is None:
                raise StoreError(
                    f"no run {run_id} in the store {self.url}",
                    "import the results file first: ktriage runs import FILE",
                )
            for cell in cells:
                section = cell.extra.get(PROFILE_KEY)
                if section is None:
                    continue
                row = conn.execute(select(cells_t.c.id, cells_t.c.extra).where(*_key_where(run_id, cell.key))).first()
                if row is None:
                    continue
                conn.execute(
                    update(cells_t)
                    .where(cells_t.c.id == row.id)
                    .values(extra=dict(row.extra or {}) | {PROFILE_KEY: section})
                )
                updated += 1
            if settings is not None:
                conn.execute(
                    update(runs_t).where(runs_t.c.run_id == run_id).values(settings=settings, updated=time.time())
                )
        return updated

    @contextmanager
    def recording(self, run: RunInfo) -> Iterator[Recording]:
        """Start ``run``; on exit mark it finished, interrupted (Ctrl-C) or failed (any other exception).

        The exception is re-raised: the caller still sees why the run stopped. Set
        ``recording.gpu_after`` (NVML readings after the run) inside the block to have it stored.
        """
        self.start_run(run)
        rec = Recording(self, run)
        try:
            yield rec
        except KeyboardInterrupt:
            self.finish_run(run.run_id, "interrupted", rec.gpu_after, error="interrupted (KeyboardInterrupt)")
            raise
        except BaseException as exc:
            self.finish_run(run.run_id, "failed", rec.gpu_after, error=f"{type(exc).__name__}: {exc}")
            raise
        self.finish_run(run.run_id, "finished", rec.gpu_after)

    def import_run(self, run: RunInfo, cells: list[Cell]) -> str:
        """Copy a run read from an export (e.g. measured on the GPU host) into this store, in ONE
        transaction: an import that fails part way leaves no run behind (and so does not block
        importing the good file with the same run id). A file that holds a cell twice is refused first:
        the second would replace the first, one measurement dropped without a word."""
        _refuse_repeated_cells(run.run_id, cells)
        now = time.time()
        values = run.to_json() | {
            "started": _started_epoch(run.created),
            "writer_host": this_host(),
            "writer_pid": os.getpid(),
            "updated": now,
        }
        # a new run with unique keys (checked above): no lookups, one multi-row INSERT (executemany). Cell by cell
        # (``_add_cell``: four statements each) an 18,000-cell run took 50 s to import on SQLite.
        rows = [_cell_key_values(run.run_id, i, c.key) | _cell_values(c, now) for i, c in enumerate(cells)]
        try:
            with self._write() as conn:
                conn.execute(insert(runs_t).values(**values))
                if rows:
                    conn.execute(insert(cells_t), rows)
        except IntegrityError as exc:
            if self.has_run(run.run_id):
                raise StoreError(
                    f"run {run.run_id} is already in the store {self.url}",
                    worded(
                        lambda o: (
                            "nothing was imported; to replace it, delete it first ("
                            + spelled(
                                run_as(
                                    f"kt.runs_delete(run={run.run_id!r}, db=...)", f"ktriage runs delete {run.run_id}"
                                ),
                                o,
                            )
                            + f" with the same {spelled(DB, o)}), or import into another store ({spelled(DB, o)})"
                        )
                    ),
                ) from exc
            # the run was new: the database refused a cell (a constraint or trigger of its own), and the whole
            # transaction, the run's row with it, was rolled back
            raise StoreError(
                f"the store {self.url} refused a cell of run {run.run_id}: {exc.orig}",
                "nothing was imported; fix what the database refused and import the file again",
            ) from exc
        return run.run_id

    def has_run(self, run_id: str) -> bool:
        """Whether the store holds the run whose whole id is ``run_id`` (an import is stored whole or not
        at all, so this tells an interrupted import's outcome)."""
        with self.engine.connect() as conn:
            return conn.execute(select(runs_t.c.run_id).where(runs_t.c.run_id == run_id)).first() is not None

    def delete_run(self, ref: str) -> RunSummary:
        """Delete the run ``ref`` names (its whole id, or a prefix of exactly one id) and its cells, in
        one transaction; returns what was deleted. A run still being written by a live process on this
        host is refused: its writer would fail on its next cell."""
        summary = self.summary(ref)
        run_id = summary.run.run_id
        if summary.writer_alive:
            raise StoreError(
                f"run {run_id} is being written by process {summary.writer_pid} on this host",
                "wait until it ends (or stop that process), then delete the run",
            )
        with self._write() as conn:
            # the cells first: no reliance on ON DELETE CASCADE, which SQLite honours only with foreign_keys=ON
            conn.execute(delete(cells_t).where(cells_t.c.run_id == run_id))
            gone = conn.execute(delete(runs_t).where(runs_t.c.run_id == run_id)).rowcount
        if not gone:  # deleted by another process between the lookup and the write
            raise StoreError(f"no run {run_id!r} in the store {self.url}", self._recent_runs_hint())
        return summary

    # --- reading -------------------------------------------------------------------------------

    def resolve_run_id(self, ref: str) -> str:
        """The full id of the run that ``ref`` names: an exact id, or a prefix of exactly one id."""
        ref = ref.strip()
        with self.engine.connect() as conn:
            if ref and conn.execute(select(runs_t.c.run_id).where(runs_t.c.run_id == ref)).scalar():
                return ref
            matches: list[str] = (
                list(
                    conn.execute(
                        select(runs_t.c.run_id)
                        .where(runs_t.c.run_id.startswith(ref, autoescape=True))
                        .order_by(runs_t.c.started.desc())
                        .limit(11)
                    ).scalars()
                )
                if ref
                else []
            )
        if len(matches) == 1:
            return matches[0]
        if matches:
            shown = ", ".join(matches[:10]) + (", ..." if len(matches) > 10 else "")
            raise StoreError(
                f"run id {ref!r} is ambiguous in {self.url}: it starts {shown}", "give more characters of the id"
            )
        raise StoreError(f"no run {ref!r} in the store {self.url}", self._recent_runs_hint())

    def _recent_runs_hint(self) -> Worded:
        recent = self.summaries(limit=5)
        if not recent:
            return worded(
                lambda o: (
                    f"the store has no runs yet: measure with {spelled(run_as('kt.bench(...)', 'ktriage bench ...'), o)}, or pass "
                    f"{o('db', '--db', 'URL')} for another store"
                )
            )
        # date and GPU as runs list says them ("GPU not recorded" where the run names none; it was "?")
        listed = "; ".join(f"{s.run.run_id} ({', '.join(run_date_gpu(s.run)[:2])}, {s.display_status})" for s in recent)
        return f"recent runs: {listed} (all: " + run_as("kt.runs_list()", "ktriage runs list") + ")"

    def load_run(self, ref: str) -> tuple[RunInfo, list[Cell]]:
        """The run (by id or unique prefix) and its cells in measurement order."""
        run_id = self.resolve_run_id(ref)
        with self.engine.connect() as conn:
            row = conn.execute(select(runs_t).where(runs_t.c.run_id == run_id)).mappings().one()
            rows = conn.execute(
                select(cells_t).where(cells_t.c.run_id == run_id).order_by(cells_t.c.ordinal)
            ).mappings()
            cells = [_cell_from_row(r) for r in rows]
        return _run_from_row(row), cells

    def summaries(self, limit: int = 20, filters: RunFilters | None = None) -> list[RunSummary]:
        """Newest runs first, with cell counts per status and writer liveness."""
        f = filters or RunFilters()
        query = select(runs_t).order_by(runs_t.c.started.desc(), runs_t.c.run_id)
        if f.status:
            query = query.where(runs_t.c.status == f.status)
        if f.op:
            query = query.where(
                select(cells_t.c.id).where(cells_t.c.run_id == runs_t.c.run_id, cells_t.c.op == f.op).exists()
            )
        out: list[RunSummary] = []
        with self.engine.connect() as conn:
            for row in conn.execute(query).mappings():
                run = _run_from_row(row)
                if not _matches(run, f):
                    continue
                out.append(
                    RunSummary(
                        run=run,
                        writer_host=row["writer_host"],
                        writer_pid=row["writer_pid"],
                        updated=row["updated"],
                        finished=row["finished"],
                        error=row["error"],
                        writer_alive=writer_alive(row["writer_host"], row["writer_pid"])
                        if run.status == "running"
                        else None,
                    )
                )
                if len(out) >= limit:
                    break
            if out:
                ids = [s.run.run_id for s in out]
                counts = conn.execute(
                    select(cells_t.c.run_id, cells_t.c.status, func.count())
                    .where(cells_t.c.run_id.in_(ids))
                    .group_by(cells_t.c.run_id, cells_t.c.status)
                )
                by_id = {s.run.run_id: s for s in out}
                for run_id, status, n in counts:
                    by_id[run_id].counts[status] = n
                ops = conn.execute(
                    select(cells_t.c.run_id, cells_t.c.op)
                    .where(cells_t.c.run_id.in_(ids))
                    .group_by(cells_t.c.run_id, cells_t.c.op)
                    .order_by(cells_t.c.op)
                )
                for run_id, op in ops:
                    by_id[run_id].ops.append(op)
        return out

    def summary(self, ref: str) -> RunSummary:
        """The summary of one run (by id or unique prefix)."""
        run_id = self.resolve_run_id(ref)
        with self.engine.connect() as conn:
            row = conn.execute(select(runs_t).where(runs_t.c.run_id == run_id)).mappings().one()
            counts = conn.execute(
                select(cells_t.c.status, func.count()).where(cells_t.c.run_id == run_id).group_by(cells_t.c.status)
            )
            counts_d = {status: n for status, n in counts}
            ops = conn.execute(
                select(cells_t.c.op).where(cells_t.c.run_id == run_id).group_by(cells_t.c.op).order_by(cells_t.c.op)
            ).scalars()
            ops_l = list(ops)
        run = _run_from_row(row)
        alive = writer_alive(row["writer_host"], row["writer_pid"]) if run.status == "running" else None
        return RunSummary(
            run,
            counts_d,
            row["writer_host"],
            row["writer_pid"],
            row["updated"],
            row["finished"],
            row["error"],
            alive,
            ops_l,
        )

    def list_runs(self, limit: int = 20, filters: RunFilters | None = None) -> list[RunInfo]:
        """Newest runs first (RunInfo only; ``summaries`` adds counts and liveness)."""
        return [s.run for s in self.summaries(limit, filters)]

    def export(self, ref: str, fmt: str = "json") -> str:
        """The run as JSON ({"run", "cells"}, raw samples included) or as a TritonBench-like CSV."""
        run, cells = self.load_run(ref)
        return export_run(run, cells, fmt)


def _matches(run: RunInfo, f: RunFilters) -> bool:
    """The filters on JSON fields, applied in Python: portable across SQLite and PostgreSQL."""
    if f.gpu and f.gpu.lower() not in str(run.gpu.get("name", "")).lower():
        return False
    if f.host and f.host.lower() not in run.host.lower():
        return False
    if f.toolchain:
        from ktriage.toolchain.select import toolchain_matches

        selector = f.toolchain
        if not any(
            toolchain_matches(selector, str(tc.get("id") or tc.get("spec") or ""), str(tc.get("spec") or ""))
            for tc in run.toolchains
        ):
            return False
    return True
