"""``compare(old, new, ...) -> CompareReport``: the one call behind ``ktriage compare``.

It takes the validation the CLI used to do (the gate, the confidence, ``--baseline`` against the
results' backends, one run for ``toolchains=True``), loads the sides (``ktriage.compare.sides``),
pairs them (``ktriage.compare.pairing``) with the operators' default baselines, and returns the
typed report; printing and exit codes stay with the caller.
"""

from __future__ import annotations

from ktriage.compare.report import CompareReport
from ktriage.compare.sides import (
    LoadedSide,
    Side,
    check_baseline,
    check_not_one_run,
    check_precision,
    file_warnings,
    resolve_side,
)
from ktriage.errors import KtriageError, joined, run_as, spelled, worded
from ktriage.stats.gate import check_gate
from ktriage.wording import plural


def compare(
    old: Side,
    new: Side | None = None,
    *,
    toolchains: bool = False,
    reference: str | None = None,
    baseline: str | None = None,
    threshold: float = 0.05,
    confidence: float = 0.99,
    db: str | None = None,
    op: str | None = None,
    mode: str | None = None,
    allow_precision_mismatch: bool = False,
) -> CompareReport:
    """``old`` against ``new`` (results files, TritonBench files, run ids in the store ``db``, or
    sides already loaded), or, with ``toolchains=True``, the toolchains of the one run ``old``
    against its first, or against ``reference`` (a toolchain id of the run, or a unique part of one:
    ``triton==3.4.0``). ``threshold``: changes smaller than this fraction are "same";
    ``confidence``: of the intervals and the U test; ``baseline``: the baseline backend (default:
    the run's, else the operator's); ``op``/``mode``: for a TritonBench CSV whose name does not say
    them; ``allow_precision_mismatch``: compare two runs of different dtypes on purpose (refused
    otherwise), the comparison then warning of it. Bad input is a ``KtriageError`` naming the fix."""
    from ktriage.compare.pairing import check_shared, compare_cells, compare_toolchains, run_toolchains
    from ktriage.ops.registry import default_baselines
    from ktriage.stats.verdict import VerdictConfig

    check_gate(threshold)
    if not 0.5 <= confidence < 1:
        raise KtriageError(
            worded(lambda o: f"{o('confidence', '--confidence', confidence)} is outside [0.5, 1)"),
            worded(lambda o: f"give e.g. {o('confidence', '--confidence', 0.99)}"),
        )
    config = VerdictConfig(threshold=threshold, confidence=confidence)
    if reference is not None and not toolchains:
        raise KtriageError(
            worded(
                lambda o: (
                    f"{o('reference', '--reference')} picks the reference among the toolchains of one run, but "
                    f"{o('toolchains', '--toolchains')} was not given"
                )
            ),
            worded(
                lambda o: (
                    f"add {o('toolchains', '--toolchains', True)}: "
                    + spelled(
                        run_as(
                            "kt.compare(old=RUN, toolchains=True, reference=TOOLCHAIN)",
                            "ktriage compare RUN --toolchains --reference TOOLCHAIN",
                        ),
                        o,
                    )
                )
            ),
        )
    if toolchains:
        if new is not None:
            raise KtriageError(
                worded(
                    lambda o: (
                        f"{o('toolchains', '--toolchains')} compares the toolchains of ONE run, but two were given "
                        "(old and new)"
                    )
                ),
                worded(lambda o: f"drop new (the second argument), or {o('toolchains', '--toolchains')}"),
            )
        side = resolve_side(old, db, op=op, mode=mode)
        check_baseline(baseline, side.cells)
        tcs = run_toolchains(side.run, side.cells)
        if len(tcs) < 2:
            raise KtriageError(
                worded(
                    lambda o: (
                        f"run {side.run.run_id} has {plural(len(tcs), 'toolchain')} with cells; "
                        f"{o('toolchains', '--toolchains')} needs two or more"
                    )
                ),
                worded(
                    lambda o: (
                        f"measure with several toolchains ({o('toolchains', '-t', ['A', 'B'])} in "
                        f"{spelled(run_as('kt.bench', 'ktriage bench'), o)}), or compare two runs: "
                        f"{spelled(run_as('kt.compare(old=A, new=B)', 'ktriage compare A B'), o)}"
                    )
                ),
            )
        return CompareReport(
            compare_toolchains(
                side.cells,
                run=side.run,
                toolchains=tcs,
                reference=reference,
                baseline=baseline,
                config=config,
                default_baselines=default_baselines(),
            )
        )
    if new is None:
        raise KtriageError(
            worded(
                lambda o: (
                    f"compare needs two runs or result files, old and new (or one run with {o('toolchains', '--toolchains', True)})"
                )
            ),
            joined("e.g. ", run_as("kt.compare(old='old.json', new='new.json')", "ktriage compare old.json new.json")),
        )
    a, b = (resolve_side(s, db, op=op, mode=mode) for s in (old, new))
    shown = old.label if isinstance(old, LoadedSide) else str(old)  # a loaded side's repr is its every cell
    timed = len(run_toolchains(a.run, a.cells))  # --toolchains is a way out only for a run that timed two or more
    check_not_one_run(
        a,
        b,
        (shown, new.label if isinstance(new, LoadedSide) else new),
        joined(
            "give two different runs, or compare the toolchains inside this one: ",
            run_as(f"kt.compare(old={shown!r}, toolchains=True)", f"ktriage compare {shown} --toolchains"),
        )
        if timed >= 2
        else worded(
            lambda o: (
                "give two different runs (e.g. the old and the new toolchain's TritonBench files); this one "
                f"timed {plural(timed, 'toolchain')}, so there is none inside it to compare with "
                f"{o('toolchains', '--toolchains', True)}"
            )
        ),
    )
    check_baseline(baseline, a.cells, b.cells)
    warning = check_precision(a, b, allow=allow_precision_mismatch)
    label_a, label_b = a.label, b.label
    if label_a == label_b:
        label_a, label_b = f"{label_a} (A)", f"{label_b} (B)"
    comparison = compare_cells(
        a.cells,
        b.cells,
        ref_label=label_a,
        new_label=label_b,
        ref_run=a.run,
        new_run=b.run,
        baseline=baseline,
        config=config,
        default_baselines=default_baselines(),
    )
    check_shared(comparison, label_a, label_b)
    comparison.warnings += ([warning] if warning else []) + file_warnings(a, b)
    return CompareReport([comparison])
