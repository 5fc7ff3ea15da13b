"""The library entry points: one function per verb, keyword-only and typed, each returning a typed
report (docs/api.md)::

    import ktriage.api as kt

    report = kt.explain(target="liger.layer_norm", mode="bwd", arch="sm_90",
                        toolchains=["triton==3.3.1", "triton==3.4.0"])
    report.regressions[0].summary()

Why a layer of its own: the CLI used to hold the verbs' sequences and their validation (explain's
compiler and fixes, bench's plan), so a notebook, a pytest plugin or a CI script had nothing to call
but the CLI. Each verb's sequence and checks live here once (one private module per verb,
``_explain.py``...); ``ktriage.cli`` parses flags, calls one entry point and renders its report.

Why ``ktriage.api.explain`` and not ``ktriage.explain``: ``ktriage.explain`` is the explain
subpackage, and Python's import system sets that attribute on ``ktriage`` whenever the subpackage
is first imported, so a function of that name there would be replaced by the module depending on
import order (the same holds for bench, bisect, compare, record, triage, tune, profile).

Why lazy (PEP 562): ``import ktriage.api`` must stay cheap (``ktriage --help`` imports no verb);
an entry point's module, with the compiler or scipy behind it, is imported on first use.
:data:`__all__` and :data:`_LAZY` name the same things (tests/api/test_api.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ktriage.api._bench import (
        BENCH_DEFAULTS,
        GPUS_HELP,
        BenchReport,
        bench,
        is_recorded_bundle,
        refuse_what_compile_only_ignores,
        require_torch,
    )
    from ktriage.api._bench_recorded import RecordedBenchReport, bench_recorded, is_workload_path
    from ktriage.api._bisect import BisectReport, bisect
    from ktriage.api._bisect_step import EXIT_ABORT, StepResult, bisect_step
    from ktriage.api._cache import (
        CacheGcReport,
        CacheInfoReport,
        CacheVerifyReport,
        cache_gc,
        cache_info,
        cache_verify,
    )
    from ktriage.api._calibrate import DEFAULT_LEVEL, CalibrateReport, calibrate
    from ktriage.api._catalog import CatalogList, CatalogShow, catalog_list, catalog_show
    from ktriage.api._checks import check_environment, check_percent_gate, normalize_arch
    from ktriage.api._compare import CompareReport, CompareView, compare
    from ktriage.api._explain import DEFAULT_COMPILE_TIMEOUT_S, DEFAULT_THRESHOLD, ExplainReport, explain
    from ktriage.api._fidelity import FidelityReport, FidelityRow, fidelity
    from ktriage.api._history import HistoryReport, history
    from ktriage.api._occupancy import OccupancyReport, occupancy
    from ktriage.api._profile import ProfiledBundle, profile, profile_attach
    from ktriage.api._record import RecordReport, record
    from ktriage.api._runs import (
        ImportInterrupted,
        RunDeleted,
        RunExport,
        RunImported,
        RunList,
        RunShow,
        runs_delete,
        runs_export,
        runs_import,
        runs_list,
        runs_show,
    )
    from ktriage.api._score_model import ModelScoreReport, score_model
    from ktriage.api._toolchain_admin import (
        ToolchainList,
        ToolchainShow,
        toolchain_add,
        toolchain_list,
        toolchain_remove,
        toolchain_show,
    )
    from ktriage.api._triage import TriageReport, triage
    from ktriage.api._triage_run import TriageRunReport, triage_run
    from ktriage.api._tune import TuneReport, tune
    from ktriage.api._workload import WorkloadImported, WorkloadShow, workload_import, workload_show

# public name -> the private module of ktriage.api that defines it
_LAZY: dict[str, str] = {
    "explain": "_explain",
    "ExplainReport": "_explain",
    "DEFAULT_THRESHOLD": "_explain",
    "DEFAULT_COMPILE_TIMEOUT_S": "_explain",
    "bench": "_bench",
    "profile": "_profile",
    "ProfiledBundle": "_profile",
    "profile_attach": "_profile",
    "BenchReport": "_bench",
    "is_recorded_bundle": "_bench",
    "GPUS_HELP": "_bench",
    "require_torch": "_bench",
    "BENCH_DEFAULTS": "_bench",
    "refuse_what_compile_only_ignores": "_bench",
    "bench_recorded": "_bench_recorded",
    "RecordedBenchReport": "_bench_recorded",
    "is_workload_path": "_bench_recorded",
    "bisect": "_bisect",
    "BisectReport": "_bisect",
    "bisect_step": "_bisect_step",
    "StepResult": "_bisect_step",
    "EXIT_ABORT": "_bisect_step",
    "fidelity": "_fidelity",
    "FidelityReport": "_fidelity",
    "FidelityRow": "_fidelity",
    "calibrate": "_calibrate",
    "CalibrateReport": "_calibrate",
    "DEFAULT_LEVEL": "_calibrate",
    "score_model": "_score_model",
    "ModelScoreReport": "_score_model",
    "compare": "_compare",
    "CompareReport": "_compare",
    "CompareView": "_compare",
    "triage": "_triage",
    "TriageReport": "_triage",
    "occupancy": "_occupancy",
    "OccupancyReport": "_occupancy",
    "record": "_record",
    "RecordReport": "_record",
    "ImportInterrupted": "_runs",
    "RunDeleted": "_runs",
    "RunExport": "_runs",
    "RunImported": "_runs",
    "RunList": "_runs",
    "RunShow": "_runs",
    "runs_delete": "_runs",
    "runs_export": "_runs",
    "runs_import": "_runs",
    "runs_list": "_runs",
    "runs_show": "_runs",
    "toolchain_add": "_toolchain_admin",
    "toolchain_list": "_toolchain_admin",
    "toolchain_remove": "_toolchain_admin",
    "toolchain_show": "_toolchain_admin",
    "ToolchainList": "_toolchain_admin",
    "ToolchainShow": "_toolchain_admin",
    "tune": "_tune",
    "TuneReport": "_tune",
    "cache_info": "_cache",
    "cache_verify": "_cache",
    "cache_gc": "_cache",
    "CacheInfoReport": "_cache",
    "CacheVerifyReport": "_cache",
    "CacheGcReport": "_cache",
    "catalog_list": "_catalog",
    "catalog_show": "_catalog",
    "CatalogList": "_catalog",
    "CatalogShow": "_catalog",
    "check_environment": "_checks",
    "check_percent_gate": "_checks",
    "normalize_arch": "_checks",
    "history": "_history",
    "HistoryReport": "_history",
    "triage_run": "_triage_run",
    "TriageRunReport": "_triage_run",
    "workload_show": "_workload",
    "workload_import": "_workload",
    "WorkloadShow": "_workload",
    "WorkloadImported": "_workload",
}

__all__ = [
    "bench",
    "profile",
    "ProfiledBundle",
    "profile_attach",
    "bench_recorded",
    "BenchReport",
    "bisect",
    "BisectReport",
    "bisect_step",
    "EXIT_ABORT",
    "cache_gc",
    "cache_info",
    "cache_verify",
    "CacheGcReport",
    "CacheInfoReport",
    "CacheVerifyReport",
    "calibrate",
    "CalibrateReport",
    "score_model",
    "ModelScoreReport",
    "catalog_list",
    "catalog_show",
    "CatalogList",
    "CatalogShow",
    "check_environment",
    "check_percent_gate",
    "compare",
    "CompareReport",
    "CompareView",
    "DEFAULT_COMPILE_TIMEOUT_S",
    "DEFAULT_LEVEL",
    "DEFAULT_THRESHOLD",
    "explain",
    "ExplainReport",
    "fidelity",
    "FidelityReport",
    "FidelityRow",
    "BENCH_DEFAULTS",
    "GPUS_HELP",
    "history",
    "HistoryReport",
    "is_recorded_bundle",
    "is_workload_path",
    "normalize_arch",
    "occupancy",
    "OccupancyReport",
    "record",
    "RecordedBenchReport",
    "RecordReport",
    "refuse_what_compile_only_ignores",
    "require_torch",
    "ImportInterrupted",
    "RunDeleted",
    "RunExport",
    "RunImported",
    "RunList",
    "RunShow",
    "StepResult",
    "runs_delete",
    "runs_export",
    "runs_import",
    "runs_list",
    "runs_show",
    "toolchain_add",
    "toolchain_list",
    "toolchain_remove",
    "toolchain_show",
    "ToolchainList",
    "ToolchainShow",
    "triage",
    "TriageReport",
    "triage_run",
    "TriageRunReport",
    "tune",
    "TuneReport",
    "workload_import",
    "workload_show",
    "WorkloadImported",
    "WorkloadShow",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ktriage.api' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"ktriage.api.{module}"), name)
    globals()[name] = value  # once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
