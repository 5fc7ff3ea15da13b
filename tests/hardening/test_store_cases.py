"""Hardening corpus (issue 27): the results store behind `runs list/show/export/import` and `history`:
database URLs (malformed, missing drivers, a port that refuses, a PostgreSQL port that accepts and
never answers), read-only and foreign stores, corrupt cells and runs written into a real SQLite
store, a schema version that is no number, run ids, history options, unwritable outputs; through the
real ``main(argv)`` (tests/hardening/surface_cases.py says what each case must give)."""

from __future__ import annotations

import json
import socket
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from surface_cases import Case, HandshakeOnlyPostgres, SilentServer, clean_env, distinct, run_case  # noqa: F401 (fixture)


def _good_results() -> dict[str, Any]:
    from ktriage.measure.results_file import results_to_json
    from ktriage.testing import fake_sweep_run

    run, cells = fake_sweep_run(seed=3, n_inputs=2, samples=5, toolchains=("triton-3.4.0",))
    return results_to_json(run, cells)


GOOD = _good_results()
RUN = GOOD["run"]["run_id"]
CELL = GOOD["cells"][0]["key"]
DB = "sqlite:///{d}/k.db"


def _store(d: Path) -> None:
    """A real store holding the good run (imported through the CLI's own import)."""
    from ktriage.measure.results_file import read_results
    from ktriage.store import open_store

    (d / "good.json").write_text(json.dumps(GOOD))
    info, cells = read_results(d / "good.json")
    with open_store(f"sqlite:///{d}/k.db") as store:
        store.import_run(info, cells)


def _corrupt(sql: str, *params: Any) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        _store(d)
        con = sqlite3.connect(d / "k.db")
        con.execute(sql, params)
        con.commit()
        con.close()

    return setup


# a PostgreSQL port that accepts connections and never says a word (issue 27: 130 s before)
SILENT = SilentServer()
MUTE_PG = HandshakeOnlyPostgres()
DEAD_PORT = socket.socket()
DEAD_PORT.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused at once
URLS: dict[str, str] = {
    "empty": "",
    "word": "nope",
    "no-path": "sqlite://",
    "memory": "sqlite:///:memory:",
    "proc": "sqlite:////proc/k.db",
    "under-a-file": "sqlite:///{d}/afile/k.db",
    "a-folder": "sqlite:///{d}/adir",
    "not-a-database": "sqlite:///{d}/afile",
    "read-only-uri": "sqlite:///file:{d}/empty.db?mode=ro&uri=true",
    "long-name": "sqlite:///{d}/" + "n" * 300 + ".db",
    "http": "http://example.invalid/db",
    "mysql-no-driver": "mysql+mysqldb://u@127.0.0.1/db",
    "unknown-dialect": "nosuchdb://u@h/db",
    "pg-refused": f"postgresql+psycopg://u:p@127.0.0.1:{DEAD_PORT.getsockname()[1]}/db",
    "pg-silent": f"postgresql+psycopg://u:p@127.0.0.1:{SILENT.port}/db",
    "pg-mute-after-handshake": f"postgresql+psycopg://u:p@127.0.0.1:{MUTE_PG.port}/db",
    "pg-bad-port": "postgresql+psycopg://u:p@127.0.0.1:99999/db",
    "pg-no-host": "postgresql+psycopg://u:p@/db?host=/nonexistent-socket-dir",
}
VERBS: dict[str, Callable[[Path, str], list[str]]] = {
    "list": lambda d, db: ["runs", "list", "--db", db],
    "show": lambda d, db: ["runs", "show", RUN, "--db", db],
    "export": lambda d, db: ["runs", "export", RUN, "--db", db],
    "import": lambda d, db: ["runs", "import", str(d / "good.json"), "--db", db],
    "history": lambda d, db: ["history", "--op", CELL["op"], "--backend", CELL["backend"], "--db", db],
}


def _files() -> dict[str, bytes]:
    return {"good.json": json.dumps(GOOD).encode(), "afile": b"not a database, some text\n" * 40, "adir/keep": b""}


