"""The history of a cell across runs: one point per run that measured it, ordered by run time.

``ktriage history`` (``ktriage.history``) reads the store through :func:`cell_history` and finds
change points in each series. Only the summary columns are read (``median_ms``, ``p20_ms``, ...),
never the sample arrays: a nightly store holds thousands of cells.

A series is one (op, mode, input, backend). The toolchain is an attribute of each point, not part of
the series: a nightly's Triton changes from run to run, and that change is what history is about.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
from sqlalchemy import select

from ktriage.errors import KtriageError
from ktriage.ops.operator import MODES
from ktriage.schema.jsontypes import JSONObject, JSONValue
from ktriage.store.schema import cells as cells_t
from ktriage.store.schema import runs as runs_t
from ktriage.store.store import Store


@dataclass(frozen=True)
class HistoryQuery:
    """Which cells ``cell_history`` returns; None: any. Matches are case-insensitive."""

    op: str
    backend: str
    inputs: tuple[str, ...] = ()  # input ids ("7") or shape facts of the label ("N=4608"); any matches
    mode: str | None = None
    toolchain: str | None = None  # the cell's toolchain (ktriage.toolchain.select; "host": a native backend)
    gpu: str | None = None  # substring of the run's GPU name


@dataclass(frozen=True)
class SeriesKey:
    op: str
    mode: str
    input_id: int
    input_label: str
    backend: str

    @property
    def label(self) -> str:
        return f"{self.op} {self.mode} {self.backend} input {self.input_id} ({self.input_label})"


@dataclass(frozen=True)
class HistoryPoint:
    """One run's measurement of the cell (``median_ms`` None: the cell was wrong, an error or a timeout)."""

    run_id: str
    created: str
    started: float  # epoch seconds: the order of the series
    run_status: str
    gpu: str
    toolchain: str  # the cell's toolchain id, "" for a native backend
    toolchain_info: JSONObject = field(default_factory=dict)  # the run's record of that toolchain
    status: str = "ok"
    median_ms: float | None = None
    p20_ms: float | None = None
    p80_ms: float | None = None
    n_samples: int = 0


def _facts(text: str) -> set[str]:
    return {part.replace(" ", "") for part in text.replace(";", ",").split(",") if "=" in part}


def catalog_input_ids(op: str, selectors: tuple[str, ...]) -> frozenset[int]:
    """The input ids ``selectors`` name in ``op``'s sweep (``ktriage.ops.inputs.select_inputs``: ids, shape
    facts, explain's ranges), as every verb's ``--input`` reads them; empty for an op ktriage has no sweep
    of. ``ktriage bench`` stores a catalog op's input under its catalog id with TritonBench's x_val as the
    label ("(4096, 4608)"), so shape facts (N=4608) can only be read through the sweep, never in the label.
    A selector the sweep refuses names no catalog input here: the store may still hold it by its label
    (a TritonBench file's x_val past the catalog), and a query that matches nothing lists what is stored."""
    from ktriage.ops import registry
    from ktriage.ops.inputs import select_inputs

    operator = registry.operator(op)
    if operator is None or not selectors:
        return frozenset()
    cases = operator.inputs()
    ids: set[int] = set()
    for sel in selectors:
        try:
            ids.update(c.id for c in select_inputs(op, cases, [sel]))
        except KtriageError:
            continue
    return frozenset(ids)


def _input_matches(
    selectors: tuple[str, ...], input_id: int, label: str, catalog_ids: frozenset[int] = frozenset()
) -> bool:
    """An input id, the label itself, shape facts that all appear in the label (N=4608 in "M=4096, N=4608"),
    or a catalog input the selectors name (``catalog_input_ids``: N=4608 is layer_norm's input 7)."""
    if not selectors or input_id in catalog_ids:
        return True
    for sel in selectors:
        text = sel.strip()
        if text == str(input_id) or text == label:
            return True
        facts = _facts(text)
        if facts and facts <= _facts(label):
            return True
    return False


def _toolchain_matches(selector: str | None, toolchain: str, spec: str) -> bool:
    from ktriage.toolchain.select import toolchain_matches

    return selector is None or toolchain_matches(selector, toolchain, spec)


def _toolchain_record(toolchains: Sequence[Mapping[str, JSONValue]] | None, tc_id: str) -> JSONObject:
    for tc in toolchains or []:
        if str(tc.get("id", "")) == tc_id:
            return dict(tc)
    return {"id": tc_id} if tc_id else {}


