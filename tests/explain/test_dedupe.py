"""explain analyzes each distinct cubin once per run, however many inputs share it, and the inputs
that share a kernel get the same facts as if each had been explained alone."""

from __future__ import annotations

import pytest

import ktriage.analyze.artifact as artifact_module
from ktriage.catalog import expand_op
from ktriage.compile.compiler import Compiler
from ktriage.explain.engine import Explainer, KernelResult
from ktriage.report.explain import to_json

pytestmark = pytest.mark.slow


def test_inputs_sharing_a_kernel_run_cuobjdump_once_per_cubin(
    toolchain, compiler: Compiler, monkeypatch: pytest.MonkeyPatch
) -> None:
    specs = expand_op("liger.layer_norm", mode="bwd", target="sm_90", inputs=["1", "2"])
    assert specs[0].key() == specs[1].key()
    tcs = [toolchain("triton==3.3.1"), toolchain("triton==3.4.0")]
    real_analyze = artifact_module.analyze
    analyzed: list[str] = []

    def counting_analyze(cubin, **kwargs):  # a spy: counts, then runs the real analysis
        analyzed.append(str(cubin))
        return real_analyze(cubin, **kwargs)

    monkeypatch.setattr(artifact_module, "analyze", counting_analyze)
    result = Explainer(compiler).run(specs, tcs)
    # one kernel, two toolchains: two own cubins and the two cross cells, each analyzed once
    assert len(analyzed) == len(set(analyzed)) == 4
    assert compiler.frontend_compiles == 2
    a, b = result.specs
    for t in tcs:
        ra, rb = a.results[t.id], b.results[t.id]
        assert isinstance(ra, KernelResult) and isinstance(rb, KernelResult)
        assert ra.resources == rb.resources and ra.occupancy == rb.occupancy
    assert [c.to_json() for c in a.comparisons[0].changes] == [c.to_json() for c in b.comparisons[0].changes]

    # the same specs explained one at a time (a fresh explainer, the cache now warm) give the same report
    monkeypatch.setattr(artifact_module, "analyze", real_analyze)
    alone = [Explainer(compiler).run([s], tcs).specs[0] for s in specs]
    together = to_json(result, [])["kernels"]
    assert together == [to_json(type(result)(result.toolchains, [item]), [])["kernels"][0] for item in alone]


def test_a_damaged_resources_sidecar_is_rederived_not_served(toolchain, compiler: Compiler) -> None:
    specs = expand_op("liger.layer_norm", mode="bwd", target="sm_90", inputs=["1"])
    tcs = [toolchain("triton==3.4.0")]
    first = Explainer(compiler).run(specs, tcs).specs[0].results[tcs[0].id]
    assert isinstance(first, KernelResult)
    sidecars = list(first.artifact.cubin.dir.glob("resources-*.json"))
    resources_sidecars = [p for p in sidecars if not p.name.startswith("resources-abi-")]
    assert len(resources_sidecars) == 1
    resources_sidecars[0].write_text(resources_sidecars[0].read_text().replace('"registers": ', '"registers": 1'))
    again = Explainer(compiler).run(specs, tcs).specs[0].results[tcs[0].id]
    assert isinstance(again, KernelResult) and again.resources == first.resources
