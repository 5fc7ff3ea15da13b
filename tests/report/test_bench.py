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


def _alignment(markdown: str) -> dict[str, str]:
    lines = markdown.splitlines()
    k = next(i for i, line in enumerate(lines) if line.startswith("| "))
    columns = [c.strip() for c in lines[k].strip("|").split("|")]
    return dict(zip(columns, lines[k + 1].strip("|").split("|"), strict=True))


def test_markdown_right_aligns_only_the_numeric_columns() -> None:
    """A recorded workload's bench report (benchmarks/corpus/h200/bench/fla_ops.md) right-aligned every
    column, kernel, input, toolchain, status and check included; only numbers are right-aligned now."""
    from ktriage.bench.recorded import summary_rows
    from ktriage.report.bench import to_markdown

    key = lambda tc: CellKey("fla_ops.recorded", "fwd", 0, "2x4096x8x128,8 T=4096", "K0:chunk_fwd_kernel_h", tc)  # noqa: E731
    cells = [  # fake cells: only the table layout is under test here
        Cell(key("tcA"), "ok", [0.0345] * 3, accuracy={"reference": True}),
        Cell(key("tcB"), "error", error="kernel dcc6 did not compile with triton-3.3.1"),
        Cell(key("tcC"), "ok", [0.0358] * 3, accuracy={"agreement": "bitwise equal"}),
    ]
    aligned = _alignment(to_markdown(summary_rows(cells, "tcA"), "fla_ops (recorded workload)"))
    assert [c for c, a in aligned.items() if a == "---:"] == ["latency_ms", "vs_ref"]
    assert list(aligned) == ["kernel", "input", "toolchain", "status", "latency_ms", "vs_ref", "check"]

    op = bench_op("layer_norm")
    tb = [
        Cell(CellKey("layer_norm", "bwd", 7, "(4096, 4608)", "torch_layer_norm", None), "ok", [0.2] * 3),
        Cell(CellKey("layer_norm", "bwd", 7, "(4096, 4608)", "liger_layer_norm", "t"), "error", error="boom 1"),
        Cell(CellKey("layer_norm", "bwd", 8, "(4096, 5120)", "torch_layer_norm", None), "ok", [0.3] * 3),
        Cell(CellKey("layer_norm", "bwd", 8, "(4096, 5120)", "liger_layer_norm", "t"), "ok", [0.1] * 3),
    ]
    aligned = _alignment(to_markdown(results_table(tb, op, "torch_layer_norm", ["latency", "speedup"]), "t"))
    assert aligned == {
        "x_val": "---",
        "torch_layer_norm-latency": "---:",
        "liger_layer_norm@t-latency": "---:",
        "liger_layer_norm@t-speedup": "---:",
    }