def _read_only_store(d: Path) -> None:
    sqlite3.connect(d / "empty.db").close()


def url_cases() -> list[Case]:
    cases = []
    for name, url in URLS.items():
        for verb, argv in VERBS.items():
            if name in ("pg-silent", "pg-mute-after-handshake") and verb not in ("list", "import"):
                continue  # 10-12 s each (the connect and first-query timeouts): two verbs show it
            cases.append(
                Case(
                    f"db:{name}:{verb}",
                    lambda d, a=argv, u=url: a(d, u.replace("{d}", str(d))),
                    _files(),
                    setup=_read_only_store,
                )
            )
        if name in ("pg-silent", "pg-mute-after-handshake"):
            continue
        cases.append(
            Case(
                f"env-db:{name}",
                lambda d: ["runs", "list"],
                _files(),
                env=(("KTRIAGE_DB", url),),
                setup=_read_only_store,
                check=_default_store if name == "empty" else None,
            )
        )  # empty: not set
    return cases


# ------------------------------------------------------------------------------------------ corrupt stores
CORRUPTIONS: dict[str, Callable[[Path], None]] = {
    "samples-string": _corrupt(
        "update ktriage_cells set samples_ms = '\"x\"' where id = (select min(id) from ktriage_cells)"
    ),
    "samples-strings": _corrupt(
        "update ktriage_cells set samples_ms = '[1.0, \"a\"]' where id = (select min(id) from ktriage_cells)"
    ),
    "samples-null": _corrupt(
        "update ktriage_cells set samples_ms = 'null' where id = (select min(id) from ktriage_cells)"
    ),
    "samples-object": _corrupt(
        "update ktriage_cells set samples_ms = '{\"a\": 1}' where id = (select min(id) from ktriage_cells)"
    ),
    "samples-nested": _corrupt(
        "update ktriage_cells set samples_ms = '[[1.0]]' where id = (select min(id) from ktriage_cells)"
    ),
    "samples-not-json": _corrupt(
        "update ktriage_cells set samples_ms = 'abc' where id = (select min(id) from ktriage_cells)"
    ),
    "samples-deep": _corrupt(
        "update ktriage_cells set samples_ms = ? where id = (select min(id) from ktriage_cells)",
        "[" * 100_000 + "]" * 100_000,
    ),
    "samples-bool": _corrupt(
        "update ktriage_cells set samples_ms = '[true]' where id = (select min(id) from ktriage_cells)"
    ),
    "samples-negative": _corrupt(
        "update ktriage_cells set samples_ms = '[-1.0]' where id = (select min(id) from ktriage_cells)"
    ),
    "extra-string": _corrupt("update ktriage_cells set extra = '\"x\"' where id = (select min(id) from ktriage_cells)"),
    "accuracy-number": _corrupt(
        "update ktriage_cells set accuracy = '5' where id = (select min(id) from ktriage_cells)"
    ),
    "median-text": _corrupt(
        "update ktriage_cells set median_ms = 'abc' where id = (select min(id) from ktriage_cells)"
    ),
    "input-id-text": _corrupt(
        "update ktriage_cells set input_id = 'abc' where id = (select min(id) from ktriage_cells)"
    ),
    "status-bogus": _corrupt(
        "update ktriage_cells set status = 'bogus' where id = (select min(id) from ktriage_cells)"
    ),
    "gpu-string": _corrupt("update ktriage_runs set gpu = '\"x\"'"),
    "gpu-not-json": _corrupt("update ktriage_runs set gpu = '{'"),
    "toolchains-number": _corrupt("update ktriage_runs set toolchains = '1'"),
    "toolchains-strings": _corrupt("update ktriage_runs set toolchains = '[\"a\"]'"),
    "settings-list": _corrupt("update ktriage_runs set settings = '[]'"),
    "packages-list": _corrupt("update ktriage_runs set packages = '[1]'"),
    "command-number": _corrupt("update ktriage_runs set command = '5'"),
    "created-number": _corrupt("update ktriage_runs set created = 5"),
    "run-status-bogus": _corrupt("update ktriage_runs set status = 'bogus'"),
    "updated-text": _corrupt("update ktriage_runs set updated = 'abc'"),
    "schema-abc": _corrupt("update ktriage_schema set version = 'abc'"),
    "schema-negative": _corrupt("update ktriage_schema set version = -1"),
    "schema-future": _corrupt("update ktriage_schema set version = 99"),
    "schema-row-missing": _corrupt("delete from ktriage_schema"),
    "schema-float": _corrupt("update ktriage_schema set version = 1.5"),
    "no-cells-table": _corrupt("drop table ktriage_cells"),
    "cells-table-is-a-view": _corrupt("create view ktriage_x as select 1"),
}
CORRUPT_VERBS: dict[str, Callable[[Path], list[str]]] = {
    "show": lambda d: ["runs", "show", RUN, "--db", DB.format(d=d)],
    "export": lambda d: ["runs", "export", RUN, "--db", DB.format(d=d)],
    "list": lambda d: ["runs", "list", "--db", DB.format(d=d)],
    "history": lambda d: ["history", "--op", CELL["op"], "--backend", CELL["backend"], "--db", DB.format(d=d)],
}
# a foreign object beside the tables, a text column holding digits, a column the verb does not read:
# the verbs work (and show what is there)
HARMLESS = {"cells-table-is-a-view", "schema-row-missing", "command-number", "created-number", "updated-text"}
HARMLESS_FOR = {
    "show": {"median-text"},
    "export": {"median-text"},
    "history": {
        "samples-string",
        "samples-strings",
        "samples-null",
        "samples-object",
        "samples-nested",
        "samples-not-json",
        "samples-deep",
        "samples-bool",
        "extra-string",
        "accuracy-number",
        "settings-list",
        "packages-list",
    },
}


