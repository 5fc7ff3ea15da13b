"""What a new user gets wrong about a store, and what they are told (session 22, a user without a GPU):
libpq's ``postgres://`` scheme, a SQLite URL with one slash too few, a TritonBench file given to
``runs import``, Ctrl-C on an import queued behind another writer. Real SQLite files, a real PostgreSQL
(``KTRIAGE_TEST_PG_URL``, skipped without it) and real child processes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ktriage.cli import exit_codes
from ktriage.errors import StoreError
from ktriage.measure.results_file import read_results, write_results
from ktriage.measure.tritonbench_format import to_tritonbench_json
from ktriage.store import engine, open_store
from ktriage.testing import fake_sweep_run
from tests.conftest import RunCli
from tests.store.fixtures import PG_ENV, PG_SKIP

DATA = Path(__file__).resolve().parents[1] / "data" / "tritonbench"  # TritonBench's real A/A CSVs


def _results(tmp_path: Path, seed: int = 1) -> tuple[Path, str]:
    run, cells = fake_sweep_run(seed=seed, n_inputs=2, samples=5, toolchains=("triton-3.4.0",))
    return write_results(tmp_path / f"r{seed}.json", run, cells), run.run_id


@pytest.mark.parametrize("scheme", ["postgres", "postgresql"])
def test_libpq_schemes_open_the_postgresql_store(scheme: str, tmp_path: Path, run_cli: RunCli) -> None:
    """``postgres://`` (what psql and a platform's DATABASE_URL write) was "no database driver for
    'postgres'"; ``postgresql://`` needed psycopg2 on SQLAlchemy 2.0. Both are the store's psycopg."""
    base = os.environ.get(PG_ENV)
    if not base:
        pytest.skip(PG_SKIP)
    from tests.store.fixtures import _pg_store_url

    urls = _pg_store_url(base)
    url = next(urls)
    try:
        given = scheme + url[url.index("://") :]
        path, run_id = _results(tmp_path)
        done = run_cli(["runs", "import", str(path), "--db", given])
        assert done.exit_code == exit_codes.OK, done.output
        assert "into postgresql+psycopg://" in done.stdout
        listed = run_cli(["runs", "list", "--db", given, "--format", "csv"])
        assert listed.exit_code == exit_codes.OK and run_id in listed.stdout
        with open_store(url) as store:  # the same store as the psycopg URL's
            assert store.load_run(run_id)[0].run_id == run_id
    finally:
        urls.close()


def test_a_postgres_url_without_a_server_is_a_connect_error_not_a_missing_driver(run_cli: RunCli) -> None:
    result = run_cli(["runs", "list", "--db", "postgres://u:secret@127.0.0.1:1/db"])
    assert result.exit_code == exit_codes.USAGE
    assert "cannot open the store postgresql+psycopg://u:***@127.0.0.1:1/db" in result.err_text
    assert "no database driver" not in result.err_text and "secret" not in result.output


def test_three_slashes_before_an_absolute_path_are_refused_with_four(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: RunCli
) -> None:
    """``sqlite:///work/runs/k.db`` is ``./work/runs/k.db``: the import went silently into a new folder
    tree under the current one, and the next ``runs list`` from elsewhere said "no store"."""
    path, _ = _results(tmp_path)
    store_dir = tmp_path / "team"
    store_dir.mkdir()
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    slipped = f"sqlite://{store_dir}/k.db"  # three slashes in all: the path is relative
    for argv in (["runs", "import", str(path)], ["runs", "list"], ["history", "--op", "x", "--backend", "y"]):
        result = run_cli([*argv, "--db", slipped])
        assert result.exit_code == exit_codes.USAGE, result.output
        assert f"{slipped} is a path relative to the current folder" in result.err_text
        assert f"four slashes: --db sqlite:///{store_dir}/k.db" in result.err_text
    assert list(here.iterdir()) == [] and list(store_dir.iterdir()) == []  # nothing created anywhere
    done = run_cli(["runs", "import", str(path), "--db", f"sqlite:///{store_dir}/k.db"])  # the fix works
    assert done.exit_code == exit_codes.OK, done.output


