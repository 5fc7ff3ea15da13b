"""The store's tables, and their creation on first use.

Raw samples are one JSON array per cell (``samples_ms``), not one row per sample. Why:
- a cell is written once, whole, in one INSERT: a commit per cell costs one round trip on
  PostgreSQL instead of thousands, and a crash can never leave a cell with half its samples;
- readers always want all samples of a cell at once (statistics are redone from raw samples);
- SQL queries still get what they need without unpacking arrays: the summary columns
  (n_samples, median_ms, min_ms, p20_ms, p80_ms) are stored beside the array.

Table names carry a ``ktriage_`` prefix so the store can share a team's PostgreSQL database.
``ktriage_schema`` holds the schema version: a store written by a newer ktriage is refused with a
clear message rather than misread.
"""

from __future__ import annotations

import time

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Engine,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    insert,
    select,
    text,
)

from ktriage.errors import StoreError, spelled, worded
from ktriage.store.engine import SCHEMA_TABLE
from ktriage.store.fixes import DB

SCHEMA_VERSION = 1

metadata = MetaData()

schema_table = Table(
    SCHEMA_TABLE,
    metadata,
    Column("id", Integer, primary_key=True),  # always 1: one row
    Column("version", Integer, nullable=False),
    Column("created", Float, nullable=False),
)

runs = Table(
    "ktriage_runs",
    metadata,
    Column("run_id", String(64), primary_key=True),
    Column("created", String(40), nullable=False),  # RunInfo.created, ISO text, kept verbatim
    Column("started", Float, nullable=False),  # epoch seconds: orders runs created in the same second
    Column("command", Text, nullable=False),
    Column("host", String(255), nullable=False),
    Column("gpu", JSON, nullable=False),  # gpu["after"] is set by finish_run
    Column("toolchains", JSON, nullable=False),
    Column("packages", JSON, nullable=False),
    Column("workload_git_sha", String(64)),
    Column("settings", JSON, nullable=False),
    Column("status", String(16), nullable=False, index=True),
    Column("finished", Float),  # epoch seconds of finish_run
    Column("error", Text),  # why a run failed (exception text from Store.recording)
    Column("writer_host", String(255), nullable=False),  # who is writing: tells a live run from a dead one
    Column("writer_pid", Integer, nullable=False),
    Column("updated", Float, nullable=False),  # last write (start, cell, finish)
)

cells = Table(
    "ktriage_cells",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(64), ForeignKey("ktriage_runs.run_id", ondelete="CASCADE"), nullable=False),
    Column("ordinal", Integer, nullable=False),  # order of measurement within the run
    Column("op", String(128), nullable=False),
    Column("mode", String(16), nullable=False),
    Column("input_id", Integer, nullable=False),
    Column("input_label", String(255), nullable=False),
    Column("backend", String(255), nullable=False),
    Column("toolchain", String(255), nullable=False),  # "" for native backends (NULLs never collide in UNIQUE)
    Column("status", String(16), nullable=False),
    Column("error", Text),
    Column("accuracy", JSON, nullable=False),
    Column("bytes_moved", BigInteger),
    Column("flops", BigInteger),
    Column("extra", JSON, nullable=False),
    Column("samples_ms", JSON, nullable=False),
    Column("n_samples", Integer, nullable=False),
    Column("median_ms", Float),
    Column("min_ms", Float),
    Column("p20_ms", Float),
    Column("p80_ms", Float),
    Column("recorded", Float, nullable=False),
    UniqueConstraint("run_id", "op", "mode", "input_id", "backend", "toolchain", name="uq_ktriage_cells_key"),
)
Index("ix_ktriage_cells_run", cells.c.run_id, cells.c.ordinal)

# Any constant: serializes concurrent first-use schema creation on PostgreSQL.
_PG_SCHEMA_LOCK = 7_245_301_118


def ensure_schema(engine: Engine, url_text: str) -> None:
    """Create the tables on first use (race-free between processes) and check the schema version."""
    from ktriage.store.engine import WRITE_OPTION

    with engine.connect().execution_options(**{WRITE_OPTION: True}) as conn, conn.begin():
        if engine.dialect.name == "postgresql":
            # DDL is transactional on PostgreSQL; the lock makes a second creator wait, then see the tables.
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_SCHEMA_LOCK})
        # On SQLite the BEGIN IMMEDIATE above already serializes creators.
        metadata.create_all(conn, checkfirst=True)
        version = conn.execute(select(schema_table.c.version).where(schema_table.c.id == 1)).scalar()
        if version is None:
            conn.execute(insert(schema_table).values(id=1, version=SCHEMA_VERSION, created=time.time()))
            version = SCHEMA_VERSION
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise StoreError(
            f"the store {url_text} has schema version {str(version)[:40]!r}, which no ktriage writes",
            worded(
                lambda o: (
                    f"the store was edited or damaged: point {spelled(DB, o)} at a ktriage store, or restore this one from a backup"
                )
            ),
        )
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"the store {url_text} has schema version {version}, newer than this ktriage understands ({SCHEMA_VERSION})",
            worded(lambda o: f"upgrade ktriage (pip install -U ktriage), or point {spelled(DB, o)} at another store"),
        )
