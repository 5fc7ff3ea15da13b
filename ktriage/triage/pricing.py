"""The SM count a triage prices its flagged cells for, and where that count came from.

Why a module: ``explain --sm-count N`` priced the cost model's waves for the GPU asked about, while
triage priced every flagged cell for the target's usual part (132 SMs on sm_90), even for results
measured on an H100 PCIe (114) or a MIG slice, and its GPU step's bundle refused such a GPU with
"rebuild the bundle with sm_count", which triage did not take. The count is chosen once here, from
``sm_count`` (``--sm-count``), else the GPU the results were measured on (a ktriage results file keeps
``run.gpu.sm_count``), else the target's usual part; the explain step, the bundle and the report
read it from :class:`Pricing`. A recorded workload's kernels keep their recording GPU's count unless
``sm_count`` is given (``spec.sms.price_for``), as in ``ktriage explain W.json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from ktriage.errors import spelled, worded
from ktriage.measure.cells import RunInfo
from ktriage.schema.jsontypes import JSONObject
from ktriage.spec.model import KernelSpec
from ktriage.spec.sms import given_sm_count, priced_sm_count, pricing_text

Source = Literal["given", "results", "default"]


@dataclass
class Pricing:
    """``sm_count``: the SMs the catalog cells are priced and bundled for; ``source``: ``given``
    (``sm_count``), ``results`` (the GPU the results were measured on) or ``default`` (the target's
    usual part); ``results``: each side's recorded count (None: its file does not say it);
    ``priced``: the counts the explained kernels were priced for (recorded kernels keep their own)."""

    sm_count: int
    source: Source
    results: dict[str, int | None] = field(default_factory=dict)  # "old"/"new" -> the side's GPU SMs
    priced: list[int] = field(default_factory=list)
    text: str = ""  # the report's words (:meth:`explained`)

    @property
    def override(self) -> int | None:
        """The count the cells are priced for when it is not the target's usual part (None: that part)."""
        return None if self.source == "default" else self.sm_count

    def explained(self, specs: Sequence[KernelSpec], arch: str) -> None:
        """Fill :attr:`priced` and :attr:`text` from the kernels the explain step priced (none: the count chosen)."""
        self.priced = sorted({priced_sm_count(s.target, s.meta) for s in specs}) or [self.sm_count]
        numbers = pricing_text(list(specs)) or f"priced for {self.sm_count} SMs"
        recorded = sorted({n for n in self.results.values() if n is not None})
        on = "/".join(map(str, recorded))
        why: str
        if self.source == "given":
            why = worded(
                lambda o: (
                    f"as given by {o('sm_count', '--sm-count', self.sm_count)}"
                    + (f"; the results were recorded on {on}" if recorded and recorded != [self.sm_count] else "")
                )
            )
        elif self.source == "results":
            why = (
                f"the GPU the results were recorded on ({on})"
                if len(recorded) == 1
                else f"the new side's GPU (the old side was recorded on {self.results['old']})"
            )
        else:
            why = worded(
                lambda o: (
                    f"{arch}'s usual part, as the results do not say their GPU's SM count; "
                    f"{o('sm_count', '--sm-count')} prices for another"
                )
            )
        self.text = worded(lambda o: f"{numbers}, {spelled(why, o)}")

    def to_json(self) -> JSONObject:
        return {
            "sm_count": self.sm_count,
            "source": self.source,
            "results": dict(self.results),
            "priced": list(self.priced),
            "text": self.text,
        }


def choose(sm_count: int | None, arch: str, old: RunInfo, new: RunInfo) -> Pricing:
    """The count a triage prices for: ``sm_count`` when given, else the results' GPU (the new side's
    when the two sides ran on GPUs of different counts), else ``arch``'s usual part."""
    results = {"old": given_sm_count(old.gpu), "new": given_sm_count(new.gpu)}
    if sm_count is not None:
        return Pricing(sm_count, "given", results)
    measured = results["new"] or results["old"]
    if measured is not None:
        return Pricing(measured, "results", results)
    return Pricing(priced_sm_count(arch, {}), "default", results)
