"""What a notebook shows of a report (``report`` as a cell's last expression): its short repr
(ktriage.brief), not the generated dataclass repr, which spelled out every nested field (a
``ModelScoreReport`` of the committed fresh_ops cells was 837 KB, the fla workload's ``WorkloadShow``
1 MB, an ``ExplainReport`` of liger.layer_norm's 30 inputs 3.8 MB). Real reports of committed files;
the attributes a caller reads must stay named in it."""

from __future__ import annotations

from pathlib import Path

import ktriage.api as kt

REPO = Path(__file__).resolve().parents[2]
AA = REPO / "benchmarks/gpu/issue3/run2_layer_norm_aa"
LIMIT = 1000  # a screenful; each of these was tens of KB to MB before


def test_compare_and_its_comparison_are_short_and_name_their_attributes() -> None:
    report = kt.compare(old=AA / "aa_1.json", new=str(AA / "aa_2.json"))
    shown = repr(report)
    assert len(shown) < LIMIT, shown
    assert "comparisons=[1 Comparison]" in shown and "regression_count=0" in shown and "has_regressions=False" in shown
    comparison = repr(report.comparisons[0])
    assert len(comparison) < LIMIT and "pairs=[60 PairResult]" in comparison, comparison
    assert "report=CompareReport(" in repr(kt.CompareView(report))


def test_model_score_report_is_short() -> None:
    report = kt.score_model(from_cells=REPO / "benchmarks/calibration/fresh_ops/cells.jsonl")
    shown = repr(report)
    assert len(shown) < LIMIT, shown
    assert f"cells=[{len(report.cells)} CalibrationCell]" in shown and "scoring=Scoring(" in shown
    assert len(repr(report.scoring)) < LIMIT


def test_workload_show_and_triage_are_short() -> None:
    shown = repr(kt.workload_show(path=REPO / "benchmarks/corpus/h200/workloads/fla_ops.workload.json.gz"))
    assert len(shown) < LIMIT and "kernels=[5 Kernel]" in shown, shown
    aa = REPO / "benchmarks/triage/tritonbench_aa"
    triaged = kt.triage(
        old=aa / "layer_norm_bwd_run1.csv",
        new=aa / "layer_norm_bwd_run2.csv",
        old_toolchain="triton==3.6.0",
        new_toolchain="triton==3.6.0",
    )
    shown = repr(triaged)
    assert len(shown) < 2 * LIMIT and f"cells=[{len(triaged.cells)} CellTriage]" in shown, shown


def test_store_reports_are_short(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    imported = kt.runs_import(path=REPO / "benchmarks/corpus/h200/bench/liger_dyt.json", db=db)
    assert repr(imported).startswith(f"RunImported(run_id='{imported.run_id}', cells=12")
    for report in (
        kt.runs_list(db=db),
        kt.runs_show(run=imported.run_id, db=db),
        kt.runs_export(run=imported.run_id, db=db),
    ):
        assert len(repr(report)) < LIMIT, repr(report)
    assert "cells=[12 Cell]" in repr(kt.runs_show(run=imported.run_id, db=db))
