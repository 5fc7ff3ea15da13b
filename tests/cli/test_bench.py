"""`ktriage bench` on the CPU machine: the compile-here half, the plan, the table, the errors.
(The measuring half runs on the GPU machine: benchmarks/gpu/issue3_full.sh, results in benchmarks/gpu/issue3.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ktriage.bench.plan import BenchPlan, comparison_pairs, variant_name
from ktriage.cli.app import app
from ktriage.measure.cells import Cell, CellKey
from ktriage.report.bench import results_table
from ktriage.report.bench import to_csv as _csv
from ktriage.workload.ops import get_op

runner = CliRunner()


def _plan(**kw) -> BenchPlan:
    base = dict(op="layer_norm", mode="bwd", input_ids=[7], native_backends=["torch_layer_norm", "liger_layer_norm"],
                artifact_backends=["liger_layer_norm"], baseline="torch_layer_norm", precision="fp32",
                toolchains=["tcA", "tcB", "tcC"])
    base.update(kw)
    return BenchPlan(**base)


def test_plan_variants_and_the_pairs_the_adaptive_stop_must_decide() -> None:
    plan = _plan()
    keys = plan.variant_keys(7, "(4096, 4608)")
    assert [variant_name(k) for k in keys] == ["torch_layer_norm", "liger_layer_norm", "liger_layer_norm@tcA",
                                               "liger_layer_norm@tcB", "liger_layer_norm@tcC"]
    pairs = comparison_pairs(plan, keys)
    assert ("torch_layer_norm", "liger_layer_norm@tcB") in pairs
    assert ("liger_layer_norm@tcA", "liger_layer_norm@tcC") in pairs
    assert ("torch_layer_norm", "torch_layer_norm") not in pairs
    assert BenchPlan.from_json(json.loads(json.dumps(plan.to_json()))) == plan


def test_results_table_has_tritonbench_columns() -> None:
    op = get_op("layer_norm")
    key = lambda b, tc=None: CellKey("layer_norm", "bwd", 7, "(4096, 4608)", b, tc)  # noqa: E731
    cells = [  # fake cells: only the table logic is under test here
        Cell(key("torch_layer_norm"), "ok", [0.2, 0.2, 0.2], bytes_moved=3 * 4096 * 4608 * 4),
        Cell(key("liger_layer_norm", "tcA"), "ok", [0.1, 0.1, 0.1], bytes_moved=3 * 4096 * 4608 * 4),
        Cell(key("liger_layer_norm", "tcB"), "wrong", error="dx: rel_err 1"),
    ]
    rows = results_table(cells, op, "torch_layer_norm", ["latency", "speedup", "gbps", "accuracy"], {"tcA": "triton==3.3.1"})
    row = rows[0]
    assert row["x_val"] == "(4096, 4608)"
    assert row["torch_layer_norm-latency"] == "0.2000"
    assert row["liger_layer_norm@triton==3.3.1-speedup"] == "2.000"
    assert row["liger_layer_norm@triton==3.3.1-accuracy"] == "1"
    assert row["liger_layer_norm@tcB-latency"] == "wrong" and row["liger_layer_norm@tcB-accuracy"] == "0"
    assert float(row["torch_layer_norm-gbps"]) == pytest.approx(3 * 4096 * 4608 * 4 / 0.2e-3 / 1e9, rel=1e-3)
    csv_text = _csv(rows)
    assert csv_text.splitlines()[0].startswith("x_val,torch_layer_norm-latency")


@pytest.mark.parametrize("args, words", [
    (["--op", "layer_nrom"], "layer_norm"),
    (["--op", "layer_norm", "--only", "liger_layernorm"], "liger_layer_norm"),
    (["--op", "layer_norm", "--metrics", "latency,speeed"], "speedup"),
    (["--op", "layer_norm", "--bwd", "--fwd"], "choose one"),
    (["--op", "layer_norm", "--only", "torch_layer_norm", "-t", "triton==3.4.0"], "artifact backend"),
    (["--op", "layer_norm", "--bwd", "--only", "torch_layer_norm"], "--compile-only"),  # no GPU here
])
def test_bad_input_names_the_fix(args, words) -> None:
    out = runner.invoke(app, ["bench", *args])
    assert out.exit_code != 0
    assert words in str(out.exception)


@pytest.mark.slow
def test_compile_only_writes_a_bundle_the_gpu_host_can_read(tmp_path: Path) -> None:
    from ktriage.workload.bundle import load_bundle

    bundle = tmp_path / "b"
    out = runner.invoke(app, ["bench", "--op", "layer_norm", "--bwd", "--only", "liger_layer_norm,torch_layer_norm",
                              "--input-id", "6", "--num-inputs", "2", "-t", "triton==3.3.1", "-t", "triton==3.4.0",
                              "--compile-only", "--bundle", str(bundle)])
    assert out.exit_code == 0, out.output
    assert "ktriage bench --bundle" in out.output
    loaded = load_bundle(bundle)
    assert (loaded.op, loaded.mode) == ("layer_norm", "bwd")
    assert [c.id for c in loaded.input_cases()] == [6, 7]
    assert len(loaded.toolchains) == 2
    # N=4608 with 3.4.0 is the spilling kernel: its resources travel with the bundle
    key = loaded.kernel_key("liger_layer_norm", 7, "bwd")
    tc34 = next(t for t in loaded.toolchains if t.startswith("triton-3.4.0"))
    art = loaded.artifact(key, tc34)
    assert art.resources["spill_store_bytes"] > 1000 and art.cubin_bytes()[:4] == b"\x7fELF"
