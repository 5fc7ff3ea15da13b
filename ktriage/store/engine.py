"""Make SQLAlchemy engines for the store: the default SQLite file, or any URL the user gives.

SQLite needs care to honour the store's promises:
- WAL journal, so a reader (``ktriage runs show`` in another terminal) can watch a running run
  while the writer keeps committing;
- ``BEGIN IMMEDIATE`` for write transactions, so two processes writing two runs into one file queue
  on the busy timeout instead of failing: a deferred transaction that reads and then writes cannot
  wait for the lock (SQLite answers "database is locked" at once to avoid a deadlock);
- ``synchronous=NORMAL``: in WAL mode a committed transaction survives a crash of the process
  (SIGKILL, a segfault, a faulting kernel taking the process down); only an OS crash or power loss
  can lose the last commits, and a commit per cell stays cheap.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError

from ktriage.errors import StoreError, Worded, joined, option, spelled, worded
from ktriage.home import home_path
from ktriage.store import jsoncodec
from ktriage.store.fixes import DB, EXAMPLE_URL, MADE_BY

BUSY_TIMEOUT_MS = 60_000
WRITE_TRY_MS = 200  # one try of BEGIN IMMEDIATE's wait for another writer: how late a Ctrl-C may act
# A server that accepts and never answers (a firewall, a wrong port) must not hold a verb for minutes:
# libpq's connect_timeout bounds the whole connection, handshake included. A URL's own
# ?connect_timeout=N wins. (The queries themselves are not bounded: history reads a large store.)
CONNECT_TIMEOUT_S = 10
# ... and a server that completes the handshake but never answers the first query (a hung server, a
# proxy that lost its backend) must not either: opening the store (the dialect's first queries and the
# schema check) is bounded by this, then the connection's socket is shut down (first_query_guard).
FIRST_QUERY_TIMEOUT_S = 12
DB_ENV = "KTRIAGE_DB"  # the store URL of every verb and library call that is given none (docs/environment.md)
WRITE_OPTION = "ktriage_write"  # execution option that asks for BEGIN IMMEDIATE on SQLite
_JSON_CODEC: dict[str, Callable[..., Any]] = {"json_serializer": jsoncodec.dumps, "json_deserializer": jsoncodec.loads}


SCHEMA_TABLE = "ktriage_schema"  # the table that makes a database a store (schema.py's schema_table)
SQLITE_MAGIC = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database file (sqlite.org/fileformat.html)


def default_url() -> str:
    """The SQLite file under the ktriage home: every run lands there unless ``--db`` says otherwise.
    (Not created here: a writer's open makes its folders, a reader's refuses a missing file.)"""
    return f"sqlite:///{home_path() / 'store' / 'ktriage.db'}"


def check_db(url: object) -> str | None:
    """``db`` as a caller gave it: None or a URL string, else a StoreError naming the fix. A
    ``pathlib.Path`` (``db=Path("store.db")``, natural in a script, where every other path argument takes
    one) is refused with its URL: it failed with ``AttributeError: 'PosixPath' object has no attribute
    'strip'``. The one check of the verbs' ``db`` keyword (``api/_args.db``) and of :func:`store_url`."""
    if isinstance(url, os.PathLike):
        raise StoreError(
            joined(option("db", "--db"), f" is a path ({type(url).__name__}: {str(url)!r}), not a database URL"),
            f"give the SQLite file as a URL string: db='sqlite:///{Path(url).expanduser().absolute()}' "
            "(or a PostgreSQL URL, postgresql+psycopg://user@host/db)",
        )
    if url is not None and not isinstance(url, str):
        raise StoreError(
            f"db={url!r} ({type(url).__name__}) is not a database URL",
            "pass a str, e.g. db='sqlite:////path/ktriage.db' or db='postgresql+psycopg://user@host/db'",
        )
    return url


def store_url(url: str | None) -> str | None:
    """The store a caller means: ``url``, else ``$KTRIAGE_DB``, else None (the default SQLite file under the
    ktriage home). Why here and not in the CLI only: a library call with ``db=None`` read the home's store
    while ``ktriage runs list`` read ``$KTRIAGE_DB``, so the two disagreed on the same machine. An empty
    ``KTRIAGE_DB`` is unset, as the command line reads it. ``url`` is checked first (:func:`check_db`)."""
    url = check_db(url)
    if url is not None:
        return url
    return os.environ.get(DB_ENV, "").strip() or None


