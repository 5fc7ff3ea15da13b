# mypy: disallow-any-expr
"""A typed user's script against ``ktriage.api``, checked by ``mypy --strict`` (tests/api/test_typing.py)
and never run: every call is written the way docs/api.md says the function takes it (a lone ``Path`` where
a list of files goes, ``inputs=7``, ``warps=8``, a ``str`` where a file goes), and every value read back
is given its precise type, so an annotation that refuses a documented call, or a report attribute that
is ``Any`` (``disallow-any-expr`` above), fails the test. ``top_level_usage`` reads the names ``import ktriage``
re-exports (``ktriage.ExplainReport``...): each is the api's own, not ``Any``, and a name ``ktriage`` has
not is a type error, as it is an AttributeError at run time."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from typing_extensions import assert_type

import ktriage
import ktriage.api as kt
from ktriage.errors import CallError, KtriageError


def explain_usage() -> list[str]:
    report: kt.ExplainReport = kt.explain(
        target=Path("spec.toml"), toolchains="triton==3.4.0", inputs=7, model=Path("model.json")
    )
    also = kt.explain(target="liger.layer_norm", toolchains=["triton==3.3.1", "triton==3.4.0"], inputs=[7, "N=4608"])
    worst = also.regressions[0]
    lows: list[float] = [p.low for p in worst.predictions if p is not None]
    metrics: list[str] = [f.metric for f in worst.findings]
    complete: bool = report.complete
    code: int = report.exit_code(allow_failures=True)
    return [worst.summary(), worst.range, report.to_markdown(), report.json_text(), report.to_html(), *metrics] + [
        str(x) for x in (*lows, complete, code)
    ]


def compare_and_triage_usage() -> list[str]:
    comparison: kt.CompareReport = kt.compare(old=Path("a.json"), new="b.json", op="layer_norm", mode="bwd")
    count: int = comparison.regression_count
    view = kt.CompareView(comparison)
    triaged: kt.TriageReport = kt.triage(
        old=Path("old.csv"),
        new="new.csv",
        old_toolchain="triton==3.3.1",
        new_toolchain="triton==3.4.0",
        measured=Path("measured.json"),
        workloads=Path("W.json"),
    )
    verdicts: list[str] = [c.verdict for c in triaged.cells]
    return [view.to_markdown(), view.to_csv(), triaged.to_markdown(), triaged.json_text(), str(count), *verdicts]


def calibration_usage() -> list[str]:
    scored: kt.ModelScoreReport = kt.score_model(from_cells=Path("cells.jsonl"), model="model.json")
    fitted: kt.CalibrateReport = kt.calibrate(
        from_cells=Path("cells.jsonl"), results=Path("R.json"), explain=Path("E.json")
    )
    return [scored.summary_text(), scored.to_markdown(), scored.json_text(), fitted.summary_text(), fitted.model_json()]


def tune_bench_bisect_usage() -> list[str]:
    tuned: kt.TuneReport = kt.tune(
        target="liger.layer_norm",
        toolchains="triton==3.4.0",
        inputs=7,
        warps=8,
        stages=3,
        blocks={"BLOCK_SIZE": 8192},
        bundle="tune-bundle",
        results_file="results.json",
    )
    notes: list[str] = [note for _, note in tuned.notes]
    benched: kt.BenchReport = kt.bench(op="liger.layer_norm", toolchains="triton==3.4.0", inputs=7, compile_only=True)
    found: kt.BisectReport = kt.bisect(
        source="pypi:triton",
        good="3.3.1",
        bad="3.4.0",
        op="liger.layer_norm",
        inputs=7,
        metric="spill_store_bytes",
        state=Path("state.json"),
        say=print,
    )
    step: kt.StepResult = kt.bisect_step(baseline="base.json", inputs=[7])
    shown: kt.CatalogShow = kt.catalog_show(op="liger.layer_norm", inputs=7)
    profiled: kt.ProfiledBundle = kt.profile(bundle="bundle-dir", results="results.json")
    attached = kt.profile_attach(profiled, "results.json", "sqlite:////tmp/runs.db")
    made: kt.WorkloadImported = kt.workload_import(traces=Path("trace.json"), output="W.json")
    code: int = step.code
    return [
        tuned.to_markdown(),
        found.to_markdown(),
        shown.to_toml(),
        attached.to_markdown(),
        str(benched),
        str(made),
    ] + [
        *notes,
        str(code),
    ]


def store_usage(db: str) -> list[str]:
    imported: kt.RunImported = kt.runs_import(path=Path("run.json"), db=db)
    ids: list[str] = [s.run_id for s in kt.runs_list(db=db, limit=5).summaries]
    history: kt.HistoryReport = kt.history(op="layer_norm", backend="liger_layer_norm", db=db, inputs=7)
    return [imported.run_id, *ids, history.to_markdown(), kt.runs_show(run=ids[0], db=db).to_markdown()]


def error_usage() -> str:
    try:
        kt.cache_verify(fix=False)
    except CallError as exc:
        return exc.problem
    except KtriageError as exc:
        return exc.problem + (exc.fix or "")
    return ""


def top_level_usage() -> list[str]:
    """Every name of ``ktriage._LAZY`` (tests/api/test_api.py checks that each is here) is the api's own
    through ``ktriage`` (``assert_type`` fails on ``Any`` or another class), an annotation with one gives
    typed attributes, and a name ``ktriage`` does not have is a type error (the ignore would be unused)."""
    assert_type(ktriage.api, ModuleType)
    assert_type(ktriage.BenchReport, type[kt.BenchReport])
    assert_type(ktriage.CompareReport, type[kt.CompareReport])
    assert_type(ktriage.TriageReport, type[kt.TriageReport])
    assert_type(ktriage.BisectReport, type[kt.BisectReport])
    assert_type(ktriage.ExplainReport, type[kt.ExplainReport])
    assert_type(ktriage.FidelityReport, type[kt.FidelityReport])
    assert_type(ktriage.RecordReport, type[kt.RecordReport])
    report: ktriage.ExplainReport = ktriage.api.explain(target="liger.layer_norm", toolchains="triton==3.4.0")
    complete: bool = report.complete
    version: str = ktriage.__version__
    missing: object = ktriage.ExplainReprot  # type: ignore[attr-defined]
    return [report.to_markdown(), version, str(complete), str(missing)]
