"""One measurement, one way of writing it, in triage as in compare.

- triage's "measured side by side" column wrote the side-by-side verdict as a ratio ("regression 5.917x
  [5.877, 5.954] at 99%") where ``ktriage compare`` writes the same pair of samples as a change ("+491.7%
  [+487.7%, +495.4%]"), and triage's own change column next to it says "+491.7%" too;
- triage's notes said "measured +53%" beside a change column of "+53.2%": the same number at two precisions.

Real committed data: the H200 ktriage bench of layer_norm bwd with Triton 3.3.1 and 3.4.0 interleaved in one
process (one results file as both sides: its samples are the side-by-side measurement), compared by the real
``compare``; the TritonBench layer_norm pair of tests/data. Both toolchains compile for real."""

from __future__ import annotations

import re
from pathlib import Path

import ktriage.api as kt
from ktriage.report.markdown import fmt_ci
from ktriage.wording import fmt_pct

ROOT = Path(__file__).resolve().parents[2]
ISSUE3 = ROOT / "benchmarks" / "gpu" / "issue3" / "run2_layer_norm_aa" / "ln_bwd.json"
TRITONBENCH = ROOT / "tests" / "data" / "tritonbench"


def test_the_measured_column_writes_compares_change_and_interval() -> None:
    report = kt.triage(
        old=ISSUE3,
        new=ISSUE3,
        old_toolchain="triton==3.3.1",
        new_toolchain="triton==3.4.0",
        bisect=False,
        fixes=False,
    )
    compared = kt.compare(old=ISSUE3, toolchains=True)
    (comparison,) = [
        c for c in compared.comparisons if c.ref_label.startswith("triton-3.3.1") and "triton-3.4.0" in c.new_label
    ]
    pairs = {(p.op, p.mode, p.input_id, p.backend): p for p in comparison.pairs if p.verdict is not None}
    measured = [c for c in report.cells if c.measured is not None and c.measured.ratio is not None]
    assert len(measured) >= 8, [c.label() for c in report.cells]
    markdown = report.to_markdown()
    for cell in measured:
        pair = pairs[(cell.op, cell.mode, cell.input_id, cell.backend)]
        assert pair.verdict is not None
        said = f"{pair.verdict.verdict} {fmt_pct(pair.verdict.ratio)} {fmt_ci(pair)} at 99%"
        row = next(r for r in markdown.splitlines() if r.startswith("|") and cell.label() in r)
        assert f"| {said}, " in row, (said, row)
        assert not re.search(r"\d\.\d{3}x", row), row  # no ratio left beside the percentages


def test_a_notes_measured_change_is_the_change_columns() -> None:
    run1, run2 = TRITONBENCH / "layer_norm_bwd_run1.csv", TRITONBENCH / "layer_norm_bwd_run2.csv"
    report = kt.triage(old=run1, new=run2, old_toolchain="triton==3.3.1", new_toolchain="triton==3.4.0", bisect=False)
    noted = [(c, n) for c in report.cells for n in c.notes if "(measured " in n]
    assert len(noted) >= 5, [c.notes for c in report.cells]
    for cell, note in noted:
        (said,) = re.findall(r"\(measured ([^;)]+)", note)
        assert said == fmt_pct(cell.ratio), (said, cell.label())  # "+53.2%", as the change column: not "+53%"
