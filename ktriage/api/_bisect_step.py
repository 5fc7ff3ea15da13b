"""``ktriage.api.bisect_step(...) -> StepResult``: one ``git bisect run`` step, the checked-out
kernels compiled and a metric compared with a stored baseline (docs/bisect.md).

Why an entry point: the CLI checked the step's options, built its config, measured and judged it;
a script driving its own bisect now makes one call and gets the git-bisect exit code and the line
``ktriage bisect-step`` prints. Errors stay :class:`~ktriage.errors.KtriageError`: the command turns
them into exit 128 (:data:`EXIT_ABORT`), so that git aborts instead of marking the commit bad.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ktriage.api import _args as args
from ktriage.api.paths import check_writable
from ktriage.bisect.step import EXIT_ABORT
from ktriage.brief import brief
from ktriage.errors import KtriageError, joined, option, spelled, worded

if TYPE_CHECKING:
    from ktriage.bisect.step import StepConfig

__all__ = ["EXIT_ABORT", "StepResult", "bisect_step"]


@dataclass(frozen=True)
class StepResult:
    """``code``: git bisect's (0 good, 1 bad, 125 skip; 0 after recording a baseline); ``message``:
    the verdict, its reason and the values measured (or the baseline recorded)."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    code: int
    message: str


@args.entry_point
def bisect_step(
    *,
    baseline: str | Path | None = None,
    record_baseline: str | Path | None = None,
    role: str = "good",
    spec: str | None = None,
    op: str | None = None,
    mode: str | None = None,
    inputs: int | Sequence[str | int] = (),
    metric: str | None = None,
    toolchain: str | None = None,
    arch: str = "sm_90",
) -> StepResult:
    """Judge the current checkout against ``baseline`` (kernels named here replace the baseline's; a
    ``metric``, ``toolchain`` or ``arch`` other than the baseline's is refused: its values would not
    be comparable),
    or measure it and store the values as the ``role`` (good or bad) endpoint of ``record_baseline``
    (which needs ``metric``, ``toolchain`` and ``spec`` or ``op``). The files may be given as str or
    Path; ``arch`` takes every spelling ``--arch`` does."""
    from ktriage.bisect.step import StepConfig, decide_step, load_baseline, measure_here
    from ktriage.bisect.step import record_baseline as record
    from ktriage.bisect.workspace import CandidateFailed
    from ktriage.catalog.resolve import op_default_mode

    baseline = Path(args.path_or_name(baseline, "baseline", "--baseline")) if baseline is not None else None
    if record_baseline is not None:
        record_baseline = Path(args.path_or_name(record_baseline, "record_baseline", "--record-baseline"))
        # a folder here failed only after the compile: "internal error: IsADirectoryError"
        check_writable(record_baseline, option("record_baseline", "--record-baseline"), example="baseline.json")
    inputs, arch = args.texts(inputs, "inputs", "--input", numbers=True), args.arch(arch)
    # one-string arguments, checked before the baseline is read or anything compiled (a list reached the lower layers)
    role = args.text(role, "role", "--as", example="good")
    spec = args.optional_text(spec, "spec", "--spec", example="spec.toml")
    op = args.optional_text(op, "op", "--op", example="liger.layer_norm")
    mode = args.optional_text(mode, "mode", "--mode", example="bwd")
    metric = args.optional_text(metric, "metric", "--metric", example="spill_store_bytes")
    toolchain = args.optional_text(toolchain, "toolchain", "-t/--toolchain", example="triton==3.4.0")
    judge, record_as = option("baseline", "--baseline"), option("record_baseline", "--record-baseline")
    if (baseline is None) == (record_baseline is None):
        raise KtriageError(
            worded(lambda o: f"give exactly one of {spelled(judge, o)} and {spelled(record_as, o)}"),
            worded(lambda o: f"record at a good commit, then judge with {spelled(judge, o)}"),
        )
    if role not in ("good", "bad"):
        raise KtriageError(
            worded(lambda o: f"{o('role', '--as', role)} is not an endpoint of a baseline"),
            worded(lambda o: f"use {o('role', '--as', 'good')} or {o('role', '--as', 'bad')}"),
        )
    if baseline is not None and role == "bad":
        raise KtriageError(
            worded(
                lambda o: (
                    f"{o('role', '--as', 'bad')} goes with {spelled(record_as, o)} (it names the endpoint recorded); "
                    f"{spelled(judge, o)} judges this checkout"
                )
            ),
            worded(
                lambda o: (
                    f"drop {o('role', '--as')}, or record the bad endpoint: "
                    f"{o('record_baseline', '--record-baseline', 'FILE')} with {o('role', '--as', 'bad')}"
                )
            ),
        )
    if record_baseline is not None:
        if not (metric and toolchain and (spec or op)):
            raise KtriageError(
                worded(
                    lambda o: (
                        f"{spelled(record_as, o)} needs {o('metric', '--metric')}, {o('toolchain', '--toolchain')} and "
                        f"{o('spec', '--spec')} or {o('op', '--op')}"
                    )
                ),
                worded(
                    lambda o: (
                        f"e.g. {o('spec', '--spec', 'spec.toml')}, {o('metric', '--metric', 'spill_store_bytes')}, "
                        f"{o('toolchain', '-t', 'triton==3.4.0')}"
                    )
                ),
            )
        cfg = StepConfig(metric, toolchain, spec, op, mode or op_default_mode(op) or "bwd", tuple(inputs), arch)
        data = record(record_baseline, cfg, "good" if role == "good" else "bad")
        recorded = data["good"] if role == "good" else data["bad"]
        return StepResult(0, f"{role} baseline: {json.dumps(recorded['values'])} -> {record_baseline}")
    assert baseline is not None
    cfg, good, bad, left_out = load_baseline(baseline)
    _check_same_question(baseline, cfg, metric=metric, toolchain=toolchain, arch=arch)
    cfg = StepConfig(
        metric or cfg.metric,
        toolchain or cfg.toolchain,
        spec or cfg.spec,
        op or cfg.op,
        mode or cfg.mode,
        tuple(inputs or cfg.inputs),
        arch if arch != "sm_90" else cfg.arch,
    )
    try:
        values, failed = measure_here(cfg)
    except CandidateFailed as exc:
        return StepResult(125, f"skip: {exc.reason}")
    code, reason = decide_step(values, good, bad, failed, left_out)
    judged = {k: v for k, v in values.items() if k not in left_out}  # the others' values the reason names
    return StepResult(code, f"{ {0: 'good', 1: 'bad', 125: 'skip'}[code] }: {reason} ({json.dumps(judged)})")


