"""The JIT-equivalence harness (issue 9): for every supported Triton release, every case's cubin from
ktriage equals, byte for byte, the cubin Triton's JIT built for the same launch, driven through its
real launch path (decorators, binder, compile) with only the GPU driver faked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ktriage.compile.compiler import Artifact, Compiler
from ktriage.fidelity.cases import all_cases
from ktriage.fidelity.harness import check, compare_artifact, run_jit, spec_from_jit_launch
from ktriage.toolchain.supported import SUPPORTED_TRITON

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("version", SUPPORTED_TRITON)
def test_ktriage_cubin_is_the_jit_cubin(version: str, toolchain, tmp_path: Path) -> None:
    tc = toolchain(f"triton=={version}")
    cases = all_cases()
    with Compiler(jobs=2, cache_dir=tmp_path / "artifacts") as compiler:
        rows = check([tc], cases, compiler=compiler, work=tmp_path / "jit")
    (tmp_path / "rows.json").write_text(json.dumps([r.to_json() for r in rows], indent=1))
    bad = [f"{r.case}: {r.status}: {r.detail}" for r in rows if r.status in ("differs", "error")]
    assert not bad, f"Triton {version}:\n" + "\n".join(bad)
    by_name = {c.name: c for c in cases}
    for row in rows:
        if row.status == "skipped":
            assert not by_name[row.case].supports(version)  # skipped only for a real version limit
    identical = [r for r in rows if r.status == "identical"]
    expected = [c for c in cases if c.supports(version)]
    assert len(identical) == len(expected)
    assert all(r.cubin_bytes > 1000 for r in identical)
    # the decorated third-party kernels went through their decorators (fla-core: heuristics + autotune)
    fla = [r for r in identical if r.case.startswith("fla.")]
    assert fla and all(r.autotuned for r in fla) and any(r.heuristics for r in fla)


def test_a_wrong_spec_is_caught(toolchain, tmp_path: Path) -> None:
    """The comparison is sensitive: the same launch compiled without its divisibility hints differs."""
    tc = toolchain("triton==3.4.0")
    case = next(c for c in all_cases() if c.name.startswith("tutorial.vector_add"))
    jit = run_jit(tc, [case], "sm_90", tmp_path / "jit")[case.name]
    launch = next(x for x in jit["launches"] if x["compiles"])
    record = jit["compiles"][launch["compiles"][-1]]
    spec = spec_from_jit_launch(case, launch, "sm_90")
    assert spec.divisible_by_16
    with Compiler(jobs=1, cache_dir=tmp_path / "artifacts") as compiler:
        right = compiler.compile(spec, tc)
        wrong = compiler.compile(spec.replace(divisible_by_16=()), tc)
    assert isinstance(right, Artifact) and isinstance(wrong, Artifact)
    assert compare_artifact(case.name, right, record, {}).status == "identical"
    row = compare_artifact(case.name, wrong, record, {})
    assert row.status == "differs" and "tt.divisibility" in row.detail


def test_heuristics_and_autotune_kernels_compile_with_the_values_they_choose(toolchain, tmp_path: Path) -> None:
    """A kernel under @triton.autotune(@triton.heuristics(@triton.jit)) goes through both decorators:
    the JIT-level launch carries the autotuner's config and the heuristic's value, and ktriage's
    compile of the spec derived from it is the JIT's cubin."""
    from ktriage.fidelity.model import FidelityCase
    from ktriage.spec.launch import Launch
    from ktriage.spec.specialize import Ptr

    kernels = Path(__file__).resolve().parents[1] / "kernels_decorated.py"
    launch = Launch(
        name="heuristic_autotuned",
        source=f"{kernels}:heuristic_autotuned_kernel",
        package=None,
        args=(("x_ptr", Ptr("fp32")), ("y_ptr", Ptr("fp32")), ("n", 4096)),
    )
    case = FidelityCase(name="heuristic_autotuned", launch=launch, autotune_pick=1, pass_options=False)
    tc = toolchain("triton==3.4.0")
    with Compiler(jobs=1, cache_dir=tmp_path / "artifacts") as compiler:
        rows = check([tc], [case], compiler=compiler, work=tmp_path / "jit")
    assert rows[0].status == "identical", rows[0].detail
    assert rows[0].heuristics == ("EVEN",) and rows[0].autotuned
    jit = run_jit(tc, [case], "sm_90", tmp_path / "jit2")[case.name]
    args = dict(next(x for x in jit["launches"] if x["compiles"])["args"])
    assert args["BLOCK"] == 128 and args["EVEN"] is True  # config 1 of the autotuner, 4096 % 128 == 0
