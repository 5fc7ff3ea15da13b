"""The entry points the last CLI verbs moved onto (issue 26): each checks its arguments before any
work, as the command did, and its report renders as the command prints it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import ktriage.api as kt
from ktriage.errors import KtriageError


@pytest.mark.parametrize(
    "value, name", [("sm_90", "sm_90"), ("9.0", "sm_90"), ("90", "sm_90"), ("cuda:90", "sm_90"), ("sm_90a", "sm_90a")]
)
def test_normalize_arch_reads_every_spelling(value: str, name: str) -> None:
    assert kt.normalize_arch(value) == name


def test_normalize_arch_refuses_an_unknown_target() -> None:
    with pytest.raises(KtriageError, match="unsupported GPU target 'sm_12'"):
        kt.normalize_arch("sm_12")


def test_check_environment_refuses_a_bad_library_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KTRIAGE_MAX_INPUT_MB", "abc")
    with pytest.raises(KtriageError, match="KTRIAGE_MAX_INPUT_MB"):
        kt.check_environment()
    monkeypatch.delenv("KTRIAGE_MAX_INPUT_MB")
    monkeypatch.setenv("KTRIAGE_IMPORT_TIMEOUT_S", "-3")
    with pytest.raises(KtriageError, match="KTRIAGE_IMPORT_TIMEOUT_S"):
        kt.check_environment()


@pytest.mark.parametrize("kw, problem", [({"max_pvalue": 2.0}, "--max-pvalue"), ({"min_step": -1.0}, "--min-step")])
def test_history_refuses_bad_settings_before_opening_the_store(kw: dict[str, float], problem: str) -> None:
    with pytest.raises(KtriageError, match=problem):
        kt.history(op="layer_norm", backend="liger_layer_norm", db="postgresql+psycopg://nowhere:1/none", **kw)


def test_triage_run_needs_both_toolchains(tmp_path: Path) -> None:
    with pytest.raises(
        KtriageError,
        match=re.escape("command (--run) needs old_toolchain (--old-toolchain) and new_toolchain (--new-toolchain)"),
    ):
        kt.triage_run(command="true", old_toolchain="triton==3.4.0", new_toolchain=None, workdir=tmp_path / "w")
    assert not (tmp_path / "w").exists()


def test_workload_import_checks_the_output_before_reading_a_trace(tmp_path: Path) -> None:
    with pytest.raises(KtriageError, match="a workload file ends in .json"):
        kt.workload_import(traces=[tmp_path / "missing.ndjson"], output=tmp_path / "W.txt")


def test_catalog_reports_render(tmp_path: Path) -> None:
    listed = kt.catalog_list()
    assert "liger.layer_norm" in {row["op"] for row in json.loads(listed.json_text())}
    assert listed.to_csv().splitlines()[0].startswith("op,")
    shown = kt.catalog_show(op="liger.layer_norm", mode="bwd", inputs=["7"])
    assert len(shown.specs) == 1 and "liger.layer_norm" in shown.to_markdown()


def test_cache_reports_of_an_empty_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KTRIAGE_HOME", str(tmp_path / "home"))
    info = json.loads(kt.cache_info().json_text())
    assert info["path"] == str(tmp_path / "home" / "artifacts") and info["size_bytes"] == 0
    verified = kt.cache_verify()
    assert verified.ok and not verified.damaged
    assert kt.cache_gc(dry_run=True).items == []


WORKLOAD = Path(__file__).parents[1] / "data" / "workloads" / "liger_step.workload.json"


@pytest.mark.parametrize(
    "kw, problem",
    [
        ({"max_time": 5.0}, "--max-time 5: --compile-only measures nothing"),
        ({"timing": "graph", "profile": True}, "--timing graph, --profile: --compile-only measures nothing"),
        ({"l2_flush": False, "gpus": "1"}, "--no-l2-flush, --gpus 1: --compile-only measures nothing"),
        ({"results_path": "r.json"}, "-o r.json: --compile-only measures nothing"),
    ],
)
def test_a_compile_only_bench_refuses_what_only_measuring_reads(
    kw: dict[str, object], problem: str, tmp_path: Path
) -> None:
    """The command refused these with --compile-only (they were dropped, exit 0); the library took them and
    compiled: the rule is the library's now, worded with the flags, the keywords in the fix."""
    with pytest.raises(KtriageError) as caught:
        kt.bench(
            op="layer_norm", inputs=["0"], toolchains=["triton==3.4.0"], compile_only=True, bundle=tmp_path / "b", **kw
        )
    assert caught.value.problem.startswith(problem), caught.value
    goes = "goes" if len(kw) == 1 else "go"
    assert f"in the library, {', '.join(kw)} {goes} to bench(bundle=DIR)" in (caught.value.fix or "")
    assert not (tmp_path / "b").exists()  # refused before the compile


