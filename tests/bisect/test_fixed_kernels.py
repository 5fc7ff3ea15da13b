"""A release bisect over fixed kernels (a spec file outside any repository) where one kernel does not
compile at one release: real Triton 3.3.1 .. 3.5.1 toolchains from the test home, real compiles.

The release list is given to ``pypi_candidates`` (its ``versions`` argument: what ``pip index versions``
answers, 2026-12) so the test needs no index; the judging under test is the real predicate's."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from ktriage.bisect.predicates import KernelMeasurer, KernelSource, MetricPredicate
from ktriage.bisect.search import run_search
from ktriage.bisect.sources import pypi_candidates
from ktriage.bisect.workspace import CandidateFailed, Workspace
from ktriage.catalog.resolve import resolve_specs
from ktriage.compile.compiler import Compiler

RELEASES = ["3.3.1", "3.4.0", "3.5.0", "3.5.1"]

# "atomic": ptxas 12.4 (Triton 3.3.1's) emits REDG for an unused atomic_add, 12.8 (3.4.0 on) ATOMG, so
# sass:ATOMG changes at 3.4.0. "copy": the same at every release, except that its tile is 48 wide (no
# power of 2: tl.arange refuses it) in the 3.4 releases: a kernel one release in the range cannot compile.


def _test_kernel(name: str) -> str:
    """A kernel of tests/kernels_for_tests.py as source text (read, not imported: this environment has no
    Triton; the toolchain's worker compiles the file written below)."""
    text = (Path(__file__).resolve().parents[1] / "kernels_for_tests.py").read_text()
    node = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == name)
    lines = text.splitlines()
    return "\n".join(lines[node.decorator_list[0].lineno - 1 : node.end_lineno]) + "\n"


KERNELS = f"""import triton
import triton.language as tl

ROW = tl.constexpr(48 if triton.__version__.startswith("3.4.") else 64)


{_test_kernel("atomic_kernel")}

@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * ROW + tl.arange(0, ROW)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, offs < n), offs < n)
"""

SPEC = """
[[kernel]]
name = "{name}"
source = "kernels.py:{name}_kernel"

[kernel.args]
x_ptr = {{ dtype = "fp32", shape = [4096] }}
{out} = {{ dtype = "fp32", shape = [4096] }}
n = 4096
BLOCK = 1024
"""


def _spec_file(folder: Path, *names: str, kernels: str = KERNELS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernels.py").write_text(kernels)
    outs = {"atomic": "out_ptr", "copy": "y_ptr"}
    path = folder / "spec.toml"
    path.write_text("".join(SPEC.format(name=n, out=outs[n]) for n in names))
    return path


@pytest.mark.slow
def test_a_release_where_one_fixed_kernel_does_not_compile_is_judged_on_the_others(
    tmp_path: Path, toolchain: Any
) -> None:
    """Triton 3.4.0 cannot compile "copy", which is the same at both endpoints: 3.4.0 is judged on
    "atomic" (bad: the culprit, found exactly), and copy's error is in its reason and its
    ``measurements.failed``. Before, any kernel of a fixed spec that did not compile made the release a
    skip, and the bisect ended ambiguous between 3.4.0 and 3.5.0. A release where no kernel compiles
    is still a skip, with the error."""
    for v in RELEASES:
        toolchain(f"triton=={v}")
    specs = resolve_specs(str(_spec_file(tmp_path / "kernels", "atomic", "copy")))
    candidates = pypi_candidates("triton", "3.3.1", "3.5.1", versions=RELEASES)
    with Compiler(jobs=1, cache_dir=tmp_path / "artifacts") as compiler:
        measurer = KernelMeasurer(KernelSource(specs=specs), compiler)
        predicate = MetricPredicate("sass:ATOMG", measurer, Workspace(tmp_path / "work"))
        result = run_search(candidates, predicate)
        assert result.status == "culprit" and result.culprit is not None, result
        assert result.culprit.id == "3.4.0"
        seen = {o.candidate.id: o for o in result.observations}
        at_340 = seen["3.4.0"]
        assert at_340.outcome == "bad", at_340
        assert "copy did not compile here" in at_340.reason, at_340.reason
        failed = at_340.measurements["failed"]
        assert isinstance(failed, dict) and list(failed) == ["copy"], at_340.measurements
        assert str(failed["copy"]).startswith("copy: frontend failed: "), failed

        only_copy = KernelSource(specs=resolve_specs(str(_spec_file(tmp_path / "copy", "copy"))))
        with pytest.raises(CandidateFailed, match="^copy: frontend failed: .*power of 2"):
            KernelMeasurer(only_copy, compiler).measure(Workspace(tmp_path / "work").prepare(candidates[1]))


@pytest.mark.slow
def test_a_kernel_that_failed_at_an_endpoint_is_not_said_to_be_the_same_at_both(tmp_path: Path, toolchain: Any) -> None:
    """ "copy" cannot compile at the good endpoint (3.3.1) nor at 3.4.0: 3.4.0 is judged on "atomic", and
    the reason gives why copy is not bisected: it failed at the good endpoint, with that error. Before,
    it said "(not bisected: it does not differ between the endpoints)", which was never compared. The
    same after a resume (the endpoints' failures restored from their saved observations)."""
    for v in RELEASES:
        toolchain(f"triton=={v}")
    kernels = KERNELS.replace('startswith("3.4.")', 'startswith(("3.3.", "3.4."))')
    specs = resolve_specs(str(_spec_file(tmp_path / "kernels", "atomic", "copy", kernels=kernels)))
    candidates = pypi_candidates("triton", "3.3.1", "3.5.1", versions=RELEASES)
    expected = "copy did not compile here (not bisected: it failed at the good endpoint: copy: frontend failed: "
    with Compiler(jobs=1, cache_dir=tmp_path / "artifacts") as compiler:
        measurer = KernelMeasurer(KernelSource(specs=specs), compiler)
        predicate = MetricPredicate("sass:ATOMG", measurer, Workspace(tmp_path / "work"))
        result = run_search(candidates, predicate)
        assert result.status == "culprit" and result.culprit is not None and result.culprit.id == "3.4.0", result
        seen = {o.candidate.id: o for o in result.observations}
        assert seen["3.4.0"].outcome == "bad" and expected in seen["3.4.0"].reason, seen["3.4.0"].reason
        assert "does not differ" not in seen["3.4.0"].reason

        resumed = MetricPredicate("sass:ATOMG", measurer, Workspace(tmp_path / "work"))
        resumed.restore(seen["3.3.1"], seen["3.5.1"])
        (again,) = resumed.test([candidates[1]])
        assert again.reason == seen["3.4.0"].reason
