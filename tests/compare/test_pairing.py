"""The comparison of result sets on fake runs (ktriage.testing): pairing, ranking, the
baseline check, cliffs, errors, and the markdown/CSV/JSON renderings."""

from __future__ import annotations

import csv
import io
import json

from ktriage.compare.pairing import compare_cells, compare_toolchains
from ktriage.compare.report import CompareReport
from ktriage.compare.sides import load_side
from ktriage.measure.cells import Cell, CellKey
from ktriage.ops.registry import default_baselines
from ktriage.report.markdown import to_markdown
from ktriage.report.tabular import CSV_COLUMNS, to_csv
from ktriage.testing import fake_sweep_run
from tests.conftest import REPO

TCS = ("triton-3.3.1", "triton-3.4.0")


def cliff_at_7(tc: str, i: int) -> float:
    """3.4.0 is 1.8x slower from input 7 (N=4608) on; 3.3.1 steady at 0.8x torch."""
    return 0.8 if tc == TCS[0] or i < 7 else 1.45


def test_toolchains_of_one_run_regressions_cliff_and_wrong_cell() -> None:
    run, cells = fake_sweep_run(
        seed=1, speed=cliff_at_7, toolchains=TCS, broken={(TCS[1], 20): "wrong", (TCS[1], 3): "error"}
    )
    (c,) = compare_toolchains(cells, run=run)
    assert (c.ref_label, c.new_label) == TCS
    assert c.baseline.status == "shared" and c.baseline.speedups_valid
    n = c.counts()
    assert n == {"regression": 22, "improvement": 0, "same": 6, "unsure": 0, "error": 2, "missing": 0}
    assert all(p.input_id >= 7 for p in c.regressions())
    # never compared: the wrong and the failed cell, with their reasons
    probs = {p.input_id: p.problem for p in c.problems()}
    assert probs[20] == "new wrong: max_abs_err 0.5 > atol 1e-05"
    assert probs[3] == "new error: CUDA_ERROR_ILLEGAL_ADDRESS"
    assert all(p.verdict is None for p in c.problems())
    texts = [f.describe() for f in c.cliffs]
    # the toolchain once, as the side the line closes with (it read "liger_layer_norm@triton-3.4.0 / ... [triton-3.4.0]")
    assert any(
        t.startswith("layer_norm.bwd liger_layer_norm / torch_layer_norm: cliff between N=4096 and N=4608")
        and t.endswith("[triton-3.4.0]")
        for t in texts
    ), texts
    assert not [t for t in texts if t.count("triton-3.4.0") > 1], texts
    assert any(f.kind == "new_vs_ref" and f.cliff.x_after == "N=4608" for f in c.cliffs)
    assert not any(f.backend == "liger_layer_norm" and f.toolchain == TCS[0] for f in c.cliffs)  # 3.3.1 is flat
    # partial (two cells not compared) wins over the regressions; allowed, the regressions decide
    report = CompareReport([c])
    assert report.exit_status == 4 and report.exit_code(allow_failures=True) == 1 and not report.complete


def test_no_cliff_between_the_embedding_sweeps_input_families() -> None:
    """The committed H200 run: liger_embedding's ratio to torch is ~0.155 over V at (B, T, D) = (32, 512, 768)
    and ~0.199 over V at (8, 2048, 4096); the step from one family to the other was reported as a cliff."""
    side = load_side(REPO / "benchmarks/calibration/fresh/h200_fixed/embedding_bwd_bf16.json")
    comparisons = compare_toolchains(side.cells, run=side.run, default_baselines=default_baselines())
    assert len(comparisons) == 2
    for c in comparisons:
        assert [f.describe() for f in c.cliffs if "(32, 512, 768, 131072)" in f.cliff.x_before] == []


def test_regressions_are_ranked_worst_first() -> None:
    factors = {i: 1.0 + 0.1 * (i % 5) for i in range(10)}
    run, cells = fake_sweep_run(
        seed=2, n_inputs=10, toolchains=TCS, speed=lambda tc, i: 1.0 if tc == TCS[0] else factors[i]
    )
    (c,) = compare_toolchains(cells, run=run)
    ratios = [p.verdict.ratio for p in c.regressions()]
    assert ratios == sorted(ratios, reverse=True) and len(ratios) == 8  # factors 1.1..1.4, twice
    assert ratios[0] > 1.35 and c.improvements() == []
    imp = compare_toolchains(cells, run=run, toolchains=[TCS[1], TCS[0]])[0]
    iratios = [p.verdict.ratio for p in imp.improvements()]
    assert iratios == sorted(iratios) and imp.regressions() == [] and CompareReport([imp]).exit_status == 0


def test_two_runs_baseline_moved_is_reported() -> None:
    ref_run, ref = fake_sweep_run(seed=3, toolchains=TCS[:1])
    new_run, new = fake_sweep_run(seed=4, toolchains=TCS[1:], baseline_factor=1.12)  # the machine got slower
    c = compare_cells(ref, new, ref_run=ref_run, new_run=new_run, ref_label="a", new_label="b")
    assert c.baseline.status == "moved" and not c.baseline.speedups_valid
    assert "speedup-based conclusions (backend vs baseline) are not valid" in c.baseline.message
    assert 1.1 < c.baseline.median_ratio < 1.14
    # liger (different toolchain in each run) is paired across the two runs
    assert {(p.ref_toolchain, p.new_toolchain) for p in c.pairs if not p.is_baseline} == {TCS}
    assert "WARNING" in to_markdown(CompareReport([c]))