def _url_fix(text: str) -> Worded:
    """The fix for a --db that is no URL. A file path (``--db run/store.db``, the natural first try) gets
    its own URL, with the four slashes of an absolute path spelled out, not only the general example,
    named both ways (``db='sqlite:////...' (--db sqlite:////...)``): ``kt.runs_list(db="runs.db")`` reaches
    this message too."""
    example = "pass a SQLAlchemy URL, e.g. sqlite:////path/to/ktriage.db or postgresql+psycopg://user:pw@host:5432/db"
    if "://" in text or not (os.sep in text or text.endswith((".db", ".sqlite", ".sqlite3"))):
        return Worded(example)
    url = f"sqlite:///{Path(text).expanduser().absolute()}"
    return worded(lambda o: f"a SQLite file is given as a URL: {o('db', '--db', url)} (or in KTRIAGE_DB)")


def make_store_engine(url: str | None, *, must_exist: bool = False) -> Engine:
    """An engine for ``url`` (None: ``$KTRIAGE_DB``, else the default SQLite file), with the SQLite settings
    described above.

    ``must_exist``: a read-only verb's open (runs list/show/export, history). A SQLite path must then
    already be a SQLite database: SQLite would make a missing file, or an empty one, into a database,
    and the schema's first use would then create the store's tables in any file given to a read."""
    url = store_url(url)
    if url is not None and not url.strip():
        raise StoreError(
            worded(lambda o: f"the database URL is empty: {o('db', '--db', url)} or KTRIAGE_DB=''"),
            worded(
                lambda o: (
                    f"give a URL, e.g. {o('db', '--db', EXAMPLE_URL)}, or leave {spelled(DB, o)} and KTRIAGE_DB out for the default "
                    "store"
                )
            ),
        )
    text = url or default_url()
    try:
        parsed = make_url(text)
    except ArgumentError as exc:
        raise StoreError(f"not a database URL: {text!r} ({exc})", _url_fix(text)) from exc
    parsed = _with_driver(parsed)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(parsed, must_exist=must_exist, default=url is None)
    connect_args: dict[str, object] = {}
    if parsed.get_backend_name() == "postgresql" and "connect_timeout" not in parsed.query:
        connect_args["connect_timeout"] = CONNECT_TIMEOUT_S
    try:
        engine = create_engine(parsed, pool_pre_ping=True, connect_args=connect_args, **_JSON_CODEC)
    except (NoSuchModuleError, ModuleNotFoundError) as exc:
        raise StoreError(
            f"no database driver for {parsed.drivername!r}: {exc}",
            "the store runs on SQLite (sqlite:////path/ktriage.db) and PostgreSQL (postgresql+psycopg://user@host/db, "
            "with pip install 'psycopg[binary]')",
        ) from exc
    _track_connections(engine)
    return engine


# libpq's schemes (``postgres://`` is what psql, Heroku and most platforms' DATABASE_URL write) with no
# driver named: the store's driver, psycopg 3 (docs/store.md), rather than SQLAlchemy's default.
_PG_SCHEMES = ("postgres", "postgresql")
PG_DRIVER = "postgresql+psycopg"


def _with_driver(parsed: URL) -> URL:
    """``postgres://`` and ``postgresql://`` as ``postgresql+psycopg://``. Why: ``postgres://`` (libpq's
    other spelling, the one a platform's DATABASE_URL pasted as ``--db`` has) failed as "no database driver
    for 'postgres'", and ``postgresql://`` (docs/compare.md's example) means psycopg2 on SQLAlchemy 2.0, a
    driver ktriage does not install; both mean the one PostgreSQL driver the store is tested with."""
    if parsed.drivername in _PG_SCHEMES:
        return parsed.set(drivername=PG_DRIVER)
    return parsed


_OPENED = "ktriage_opened"  # engine attribute: the DBAPI connections made while the store opens