def _checked_row(row: Any) -> None:
    """A history row read through its schema: a value of another type (an edited store) is a
    StoreError naming the run and the column, not a ValueError from ``float('abc')``."""
    from ktriage.errors import StoreError
    from ktriage.schema.core import field_path
    from ktriage.store.fixes import DAMAGED_FIX

    try:
        msgspec.convert({str(k): v for k, v in row.items()}, _HistoryRow, strict=True)
    except msgspec.ValidationError as exc:
        path, msg = field_path(str(exc))
        raise StoreError(
            f"the store holds a damaged cell of run {str(row['run_id'])[:64]}: {path}: {msg}", DAMAGED_FIX
        ) from None


class _HistoryRow(msgspec.Struct):
    run_id: str
    created: str
    started: float
    run_status: str
    gpu: dict[str, object] | None
    toolchains: list[dict[str, object]] | None
    mode: str
    input_id: int
    input_label: str
    toolchain: str | None
    status: str
    median_ms: float | None
    p20_ms: float | None
    p80_ms: float | None
    n_samples: int


def cell_history(store: Store, query: HistoryQuery) -> dict[SeriesKey, list[HistoryPoint]]:
    """Every stored measurement of the cells ``query`` selects, per series, oldest run first.

    Runs of every status are read (an interrupted run's committed cells are complete measurements);
    a run that measured the series with several toolchains yields one point per toolchain, and the
    caller decides (``ktriage.history`` asks for ``--toolchain``)."""
    c, r = cells_t.c, runs_t.c
    stmt = (
        select(
            r.run_id,
            r.created,
            r.started,
            r.status.label("run_status"),
            r.gpu,
            r.toolchains,
            c.mode,
            c.input_id,
            c.input_label,
            c.toolchain,
            c.status,
            c.median_ms,
            c.p20_ms,
            c.p80_ms,
            c.n_samples,
        )
        .select_from(cells_t.join(runs_t, c.run_id == r.run_id))
        .where(c.op == query.op, c.backend == query.backend)
        .order_by(r.started, r.run_id, c.ordinal)
    )
    if query.mode:
        stmt = stmt.where(c.mode == query.mode)
    out: dict[SeriesKey, list[HistoryPoint]] = {}
    catalog_ids = catalog_input_ids(query.op, query.inputs)
    with store.engine.connect() as conn:
        for row in conn.execute(stmt).mappings():
            _checked_row(row)
            swept = catalog_ids if row["mode"] in MODES else frozenset()  # a recorded bench's ids are its entries
            if not _input_matches(query.inputs, row["input_id"], row["input_label"], swept):
                continue
            tc_id = row["toolchain"] or ""
            record = _toolchain_record(row["toolchains"], tc_id)
            if not _toolchain_matches(query.toolchain, tc_id, str(record.get("spec") or "")):
                continue
            gpu = str((row["gpu"] or {}).get("name", ""))
            if query.gpu and query.gpu.lower() not in gpu.lower():
                continue
            key = SeriesKey(query.op, row["mode"], row["input_id"], row["input_label"], query.backend)
            ok = row["status"] == "ok" and row["median_ms"] is not None
            out.setdefault(key, []).append(
                HistoryPoint(
                    run_id=row["run_id"],
                    created=row["created"],
                    started=float(row["started"]),
                    run_status=row["run_status"],
                    gpu=gpu,
                    toolchain=tc_id,
                    toolchain_info=record,
                    status=row["status"],
                    median_ms=float(row["median_ms"]) if ok else None,
                    p20_ms=row["p20_ms"] if ok else None,
                    p80_ms=row["p80_ms"] if ok else None,
                    n_samples=int(row["n_samples"]),
                )
            )
    return dict(sorted(out.items(), key=lambda kv: (kv[0].mode, kv[0].input_id)))


def known_cells(store: Store, op: str) -> list[tuple[str, str]]:
    """The (backend, mode) pairs the store has for ``op``: the hint when a query finds nothing."""
    with store.engine.connect() as conn:
        rows = conn.execute(select(cells_t.c.backend, cells_t.c.mode).where(cells_t.c.op == op).distinct())
        return sorted((str(b), str(m)) for b, m in rows)


def known_ops(store: Store) -> list[str]:
    with store.engine.connect() as conn:
        return sorted(str(o) for o in conn.execute(select(cells_t.c.op).distinct()).scalars())