def _works(code: int, out: str, err: str, d: Path) -> None:
    assert code in (0, 1) and "error:" not in err, err


def _default_store(code: int, out: str, err: str, d: Path) -> None:
    """KTRIAGE_DB="" is unset: the default store is read, and a fresh home has none (a read makes none)."""
    assert code == 2 and "there is no results store yet" in err and "store/ktriage.db does not exist" in err, err


def _shows_or_refuses(code: int, out: str, err: str, d: Path) -> None:
    """A corruption the verb does not read (runs list reads no samples): it works, or refuses cleanly."""
    if code == 2:
        assert "error:" in err and "fix:" in err, err
    else:
        assert code in (0, 1) and "error:" not in err, err


LIST_READS = {
    "gpu-string",
    "gpu-not-json",
    "toolchains-number",
    "toolchains-strings",
    "settings-list",
    "schema-abc",
    "schema-future",
    "schema-float",
    "no-cells-table",
    "command-number",
    "created-number",
    "updated-text",
    "packages-list",
}


def corrupt_cases() -> list[Case]:
    cases = []
    for name, setup in CORRUPTIONS.items():
        for verb, argv in CORRUPT_VERBS.items():
            check = None
            if name in HARMLESS or name in HARMLESS_FOR.get(verb, ()):
                check = _works
            elif name == "no-cells-table":  # recreated empty on open: no run has cells then
                check = _shows_or_refuses
            elif verb == "list" and name not in LIST_READS:
                check = _shows_or_refuses
            elif verb == "history":
                check = _shows_or_refuses if name in ("samples-negative", "run-status-bogus", "status-bogus") else None
            cases.append(Case(f"store:{name}:{verb}", argv, setup=setup, check=check))
    return cases


