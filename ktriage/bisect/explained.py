"""Culprit vs predecessor, kernel by kernel: what a found bisect explains (``BisectReport.explain``).

Two ways to get there, one shape: compiled with both toolchains (``ktriage.explain``'s comparison,
with the frontend-vs-ptxas attribution and the cost model's prediction), or read from a bundle's
recorded resources on a GPU host that cannot compile (no PTX: no attribution, no prediction). The
renderers (``ktriage.report.bisect``) read the fields; :meth:`CulpritKernel.to_json` is the one
encoder of the JSON report's ``explain`` entries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from ktriage.bisect.source_change import KERNEL_SOURCE, SourceChange
from ktriage.schema.jsontypes import JSONObject

if TYPE_CHECKING:
    from ktriage.explain.engine import Change
    from ktriage.predict.model import Prediction

# the resources shown for both sides of every explained kernel, in table order
EXPLAIN_METRICS = ("registers", "spill_store_bytes", "spill_load_bytes", "stack_bytes", "ctas_per_sm")

Metrics = dict[str, float | None]  # metric -> value (None: the bundle did not record it)


@dataclass(frozen=True)
class MetricMove:
    """A resource that moved between predecessor and culprit, as a bundle recorded them."""

    metric: str
    before: float | None
    after: float | None
    sentence: str

    def to_json(self) -> JSONObject:
        return {"metric": self.metric, "before": self.before, "after": self.after, "sentence": self.sentence}


@dataclass(frozen=True)
class OpcodeMove:
    """A SASS opcode count that moved between predecessor and culprit (from a bundle's resources)."""

    opcode: str
    delta: int

    def to_json(self) -> JSONObject:
        return {"opcode": self.opcode, "delta": self.delta}


@dataclass
class CulpritKernel:
    """One kernel, predecessor vs culprit. ``how``: ``compiled`` (both toolchains compiled here:
    ``changes`` and ``opcode_changes`` are the explain engine's, with a prediction) or ``bundle``
    (a bundle's recorded resources: no PTX, so no prediction and the attribution says what to run).

    ``source_change``: what the kernel's own files changed (:mod:`ktriage.bisect.source_change`). Where
    the same toolchain compiled both sides the attribution is ``kernel_source``, and so is each change's:
    the engine's "frontend" (the PTX changed) and its sentences naming one toolchain as both sides
    ("triton==3.4.0's PTX gives 255 even with ptxas 12.8.93") blamed a compiler that did not change."""

    how: Literal["compiled", "bundle"]
    kernel: str
    predecessor: Metrics
    culprit: Metrics
    attribution: str
    changes: list[Change] | list[MetricMove]
    opcode_changes: list[Change] | list[OpcodeMove]
    opcode_delta: str  # "REDG -32, ATOMG +32"
    artifacts: dict[str, str]  # the two sides' PTX (compiled) or cubins (bundle)
    cross_errors: list[str] = field(default_factory=list)
    prediction: Prediction | None = None
    source_change: SourceChange | None = None

    @property
    def from_source(self) -> bool:
        """The change is the kernel's own: the same toolchain compiled both sides."""
        return self.attribution == KERNEL_SOURCE

    @property
    def sentences(self) -> list[str]:
        """The explain's sentences: what the kernel's source changed first (where it did), then each change."""
        lead = [self.source_change.sentence()] if self.source_change is not None else []
        if self.from_source:
            return lead + [_moved(c.to_json()) for c in self.changes]
        return lead + [c.sentence for c in self.changes]

    def _change_json(self, change: Change | MetricMove | OpcodeMove) -> JSONObject:
        out = change.to_json()
        if self.from_source and "attribution" in out:
            out["attribution"] = KERNEL_SOURCE
            out["sentence"] = _moved(out)
        return out

    def to_json(self) -> JSONObject:
        out: JSONObject = {
            "kernel": self.kernel,
            "predecessor": self.predecessor,
            "culprit": self.culprit,
            "attribution": self.attribution,
            "changes": [self._change_json(c) for c in self.changes],
            "opcode_changes": [self._change_json(c) for c in self.opcode_changes],
            "opcode_delta": self.opcode_delta,
            "cross_errors": self.cross_errors,
            "artifacts": self.artifacts,
            "source_change": self.source_change.to_json() if self.source_change is not None else None,
        }
        if self.how == "compiled":  # a bundle's explain has no cost model (no compile): no key
            out["prediction"] = self.prediction.to_json() if self.prediction else None
        return out


def _moved(change: JSONObject) -> str:
    """``registers 86 -> 255 (from the kernel's source)``: a compiled change's sentence where the same
    toolchain compiled both sides (the engine's names one toolchain as both)."""

    def num(v: object) -> str:
        return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)

    return f"{change.get('metric')} {num(change.get('ref'))} -> {num(change.get('new'))} (from the kernel's source)"
