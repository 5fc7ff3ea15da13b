"""`triage` reads its sides as `compare` does (``ktriage.compare.sides``): a run id in the store is a
side like a results file. The real TritonBench A/A pair, imported into a real SQLite store, triaged by
run id (a prefix for one side), gives the report the two CSVs give; only the sides' names differ."""

from __future__ import annotations

from pathlib import Path

import pytest

from ktriage.errors import KtriageError
from ktriage.measure.tritonbench_format import read_run_file
from ktriage.triage import TriageOptions, triage

DATA = Path(__file__).resolve().parents[1] / "data" / "tritonbench"  # the real A/A pair (H200)
CSVS = (DATA / "layer_norm_bwd_run1.csv", DATA / "layer_norm_bwd_run2.csv")


def _options(db: str | None) -> TriageOptions:
    # no toolchains named (the CSVs do not say them): the flagged cells are not compiled, so this
    # test is about the sides only; the A/A pair moves by up to 53 %, so some cells pass the gate
    return TriageOptions(threshold=0.10, op="layer_norm", mode="bwd", bisect=False, fixes=False, db=db)


def _cells(report) -> list[tuple[str, str, int, str, str, float]]:  # type: ignore[no-untyped-def]
    return [(c.op, c.mode, c.input_id, c.backend, c.verdict, c.ratio) for c in report.cells]


def test_run_ids_in_the_store_triage_like_the_files(tmp_path: Path) -> None:
    store_mod = pytest.importorskip("ktriage.store", reason="the results store module is not in this checkout")
    url = f"sqlite:///{tmp_path / 'store.db'}"
    store = store_mod.open_store(url)
    ids = []
    for path in CSVS:
        run, cells = read_run_file(path, op="layer_norm", mode="bwd")
        run.status = "finished"
        ids.append(store.import_run(run, cells))
    store.close()
    assert ids[0] != ids[1]

    by_file = triage(*CSVS, _options(None))
    by_id = triage(ids[0][:8], ids[1], _options(url))

    assert (by_file.old, by_file.new) == (CSVS[0].name, CSVS[1].name)
    assert (by_id.old, by_id.new) == (ids[0], ids[1])  # a run is named by its full id, a prefix resolved
    assert by_id.compared == by_file.compared == 60
    assert _cells(by_id) == _cells(by_file) and by_file.cells
    assert by_id.not_compared == by_file.not_compared
    assert by_id.failures == by_file.failures and "toolchain is unknown" in by_file.failures[0]  # named, not compiled


def test_an_unknown_run_id_is_a_named_error(tmp_path: Path) -> None:
    store_mod = pytest.importorskip("ktriage.store", reason="the results store module is not in this checkout")
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with pytest.raises(KtriageError) as err:  # no store there: said so, and none is made by reading
        triage("nosuchrun", CSVS[1], _options(url))
    assert "no store at" in err.value.problem and not (tmp_path / "store.db").exists()
    store_mod.open_store(url).close()  # an empty store
    with pytest.raises(KtriageError) as err:
        triage("nosuchrun", CSVS[1], _options(url))
    assert "no run 'nosuchrun'" in err.value.problem
