"""Time the kept candidates of ``ktriage tune`` on a GPU: write one tune bundle for all inputs, run
``ktriage bench`` on it in a child process when a GPU is visible (``sys.executable -m ktriage``, not
whatever ``python`` is on PATH), and pick each input's winner from the results file. Without a GPU
(or with ``--results`` from a run elsewhere) it says how to time the bundle on the GPU machine.

The verb (``ktriage.api.tune``) calls :func:`time_candidates`, ``ktriage tune`` prints its notes; nothing here
prints or exits."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ktriage.errors import KtriageError, Worded, in_flags, joined, option, worded
from ktriage.schema.jsontypes import JSONObject
from ktriage.wording import plural

if TYPE_CHECKING:
    from ktriage.toolchain.manager import Toolchain
    from ktriage.tune.gpu import PartsRemoved, Timed, TuneBundle
    from ktriage.tune.screen import ScreenResult


@dataclass
class TimingRun:
    """One timing dict per input (``timed``, the bundle and bench command, the winner when timed), the
    notes for the user (``(level, text)`` with level ``warn`` or ``info``: what to run next, the command
    that times the bundle; a note that names an option is a :class:`~ktriage.errors.Worded`:
    ``report.notes`` names the keyword, ``ktriage tune`` prints the flag) and the ``warnings`` of reading
    the results (times read by rank, timed configs that are no candidate): those qualify the GPU winner, so
    every rendering of the report carries them after it, where the notes are the console's only."""

    timings: list[JSONObject]
    notes: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def time_candidates(
    results: Sequence[ScreenResult],
    compiler: Any,
    *,
    bundle: Path | None,
    budget: float,
    results_file: Path | None,
    sm_count: int | None,
    others: Sequence[Toolchain] = (),
    workload: Path | None = None,
) -> TimingRun:
    """Write the bundle (one for all inputs); time it here when a GPU is visible, else say how to
    time it on one."""
    from ktriage.home import home_subdir
    from ktriage.measure.results_file import read_results
    from ktriage.tune.gpu import gpu_available, pick_winner, remove_unused_parts, write_tune_bundles
    from ktriage.tune.results_match import recorded_configs

    if budget <= 0:
        raise KtriageError(
            worded(lambda o: f"{o('budget', '--budget', budget)} leaves no GPU time"),
            worded(
                lambda o: (
                    f"give GPU seconds, e.g. {o('budget', '--budget', 10)}, or use "
                    f"{o('compile_only', '--compile-only', True)}"
                )
            ),
        )
    first = results[0].space.spec
    out = bundle or home_subdir("bundles") / (
        f"tune-{first.key()}" if len(results) == 1 else f"tune-{first.key()}-{len(results)}-inputs"
    )
    try:
        tbs = write_tune_bundles(
            results, Path(out), compiler, sm_count=sm_count, compare_with=others, workload=workload
        )
    except KtriageError as exc:
        said, flags = (f" ({exc.fix})", f" ({in_flags(exc.fix)})") if exc.fix else ("", "")  # a fix may name options
        note = Worded(f"not timed: {exc.problem}{said}", f"not timed: {exc.problem}{flags}")
        return TimingRun([{"timed": False, "why": exc.problem} for _ in results], [("warn", note)])
    cleared = _parts_notes(Path(out), remove_unused_parts(Path(out), tbs))
    results_path = results_file or Path(out) / "tune-results.json"
    command = tbs[0].bench_command(budget * len(tbs), results_path)
    infos: list[JSONObject] = [{"bundle": tb.to_json(), "command": " ".join(command), "timed": False} for tb in tbs]
    if results_file is None and gpu_available():
        proc = subprocess.run([sys.executable, "-m", "ktriage", *command[1:]], check=False)
        if proc.returncode != 0:
            raise KtriageError(
                f"the GPU timing run failed (exit {proc.returncode})", f"run it by hand: {' '.join(command)}"
            )
    if results_file is not None and not results_file.is_file():
        raise KtriageError(
            worded(lambda o: f"{o('results_file', '--results')} {results_file} does not exist"),
            f"time the kept candidates on the GPU machine first (it writes that file): {' '.join(command)}",
        )
    if not results_path.exists():
        return TimingRun(
            infos,
            [
                *cleared,
                ("warn", "no GPU here: the kept candidates are in a bench bundle; time them on the GPU machine with"),
                ("info", f"  {' '.join(command)}"),
                (
                    "info",
                    worded(
                        lambda o: (
                            f"then report the winner here with: {o('results_file', '--results', str(results_path))}"
                        )
                    ),
                ),
            ],
        )
    run, cells = read_results(results_path)
    recorded = recorded_configs(run.toolchains)
    timed = [pick_winner(cells, tb, recorded) for tb in tbs]
    _check_results_of(tbs, timed, results_path, command)
    for info, verdict in zip(infos, timed, strict=True):
        info.update({"timed": True, **verdict.to_json()})
    return TimingRun(infos, cleared, warnings=_matching_warnings(tbs, timed, results_path, command))


