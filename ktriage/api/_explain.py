"""``ktriage.explain(...) -> ExplainReport``: why did a kernel's compile change between toolchains?
No GPU needed.

Why an entry point: explaining used to take five imports and a context manager (resolve the specs,
build the toolchains, open a ``Compiler``, run the ``Explainer``, collect findings, suggest fixes),
and the checks on the arguments lived in the CLI. This function takes the arguments ``ktriage
explain`` takes (same names, same checks, refused before any toolchain is built) and returns a
report that renders itself the ways the command writes it (table, markdown, JSON, HTML).

Parameter names follow the command's flags (``input_id`` is ``--input-id``), and so do the error
messages, which name the flag and its fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from ktriage.api import _args as args
from ktriage.api._toolchains import resolve_toolchains
from ktriage.brief import brief
from ktriage.catalog.resolve import resolve_kernels, select_input_range, spec_input_id
from ktriage.errors import KtriageError, option, separated, worded
from ktriage.exit_status import ExitStatus, outcome
from ktriage.explain.diffs import kernel_diffs, parse_line_ranges
from ktriage.explain.engine import ExplainResult
from ktriage.explain.findings import FailureFinding, Finding, FindingGroup, collect_failure_findings, group_findings
from ktriage.explain.fixes import Fix, check_fix_toolchains
from ktriage.explain.predicted import fail_on_hit
from ktriage.explain.session import DEFAULT_COMPILE_TIMEOUT_S, explain_specs
from ktriage.mdsafe import markdown_writer
from ktriage.predict.model import DEFAULT_THRESHOLD
from ktriage.spec.model import KernelSpec, input_label
from ktriage.spec.toml_file import named_spec
from ktriage.stats.gate import check_gate
from ktriage.wording import agree

if TYPE_CHECKING:
    from rich.console import Console

    from ktriage.schema.jsontypes import JSONObject

FAIL_ON = ("regression", "any")
__all__ = ["DEFAULT_COMPILE_TIMEOUT_S", "DEFAULT_THRESHOLD", "FAIL_ON", "ExplainReport", "explain"]


@dataclass(frozen=True)
class ExplainReport:
    """What ``explain`` found, typed: the engine's result, the findings and their groups (one per
    change, each with its predicted verdict), the verified fixes when asked, the diffs when asked.

    The renderers (:meth:`to_json`, :meth:`to_markdown`, :meth:`to_html`, :meth:`print_table`) are the
    ones ``ktriage explain`` writes with; JSON is the file boundary, the fields are the API."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)
    BRIEF_FACTS: ClassVar[tuple[str, ...]] = ("complete", "regressions")

    target: str
    title: str
    result: ExplainResult
    findings: list[Finding]
    fixes: list[Fix] | None  # None: not asked for (``fixes=False``)
    diffs: str  # the aligned PTX/SASS diffs asked for, else ""
    fail_on: str | None = None
    # what the first 4 KB of json_text() hold (its first key, report/explain.py's to_json), so that a
    # file written beside another (``--report r.md`` writes r.json) replaces only an earlier report
    JSON_MARKER: ClassVar[bytes] = b'"tool": "ktriage explain"'

    @property
    def specs(self) -> list[KernelSpec]:
        return [item.spec for item in self.result.specs]

    @property
    def groups(self) -> list[FindingGroup]:
        """The findings as reports list them: one group per change, worst first."""
        return group_findings(self.findings)

    @property
    def regressions(self) -> list[FindingGroup]:
        """The groups the cost model predicts slower past the gate (or worse by evidence where it has
        no prediction)."""
        return [g for g in self.groups if g.kind == "regression"]

    @property
    def complete(self) -> bool:
        """Every (spec, toolchain) cell compiled and was analyzed."""
        return bool(self.result.complete)

    @property
    def failures(self) -> list[FailureFinding]:
        """The cells that failed, grouped (empty when :attr:`complete`)."""
        return collect_failure_findings(self.result)

    @property
    def gate_hit(self) -> bool:
        """``fail_on``'s condition holds: a predicted regression (``"regression"``) or any finding
        (``"any"``); False without ``fail_on``."""
        return fail_on_hit([g.kind for g in self.groups], self.fail_on)

    def exit_code(self, allow_failures: bool = False) -> ExitStatus:
        """FINDING when :attr:`gate_hit`, OK otherwise; INCOMPLETE before either when a cell failed, unless
        ``allow_failures`` (``ktriage.exit_status``)."""
        return outcome(finding=self.gate_hit, complete=self.complete, allow_failures=allow_failures)

    def to_json(self) -> JSONObject:
        from ktriage.report.explain import to_json

        fixes = {"fixes": [f.to_json() for f in self.fixes]} if self.fixes is not None else {}
        return {**to_json(self.result, self.findings), **fixes}

    def json_text(self) -> str:
        """The JSON report as ``explain --format json`` prints it and ``-o X.json`` writes it."""
        from ktriage.schema.jsontypes import report_text

        return report_text(self.to_json())

    @markdown_writer
    def to_markdown(self) -> str:
        from ktriage.report.explain import fixes_markdown, to_markdown

        fixes = "\n" + fixes_markdown(self.fixes) if self.fixes is not None else ""
        return to_markdown(self.result, self.findings, title=self.title) + fixes

    def to_html(self) -> str:
        """The self-contained HTML report: ranked findings linked to the lines of the side-by-side
        PTX and SASS diffs, and the fixes when they were asked for (as the markdown has them)."""
        from ktriage.explain.html_view import build_view
        from ktriage.report.explain_html import to_html

        return to_html(build_view(self.result, self.findings, title=self.title, fixes=self.fixes))

    def print_table(self, console: Console) -> None:
        from ktriage.report.explain import print_fixes, print_table

        print_table(self.result, console, self.findings)
        if self.fixes is not None:
            print_fixes(self.fixes, console)


