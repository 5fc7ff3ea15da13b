"""``ktriage.api.profile(bundle=..., input_id=..., ...) -> ProfiledBundle``: Nsight Compute counters of
each toolchain's kernels of one bundle input (GPU host), diffed against the reference toolchain, and
with ``results`` attached to that results file and the store's copy of its run (docs/profile.md).

Why an entry point: ``ktriage profile`` loaded the bundle, chose the input and the raw folder, ran
ncu and attached the counters itself, so a GPU job script had only the command line to call. Every
usage error (an unknown backend or input, no such ncu, a folder that cannot be written, a bad
results file) is refused before ncu runs.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ktriage.api._args import db as args_db
from ktriage.api._args import entry_point
from ktriage.api.paths import check_writable
from ktriage.brief import brief
from ktriage.errors import KtriageError, option, spelled, worded
from ktriage.mdsafe import markdown_writer

if TYPE_CHECKING:
    from ktriage.profile.diff import ProfileReport

__all__ = ["ProfiledBundle", "profile", "profile_attach"]


@dataclass(frozen=True)
class ProfiledBundle:
    """The profile document of one bundle input (``doc``), the folder ncu's raw files went to, and,
    when counters were attached to a results file, the notes of that and the store's answer."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    doc: ProfileReport
    folder: Path
    attach_notes: list[str] = field(default_factory=list)
    stored: str | None = None  # the store's answer when attached (None: no results file given)

    @property
    def complete(self) -> bool:
        """False when no toolchain's counters were collected (then nothing is written or attached)."""
        return any(info.get("launches") for info in (self.doc.get("toolchains") or {}).values())

    @property
    def notes(self) -> list[str]:
        return [str(note) for note in self.doc.get("notes") or ["ncu gave no launch of the profiled kernels"]]

    def json_text(self) -> str:
        import json

        return json.dumps(self.doc, indent=1)

    @markdown_writer
    def to_markdown(self) -> str:
        from ktriage.profile.diff import to_markdown

        return to_markdown(self.doc)


@entry_point
def profile(
    *,
    bundle: str | Path,
    input_id: int | None = None,
    input: str | None = None,
    backend: str | None = None,
    raw_dir: str | Path | None = None,
    ncu: str | None = None,
    warmup: int = 3,
    results: str | Path | None = None,
    db: str | None = None,
) -> ProfiledBundle:
    """Run ncu (--clock-control none) on each toolchain's kernels of one input of ``bundle``: ``input_id``,
    or ``input`` (an op bundle's id "7", shape facts "N=4608", as bench's ``--input``; a recorded
    bundle's entry number "3", or its input as ``bench --bundle -i`` names it: ``profile.run.select_input``;
    default: the bundle's first), one call after ``warmup``; with ``results``, attach the counters to
    that results file and the store (``db``). Raises KtriageError for usage errors, before ncu runs."""
    from ktriage.api._args import INPUT_ID, WARMUP, optional_text, path_or_name
    from ktriage.profile.run import default_input, input_backends, profile_bundle, select_input
    from ktriage.workload.bundles.format import load_bundle

    input_id, warmup = INPUT_ID.optional(input_id), WARMUP(warmup)
    bundle = Path(path_or_name(bundle, "bundle", "--bundle", example=".bundles/ln-bwd"))
    if results is not None:
        results = Path(path_or_name(results, "results", "--results", example="results.json"))
    if raw_dir is not None:
        raw_dir = Path(path_or_name(raw_dir, "raw_dir", "--raw-dir", example="ncu-raw"))
    # one-string arguments: ncu=[...] was a TypeError from the path lookup, backend=[...] "no such backend"
    input = optional_text(input, "input", "--input", example="7")
    backend = optional_text(backend, "backend", "--backend", example="liger_layer_norm")
    ncu = optional_text(ncu, "ncu", "--ncu", example="/usr/local/cuda/bin/ncu")
    db = args_db(db)
    if input is not None and input_id is not None:
        raise KtriageError(
            worded(
                lambda o: (
                    f"both {o('input', '--input', input)} and {o('input_id', '--input-id', input_id)} name the "
                    "input to profile"
                )
            ),
            worded(
                lambda o: f"give one of them ({o('input', '--input')} takes an id too: {o('input', '--input', '7')})"
            ),
        )
    results_option, raw_option = option("results", "--results"), option("raw_dir", "--raw-dir")
    if db is not None and results is None:
        raise KtriageError(
            worded(
                lambda o: (
                    f"{o('db', '--db')} is the store where the run of {spelled(results_option, o)} is updated, and no "
                    f"{spelled(results_option, o)} was given"
                )
            ),
            worded(
                lambda o: (
                    f"add {o('results', '--results', 'R.json')} (the bundle's timing), or leave {o('db', '--db')} out"
                )
            ),
        )
    if raw_dir is not None:
        check_writable(raw_dir, raw_option, folder=True)
    if ncu is not None and shutil.which(ncu) is None:
        raise KtriageError(
            worded(lambda o: f"{o('ncu', '--ncu', ncu)}: no such program (or not executable)"),
            "give the path of Nsight Compute's ncu, e.g. /usr/local/cuda/bin/ncu, or put ncu on PATH",
        )
    loaded = load_bundle(bundle)
    if results is not None:  # a bad results file is refused before ncu runs, not after
        from ktriage.measure.results_file import read_results

        read_results(results)
    if input is not None:
        input_id = select_input(loaded, input)
    case_id = input_id if input_id is not None else default_input(loaded)
    names = input_backends(loaded, case_id)  # an unknown input_id is refused here
    if backend is not None and backend not in names:
        raise KtriageError(
            worded(
                lambda o: (
                    f"{o('backend', '--backend', backend)}: input {case_id} of bundle {bundle} has no such backend"
                )
            ),
            f"give one of: {', '.join(names)}",
        )
    folder = raw_dir or Path(loaded.path) / f"profile-input{case_id}"
    if raw_dir is None:
        check_writable(folder, worded(lambda o: f"the raw folder ({spelled(raw_option, o)})"), folder=True)
    doc = profile_bundle(bundle, input_id=case_id, backend=backend, out_dir=folder, ncu=ncu, warmup=warmup)
    return ProfiledBundle(doc=doc, folder=folder)


def profile_attach(report: ProfiledBundle, results: str | Path, db: str | None = None) -> ProfiledBundle:
    """Write ``report``'s counters into the results file ``results`` (each toolchain's cell) and the
    store's copy of its run; the notes and the store's answer come back on a copy of the report."""
    from dataclasses import replace

    from ktriage.api._args import path_or_name
    from ktriage.profile.attach import attach_to_results_file, attach_to_store

    if not isinstance(report, ProfiledBundle):  # a str or a dict failed with "has no attribute 'doc'"
        raise KtriageError(
            f"report is a {type(report).__name__}, not a ProfiledBundle: it is the profile to attach",
            "pass what ktriage.api.profile(...) returned",
        )
    results = Path(path_or_name(results, "results", "--results", example="results.json"))
    db = args_db(db)
    run, cells, notes = attach_to_results_file(results, [report.doc], raw_dirs=[str(report.folder)])
    return replace(report, attach_notes=list(notes), stored=attach_to_store(db, run, cells))
