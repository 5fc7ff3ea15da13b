"""The results store on SQLite and PostgreSQL: round trips, replace-on-resample, ids, filters, exports."""

from __future__ import annotations

import csv
import io
import json
import math
import time
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from ktriage.errors import KtriageError
from ktriage.measure.cells import Cell, CellKey, RunInfo
from ktriage.store import RunFilters, open_store, read_json_export
from ktriage.store.samples import format_ms, summarize
from tests.store.fixtures import store_url  # noqa: F401  (the fixture: every test runs on SQLite and PostgreSQL)


def real_samples(n: int) -> list[float]:
    """Real timings (ms) of a CPU workload: noisy floats with all their digits, as a GPU timer gives."""
    data = list(range(3000, 0, -1))
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        sorted(data)
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def make_run(run_id: str | None = None, **kw) -> RunInfo:
    run = RunInfo(
        command="ktriage bench --op layer_norm --bwd --toolchain triton==3.3.1 --toolchain triton==3.4.0",
        host="gpu-host-1",
        gpu={"name": "NVIDIA H200", "driver": "570.124.06", "sm_count": 132, "sm_clock_mhz": 1980, "temp_c": 34},
        toolchains=[
            {
                "id": "triton-3.3.1",
                "spec": "triton==3.3.1",
                "triton_version": "3.3.1",
                "ptxas_version": "12.4.99",
                "ptxas_options": [],
            },
            {
                "id": "triton-3.4.0",
                "spec": "triton==3.4.0",
                "triton_version": "3.4.0",
                "ptxas_version": "12.8.93",
                "ptxas_options": [],
            },
        ],
        packages={"torch": "2.11.0", "triton": "3.6.0", "liger-kernel": "0.5.10"},
        workload_git_sha="6eb029e",
        settings={"timing": "cuda_events", "l2_flush": True, "warmup_ms": 25, "seed": 7},
        **kw,
    )
    if run_id:
        run.run_id = run_id
    return run


def make_cells() -> list[Cell]:
    def key(backend: str, tc: str | None, i: int = 7) -> CellKey:
        return CellKey("layer_norm", "bwd", i, f"N={1024 + 512 * i}", backend, tc)

    return [
        Cell(
            key("torch_layer_norm", None),
            "ok",
            real_samples(500),
            accuracy={"passed": True, "max_abs_err": 1.2e-6},
            bytes_moved=3 * 4096 * 4608 * 4,
            flops=None,
        ),
        Cell(
            key("liger_layer_norm", "triton-3.3.1"),
            "ok",
            real_samples(2000),
            accuracy={"passed": True, "max_abs_err": 2.4e-6},
            bytes_moved=3 * 4096 * 4608 * 4,
            extra={"kernel": "_layer_norm_backward_kernel", "regs": 128},
        ),
        Cell(
            key("liger_layer_norm", "triton-3.4.0"),
            "wrong",
            [],
            error="max_abs_err nan > atol 1e-05",
            accuracy={"passed": False, "max_abs_err": math.nan, "rel_err": math.inf},
        ),
        Cell(key("liger_layer_norm", "triton-3.4.0", 8), "error", [], error="CUDA_ERROR_ILLEGAL_ADDRESS in worker"),
        Cell(key("liger_layer_norm", "triton-3.3.1", 8), "timeout", [], error="no result after 60 s"),
    ]