def _check_same_question(
    baseline: Path, cfg: StepConfig, *, metric: str | None, toolchain: str | None, arch: str
) -> None:
    """A --metric, --toolchain or --arch other than the baseline's is refused: the values measured here
    would be compared with the baseline's values of another quantity or compiler (``--metric registers``
    against recorded spill bytes judged 255 registers "closer to the bad endpoint" of 0 and 48 bytes).
    The kernels (--spec, --op, --input) may still be named anew: a spec file can move in the history."""
    from ktriage.toolchain.spec import parse_toolchain

    given = {
        ("metric", "--metric"): (metric, cfg.metric),
        ("toolchain", "--toolchain"): (
            str(parse_toolchain(toolchain)) if toolchain else None,
            str(parse_toolchain(cfg.toolchain)),
        ),
        ("arch", "--arch"): (arch if arch != "sm_90" else None, cfg.arch),  # sm_90 is the flag's default: not given
    }
    for (name, flag), (here, recorded) in given.items():
        if here is not None and here != recorded:
            problem = joined(
                option(name, flag, here),
                f" differs from the baseline's ({recorded}, in {baseline}): its values would be compared with another question's",
            )
            unusable = _metric_step_refuses(here) if name == "metric" else None
            if unusable is not None:  # a baseline of it would be refused too: only the baseline's metric works
                raise KtriageError(
                    problem, joined("drop ", option(name, flag), f" (the baseline's {recorded} is used); {unusable}")
                )
            raise KtriageError(
                problem,
                joined(
                    "drop ",
                    option(name, flag),
                    " (the baseline's is used), or record a baseline with it: ",
                    option("record_baseline", "--record-baseline", "FILE"),
                    " with ",
                    option(name, flag, here),
                ),
            )


def _metric_step_refuses(metric: str) -> str | None:
    """Why bisect-step cannot record a baseline of ``metric`` (None when it can): the refusal of a metric
    other than the baseline's offered to record a baseline with it, even for ``latency``, which bisect-step
    refuses to record (it compiles, never times): the fix may offer only what works."""
    from ktriage.bisect.predicates import check_metric

    if metric == "latency":
        return "bisect-step judges compile metrics only: time toolchains with `ktriage bisect --metric latency --bundle DIR` (docs/bisect_timing.md)"
    try:
        check_metric(metric, timed=False)
    except KtriageError as exc:
        return f"{exc.problem}, so no baseline can be recorded with it"
    return None
