"""``ktriage.api.score_model(...) -> ModelScoreReport``: the cost model as it is (the shipped fit, or a
``model`` file), not refitted, against GPU measurements: each cell's prediction next to what the GPU
measured, and the confusion matrix (``ktriage calibrate --score-only``; docs/model.md).

Why an entry point apart from ``calibrate``: a team that benched its kernels asks first whether the
model it runs agrees with its GPU, before refitting anything; and a refit returns a model, this a
verdict on one. Both read their cells the same way (``_calibrate.gather_cells``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ktriage.api import _args as args
from ktriage.api._calibrate import gather_cells
from ktriage.api.paths import check_replaceable, check_writable
from ktriage.atomic import write_atomic
from ktriage.brief import brief
from ktriage.errors import KtriageError, option, spelled, worded
from ktriage.mdsafe import markdown_writer
from ktriage.predict.model import DEFAULT_THRESHOLD
from ktriage.stats.gate import check_gate

if TYPE_CHECKING:
    from rich.console import Console

    from ktriage.predict.dataset import CalibrationCell, Skipped
    from ktriage.predict.model_used import ModelUsed
    from ktriage.predict.scoring import Scoring

Say = Callable[[str], None]
__all__ = ["ModelScoreReport", "score_model"]


@dataclass(frozen=True)
class ModelScoreReport:
    """The cells scored, the model that predicted them (``model``: which file, its interval), each cell's
    prediction with its GPU verdict and the matrix (``scoring``), and every measured pair that made no
    cell (``skipped``)."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    cells: list[CalibrationCell]
    model: ModelUsed
    scoring: Scoring
    skipped: list[Skipped] = field(default_factory=list)

    def _counts(self) -> tuple[int, int]:
        scored = [r.cell for r in self.scoring.results]
        return len(scored), len({c.operator for c in scored})

    def summary_text(self) -> str:
        """What the command prints: the matrix, recall by size and the largest disagreements."""
        from ktriage.report.model_score import to_text

        return to_text(self.scoring, self.model, *self._counts())

    def print_table(self, console: Console) -> None:
        console.print(self.summary_text(), end="", markup=False, highlight=False)

    @markdown_writer
    def to_markdown(self) -> str:
        """The matrix, every disagreement and every cell, as markdown."""
        from ktriage.report.model_score import to_markdown

        return to_markdown(self.scoring, self.model, *self._counts())

    def json_text(self) -> str:
        """Every cell's measured and predicted ratio, verdict and kind, the model and the scores."""
        from ktriage.report.model_score import to_json

        return to_json(self.scoring, self.model)


@args.entry_point
def score_model(
    *,
    from_cells: Path | Sequence[str | Path] = (),
    results: Path | Sequence[str | Path] = (),
    runs: Sequence[str] = (),
    explain: Path | Sequence[str | Path] = (),
    operators: Sequence[str] = (),
    backends: Sequence[str] = (),
    db: str | None = None,
    cells_out: str | Path | None = None,
    scores_out: str | Path | None = None,
    model: str | Path | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    say: Say | None = None,
) -> ModelScoreReport:
    """Predict each measured cell with the cost model ``model`` (a file of ``ktriage calibrate -o``; None:
    ``$KTRIAGE_MODEL``, else the shipped fit) as ``ktriage explain`` predicts it, at the gate ``threshold``,
    and set the prediction next to the GPU's verdict. The cells are those ``calibrate`` takes: the datasets
    ``from_cells`` plus each of ``results`` (results files) and ``runs`` (run ids in the store ``db``),
    paired in order with one ``explain`` JSON report each (``operators``, ``backends``, ``cells_out``,
    ``say``: as for ``calibrate``). ``scores_out``: also write the report there, JSON for ``.json``, markdown
    for ``.md`` (checked before any cell is read; a results file, a report or a dataset it reads is never
    replaced). Nothing is refitted: if the model was fitted on these cells, the scores are in sample
    (the report names what the model was fitted on).

    Raises :class:`~ktriage.errors.KtriageError` (naming the fix) for unpaired sources and reports, a
    model file that is not one, and :class:`~ktriage.errors.FormatError` for a file that is not what it
    should be."""
    from ktriage.predict.model import load_params
    from ktriage.predict.model_used import model_used
    from ktriage.predict.scoring import score

    path = args.model(model)  # a file that is no model is refused before any cell is read
    threshold = args.THRESHOLD(threshold)
    check_gate(threshold)
    out = _scores_out(scores_out)
    cells, skipped = gather_cells(
        from_cells=from_cells,
        results=results,
        runs=runs,
        explain=explain,
        operators=operators,
        backends=backends,
        db=db,
        cells_out=cells_out,
        say=say,
        purpose="score",
    )
    scoring = score(cells, load_params(path), threshold=threshold)
    report = ModelScoreReport(cells, model_used(path), scoring, skipped)
    if out is not None:
        write_atomic(out, report.json_text() if out.suffix == ".json" else report.to_markdown())
        (say or (lambda _m: None))(f"scores: {out}")
    return report


# what an earlier scores file starts with (JSON, markdown): that one is replaced, any other file refused
SCORES_MARKER = b'"tool": "ktriage calibrate --score-only"'
SCORES_TITLE = b"# The cost model against GPU measurements"


def _scores_out(value: object) -> Path | None:
    """Where ``scores_out`` writes, checked before the work: a ``.json`` or ``.md`` path in a writable folder
    that holds no other kind of file (an earlier scores file is replaced; a results file is not)."""
    if value is None:
        return None
    named = option("scores_out", "--scores-out")
    out = Path(args.path_or_name(value, "scores_out", "--scores-out", example="scores.json"))
    if out.suffix not in (".json", ".md"):
        raise KtriageError(
            worded(
                lambda o: (
                    f"{spelled(named, o)} {out}: the suffix picks the format, and {out.suffix or 'none'} is neither .json nor .md"
                )
            ),
            worded(
                lambda o: (
                    f"name a .json file (every cell's prediction) or a .md file (the tables), e.g. {o('scores_out', '--scores-out', 'scores.json')}"
                )
            ),
        )
    check_writable(out, named, example="scores.json")
    check_replaceable(out, named, SCORES_MARKER if out.suffix == ".json" else SCORES_TITLE, "a ktriage scores file")
    return out