def assert_cells_equal(got: list[Cell], want: list[Cell]) -> None:
    """Dataclass equality, except that NaN is compared as NaN (NaN != NaN)."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g_acc = {k: ("nan" if isinstance(v, float) and math.isnan(v) else v) for k, v in g.accuracy.items()}
        w_acc = {k: ("nan" if isinstance(v, float) and math.isnan(v) else v) for k, v in w.accuracy.items()}
        assert g_acc == w_acc
        assert (g.key, g.status, g.samples_ms, g.error, g.bytes_moved, g.flops, g.extra) == (
            w.key,
            w.status,
            w.samples_ms,
            w.error,
            w.bytes_moved,
            w.flops,
            w.extra,
        )


def test_round_trip_run_and_cells(store_url: str) -> None:
    run, cells = make_run(), make_cells()
    with open_store(store_url) as store:
        store.start_run(run)
        for c in cells:
            store.add_cell(run.run_id, c)
        got_run, got_cells = store.load_run(run.run_id)
        assert got_run == run  # still "running", exactly as given
        store.finish_run(run.run_id, "finished", gpu_after={"sm_clock_mhz": 1755, "temp_c": 61})
    with open_store(store_url) as store:  # a fresh connection reads it back
        got_run, got_cells = store.load_run(run.run_id)
    assert got_run.status == "finished"
    assert got_run.gpu == run.gpu | {"after": {"sm_clock_mhz": 1755, "temp_c": 61}}
    assert (got_run.toolchains, got_run.packages, got_run.settings, got_run.created) == (
        run.toolchains,
        run.packages,
        run.settings,
        run.created,
    )
    assert_cells_equal(got_cells, cells)  # float samples bit-exact, NaN/inf accuracy kept, order kept
    assert got_cells[0].key.toolchain is None and len(got_cells[1].samples_ms) == 2000


def test_summary_columns_are_queryable(store_url: str) -> None:
    """The per-cell summary stored beside the raw array matches a recomputation from the samples."""
    run, cells = make_run(), make_cells()
    with open_store(store_url) as store:
        store.start_run(run)
        for c in cells:
            store.add_cell(run.run_id, c)
        with store.engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT backend, toolchain, n_samples, median_ms, min_ms, p20_ms, p80_ms FROM ktriage_cells "
                    "WHERE run_id = :r AND status = 'ok' ORDER BY ordinal"
                ),
                {"r": run.run_id},
            ).all()
    assert [(r[0], r[1]) for r in rows] == [("torch_layer_norm", ""), ("liger_layer_norm", "triton-3.3.1")]
    for row, cell in zip(rows, cells):
        s = summarize(cell.samples_ms)
        assert row[2:] == (s.n, s.median_ms, s.min_ms, s.p20_ms, s.p80_ms)
        assert row[4] <= row[5] <= row[3] <= row[6]


def test_format_ms_keeps_four_significant_digits() -> None:
    assert [format_ms(v) for v in (0.0123456, 0.0020134, 1.23456, 1234.56, None)] == [
        "0.01235",
        "0.002013",
        "1.235",
        "1235",
        "-",
    ]


def test_same_key_replaces_the_cell(store_url: str) -> None:
    """Resampling re-adds a cell with more samples: it replaces the old one and keeps its position."""
    run, cells = make_run(), make_cells()
    with open_store(store_url) as store:
        store.start_run(run)
        for c in cells[:3]:
            store.add_cell(run.run_id, c)
        more = Cell(cells[1].key, "ok", cells[1].samples_ms + real_samples(300))
        store.add_cell(run.run_id, more)
        _, got = store.load_run(run.run_id)
    assert [c.key for c in got] == [c.key for c in cells[:3]]
    assert got[1].samples_ms == more.samples_ms and len(got[1].samples_ms) == 2300


def test_run_id_prefixes_and_errors(store_url: str) -> None:
    with open_store(store_url) as store:
        with pytest.raises(KtriageError, match="no runs yet"):
            store.load_run("abc")
        for rid in ("abc111aaaaaa", "abc222bbbbbb", "ab%_escaped0"):
            store.start_run(make_run(rid))
        assert store.load_run("abc1")[0].run_id == "abc111aaaaaa"
        assert store.load_run("abc222bbbbbb")[0].run_id == "abc222bbbbbb"
        with pytest.raises(KtriageError, match="ambiguous") as amb:
            store.load_run("abc")
        assert "abc111aaaaaa" in str(amb.value) and "abc222bbbbbb" in str(amb.value)
        with pytest.raises(KtriageError) as unknown:
            store.load_run("fff")
        assert "no run 'fff'" in unknown.value.problem and "abc111aaaaaa" in (unknown.value.fix or "")
        assert store.load_run("ab%")[0].run_id == "ab%_escaped0"  # LIKE wildcards are literal
        with pytest.raises(KtriageError, match="already in the store"):
            store.start_run(make_run("abc111aaaaaa"))
        with pytest.raises(KtriageError, match="no run nosuchrun"):
            store.add_cell("nosuchrun", make_cells()[0])
        with pytest.raises(KtriageError, match="unknown run status"):
            store.finish_run("abc111aaaaaa", "done")


def test_list_runs_order_limit_filters(store_url: str) -> None:
    a = make_run("run_a", created="2025-01-01T10:00:00+00:00")
    b = make_run("run_b", created="2025-01-02T10:00:00+00:00")
    b.gpu = {"name": "NVIDIA A100-SXM4-80GB"}
    c = make_run("run_c", created="2025-01-03T10:00:00+00:00")
    c.toolchains = [{"id": "triton-3.5.0", "spec": "triton==3.5.0"}]
    with open_store(store_url) as store:
        for r in (b, c, a):
            store.start_run(r)
        store.add_cell("run_a", make_cells()[0])
        store.add_cell(
            "run_c",
            Cell(CellKey("embedding", "bwd", 0, "(1024, 512)", "liger_embedding", "triton-3.5.0"), "ok", [0.01]),
        )
        store.finish_run("run_b", "failed")

        def ids(runs: list[Any]) -> list[str]:
            return [r.run_id for r in runs]

        assert ids(store.list_runs()) == ["run_c", "run_b", "run_a"]
        assert ids(store.list_runs(limit=2)) == ["run_c", "run_b"]
        assert ids(store.list_runs(filters=RunFilters(gpu="a100"))) == ["run_b"]
        assert ids(store.list_runs(filters=RunFilters(toolchain="3.5"))) == ["run_c"]
        assert ids(store.list_runs(filters=RunFilters(op="layer_norm"))) == ["run_a"]
        assert ids(store.list_runs(filters=RunFilters(status="failed"))) == ["run_b"]
        assert ids(store.list_runs(filters=RunFilters(status="running", host="gpu-host"))) == ["run_c", "run_a"]
        counts = {s.run.run_id: s.counts for s in store.summaries()}
        assert counts == {"run_c": {"ok": 1}, "run_b": {}, "run_a": {"ok": 1}}


def test_list_runs_toolchain_filter_names_parts_not_substrings(store_url: str) -> None:
    """``--toolchain 3.4`` was a substring of the ids and specs, so it listed a run of Triton 3.3.1 with
    ptxas 13.4.59 next to the 3.4.0 one. It names the Triton version now; ptxas==, specs and ids still work."""
    old = make_run("old_ptxas_13_4", created="2025-01-01T10:00:00+00:00")
    old.toolchains = [{"id": "triton-3.3.1.ptxas-13.4.59.0c9a828e", "spec": "triton==3.3.1,ptxas==13.4.59"}]
    new = make_run("new_triton_3_4", created="2025-01-02T10:00:00+00:00")
    new.toolchains = [{"id": "triton-3.4.0.ptxas-12.8.93.da4345e0", "spec": "triton==3.4.0"}]
    with open_store(store_url) as store:
        for r in (old, new):
            store.start_run(r)

        def ids(toolchain: str) -> list[str]:
            return [r.run_id for r in store.list_runs(filters=RunFilters(toolchain=toolchain))]

        assert ids("3.4") == ids("triton==3.4.0") == ["new_triton_3_4"]
        assert ids("triton-3.4.0.ptxas-12.8.93.da4345e0") == ids("triton-3.4.0.ptxas-12.8.93") == ["new_triton_3_4"]
        assert ids("ptxas==13.4") == ids("3.3") == ["old_ptxas_13_4"]
        assert ids("3") == ["new_triton_3_4", "old_ptxas_13_4"]


def test_recording_marks_how_the_run_ended(store_url: str) -> None:
    cells = make_cells()
    with open_store(store_url) as store:
        ok, failed, interrupted = make_run(), make_run(), make_run()
        with store.recording(ok) as rec:
            rec.add(cells[0])
            rec.gpu_after = {"temp_c": 55}
        with pytest.raises(ValueError, match="bad input"), store.recording(failed) as rec:
            rec.add(cells[0])
            raise ValueError("bad input")
        with pytest.raises(KeyboardInterrupt), store.recording(interrupted) as rec:
            rec.add(cells[0])
            rec.add(cells[1])
            raise KeyboardInterrupt
        s_ok, s_failed, s_int = (store.summary(r.run_id) for r in (ok, failed, interrupted))
        assert [s.run.status for s in (s_ok, s_failed, s_int)] == ["finished", "failed", "interrupted"]
        assert s_ok.run.gpu["after"] == {"temp_c": 55} and s_ok.error is None
        assert s_failed.error == "ValueError: bad input"
        assert s_int.counts == {"ok": 2} and s_int.finished is not None


def test_export_csv_and_json(store_url: str) -> None:
    run, cells = make_run(), make_cells()
    cells[0].samples_ms = [float(v) for v in range(10, 0, -1)]  # 1..10 ms: p20 2.8, median 5.5, p80 8.2
    with open_store(store_url) as store:
        store.start_run(run)
        for c in cells:
            store.add_cell(run.run_id, c)
        rows = list(csv.DictReader(io.StringIO(store.export(run.run_id[:6], "csv"))))
        doc = store.export(run.run_id, "json")
        with pytest.raises(KtriageError, match="unknown export format"):
            store.export(run.run_id, "xlsx")
    assert len(rows) == len(cells)
    first = rows[0]
    assert (first["op"], first["mode"], first["input_id"], first["x_val"], first["backend"], first["toolchain"]) == (
        "layer_norm",
        "bwd",
        "7",
        "N=4608",
        "torch_layer_norm",
        "",
    )
    assert [
        float(first[c]) for c in ("latency_median_ms", "latency_min_ms", "latency_p20_ms", "latency_p80_ms")
    ] == pytest.approx([5.5, 1, 2.8, 8.2])
    assert first["samples"] == "10" and first["status"] == "ok" and first["accuracy"] == "pass"
    assert float(first["gbps"]) == pytest.approx(3 * 4096 * 4608 * 4 / 5.5e-3 / 1e9)
    assert rows[2]["status"] == "wrong" and rows[2]["accuracy"] == "fail" and rows[2]["latency_median_ms"] == ""
    assert rows[3]["error"] == "CUDA_ERROR_ILLEGAL_ADDRESS in worker" and rows[3]["samples"] == "0"
    assert set(json.loads(doc)) == {"format_version", "run", "cells"}
    back_run, back_cells = read_json_export(doc)
    assert back_run == run
    assert_cells_equal(back_cells, cells)


def test_schema_version_is_recorded_and_checked(store_url: str) -> None:
    open_store(store_url).close()
    engine = create_engine(store_url)
    with engine.begin() as conn:
        assert conn.execute(text("SELECT version FROM ktriage_schema")).scalar() == 1
        conn.execute(text("UPDATE ktriage_schema SET version = 99"))
    engine.dispose()
    with pytest.raises(KtriageError, match="schema version 99, newer"):
        open_store(store_url)


def test_default_store_is_a_wal_sqlite_file_under_the_home(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KTRIAGE_HOME", str(tmp_path / "home"))
    with open_store() as store:
        store.start_run(make_run("r1"))
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    assert (tmp_path / "home" / "store" / "ktriage.db").is_file()
    with open_store(f"sqlite:///{tmp_path / 'home' / 'store' / 'ktriage.db'}") as again:
        assert again.load_run("r1")[0].run_id == "r1"


def test_bad_urls_are_user_errors(tmp_path) -> None:
    with pytest.raises(KtriageError, match="not a database URL"):
        open_store("just some words")
    # a file path (the natural first try) gets its own URL in the fix, not only the general example
    with pytest.raises(KtriageError, match="not a database URL") as exc:
        open_store(str(tmp_path / "team.db"))
    url = f"sqlite:///{tmp_path / 'team.db'}"
    assert exc.value.fix == f"a SQLite file is given as a URL: db='{url}' (--db {url}) (or in KTRIAGE_DB)"
    assert not (tmp_path / "team.db").exists()
    with pytest.raises(KtriageError, match="in-memory"):
        open_store("sqlite://")
    with pytest.raises(KtriageError, match="no database driver"):
        open_store("postgresql+nosuchdriver://u@localhost/db")
    with pytest.raises(KtriageError, match="cannot open the store") as exc:
        open_store("postgresql+psycopg://ktriage:secret@127.0.0.1:1/nodb")
    assert "secret" not in str(exc.value)  # the password is masked in messages


def test_import_writes_its_cells_in_a_fixed_number_of_statements(store_url: str) -> None:
    """`runs import` of an 18,000-cell run took 50 s on SQLite: each cell was four statements (touch the run,
    look its key up, find the last ordinal, insert). An imported run is new and its keys are unique, so its
    cells go in one multi-row INSERT: the statements an import issues do not grow with its cells."""
    from sqlalchemy import event

    def key(i: int) -> CellKey:
        return CellKey("layer_norm", "bwd", i, f"N={1024 + 512 * i}", "liger_layer_norm", "triton-3.4.0")

    def statements(run_id: str, n: int) -> int:
        cells = [Cell(key(i), "ok", real_samples(20), bytes_moved=4096 * i) for i in range(n)]
        seen: list[str] = []
        with open_store(store_url) as store:
            event.listen(store.engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
            store.import_run(make_run(run_id), cells)
            count = len(seen)
            got = store.load_run(run_id)[1]
            with store.engine.connect() as conn:
                rows = conn.execute(
                    text(
                        "SELECT ordinal, n_samples, median_ms, p20_ms FROM ktriage_cells WHERE run_id = :r ORDER BY id"
                    ),
                    {"r": run_id},
                ).all()
        assert_cells_equal(got, cells)  # in order, every field
        summaries = [summarize(c.samples_ms) for c in cells]
        assert [tuple(r) for r in rows] == [(i, s.n, s.median_ms, s.p20_ms) for i, s in enumerate(summaries)]
        return count

    assert statements("import000005", 5) == statements("import000060", 60)
