"""The store a library call with ``db=None`` opens is ``$KTRIAGE_DB`` when it is set, as the CLI's --db
reads it: ``ktriage runs list`` and ``ktriage.api.runs_list()`` read the same store (real SQLite)."""

from __future__ import annotations

from pathlib import Path

import pytest

import ktriage.api as kt
from ktriage.errors import KtriageError
from ktriage.measure.results_file import write_results
from ktriage.testing import fake_sweep_run


def test_a_library_call_without_db_reads_the_store_of_ktriage_db(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'team.db'}"
    run, cells = fake_sweep_run(seed=1, toolchains=("triton-3.4.0",))
    imported = kt.runs_import(path=write_results(tmp_path / "r.json", run, cells), db=url)
    monkeypatch.setenv("KTRIAGE_HOME", str(tmp_path / "home"))  # its default store does not exist
    monkeypatch.setenv("KTRIAGE_DB", url)
    listed = kt.runs_list()
    assert [s.run.run_id for s in listed.summaries] == [imported.run_id] and listed.url == url
    assert kt.runs_show(run=imported.run_id[:6]).info.run_id == imported.run_id
    monkeypatch.delenv("KTRIAGE_DB")
    with pytest.raises(KtriageError, match="there is no results store yet"):
        kt.runs_list()


def test_a_path_given_as_db_names_its_url(tmp_path: Path) -> None:
    """db=Path("store.db") (every other path argument takes a Path) failed with AttributeError:
    'PosixPath' object has no attribute 'strip'; now a KtriageError whose fix is the file's URL."""
    db = tmp_path / "team.db"
    run, cells = fake_sweep_run(seed=1, toolchains=("triton-3.4.0",))
    kt.runs_import(path=write_results(tmp_path / "r.json", run, cells), db=f"sqlite:///{db}")
    for call in (lambda: kt.runs_list(db=db), lambda: kt.runs_import(path=tmp_path / "r.json", db=db)):  # type: ignore[arg-type]
        with pytest.raises(KtriageError, match=r"db \(--db\) is a path \(\w*Path: .*\), not a database URL") as refused:
            call()
        assert refused.value.fix is not None and f"db='sqlite:///{db}'" in refused.value.fix
    with pytest.raises(KtriageError, match=r"db=5 \(int\) is not a database URL"):
        kt.runs_list(db=5)  # type: ignore[arg-type]
    assert [s.run.run_id for s in kt.runs_list(db=f"sqlite:///{db}").summaries] == [run.run_id]