@args.entry_point
def explain(
    *,
    target: str | Path,
    toolchains: Sequence[str],
    mode: str | None = None,
    inputs: int | Sequence[str | int] | None = None,
    input_id: int | None = None,
    num_inputs: int | None = None,
    arch: str | None = None,
    precision: str | None = None,
    sm_count: int | None = None,
    jobs: int | None = None,
    compile_timeout: float = DEFAULT_COMPILE_TIMEOUT_S,
    fixes: bool = False,
    fix_toolchains: Sequence[str] = (),
    cluster: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    fail_on: str | None = None,
    model: str | Path | None = None,
    ptx_diff: bool = False,
    sass_diff: bool = False,
    lines: Sequence[str] = (),
) -> ExplainReport:
    """Compile ``target`` with every toolchain and explain what changed (docs/explain.md).

    ``target``: a catalog op (``liger.layer_norm``), a spec ``.toml`` or a recorded workload ``.json``;
    ``toolchains``: specs such as ``triton==3.4.0``, the first the reference. ``mode``: ``fwd``,
    ``bwd``... (default: the op's own). ``inputs``/``input_id``/``num_inputs`` narrow the inputs.
    ``fixes``: propose fixes for the regressions and verify each by compiling (``fix_toolchains``:
    neighbouring toolchains to try). ``threshold``: the gate on the predicted ratio; ``model``: cost
    model parameters from ``ktriage calibrate``. ``ptx_diff``/``sass_diff``/``lines``: the aligned
    diffs of the one selected kernel. ``fail_on``: what :attr:`ExplainReport.gate_hit` checks.

    Raises :class:`~ktriage.errors.KtriageError` (naming the fix) for a bad argument, before any
    toolchain is built. Compile failures do not raise: see :attr:`ExplainReport.complete`.

    A lone str where a list goes is one item (``inputs="7"``, ``toolchains="triton==3.4.0"``); ``arch``
    takes every spelling ``--arch`` does (``9.0``, ``90``, ``cuda:90``)."""
    target = args.path_or_name(target, "target", example="liger.layer_norm")
    mode = args.optional_text(mode, "mode", "--mode", example="bwd")
    precision = args.optional_text(precision, "precision", "--precision", example="bf16")
    cluster = args.optional_text(cluster, "cluster", "--cluster", example="local")
    fixes, ptx_diff = args.switch(fixes, "fixes", "--fixes"), args.switch(ptx_diff, "ptx_diff", "--ptx-diff")
    sass_diff = args.switch(sass_diff, "sass_diff", "--sass-diff")
    if toolchains is None:
        raise KtriageError(
            "toolchains (-t/--toolchain) is None",
            "pass one or more, e.g. toolchains=['triton==3.3.1', 'triton==3.4.0']",
        )
    toolchains = args.texts(toolchains, "toolchains", "-t/--toolchain")
    fix_toolchains = args.texts(fix_toolchains, "fix_toolchains", "--fix-toolchain")
    inputs = args.texts(inputs, "inputs", "--input", numbers=True)
    lines = args.texts(lines, "lines", "--lines")
    input_id, num_inputs = args.INPUT_ID.optional(input_id), args.NUM_INPUTS.optional(num_inputs)
    jobs, compile_timeout = args.JOBS.optional(jobs), args.COMPILE_TIMEOUT(compile_timeout)
    threshold, sm_count = args.THRESHOLD(threshold), args.SM_COUNT.optional(sm_count)
    arch = args.arch(arch) if arch is not None else None
    fail_on = args.optional_text(fail_on, "fail_on", "--fail-on", example="regression")
    if fail_on is not None and fail_on not in FAIL_ON:
        raise KtriageError(
            worded(lambda o: f"{o('fail_on', '--fail-on', fail_on)} is not one of {', '.join(FAIL_ON)}"),
            worded(
                lambda o: (
                    f"pass {o('fail_on', '--fail-on', 'regression')} for predicted regressions, or "
                    f"{o('fail_on', '--fail-on', 'any')} for any compile-side change"
                )
            ),
        )
    check_gate(threshold, allow_zero=True)
    if fix_toolchains and not fixes:
        raise KtriageError(
            worded(
                lambda o: (
                    f"{o('fix_toolchains', '--fix-toolchain')} names toolchains to try as fixes, but "
                    f"{o('fixes', '--fixes', True)} was not given"
                )
            ),
            worded(lambda o: f"add {o('fixes', '--fixes', True)}, or drop {o('fix_toolchains', '--fix-toolchain')}"),
        )
    model = args.model(model)  # a file that is no model is refused here, before any toolchain is built
    if len(toolchains) < 1:
        raise KtriageError(
            worded(lambda o: f"no {o('toolchains', '-t/--toolchain')} given"),
            worded(
                lambda o: (
                    "pass one or more (two or more to compare), e.g. "
                    f"{o('toolchains', '-t', ['triton==3.3.1', 'triton==3.4.0'])}"
                )
            ),
        )
    asked = (("fail_on", "--fail-on", fail_on is not None), ("fixes", "--fixes", fixes))
    judged = [option(name, flag) for name, flag, on in asked if on]
    if len(toolchains) == 1 and judged:  # "--fail-on any: passed" and "no fix to propose" on a spilling kernel
        raise KtriageError(
            separated(" and ", judged)
            + f" {agree(len(judged), 'needs', 'need')} a toolchain judged against a reference, and {toolchains[0]} is the only "
            f"one given: {'the gate could never fire' if fail_on else 'there is no finding to fix'}",
            "give the reference first and the toolchain to judge after it, e.g. "
            + option("toolchains", "-t", ["triton==3.3.1", toolchains[0]]),
        )
    kernels = resolve_kernels(
        target, mode=mode, inputs=list(inputs) if inputs else None, target_arch=arch, dtype=precision, sm_count=sm_count
    )  # a spec file's kernels that do not load are reported as failed kernels, in their place; the others are explained
    kernels = select_input_range(kernels, input_id, num_inputs, lambda k: spec_input_id(named_spec(k)))
    specs = [k for k in kernels if isinstance(k, KernelSpec)]
    line_ranges = parse_line_ranges(lines)
    if line_ranges and not (ptx_diff or sass_diff):
        ptx_diff = sass_diff = True
    if (ptx_diff or sass_diff) and len(kernels) != 1:
        raise KtriageError(
            worded(
                lambda o: (
                    f"{o('ptx_diff', '--ptx-diff')} and {o('sass_diff', '--sass-diff')} show one kernel, but "
                    f"{len(kernels)} were selected"
                )
            ),
            worded(
                lambda o: f"select one input, e.g. {o('inputs', '--input', input_label(specs[0].meta, specs[0].name))}"
            ),
        )
    built = resolve_toolchains(toolchains)
    neighbours = resolve_toolchains(fix_toolchains) if fixes else []
    check_fix_toolchains(built, neighbours, fix_toolchains)
    from ktriage.execute.select import remote_executor

    executor = remote_executor(cluster)
    try:
        done = explain_specs(
            kernels,
            built,
            jobs=jobs,
            timeout_s=compile_timeout,
            executor=executor,
            model=model,
            threshold=threshold,
            fixes=fixes,
            fix_neighbours=neighbours,
            sm_count=sm_count,
        )
    finally:
        if executor is not None:
            executor.close()
    from ktriage.report.explain import report_title

    return ExplainReport(
        target=target,
        title=report_title(target, specs),
        result=done.result,
        findings=done.findings,
        fixes=done.fixes,
        diffs=kernel_diffs(done.result, ptx_diff, sass_diff, line_ranges),
        fail_on=fail_on,
    )
