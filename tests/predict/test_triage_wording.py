"""triage sets the cost model next to the measured slowdown: constructed TritonBench CSVs of Liger
layer_norm bwd (Triton 3.3.1 -> 3.4.0, real compiles): N=4608 measured 2.5x slower is "the
compile-side change predicts +...", N=2560 measured 1.5x slower (its kernels only drift registers,
predicted neutral) is "no compile-side change predicts the measured slowdown"."""

from __future__ import annotations

from pathlib import Path

import pytest

from ktriage.triage import TriageOptions, triage

pytestmark = pytest.mark.slow
SLOWER = {4608: 2.5, 2560: 1.5}


def _csvs(d: Path) -> tuple[Path, Path]:
    out = []
    for name, new in (("layer_norm_bwd_331.csv", False), ("layer_norm_bwd_340.csv", True)):
        lines = ["x_val;torch_layer_norm-latency;liger_layer_norm-latency"]
        for n in range(1024, 15872 + 1, 512):
            liger = (0.2 + n / 20000) * (SLOWER.get(n, 1.0) if new else 1.0)
            lines.append(f"{n};{0.1 + n / 50000};{liger}")
        (d / name).write_text("\n".join([*lines, "average;;"]) + "\n")
        out.append(d / name)
    return out[0], out[1]


def test_triage_states_the_prediction_next_to_the_measurement(tmp_path: Path) -> None:
    old, new = _csvs(tmp_path)
    report = triage(
        old, new, TriageOptions(old_toolchain="triton==3.3.1", new_toolchain="triton==3.4.0", bisect=False, fixes=False)
    )
    by_n = {int(c.input_label.split(", ")[1].rstrip(")")): c for c in report.cells}
    cliff, drift = by_n[4608], by_n[2560]
    assert cliff.predicted is not None and cliff.predicted.kind == "regression" and cliff.predicted.ratio > 2
    assert any(n.startswith("the compile-side change predicts +") and "measured +150.0%" in n for n in cliff.notes)
    assert drift.predicted is not None and drift.predicted.kind == "neutral" and drift.cause is None
    note = next(n for n in drift.notes if n.startswith("no compile-side change predicts the measured slowdown"))
    assert "measured +50.0%" in note and "the host side, the baseline, the environment" in note
    assert report.to_json()["cells"][0]["predicted"] is not None


def test_a_slowdown_in_the_models_blind_spot_keeps_the_kernel_the_suspect() -> None:
    """A measured slowdown whose kernels' prediction is neutral but whose shared-memory accesses changed
    where the bank analysis could not read every address (the committed cell of FLA's gated delta rule
    ``h`` kernel with 3.3.1, whose cubins were not at hand: +32 % measured) is sent to ``ktriage profile``,
    not to "the host side"; one without that change is not."""
    import json

    from ktriage.predict.facts import KernelFacts
    from ktriage.predict.model import predict
    from ktriage.triage.model import CellTriage
    from ktriage.triage.pipeline import _predicted_note

    cells = Path(__file__).resolve().parents[2] / "benchmarks" / "calibration" / "cells.jsonl"
    rows = [json.loads(line) for line in cells.read_text().splitlines()]

    def prediction(kernel: str) -> object:
        row = next(
            r
            for r in rows
            if r["kernel"] == kernel or (r["kernel"].startswith(kernel) and r["measured"]["ratio"] > 1.3)
        )
        return predict(KernelFacts.from_json(row["ref_facts"]), KernelFacts.from_json(row["new_facts"]))

    def note(kernel: str) -> str:
        c = CellTriage("op", "fwd", 0, "x", "kernel", 1.0, 1.32, 1.32, "unsure", "regression", False)
        _predicted_note(c, [prediction(kernel)], 0.05)  # type: ignore[list-item]
        return c.notes[-1]

    spot = note("chunk_gated_delta_rule_fwd_kernel_h")
    assert spot.startswith("the compile-side change predicts no slowdown (measured +32.0%")
    assert "bank conflicts unpriced" in spot and "ktriage profile" in spot and "host side" not in spot
    other = note("triton_red_fused_native_layer_norm_no_welford")
    assert other.startswith("no compile-side change predicts the measured slowdown") and "host side" in other