def _parts_notes(out: Path, parts: PartsRemoved) -> list[tuple[str, str]]:
    """What ``remove_unused_parts`` did, said: how many part folders of earlier runs it removed (they would
    have travelled with the bundle), and each one it could not remove, with why."""
    from ktriage.tune.gpu import PARTS

    notes: list[tuple[str, str]] = []
    if parts.removed:
        names = ", ".join(p.name for p in parts.removed)
        notes.append(
            (
                "info",
                f"removed {plural(len(parts.removed), 'part folder')} of inputs this run does not tune from "
                f"{out / PARTS} ({names}), so {'it does' if len(parts.removed) == 1 else 'they do'} not travel "
                "with the bundle",
            )
        )
    for folder, why in parts.failed:
        notes.append(
            (
                "warn",
                f"not removed: {folder}, a part folder of an input this run does not tune ({why}); it travels with "
                "the bundle: remove it before copying the bundle to the GPU host",
            )
        )
    return notes


def _check_results_of(tbs: Sequence[TuneBundle], timed: Sequence[Timed], path: Path, command: Sequence[str]) -> None:
    """Refuse a results file that holds none of the bundle's candidate configs: a bench of the same toolchain
    alone (another run, another bundle) also has the library's config, and would read as "default wins, 1.00x";
    so would a bench of this bundle whose variants are all configs this tune no longer keeps (named)."""
    from ktriage.tune.results_match import DEFAULT_VARIANT

    for tb, verdict in zip(tbs, timed, strict=True):
        candidates = {label for label in tb.variants.values() if label != DEFAULT_VARIANT}
        if candidates and not candidates & {*verdict.medians_ms, *verdict.failed}:
            others = sorted(verdict.not_candidates_ms)
            raise KtriageError(
                joined(
                    option("results_file", "--results"),
                    f" {path} holds none of the {plural(len(candidates), 'candidate config')} of this tune's bundle ({tb.backend}, input {tb.input_id}): ",
                )
                + (
                    f"it timed {', '.join(others)}, which this screening does not keep"
                    if others
                    else "it is the timing of another run"
                ),
                f"time this bundle and pass what it writes: {' '.join(command)}",
            )


def _matching_warnings(
    tbs: Sequence[TuneBundle], timed: Sequence[Timed], path: Path, command: Sequence[str]
) -> list[str]:
    """What the user must know of how the results were matched to the configs: times read by rank (the
    results record no config, so a re-ranking since the bench reads them against other configs), and
    timed configs that are no candidate of this tune (named, compared with nothing)."""
    warnings: list[str] = []
    by_rank = sorted({label for verdict in timed for label in verdict.by_rank})
    if by_rank:
        warnings.append(
            f"read by rank: {path} records no config for its tuned variants, so their times are attached to "
            f"this screening's {plural(len(by_rank), 'candidate')} of the same rank ({', '.join(by_rank)}); if the "
            "ranking changed since the bundle was built (another ktriage, --warps, --top-k), each time belongs "
            f"to another config. Bench the bundle again to match them by config: {' '.join(command)}"
        )
    for tb, verdict in zip(tbs, timed, strict=True):
        if verdict.not_candidates_ms:
            named = ", ".join(
                f"{label} ({'failed' if ms is None else f'{ms:.4f} ms'})"
                for label, ms in sorted(verdict.not_candidates_ms.items())
            )
            warnings.append(
                f"not a candidate: {path} times {named} for input {tb.input_id}, which this screening does not "
                "keep: left out of the comparison. To compare them, tune with a space and --top-k that keep "
                f"them, or bench this bundle again: {' '.join(command)}"
            )
    return warnings