# ------------------------------------------------------------------------------------------ run ids, options, outputs
RUN_IDS = ["", "zzzz", "%", "_", "'", "../x", "x" * 5000, "\x00", "a b"]
HISTORY_OPTIONS: dict[str, list[str]] = {
    "pvalue-negative": ["--max-pvalue", "-1"],
    "pvalue-2": ["--max-pvalue", "2"],
    "pvalue-nan": ["--max-pvalue", "nan"],
    "pvalue-inf": ["--max-pvalue", "inf"],
    "pvalue-zero": ["--max-pvalue", "0"],
    "min-step-negative": ["--min-step", "-5"],
    "min-step-nan": ["--min-step", "nan"],
    "min-step-inf": ["--min-step", "inf"],
    "min-segment-0": ["--min-segment", "0"],
    "fail-on-recent-0": ["--fail-on-recent", "0"],
    "fail-on-recent-text": ["--fail-on-recent", "x"],
    "op-unknown": [],
    "input-unknown": ["--input", "999999"],
    "toolchain-unknown": ["--toolchain", "nosuch"],
    "gpu-unknown": ["--gpu", "nosuchgpu"],
    "mode-bad": ["--mode", "sideways"],
}


def _bad_outputs(name: str) -> dict[str, list[str]]:
    return {
        "folder": ["-o", "{d}/adir"],
        "under-a-file": ["-o", "{d}/afile/" + name],
        "long-name": ["-o", "{d}/" + "n" * 300 + name],
        "no-writer": ["-o", "{d}/out.xyz"],
        "read-only": ["-o", "/proc/" + name],
    }


def other_cases() -> list[Case]:
    cases = []
    for rid in RUN_IDS:
        for verb in ("show", "export"):
            cases.append(
                Case(
                    f"run-id:{verb}:{rid[:12]!r}",
                    lambda d, v=verb, r=rid: ["runs", v, r, "--db", DB.format(d=d)],
                    setup=_store,
                )
            )
    for name, opts in HISTORY_OPTIONS.items():
        op = "nosuchop" if name == "op-unknown" else CELL["op"]
        cases.append(
            Case(
                f"history:{name}",
                lambda d, o=opts, p=op: [
                    "history",
                    "--op",
                    p,
                    "--backend",
                    CELL["backend"],
                    *o,
                    "--db",
                    DB.format(d=d),
                ],
                setup=_store,
            )
        )
    for verb, argv in {
        "list": ["runs", "list"],
        "show": ["runs", "show", RUN],
        "export": ["runs", "export", RUN],
        "history": ["history", "--op", CELL["op"], "--backend", CELL["backend"]],
    }.items():
        for name, out in _bad_outputs(".json").items():
            cases.append(
                Case(
                    f"output:{verb}:{name}",
                    lambda d, a=argv, o=out: [*a, "--db", DB.format(d=d), *[x.replace("{d}", str(d)) for x in o]],
                    _files(),
                    setup=_store,
                )
            )
    cases.append(Case("import:folder", lambda d: ["runs", "import", str(d / "adir"), "--db", DB.format(d=d)], _files()))
    cases.append(
        Case(
            "import:into-read-only-store",
            lambda d: ["runs", "import", str(d / "good.json"), "--db", f"sqlite:///file:{d}/k.db?mode=ro&uri=true"],
            setup=_store,
        )
    )
    cases.append(
        Case("import:twice", lambda d: ["runs", "import", str(d / "good.json"), "--db", DB.format(d=d)], setup=_store)
    )
    return cases


CASES = distinct(url_cases() + corrupt_cases() + other_cases())


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_store_input_is_handled(
    case: Case, tmp_path: Path, clean_env: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KTRIAGE_HOME", str(tmp_path / "home"))
    run_case(case, tmp_path, monkeypatch, capsys)


def test_the_silent_server_fails_fast_and_names_the_timeout(
    tmp_path: Path, clean_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """The port accepts and never answers: a clean error that says the server did not answer in time."""
    from ktriage.cli.app import main

    assert main(["runs", "list", "--db", URLS["pg-silent"]]) == 2
    err = capsys.readouterr().err
    assert "did not answer" in err or "timeout" in err.lower(), err


def test_a_server_mute_after_the_handshake_fails_fast_and_says_so(
    tmp_path: Path, clean_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server completes the startup and never answers a query: the store's first queries are
    bounded (12 s) and the error says the server did not answer them."""
    from ktriage.cli.app import main

    assert main(["runs", "list", "--db", URLS["pg-mute-after-handshake"]]) == 2
    err = capsys.readouterr().err
    assert "did not answer its first queries" in err and "fix:" in err, err
