"""The cost model on real compiles of small kernels whose direction is known: the same reduction
with its accumulator spilled inside the loop (maxnreg) against the clean one, and the same kernel
with 16-byte vector loads (divisible pointers and sizes) against scalar loads. Real Triton 3.4.0,
real ptxas, real cuobjdump; no GPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from ktriage.explain.engine import Explainer, KernelResult
from ktriage.predict.model import predict
from ktriage.spec.model import KernelSpec
from tests.triton_compile_for_tests import RED_SIGNATURE

pytestmark = pytest.mark.slow
KERNELS = Path(__file__).resolve().parents[1] / "kernels_for_tests.py"
SIGNATURE = RED_SIGNATURE


def _red(**changes: object) -> KernelSpec:
    spec = KernelSpec(
        "red", f"{KERNELS}:red_kernel", dict(SIGNATURE), {"XBLOCK": 64, "RBLOCK": 64}, grid=(1024,), target="sm_90"
    )
    return spec.replace(**changes)


def _results(toolchain, shared_compiler, specs: list[KernelSpec]) -> list[KernelResult]:
    tc = toolchain("triton==3.4.0")
    result = Explainer(shared_compiler).run(specs, [tc])
    out = [item.results[tc.id] for item in result.specs]
    assert all(isinstance(r, KernelResult) for r in out), out
    return out  # type: ignore[return-value]


def test_spills_in_the_loop_are_predicted_slower(toolchain, shared_compiler) -> None:
    clean, spilled = _results(toolchain, shared_compiler, [_red(), _red(maxnreg=32)])
    assert (clean.resources.spill_store_bytes or 0) == 0 < (spilled.resources.spill_store_bytes or 0)
    loop = spilled.resources.main_loop
    assert loop is not None and loop.opcodes.get("LDL", 0) + loop.opcodes.get("STL", 0) > 0  # in the loop
    p = predict(clean.facts(), spilled.facts())
    assert p.ratio > 1.05 and p.kind == "regression", p.text()
    assert p.contributors[0].aspect in ("local", "occupancy") and "LDL" in p.text()
    back = predict(spilled.facts(), clean.facts())  # the same pair the other way round
    assert back.ratio < 1 / 1.05 and back.kind == "improvement", back.text()


def test_wider_vector_loads_are_predicted_faster(toolchain, shared_compiler) -> None:
    scalar, vector = _results(
        toolchain, shared_compiler, [_red(), _red(divisible_by_16=("in_ptr", "out_ptr", "xnumel", "rnumel"))]
    )

    def widths(r: KernelResult) -> set[str]:
        return {op for op in r.resources.sass_opcodes_detailed if op.startswith("LDG")}

    assert "LDG.E.128" in widths(vector) and "LDG.E.128" not in widths(scalar), (widths(scalar), widths(vector))
    p = predict(scalar.facts(), vector.facts())
    assert p.ratio < 1.0, p.text()
    assert any(c.aspect == "global" for c in p.contributors), p.text()
