"""A loop of arithmetic only is priced by what the other kernel shows of it (model.arithmetic_loop_unrolled_elsewhere).

Real cells, committed: inductor's cross-entropy backward (``fresh_inductor``), whose one-hot sum over the
vocabulary one ptxas unrolled fully and another into a 331-instruction loop, and fla's kkt solve
(the calibration's cells), whose arithmetic loops gained a shared-memory access in the other kernel
and stay loops there."""

from __future__ import annotations

from pathlib import Path

from ktriage.predict.dataset import CalibrationCell, read_cells
from ktriage.predict.model import anchored, load_params, predict, profile

CALIBRATION = Path(__file__).resolve().parents[2] / "benchmarks" / "calibration"


def _cells(path: Path, kernel: str, needle: str) -> list[CalibrationCell]:
    return [c for c in read_cells(path) if c.kernel.startswith(kernel) and needle in c.input]


def test_a_loop_the_other_assembler_unrolled_is_priced_by_the_straight_line_code() -> None:
    cells = _cells(
        CALIBRATION / "fresh_inductor" / "cells.jsonl",
        "triton_red_fused__log_softmax__log_softmax_backward_data",
        "4096x50304",
    )
    assert {c.toolchain for c in cells} == {"triton==3.3.1", "triton==3.4.0"}
    for c in cells:
        ref, new = profile(c.ref), profile(c.new)
        assert ref.arithmetic_loops == 1 and new.arithmetic_loops == 0  # the reference (3.6.0) kept the loop
        pr, pn = anchored(ref, new)
        # the loop runs as often as the unrolled kernel's straight-line code is longer (about 2 of its copies)
        assert sum(pr.loop.values()) == sum(pn.loop.values())
        grown = sum(new.rest.values()) - sum(ref.rest.values())
        assert abs(sum(pr.rest.values()) - (sum(ref.rest.values()) + grown)) < 1e-6
        p = predict(c.ref, c.new, load_params(), contributors=False)
        assert p.kind == "neutral" and abs(p.ratio - 1.0) < 0.01, (c.toolchain, p.ratio)  # the GPU: 1.000x, 1.003x


def test_loops_that_stay_loops_in_the_other_kernel_keep_the_data_trip_count() -> None:
    cells = [
        c for c in read_cells(CALIBRATION / "cells.jsonl") if c.kernel.startswith("chunk_gated_delta_rule_fwd_kkt")
    ]
    assert cells
    for c in cells:
        ref, new = profile(c.ref), profile(c.new)
        assert ref.arithmetic_loops > 0 and new.arithmetic_loops == 0
        assert new.innermost_loops == ref.innermost_loops  # rewritten (a shared-memory access), not unrolled
        pr, _ = anchored(ref, new)
        assert pr.arithmetic_loop == ref.arithmetic_loop and pr.loop == ref.loop