def test_one_input_of_thirty_is_not_a_moved_machine() -> None:
    """Real H200 A/A runs (the same build benched twice, benchmarks/gpu/issue3/run2_layer_norm_aa): the
    baseline is called at one input of thirty, at a median ratio of 0.998. That is chance at 99 % confidence,
    not a machine that changed: "unsure" (as a baseline with unsure inputs is), naming the input count, not
    the "moved" warning that latency verdicts may reflect the machine."""
    from pathlib import Path

    from ktriage.measure.results_file import read_results

    aa = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu" / "issue3" / "run2_layer_norm_aa"
    (ref_run, ref), (new_run, new) = read_results(aa / "aa_1.json"), read_results(aa / "aa_2.json")
    c = compare_cells(
        ref, new, ref_run=ref_run, new_run=new_run, ref_label="a", new_label="b", default_baselines=default_baselines()
    )
    assert c.baseline.status == "unsure" and "WARNING" not in to_markdown(CompareReport([c]))
    assert "moved at 1 of 30 inputs only" in c.baseline.message and 0.99 < c.baseline.median_ratio < 1.01


def test_two_runs_baseline_unchanged() -> None:
    ref_run, ref = fake_sweep_run(seed=5, toolchains=TCS)
    new_run, new = fake_sweep_run(seed=6, toolchains=TCS)
    c = compare_cells(ref, new, ref_run=ref_run, new_run=new_run)
    assert c.baseline.status == "unchanged" and c.baseline.speedups_valid
    assert c.counts()["regression"] == 0 and c.counts()["same"] == 60  # 2 toolchains x 30, paired like with like
    assert CompareReport([c]).exit_status == 0


def test_explicit_baseline_and_no_baseline() -> None:
    run, cells = fake_sweep_run(seed=7, n_inputs=6, toolchains=TCS)
    c = compare_cells(cells, cells, baseline="nope", default_baselines=default_baselines())
    assert c.baseline.backend == "torch_layer_norm"  # unknown --baseline falls back to the op's own
    # stats knows no op names: without the operators' defaults there is no baseline to fall back to
    assert compare_cells(cells, cells, baseline="nope").baseline.status == "none"
    renamed = [
        Cell(
            CellKey(x.key.op, x.key.mode, x.key.input_id, x.key.input_label, "eager", x.key.toolchain),
            x.status,
            x.samples_ms,
        )
        if x.key.backend == "torch_layer_norm"
        else x
        for x in cells
    ]
    c2 = compare_cells(renamed, renamed)
    assert c2.baseline.status == "none" and "--baseline" in c2.baseline.message
    c3 = compare_cells(renamed, renamed, baseline="eager")
    assert c3.baseline.status == "unchanged"


def test_missing_cells_are_reported() -> None:
    _, ref = fake_sweep_run(seed=8, n_inputs=6, toolchains=TCS[:1])
    _, new = fake_sweep_run(seed=9, n_inputs=4, toolchains=TCS[:1])
    c = compare_cells(ref, new, default_baselines=default_baselines())
    missing = [p for p in c.pairs if p.status == "missing"]
    assert {(p.input_id, p.problem) for p in missing} == {
        (i, "on the reference side only (the other has no such cell)") for i in (4, 5)
    } | set()
    assert c.counts()["missing"] == 2  # the liger cells; the baseline's are not counted


def test_markdown_csv_json() -> None:
    run, cells = fake_sweep_run(seed=10, speed=cliff_at_7, toolchains=TCS, broken={(TCS[1], 20): "wrong"})
    comps = CompareReport(compare_toolchains(cells, run=run))
    md = to_markdown(comps)
    assert md.startswith("## ktriage compare: `triton-3.3.1` -> `triton-3.4.0`")
    assert "**22 regressions, 0 improvements, 7 same, 0 unsure, 1 not compared (errors/missing)**" in md
    assert "### Regressions, worst first" in md and "### Cliffs along input sweeps" in md
    assert "cliff between N=4096 and N=4608" in md and "max_abs_err 0.5" in md
    rows = list(csv.DictReader(io.StringIO(to_csv(comps))))
    assert tuple(rows[0]) == CSV_COLUMNS and len(rows) == 30
    assert sum(r["verdict"] == "regression" for r in rows) == 22
    wrong = [r for r in rows if r["verdict"] == "error"]
    assert len(wrong) == 1 and wrong[0]["ratio"] == "" and "max_abs_err" in wrong[0]["reason"]
    doc = json.loads(comps.json_text())
    assert doc["regressions"] == 22
    (cj,) = doc["comparisons"]
    assert cj["counts"]["regression"] == 22 and cj["baseline"]["status"] == "shared"
    assert cj["cliffs"] and cj["pairs"][0]["verdict"]["ci_low"] > 0


def test_verdicts_timed_in_one_turn_per_side_are_named_for_re_measurement() -> None:
    """Results of a bench that let one turn of 10 back-to-back calls per variant decide (a whole turn can
    run slow: the same cubin once read +7.7 %) say so in the headline and the JSON; three turns do not."""
    run, cells = fake_sweep_run(
        seed=2, n_inputs=6, toolchains=TCS, speed=lambda tc, i: 1.0 if tc == TCS[0] or i < 3 else 1.3
    )
    for rounds, flagged in ((1, True), (3, False)):
        for cell in cells:
            cell.extra["rounds"] = rounds
        (c,) = compare_toolchains(cells, run=run)
        assert len(c.regressions()) == 3  # inputs 3..5
        assert len(c.one_turn_verdicts()) == (3 if flagged else 0)
        assert c.to_json()["one_turn_verdicts"] == (3 if flagged else 0)
        text = to_markdown(CompareReport([c]))
        assert ("3 verdicts rest on a single turn of back-to-back calls per side" in text) is flagged