def test_a_compile_only_recorded_bench_refuses_what_only_measuring_reads(tmp_path: Path) -> None:
    with pytest.raises(KtriageError, match="--max-time 5, --gpus 0: --compile-only measures nothing") as caught:
        kt.bench_recorded(
            workload=WORKLOAD,
            toolchains=["triton==3.4.0"],
            compile_only=True,
            bundle=tmp_path / "r",
            max_time=5.0,
            gpus="0",
        )
    assert "max_time, gpus go to bench_recorded(bundle=DIR)" in (caught.value.fix or "")
    assert not (tmp_path / "r").exists()


def test_the_precision_refusal_and_warning_name_the_keyword_a_library_caller_passes() -> None:
    """kt.compare of a bf16 run against an fp16 run told a Python caller to add --allow-precision-mismatch, and
    its warning named the flag: a caller passes allow_precision_mismatch=True. The one message names both."""
    fresh = Path(__file__).parents[2] / "benchmarks/calibration/fresh/h200"
    bf16, fp16 = fresh / "layer_norm_bwd_bf16.json", fresh / "layer_norm_bwd_fp16.json"
    spelled = "allow_precision_mismatch=True (--allow-precision-mismatch)"
    with pytest.raises(KtriageError) as info:
        kt.compare(old=bf16, new=fp16)
    assert info.value.fix is not None and f"or pass {spelled} to compare" in info.value.fix
    assert "bench both sides with precision='bf16' (--precision bf16)" in info.value.fix  # was: bench --precision
    (comparison,) = kt.compare(old=bf16, new=fp16, allow_precision_mismatch=True).comparisons
    (warning,) = comparison.warnings
    assert f"in fp16 (on purpose: {spelled}), so every ratio" in warning


def test_the_stores_fixes_name_the_library_call_a_caller_can_make(tmp_path: Path) -> None:
    """A notebook's first store is a file path, then a second import of the same run, then a typo in a
    run id: each fix named only the command (``--db sqlite:///...``, ```ktriage runs delete X```,
    ```ktriage runs list```), none of which a caller of ``kt.runs_*`` passes or runs. A real H200
    results file, a SQLite store under tmp_path."""
    path = tmp_path / "runs.db"
    with pytest.raises(KtriageError) as refused:
        kt.runs_list(db=str(path))
    assert f"db='sqlite:///{path}' (--db sqlite:///{path})" in (refused.value.fix or "")
    db = f"sqlite:///{path}"
    results = Path("benchmarks/gpu/issue3/run2_layer_norm_aa/aa_1.json").resolve()
    run = kt.runs_import(path=results, db=db).run_id
    with pytest.raises(KtriageError, match="is already in the store") as again:
        kt.runs_import(path=results, db=db)
    assert f"kt.runs_delete(run={run!r}, db=...)" in (again.value.fix or "")
    with pytest.raises(KtriageError, match="no run 'ffff'") as missing:
        kt.runs_show(run="ffff", db=db)
    assert "kt.runs_list()" in (missing.value.fix or "")
    assert kt.runs_delete(run=run, db=db).summary.run.run_id == run
    assert kt.runs_import(path=results, db=db).run_id == run  # deleting first, as the fix says, lets it in


def test_a_listed_runs_id_is_its_summarys_run_id(tmp_path: Path) -> None:
    """A notebook user wrote ``[s.run_id for s in kt.runs_list(db=...).summaries]`` and got
    AttributeError: the id was reachable only as ``s.run.run_id``. A real H200 results file, imported
    into a SQLite store under tmp_path."""
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    results = Path("benchmarks/gpu/issue3/run2_layer_norm_aa/aa_1.json").resolve()
    run = kt.runs_import(path=results, db=db).run_id
    assert [s.run_id for s in kt.runs_list(db=db).summaries] == [run]
    assert kt.runs_show(run=run, db=db).summary.run_id == run
