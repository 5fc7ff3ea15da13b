"""``model_used(path) -> ModelUsed``: which cost model made a report's predictions, and what its
intervals mean, said in every report of explain and triage (JSON ``model``, the markdown's and the
terminal's header lines).

Why: ``--model FILE`` and ``$KTRIAGE_MODEL`` swap the fitted parameters, and with them every predicted
ratio and interval; a report that did not say which model it used could not be checked or reproduced,
and "+63 % [+57 %, +68 %]" meant nothing without the coverage its interval was fitted for (``cv.level``:
the share of held-out measurements inside the interval, 80 % for the shipped fit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from ktriage.predict.model import load_params, model_path
from ktriage.schema.jsontypes import JSONObject
from ktriage.wording import plus_minus

SHIPPED = "the shipped model"


@dataclass(frozen=True)
class ModelUsed:
    """The model file (None: the fit shipped with ktriage), its interval's log half-width at a tiny
    effect and growth with the effect (``interval_a``/``interval_b``), and the share of measurements its
    intervals cover (``level``; None: the file does not say), held out by operator or not."""

    path: str | None
    interval_a: float
    interval_b: float
    level: float | None
    held_out: bool

    @property
    def label(self) -> str:
        return self.path or SHIPPED

    def coverage_text(self) -> str:
        """``predicted intervals cover 80% of held-out measurements``, or what the file leaves unsaid."""
        if self.level is None:
            return "the model file records no interval coverage (cv.level; `ktriage calibrate -o FILE` writes it)"
        which = "held-out measurements" if self.held_out else "the fit's own measurements (none held out)"
        return f"predicted intervals cover {self.level * 100:g}% of {which}"

    def width_text(self) -> str:
        """``±3.4%``: the interval's half-width (at a tiny effect, when it grows with the effect)."""
        half = plus_minus(f"{math.expm1(self.interval_a) * 100:.1f}%")
        return half if self.interval_b == 0 else f"{half} at a tiny effect, wider with it"

    def line(self, coverage: bool = False) -> str:
        """``Model: the shipped model (predicted intervals ±3.4%)``: every report's header line; with
        ``coverage`` (a report whose gate line does not say it: triage's) ``...; predicted intervals cover
        80% of held-out measurements``."""
        return f"Model: {self.label} (predicted intervals {self.width_text()})" + (
            f"; {self.coverage_text()}" if coverage else ""
        )

    def to_json(self) -> JSONObject:
        return {
            "path": self.path,
            "shipped": self.path is None,
            "interval_a": self.interval_a,
            "interval_b": self.interval_b,
            "interval_level": self.level,
            "interval_held_out": self.held_out,
        }


def model_used(path: str | Path | None = None) -> ModelUsed:
    """The model ``load_params(path)`` loads (``path``, else ``$KTRIAGE_MODEL``, else the shipped fit),
    described. Raises FormatError as ``load_params`` does for a file that is no model."""
    params = load_params(path)
    given = model_path(path)
    level = params.cv.get("level")
    return ModelUsed(
        path=str(given) if given is not None else None,
        interval_a=params.interval_a,
        interval_b=params.interval_b,
        level=float(level) if isinstance(level, int | float) and not isinstance(level, bool) else None,
        held_out=params.cv.get("held_out") is not False,
    )
