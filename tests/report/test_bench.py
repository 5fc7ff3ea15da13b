"""The bench results table: TritonBench's columns (latency, speedup, gbps, accuracy) from fake cells."""

from __future__ import annotations

import pytest

from ktriage.measure.cells import Cell, CellKey
from ktriage.report.bench import results_table
from ktriage.report.bench import to_csv as _csv
from ktriage.workload.ops.opdef import bench_op


def test_results_table_has_tritonbench_columns() -> None:
    op = bench_op("layer_norm")
    key = lambda b, tc=None: CellKey("layer_norm", "bwd", 7, "(4096, 4608)", b, tc)  # noqa: E731
    cells = [  # fake cells: only the table logic is under test here
        Cell(key("torch_layer_norm"), "ok", [0.2, 0.2, 0.2], bytes_moved=3 * 4096 * 4608 * 4),
        Cell(key("liger_layer_norm", "tcA"), "ok", [0.1, 0.1, 0.1], bytes_moved=3 * 4096 * 4608 * 4),
        Cell(key("liger_layer_norm", "tcB"), "wrong", error="dx: rel_err 1"),
    ]
    rows = results_table(
        cells, op, "torch_layer_norm", ["latency", "speedup", "gbps", "accuracy"], {"tcA": "triton==3.3.1"}
    )
    row = rows[0]
    assert row["x_val"] == "(4096, 4608)"
    assert row["torch_layer_norm-latency"] == "0.2000"
    assert row["liger_layer_norm@triton==3.3.1-speedup"] == "2.000"
    assert row["liger_layer_norm@triton==3.3.1-accuracy"] == "1"
    assert row["liger_layer_norm@tcB-latency"] == "wrong" and row["liger_layer_norm@tcB-accuracy"] == "0"
    assert float(row["torch_layer_norm-gbps"]) == pytest.approx(3 * 4096 * 4608 * 4 / 0.2e-3 / 1e9, rel=1e-3)
    csv_text = _csv(rows)
    assert csv_text.splitlines()[0].startswith("x_val,torch_layer_norm-latency")
