"""The explain sequence, once: compile every spec with every toolchain, explain the differences,
collect the findings and, when asked, verify fixes by compiling them.

Why one function: the library entry point (``ktriage.explain``, hence ``ktriage explain``) and
triage's compile-side step both run this sequence. It used to be written out twice (in the CLI and
in ``triage/pipeline.py``), each copy owning its own ``Compiler``, so a change to one (the cost
model's parameters, the gate, the fixes' neighbours) did not reach the other.

Progress goes through :mod:`ktriage.progress` (a no-op without a display), so the caller does not
thread callbacks through.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ktriage import progress
from ktriage.compile.remote import ClusterCompiler
from ktriage.execute.base import Executor, remote_label
from ktriage.explain.engine import Explainer, ExplainResult
from ktriage.explain.findings import Finding, FindingGroup, collect_findings, group_findings
from ktriage.explain.fixes import Fix, suggest_fixes
from ktriage.predict.model import DEFAULT_THRESHOLD, load_params
from ktriage.predict.model_used import model_used
from ktriage.spec.model import KernelSpec
from ktriage.spec.toml_file import Loaded
from ktriage.toolchain.manager import Toolchain

DEFAULT_COMPILE_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Explained:
    """What the sequence produced: the engine's result, its findings (ungrouped, in sweep order) and
    the verified fixes (None when fixes were not asked for; a list, maybe empty, when they were)."""

    result: ExplainResult
    findings: list[Finding]
    fixes: list[Fix] | None
    fixes_s: float = 0.0  # wall seconds spent verifying fixes (triage reports its steps' timings)

    @property
    def groups(self) -> list[FindingGroup]:
        """The findings grouped as reports show them (one per change, with its predicted verdict)."""
        return group_findings(self.findings)


def compiling_label(executor: Executor | None) -> str:
    """The compile step's progress line: where the compiles go when they leave this machine."""
    where = remote_label(executor)
    return f"compiling on {where}" if where else "compiling"


def explain_specs(
    specs: Sequence[Loaded],
    toolchains: Sequence[Toolchain],
    *,
    jobs: int | None = None,
    timeout_s: float = DEFAULT_COMPILE_TIMEOUT_S,
    executor: Executor | None = None,
    model: str | Path | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    fixes: bool = False,
    fix_neighbours: Sequence[Toolchain] = (),
    sm_count: int | None = None,
) -> Explained:
    """Run the sequence over ``specs`` x ``toolchains`` (the first toolchain is the reference).

    ``executor``: where compiles run (None: this machine's worker pool); the caller owns and closes
    it. ``model``/``threshold``: the cost model's file and its gate (None: $KTRIAGE_MODEL or the shipped
    fit); the result names the model it used (``result.model``), as every report then does.
    Compile failures do not raise: they are in ``result.failures`` (``result.complete`` is False), as
    are the kernels of a spec file that did not load (``UnloadedKernel``, kept in their place, each
    failed with every toolchain). ``sm_count``: ``--sm-count``, passed to the fixes' spill-free
    config search so that its ranking prices waves for the GPU asked about."""
    loaded = sum(isinstance(s, KernelSpec) for s in specs)  # the others are neither compiled nor analyzed
    with (
        progress.task(compiling_label(executor), total=loaded * len(toolchains)) as compiling,
        progress.task("analyzing", total=loaded) as analyzing,
        ClusterCompiler(jobs=jobs, timeout_s=timeout_s, executor=executor) as compiler,
    ):
        params = load_params(model)  # the findings and the fixes priced by one model (--model)
        result = Explainer(compiler, params=params, threshold=threshold).run(
            specs, toolchains, on_compiled=compiling.callback, on_explained=analyzing.callback
        )
        result.model = model_used(model)
        findings = collect_findings(result)
        started = time.perf_counter()
        fix_list = (
            suggest_fixes(
                result,
                findings,
                compiler,
                neighbours=fix_neighbours,
                sm_count=sm_count,
                params=params,
                threshold=threshold,
            )
            if fixes
            else None
        )
        fixes_s = time.perf_counter() - started
    return Explained(result, findings, fix_list, fixes_s)
