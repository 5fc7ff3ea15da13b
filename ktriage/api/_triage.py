"""``ktriage.api.triage(old=..., new=...) -> TriageReport``: triage a regression report: rank every
cell past the gate, explain each flagged kernel compile-side with both toolchains, note a moved
baseline, bisect compile-only, propose fixes, and, when asked, re-measure on a GPU (docs/triage.md).

Why an entry point: the sides' loading (results files, TritonBench files, store runs; one run that
timed both toolchains split into its two halves, then settled from its interleaved samples) and the
checks on the arguments were the CLI's; a CI job triaging a nightly TritonBench pair now makes one
call. ``ktriage triage --run`` (from a program to a report, on a GPU host) is ``triage_run``.

The report is triage's own (``ktriage.triage.model.TriageReport``: cells, verdicts, exit code) with
the renderers ``ktriage triage`` writes with (:meth:`TriageReport.to_markdown`...), so a caller
renders it as the command does without reaching into ``ktriage.report``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING

from ktriage.api import _args as args
from ktriage.api._args import JOBS, MAX_TIME
from ktriage.api.paths import check_writable
from ktriage.brief import brief
from ktriage.compare.sides import LoadedSide, check_not_one_run, check_precision, file_warnings, load_side
from ktriage.errors import KtriageError, option, spelled, worded
from ktriage.mdsafe import markdown_writer
from ktriage.triage.model import TriageOptions
from ktriage.triage.model import TriageReport as _Triaged

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["TriageReport", "triage"]


class TriageReport(_Triaged):
    """The whole triage (``ktriage.triage.model.TriageReport``: the flagged cells worst first within
    each verdict, what only a GPU can decide, what failed, the exit code) and its renderers."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    @classmethod
    def of_triage(cls, report: _Triaged) -> TriageReport:
        """``report`` (as ``ktriage.triage`` returns it) with the renderers."""
        return report if isinstance(report, cls) else cls(**{f.name: getattr(report, f.name) for f in fields(report)})

    def json_text(self) -> str:
        """The report as JSON (``to_json()``'s document; the command adds a final newline)."""
        from ktriage.report.triage import to_json

        return to_json(self)

    @markdown_writer
    def to_markdown(self) -> str:
        from ktriage.report.triage import to_markdown

        return to_markdown(self)

    def to_html(self) -> str:
        """One self-contained page: the tables of the markdown and the sweep's charts."""
        from ktriage.report.triage import to_html

        return to_html(self)

    def print_table(self, console: Console) -> None:
        from ktriage.report.triage import print_table

        print_table(self, console)