def test_a_relative_sqlite_path_is_named_absolute_and_dot_slash_keeps_it_relative(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: RunCli
) -> None:
    path, run_id = _results(tmp_path)
    monkeypatch.chdir(tmp_path)
    done = run_cli(["runs", "import", str(path), "--db", "sqlite:///k.db"])
    assert done.exit_code == exit_codes.OK, done.output
    assert f"into sqlite:///{tmp_path / 'k.db'}" in done.stdout  # which file, wherever it was run from
    # a folder under the current one that also exists from / (tmp_path's first component) is meant
    # relative when it says so
    first = tmp_path.parts[1]
    done = run_cli(["runs", "import", str(path), "--db", f"sqlite:///./{first}/k.db"])
    assert done.exit_code == exit_codes.OK, done.output
    assert (tmp_path / first / "k.db").is_file()
    with open_store(f"sqlite:///{tmp_path / first / 'k.db'}") as store:
        assert [r.run_id for r in store.list_runs()] == [run_id]


@pytest.mark.parametrize("kind", ["CSV", "JSON"])
def test_runs_import_names_a_tritonbench_file(kind: str, tmp_path: Path, run_cli: RunCli) -> None:
    """A TritonBench CSV was "not valid JSON: Expecting value", its JSON "has no 'run' and no 'cells'"."""
    if kind == "CSV":
        given = DATA / "layer_norm_bwd_run1.csv"
    else:
        run, cells = read_results(_results(tmp_path)[0])
        given = tmp_path / "tb.json"
        given.write_text(json.dumps(to_tritonbench_json(run, cells, toolchain="triton-3.4.0")))
    db = tmp_path / "store" / "k.db"
    result = run_cli(["runs", "import", str(given), "--db", f"sqlite:///{db}"])
    assert result.exit_code == exit_codes.USAGE, result.output
    assert f"{given} is a TritonBench {kind}, not a ktriage results file" in result.err_text
    assert f"`ktriage compare OLD.{kind.lower()} NEW.{kind.lower()}`" in result.err_text
    assert "kt." not in result.err_text  # the command line is told the command; the library, kt.compare(old=, new=)
    assert not db.exists()  # refused before the store was opened
    import ktriage.api as kt
    from ktriage.errors import KtriageError

    with pytest.raises(KtriageError) as library:
        kt.runs_import(path=given, db=f"sqlite:///{db}")
    assert "kt.compare(old=..., new=...)" in (library.value.fix or "")  # the keywords kt.compare takes (it said a=, b=)
    assert not db.exists()


def _hold_write_lock(db: Path) -> sqlite3.Connection:
    """Another writer, mid-transaction: a real SQLite write lock on the store file."""
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    return holder


def test_a_writer_that_waits_too_long_is_refused_and_the_store_still_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wait for another writer is tried in short steps now; it still ends with "locked" after the
    busy timeout, the connection is usable afterwards, and nothing of the refused write is kept."""
    url = f"sqlite:///{tmp_path / 'k.db'}"
    path, run_id = _results(tmp_path)
    info, cells = read_results(path)
    monkeypatch.setattr(engine, "BUSY_TIMEOUT_MS", 1000)
    with open_store(url) as store:
        holder = _hold_write_lock(tmp_path / "k.db")
        try:
            with pytest.raises(StoreError, match="database is locked") as refused:
                store.import_run(info, cells)
            assert "another process holds the store's write lock" in (refused.value.fix or "")
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert store.list_runs() == []
        store.import_run(info, cells)
        assert [r.run_id for r in store.list_runs()] == [run_id]


def _has_open(pid: int, path: Path) -> bool:
    fds = Path(f"/proc/{pid}/fd")
    try:
        return any(os.path.realpath(fd) == str(path) for fd in fds.iterdir())
    except OSError:  # the process ended, or a descriptor closed while listed
        return False


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to see the child open the store")
def test_ctrl_c_on_an_import_queued_behind_another_writer_stops_it_now(tmp_path: Path) -> None:
    """SQLite's busy wait sleeps in one C call, where no Python signal handler runs: Ctrl-C on a
    `runs import` waiting for another writer acted only when the 60 s busy timeout was over. Now the wait
    is tried in 200 ms steps: the child ends on SIGINT while the lock is still held (the bound below is
    half the busy timeout, far above the step), with exit 130 and nothing imported."""
    db = (tmp_path / "k.db").resolve()
    path, run_id = _results(tmp_path)
    open_store(f"sqlite:///{db}").close()  # the store exists: the child's first write is the import's
    holder = _hold_write_lock(db)
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "ktriage", "runs", "import", str(path), "--db", f"sqlite:///{db}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + 120
        while not _has_open(child.pid, db) and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert child.poll() is None, child.communicate()[0]
        time.sleep(0.5)  # past its first tries: it is waiting for the lock
        child.send_signal(signal.SIGINT)
        try:
            out, _ = child.communicate(timeout=engine.BUSY_TIMEOUT_MS / 2000)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            pytest.fail("Ctrl-C did not stop an import waiting for the store's write lock")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert child.returncode == exit_codes.INTERRUPTED, out
    with open_store(f"sqlite:///{db}", must_exist=True) as store:
        assert store.list_runs() == []
    # it said nothing; now, that nothing was stored and to import again
    said = " ".join(out.split())
    assert f"interrupted: nothing of run {run_id} was stored in sqlite:///{db}" in said, out
    assert "run the same command again to import it" in said and "Traceback" not in out, out


# A child that imports with the real CLI and sends itself a real SIGINT the moment the store's import
# has returned (committed): the one instant the test cannot hit from outside. Only the signal's timing is arranged.
_CTRL_C_AFTER_COMMIT = """
import os, signal, sys
from ktriage.store.store import Store
from ktriage.cli.app import main