def _track_connections(engine: Engine) -> None:
    """Note every DBAPI connection the engine makes (the driver's own connect, so that the first
    query's wait can be ended by :func:`first_query_guard` even before SQLAlchemy's first-connect
    queries return)."""
    opened: list[Any] = []
    setattr(engine, _OPENED, opened)

    @event.listens_for(engine, "do_connect")
    def _connect(dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
        conn = dialect.connect(*cargs, **cparams)
        opened.append(conn)
        return conn


@contextmanager
def first_query_guard(engine: Engine, seconds: float = FIRST_QUERY_TIMEOUT_S) -> Iterator[list[bool]]:
    """Bound opening a server's store: when the block has not finished after ``seconds``, shut down
    the sockets of the connections it opened, so that the driver's wait ends with an error (the
    yielded flag then holds True: the caller says the server did not answer in time)."""
    import socket
    import threading

    fired = [False]
    opened: list[Any] = getattr(engine, _OPENED, [])

    def fire() -> None:
        fired[0] = True
        for conn in list(opened):
            try:
                sock = socket.socket(fileno=os.dup(conn.fileno()))
            except Exception:  # a driver without fileno(), a connection already closed
                continue
            try:
                sock.shutdown(socket.SHUT_RDWR)  # the driver's blocked read returns: its error ends the open
            except OSError:
                pass
            finally:
                sock.close()  # our duplicate only; the driver closes its own

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    try:
        yield fired
    finally:
        timer.cancel()
        opened.clear()


def _sqlite_engine(url: Any, *, must_exist: bool = False, default: bool = False) -> Engine:
    database = url.database
    if not database or database == ":memory:":
        raise StoreError(
            "an in-memory SQLite store keeps nothing",
            worded(
                lambda o: (
                    f"give a file, e.g. {o('db', '--db', EXAMPLE_URL)}, or leave {spelled(DB, o)} out for the default file"
                )
            ),
        )
    # The SQLite file's missing folders are created (documented in --db's help and docs/environment.md);
    # a path that cannot be a folder or a file is refused here, not as a driver traceback.
    uri = _uri_mode(url)
    path = _uri_file(database) if uri else Path(database).expanduser()
    if uri and (str(path) in ("", ".", ":memory:") or str(url.query.get("mode", "")) == "memory"):
        raise StoreError(
            f"the SQLite URI {database} is an in-memory database, which keeps nothing",
            worded(
                lambda o: (
                    f"give a file, e.g. {o('db', '--db', EXAMPLE_URL)}, or leave {spelled(DB, o)} out for the default file"
                )
            ),
        )
    if not path.is_absolute() and not uri:
        _refuse_slash_slip(database)
        path = path.absolute()  # the store's URL in every message says which file it is, wherever run from
        url = url.set(database=str(path))
    if must_exist:
        _check_existing_sqlite(path, default=default)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        exists = path.exists()
    except OSError as exc:
        raise StoreError(
            f"cannot create the folder of the store {str(path)[:200]}: {exc.strerror or exc}",
            worded(lambda o: f"give {spelled(DB, o)} a sqlite:/// path in a writable folder (names up to 255 bytes)"),
        ) from exc
    if exists and not path.is_file():
        raise StoreError(
            f"the store path {path} is not a file",
            worded(lambda o: f"give {spelled(DB, o)} the path of a SQLite file, e.g. {o('db', '--db', EXAMPLE_URL)}"),
        )
    engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000}, **_JSON_CODEC)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: sqlite3.Connection, _record: object) -> None:
        # Take transaction control from the sqlite3 module so the "begin" hook decides how to begin.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        _write_ahead_log(cur)
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        if conn.get_execution_options().get(WRITE_OPTION, False):
            _begin_immediate(conn)
        else:
            conn.exec_driver_sql("BEGIN")

    return engine