@args.entry_point
def triage(
    *,
    old: str | Path | LoadedSide,
    new: str | Path | LoadedSide,
    old_toolchain: str | None = None,
    new_toolchain: str | None = None,
    threshold: float = 0.10,
    arch: str = "sm_90",
    op: str | None = None,
    mode: str | None = None,
    bisect: bool = True,
    fixes: bool = True,
    jobs: int | None = None,
    bundle: str | Path | None = None,
    measure: bool = False,
    measured: Path | Sequence[str | Path] = (),
    limit: int | None = None,
    max_time: float | None = None,
    db: str | None = None,
    workloads: Path | Sequence[str | Path] = (),
    allow_precision_mismatch: bool = False,
    model: str | Path | None = None,
    sm_count: int | None = None,
    say: Callable[[str], None] | None = None,
) -> TriageReport:
    """Triage ``old`` against ``new`` (results files, TritonBench CSV/JSON, run ids of the store
    ``db``, or sides already loaded: ``ktriage.compare.sides.load_side``; the same file twice when one
    run timed both toolchains side by side). ``threshold``: the gate as a fraction (0.10, the command's
    ``--threshold 10``: cells that moved less than 10 % are not flagged). ``old_toolchain`` /
    ``new_toolchain``: what each side ran (default: what the results say). ``bundle``/``measured``/
    ``measure``: the GPU re-run (a bundle of the flagged cells, its results read back, or both here);
    ``max_time``: its seconds of sampling per input (None: 5), refused without ``bundle`` or ``measure``.
    ``workloads``: recorded workloads whose kernels explain cells without catalog kernels.
    ``allow_precision_mismatch``: triage runs of two dtypes (bf16 against fp16) on purpose, refused
    otherwise; the report's notes then say that cells of different dtypes are compared. ``model``: the cost
    model's file (``ktriage calibrate -o FILE``) that prices the compile-side predictions and the fixes
    (None: $KTRIAGE_MODEL, else the shipped fit); the report names it. ``sm_count``: the SMs of the GPU
    the flagged cells are priced for (waves; a MIG slice, an H100 PCIe's 114) and the GPU re-run's
    bundle is built for (None: the GPU the results were recorded on, when a results file says it, else
    the target's usual part); the report says which count and why.

    Raises :class:`~ktriage.errors.KtriageError` for bad input before any compile."""
    from ktriage.triage import triage as run_triage

    say = args.callback(say, "say")
    bisect, fixes = args.switch(bisect, "bisect", "--no-bisect"), args.switch(fixes, "fixes", "--no-fixes")
    measure = args.switch(measure, "measure", "--measure")
    allow_precision_mismatch = args.switch(
        allow_precision_mismatch, "allow_precision_mismatch", "--allow-precision-mismatch"
    )

    old_toolchain = args.optional_text(old_toolchain, "old_toolchain", "--old-toolchain", example="triton==3.5.1")
    new_toolchain = args.optional_text(new_toolchain, "new_toolchain", "--new-toolchain", example="triton==3.6.0")
    op, mode = args.optional_text(op, "op", "--op", example="layer_norm"), args.optional_text(mode, "mode", "--mode")
    threshold, limit = args.THRESHOLD(threshold), args.TRIAGE_LIMIT.optional(limit)
    sm_count = args.SM_COUNT.optional(sm_count)  # explain's and bench's check, so the same message
    # a lone str is one file (workloads="W.json" was read as the files 'W', '.', 'j'...)
    measured, workloads = (
        args.paths(measured, "measured", "--measured"),
        args.paths(workloads, "workloads", "--workload"),
    )
    # one-string arguments: bundle=[...] was a TypeError from pathlib, arch=[...] "unknown GPU target ['x']"
    bundle, arch = args.optional_path(bundle, "bundle", "--bundle"), args.arch(arch)
    db = args.db(db)
    model = args.model(model)  # a file that is no model is refused here, before any compile
    if bundle is not None:
        check_writable(bundle, option("bundle", "--bundle"), folder=True)
    # the GPU re-run's options, named as a Python caller passes them; the command prints the flags (errors.worded)
    gpu_rerun = worded(lambda o: f"{o('bundle', '--bundle')}, {o('measure', '--measure')}")
    add_rerun = worded(
        lambda o: f"add {o('bundle', '--bundle', 'DIR')}, or {o('measure', '--measure', True)} on a GPU host"
    )
    if limit is not None and limit >= 1 and not (bundle or measure or measured or workloads):
        # it caps the GPU re-run's cells and the recorded workloads' search: with neither it capped nothing
        raise KtriageError(
            worded(
                lambda o: (
                    f"{o('limit', '--limit', limit)} applies to the GPU re-run ({spelled(gpu_rerun, o)}, "
                    f"{o('measured', '--measured')}) and to the recorded workloads' search "
                    f"({o('workloads', '--workload')}); none is given, so it would cap nothing"
                )
            ),
            worded(
                lambda o: f"{spelled(add_rerun, o)}, to re-measure the worst cells; or drop {o('limit', '--limit')}"
            ),
        )
    jobs = JOBS.optional(jobs)
    max_time = MAX_TIME.optional(max_time)
    if max_time is not None and not (bundle or measure):
        # it is written into the bundle's bench commands or given to the bench here: with neither it was
        # dropped without a word, and the user believed the sampling was capped
        done = (
            worded(lambda o: f"{o('measured', '--measured')} reads results sampled on the GPU host already")
            if measured
            else "no GPU step is asked"
        )
        raise KtriageError(
            worded(
                lambda o: (
                    f"{o('max_time', '--max-time', max_time)} sets the sampling of the GPU re-run "
                    f"({spelled(gpu_rerun, o)}); {spelled(done, o)}, so it would change nothing"
                )
            ),
            worded(
                lambda o: (
                    f"drop {o('max_time', '--max-time')}; or {spelled(add_rerun, o)} (the GPU re-run then "
                    "samples each input at most that long)"
                )
            ),
        )
    options = TriageOptions(
        old_toolchain=old_toolchain,
        new_toolchain=new_toolchain,
        threshold=threshold,
        arch=arch,  # 90, 9.0, cuda:90 as the command line takes them (args.arch)
        op=op,
        mode=mode,
        bisect=bisect,
        fixes=fixes,
        jobs=jobs,
        bundle=str(bundle) if bundle else None,
        measure=measure,
        measured=[str(m) for m in measured],
        limit=limit,
        max_time_s=TriageOptions.max_time_s if max_time is None else max_time,
        db=db,
        workloads=[str(w) for w in workloads],
        model=model,
        sm_count=sm_count,
    )
    # each side loaded once (a file named by its file name, a run by its id), then given to triage as it is
    sides = [_loaded(ref, db, op, mode) for ref in (old, new)]
    same = _same_file(old, new)
    # a bf16 run against an fp16 one: the dtype's difference (refused, unless asked for on purpose)
    warning = check_precision(sides[0], sides[1], allow=allow_precision_mismatch)
    # a TritonBench backend with no latency, left out of the triage (read before a split replaces the sides)
    warned = [w for w in (warning, *file_warnings(*sides)) if w]
    shown = str(old) if not isinstance(old, LoadedSide) else old.label
    timed = {c.key.toolchain for c in sides[0].cells if c.key.toolchain}
    split = same and len(timed) >= 2
    if not split:  # a run of one toolchain given twice: every cell "same", and triage said "no regression"
        check_not_one_run(
            sides[0],
            sides[1],
            (shown, new if not isinstance(new, LoadedSide) else new.label),
            f"give the two runs to triage; one run is split into its toolchains only when it timed two or more "
            f"side by side (this one timed {len(timed)})"
            if len(timed) < 2
            else f"give its file as both OLD and NEW to triage its {len(timed)} toolchains side by side",
        )
    if split:
        from ktriage.triage.program import split_toolchains  # one run that timed both toolchains side by side

        halves = split_toolchains(sides[0].run, sides[0].cells, old_toolchain, new_toolchain)
        sides = [LoadedSide(h.run, h.cells, f"{sides[0].label} ({h.label})") for h in halves]
        options.old_toolchain, options.new_toolchain = (
            old_toolchain or halves[0].label,
            new_toolchain or halves[1].label,
        )
    report = run_triage(sides[0], sides[1], options, say=say)
    report.notes[:0] = [f"WARNING: {w}" for w in warned]  # first: every verdict below is read through them
    if split and not options.measured and not options.measure:
        from ktriage.triage.program import settle_side_by_side  # the two sides are one run's interleaved samples

        settle_side_by_side(report, sides[0].cells, sides[1].cells, shown)
    return TriageReport.of_triage(report)


def _loaded(ref: str | Path | LoadedSide, db: str | None, op: str | None, mode: str | None) -> LoadedSide:
    """``ref`` loaded and named by its file name (a run by its id), or as given when it already is a side."""
    if isinstance(ref, LoadedSide):
        return ref
    if not isinstance(ref, (str, Path)):
        raise KtriageError(
            f"a triage side is a results file, a TritonBench file, a run id or a loaded side, not a {type(ref).__name__}",
            "pass a path or run id, or ktriage.compare.sides.load_side(path) for a side already in memory",
        )
    s = load_side(str(ref), db, op=op, mode=mode)
    return LoadedSide(s.run, s.cells, s.path.name if s.path else s.label, s.path)


def _same_file(old: str | Path | LoadedSide, new: str | Path | LoadedSide) -> bool:
    """One run given twice (it timed both toolchains side by side): the same text or the same file."""
    if isinstance(old, LoadedSide) or isinstance(new, LoadedSide):
        return old is new
    return str(old) == str(new) or (
        Path(old).exists() and Path(new).exists() and Path(old).resolve() == Path(new).resolve()
    )
