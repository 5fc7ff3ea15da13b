"""The store's refusals and the GPU selection's name the keyword as well as the flag (ktriage.errors.option):
kt.runs_list(db=...) was told "give --db a ...", "point --db at a ktriage store", and kt.bisect(gpus=...)
"--gpus 5: only 2 GPUs visible", options a library caller does not pass by those names. Through kt.*,
on real stores and files made here (the GPUs: CUDA_VISIBLE_DEVICES names two, as on a host that has them)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import ktriage.api as kt
from ktriage.errors import KtriageError
from ktriage.store import open_store

MADE_BY = (
    "a store is made by kt.bench(...) (`ktriage bench`) or kt.runs_import(path='R.json') (`ktriage runs import R.json`)"
)
EXAMPLE = "db='sqlite:////path/ktriage.db' (--db sqlite:////path/ktriage.db)"


def refusal(call, **kwargs) -> KtriageError:  # type: ignore[no-untyped-def]
    with pytest.raises(KtriageError) as refused:
        call(**kwargs)
    return refused.value


def test_the_stores_paths_and_urls_name_db_as_a_keyword(tmp_path: Path) -> None:
    empty = refusal(kt.runs_list, db="")
    assert empty.problem == "the database URL is empty: db='' (--db '') or KTRIAGE_DB=''"
    assert empty.fix == f"give a URL, e.g. {EXAMPLE}, or leave db (--db) and KTRIAGE_DB out for the default store"
    memory = refusal(kt.runs_list, db="sqlite://")
    assert memory.fix == f"give a file, e.g. {EXAMPLE}, or leave db (--db) out for the default file"
    missing = refusal(kt.runs_list, db=f"sqlite:///{tmp_path / 'missing.db'}")
    assert missing.fix == f"check the path given as db (--db): reading a store never creates one; {MADE_BY}"
    folder = refusal(kt.runs_list, db=f"sqlite:///{tmp_path}")
    assert folder.fix == f"give db (--db) the path of a SQLite file, e.g. {EXAMPLE}"
    garbage = tmp_path / "garbage.db"
    garbage.write_text("not a database")
    other = refusal(kt.runs_list, db=f"sqlite:///{garbage}")
    assert other.fix == f"point db (--db) at a ktriage store (reading never converts a file into one); {MADE_BY}"


def test_the_default_store_missing_names_db_as_a_keyword(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KTRIAGE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KTRIAGE_DB", raising=False)
    refused = refusal(kt.runs_list)
    assert refused.problem.startswith("there is no results store yet")
    assert refused.fix == f"{MADE_BY}; pass db='URL' (--db URL) to read another store"


def test_an_empty_store_and_a_newer_schema_name_db_as_a_keyword(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'k.db'}"
    with open_store(url):  # a store with no runs, as a fresh bench makes it
        pass
    no_run = refusal(kt.runs_show, run="abc", db=url)
    assert no_run.fix == (
        "the store has no runs yet: measure with kt.bench(...) (`ktriage bench ...`), or pass db='URL' (--db URL) "
        "for another store"
    )
    with sqlite3.connect(tmp_path / "k.db") as conn:  # a store written by a later ktriage
        conn.execute("UPDATE ktriage_schema SET version = 999")
    newer = refusal(kt.runs_list, db=url)
    assert newer.fix == "upgrade ktriage (pip install -U ktriage), or point db (--db) at another store"


def test_a_damaged_json_column_names_the_library_calls_and_db(tmp_path: Path) -> None:
    """jsoncodec's fix was "... or use another --db"; it is now the store's one fix for a damaged store."""
    results = Path(__file__).parents[2] / "benchmarks/perf/h200/ln_bwd.json"
    url = f"sqlite:///{tmp_path / 'k.db'}"
    imported = kt.runs_import(path=results, db=url)
    with sqlite3.connect(tmp_path / "k.db") as conn:
        conn.execute("UPDATE ktriage_runs SET gpu = 'not json{' WHERE run_id = ?", (imported.run_id,))
    damaged = refusal(kt.runs_show, run=imported.run_id, db=url)
    assert damaged.problem.startswith("the store is damaged: a JSON column holds 'not json{'")
    assert (damaged.fix or "").endswith(", or point db (--db) at another store")
    assert "kt.runs_delete(run=...)" in (damaged.fix or "")


def test_an_unknown_export_format_names_fmt_and_the_library_export(tmp_path: Path) -> None:
    results = Path(__file__).parents[2] / "benchmarks/perf/h200/ln_bwd.json"
    url = f"sqlite:///{tmp_path / 'k.db'}"
    imported = kt.runs_import(path=results, db=url)
    with open_store(url, must_exist=True) as store, pytest.raises(KtriageError) as refused:
        store.export(imported.run_id, "xlsx")
    assert refused.value.problem == "unknown export format fmt='xlsx' (--format xlsx)"
    assert refused.value.fix == (
        "use fmt='json' (--format json) or fmt='csv' (--format csv); both come from "
        "kt.runs_export(run=...), as .json_text() and .to_csv() (`ktriage runs export RUN`)"
    )
    # the command line refuses --format xlsx itself (click's choice); were this text printed there, it would
    # name the flags and the command only
    from ktriage.errors import in_flags

    assert in_flags(refused.value.problem) == "unknown export format --format xlsx"
    assert in_flags(refused.value.fix) == "use --format json or --format csv; both come from `ktriage runs export RUN`"


@pytest.mark.parametrize(
    ("gpus", "problem", "fix"),
    [
        (
            "5",
            "gpus='5' (--gpus 5): only 2 GPUs visible (GPUs 0, 1)",
            "give at most gpus='2' (--gpus 2), or gpus='all' (--gpus all)",
        ),
        (
            "0",
            "gpus='0' (--gpus 0) is a count of no GPUs",
            "give a count of 1 or more, gpus='all' (--gpus all), or indices such as gpus='0,' (--gpus 0,)",
        ),
        (
            "fast",
            "gpus='fast' (--gpus fast) is not all, a count or a list of GPU indices",
            "e.g. gpus='all' (--gpus all), gpus='2' (--gpus 2) or gpus='0,2,5' (--gpus 0,2,5)",
        ),
        ("1,1", "gpus='1,1' (--gpus 1,1) names a GPU twice", "list each GPU index once"),
        (
            "0,7",
            "gpus='0,7' (--gpus 0,7): GPU 7 is not visible here (GPUs 0, 1)",
            "pick among the visible GPUs (nvidia-smi -L lists them)",
        ),
    ],
)
def test_a_timed_bisects_gpus_are_refused_naming_the_keyword(
    gpus: str, problem: str, fix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checked before any work (api._bisect._host_gpus), so no GPU is needed to reach them."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    refused = refusal(
        kt.bisect,
        source="ptxas",
        good="12.4.131",
        bad="12.8.93",
        op="liger.embedding",
        metric="latency",
        backend="liger",
        inputs=["0"],
        gpus=gpus,
    )
    assert (refused.problem, refused.fix) == (problem, fix)