committed = Store.import_run

def import_then_ctrl_c(self, run, cells):
    done = committed(self, run, cells)
    os.kill(os.getpid(), signal.SIGINT)
    return done

Store.import_run = import_then_ctrl_c
sys.exit(main(sys.argv[1:]))
"""


def test_ctrl_c_just_after_an_import_committed_says_the_run_is_stored(tmp_path: Path) -> None:
    """Ctrl-C right after the import's transaction committed exited 130 with nothing printed, though the
    run was stored whole: the user could not tell whether to import again (a second import is refused).
    It says the run is stored, and the store holds it whole."""
    db = (tmp_path / "k.db").resolve()
    path, run_id = _results(tmp_path)
    child = subprocess.run(
        [sys.executable, "-c", _CTRL_C_AFTER_COMMIT, "runs", "import", str(path), "--db", f"sqlite:///{db}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == exit_codes.INTERRUPTED, child.stdout + child.stderr
    said = " ".join(child.stderr.split())
    assert f"interrupted: run {run_id} was stored whole in sqlite:///{db} before Ctrl-C; do not import it again" in (
        said
    ), child.stderr
    assert "Traceback" not in child.stderr and "imported run" not in child.stdout
    with open_store(f"sqlite:///{db}", must_exist=True) as store:
        assert [r.run_id for r in store.list_runs()] == [run_id]
        assert sum(store.summary(run_id).counts.values()) == len(read_results(path)[1])


def test_sqlite_uri_store_is_made_where_the_uri_points(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sqlite:///file:/abs/sub/k.db?uri=true`` (SQLite's URI form, for ``mode=ro`` and the like) created a
    ``file:`` folder in the current directory, the URI taken for a path; and messages showed ``file%3A``."""
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "stores" / "sub" / "k.db"
    path, run_id = _results(tmp_path)
    url = f"sqlite:///file:{store}?uri=true"
    done = run_cli(["runs", "import", str(path), "--db", url])
    assert done.exit_code == exit_codes.OK, done.output
    assert f"into {url}" in done.stdout
    assert store.is_file()
    assert not (tmp_path / "file:").exists()
    listed = run_cli(["runs", "list", "--db", url, "--format", "csv"])
    assert listed.exit_code == exit_codes.OK and run_id in listed.stdout


def test_sqlite_uri_in_memory_is_refused(tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch) -> None:
    """``mode=memory`` is SQLite's in-memory database through a URI: a store there keeps nothing."""
    monkeypatch.chdir(tmp_path)
    path, _ = _results(tmp_path)
    done = run_cli(["runs", "import", str(path), "--db", "sqlite:///file:k.db?mode=memory&uri=true"])
    assert done.exit_code != exit_codes.OK
    assert "in-memory database, which keeps nothing" in done.output
    assert list(tmp_path.glob("file*")) == [] and not (tmp_path / "k.db").exists()
