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

from ktriage.errors import KtriageError, option
from ktriage.schema.jsontypes import JSONObject
from ktriage.wording import plural

if TYPE_CHECKING:
    from ktriage.measure.cells import Cell
    from ktriage.toolchain.manager import Toolchain
    from ktriage.tune.gpu import TuneBundle
    from ktriage.tune.screen import ScreenResult


@dataclass
class TimingRun:
    """One timing dict per input (``timed``, the bundle and bench command, the winner when timed) and
    the notes for the user: ``(level, text)`` with level ``warn`` or ``info``."""

    timings: list[JSONObject]
    notes: list[tuple[str, str]] = field(default_factory=list)


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
    from ktriage.tune.gpu import gpu_available, pick_winner, write_tune_bundles

    if budget <= 0:
        raise KtriageError(
            f"{option('budget', '--budget', budget)} leaves no GPU time",
            f"give GPU seconds, e.g. {option('budget', '--budget', 10)}, or use "
            f"{option('compile_only', '--compile-only', True)}",
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
        note = f"not timed: {exc.problem}" + (f" ({exc.fix})" if exc.fix else "")
        return TimingRun([{"timed": False, "why": exc.problem} for _ in results], [("warn", note)])
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
            f"{option('results_file', '--results')} {results_file} does not exist",
            f"time the kept candidates on the GPU machine first (it writes that file): {' '.join(command)}",
        )
    if not results_path.exists():
        return TimingRun(
            infos,
            [
                ("warn", "no GPU here: the kept candidates are in a bench bundle; time them on the GPU machine with"),
                ("info", f"  {' '.join(command)}"),
                ("info", f"then report the winner here with: {option('results_file', '--results', str(results_path))}"),
            ],
        )
    _run, cells = read_results(results_path)
    _check_results_of(tbs, cells, results_path, command)
    for tb, info in zip(tbs, infos, strict=True):
        info.update({"timed": True, **pick_winner(cells, tb).to_json()})
    return TimingRun(infos)


def _check_results_of(tbs: Sequence[TuneBundle], cells: Sequence[Cell], path: Path, command: Sequence[str]) -> None:
    """Refuse a results file that holds none of the bundle's candidate configs: a bench of the same toolchain
    alone (another run, another bundle) also has the library's config, and would read as "default wins, 1.00x"."""
    from ktriage.tune.gpu import DEFAULT_VARIANT

    for tb in tbs:
        candidates = {tc for tc, label in tb.variants.items() if label != DEFAULT_VARIANT}
        timed = {c.key.toolchain for c in cells if c.key.backend == tb.backend and c.key.input_id == tb.input_id}
        if candidates and not candidates & timed:
            raise KtriageError(
                f"{option('results_file', '--results')} {path} holds none of the {plural(len(candidates), 'candidate config')} of this tune's bundle "
                f"({tb.backend}, input {tb.input_id}): it is the timing of another run",
                f"time this bundle and pass what it writes: {' '.join(command)}",
            )