def _write_ahead_log(cur: sqlite3.Cursor) -> None:
    """``PRAGMA journal_mode=WAL``, tried again while another connection holds the file's write lock, up to
    the busy timeout. Why not SQLite's own wait: the switch needs the file to itself, and SQLite answers
    "database is locked" at once, without its busy handler, while another connection of a file still in
    rollback mode holds a write lock (two processes opening one new store at once: the second failed)."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(WRITE_TRY_MS / 1000 / 4)


def _begin_immediate(conn: Connection) -> None:
    """``BEGIN IMMEDIATE``, waiting up to the busy timeout for another writer, in short tries. Why not
    SQLite's own wait: it sleeps inside one C call, where Python runs no signal handler, so Ctrl-C on a
    ``runs import`` queued behind another writer took effect only when the 60 s were over. Between two
    tries of :data:`WRITE_TRY_MS` the KeyboardInterrupt is raised (nothing of the write was begun). The
    connection's busy timeout is set back afterwards: the statements of the transaction, and every read,
    keep the full wait."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    conn.exec_driver_sql(f"PRAGMA busy_timeout={WRITE_TRY_MS}")
    try:
        while True:
            try:
                conn.exec_driver_sql("BEGIN IMMEDIATE")
                return
            except OperationalError as exc:
                if "locked" not in str(exc.orig) or time.monotonic() >= deadline:
                    raise
    finally:
        conn.exec_driver_sql(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")


def _uri_mode(url: URL) -> bool:
    """A ``sqlite:///file:...?uri=true`` URL: its database is a SQLite URI (``file:``), not a path."""
    return str(url.query.get("uri", "")).lower() in ("true", "1")


def _uri_file(database: str) -> Path:
    """The file a SQLite URI names (``file:/abs/k.db``, ``file:///abs/k.db``, ``file:rel.db``; percent-escapes
    decoded). Why: the URI itself is not a path, and making its "parent folder" created a ``file:`` folder in
    the current directory; the folder to create (and the file to check) is the one the URI points at."""
    parts = urllib.parse.urlsplit(database)
    return Path(urllib.parse.unquote(parts.path)).expanduser().absolute()


def _refuse_slash_slip(database: str) -> None:
    """Refuse ``sqlite:///work/runs/k.db`` meant as ``/work/runs/k.db``: three slashes make the path
    relative to the current folder, so an import went, silently, into ``./work/runs/k.db`` (its missing
    folders created), and a reader said "no store at work/runs/k.db". Refused when the relative path's
    folder does not exist here but exists from ``/``: that is an absolute path with a slash missing. A
    path meant relative says so with ``./`` (``sqlite:///./work/k.db``)."""
    if database.startswith(("./", "../", "~")):
        return
    relative = Path(database)
    meant = Path("/") / relative
    try:
        slipped = not relative.parent.exists() and meant.parent.is_dir()
    except OSError:  # a name too long: refused where the folder is made, with its own message
        return
    if slipped:
        raise StoreError(
            f"sqlite:///{database} is a path relative to the current folder ({Path(database).absolute()}), "
            f"whose folder does not exist, while {meant.parent} does",
            worded(
                lambda o: (
                    f"an absolute path takes four slashes: {o('db', '--db', f'sqlite:///{meant}')}; for a path "
                    f"under the current folder, start it with ./ (sqlite:///./{database})"
                )
            ),
        )


def _check_existing_sqlite(path: Path, *, default: bool) -> None:
    """A read-only verb's SQLite path: an existing SQLite database (by its header), else a StoreError
    with the fix; nothing is created or written."""
    try:
        exists = path.exists()
    except OSError as exc:  # a name too long, a component that is a file...
        raise StoreError(
            f"cannot use the store path {str(path)[:200]}: {exc.strerror or exc}",
            worded(lambda o: f"give {spelled(DB, o)} a sqlite:/// path of an existing store (names up to 255 bytes)"),
        ) from exc
    if not exists:
        if default:
            raise StoreError(
                f"there is no results store yet ({path} does not exist)",
                worded(lambda o: f"{spelled(MADE_BY, o)}; pass {o('db', '--db', 'URL')} to read another store"),
            )
        raise StoreError(
            f"no store at {path}: the file does not exist",
            worded(
                lambda o: (
                    f"check the path given as {spelled(DB, o)}: reading a store never creates one; {spelled(MADE_BY, o)}"
                )
            ),
        )
    if not path.is_file():
        raise StoreError(
            f"the store path {path} is not a file",
            worded(lambda o: f"give {spelled(DB, o)} the path of a SQLite file, e.g. {o('db', '--db', EXAMPLE_URL)}"),
        )
    try:
        with path.open("rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise StoreError(
            f"cannot read the store {path}: {exc.strerror or exc}", "check the file's permissions"
        ) from exc
    if head != SQLITE_MAGIC:
        raise StoreError(
            f"{path} is not a SQLite database" + (" (the file is empty)" if not head else ""),
            worded(
                lambda o: (
                    f"point {spelled(DB, o)} at a ktriage store (reading never converts a file into one); {spelled(MADE_BY, o)}"
                )
            ),
        )
    # Asked on a read-only connection without the engine's hooks: they would switch another database to WAL.
    try:
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as conn:
            found = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (SCHEMA_TABLE,)
            ).fetchone()
    except sqlite3.Error as exc:
        raise StoreError(
            f"cannot open the store {path}: {exc}",
            worded(lambda o: f"point {spelled(DB, o)} at a ktriage store; {spelled(MADE_BY, o)}"),
        ) from exc
    if found is None:
        raise StoreError(
            f"{path} is a SQLite database but not a ktriage store (it has no {SCHEMA_TABLE} table)",
            worded(
                lambda o: (
                    f"point {spelled(DB, o)} at a ktriage store (reading never adds the store's tables to a database); {spelled(MADE_BY, o)}"
                )
            ),
        )


def display_url(engine: Engine) -> str:
    """The engine's URL with the password masked: safe for messages and logs. A SQLite URI keeps the
    ``file:`` the user wrote (SQLAlchemy escapes its colon as ``%3A``, a URL no one typed)."""
    shown = engine.url.render_as_string(hide_password=True)
    if engine.url.get_backend_name() == "sqlite" and _uri_mode(engine.url):
        shown = shown.replace("sqlite:///file%3A", "sqlite:///file:", 1)
    return shown
