"""One way to write a percentage in every human-readable output: ``+3.4%``, no space, as compare, triage's
tables, history, the counters and every gate (``gate_percent``) write it.

Why: explain's predictions, the model line, triage's notes and the gate errors wrote ``+3.4 %`` while the rest
wrote ``+3.4%``, so one line could read "change predicted neutral (+0.2 % [-3 %, +3 %]; within the +-5% gate)"
and a report header "Model: the shipped model (predicted intervals +-3.4 %)" above "gate +-5%". The real
formatters of each output, on plain numbers."""

from __future__ import annotations

import re

import pytest

from ktriage.api import check_percent_gate
from ktriage.errors import KtriageError
from ktriage.predict.model import Contributor, interval_text, pct, pct_bound
from ktriage.predict.model_used import model_used
from ktriage.report.triage_run import _pct as triage_run_pct
from ktriage.stats.gate import check_gate, gate_percent
from ktriage.wording import fmt_pct

SPACED = re.compile(r"\d %")


def _refusal(call: object, *args: object, **kwargs: object) -> str:
    with pytest.raises(KtriageError) as err:
        call(*args, **kwargs)  # type: ignore[operator]
    return str(err.value) + " " + str(err.value.fix or "")


def test_every_formatter_writes_a_percentage_without_a_space() -> None:
    shipped = model_used()
    said = {
        "pct": pct(1.38),
        "pct small": pct(0.996),
        "pct nothing": pct(0.9999),
        "pct_bound": pct_bound(0.954, upper=False),
        "interval": interval_text(0.893, 0.953),
        "contributor": Contributor("spills", 0.3, "830 more LDL/STL in the main loop").text(),
        "model width": shipped.width_text(),
        "model line": shipped.line(coverage=True),
        "compare change": fmt_pct(1.034),
        "triage run": triage_run_pct(1.034),
        "gate": gate_percent(0.025),
        "gate refusal (fraction)": _refusal(check_gate, 5.0),
        "gate refusal (percent)": _refusal(check_gate, 0.0005, percent=True),
        "gate refusal (percent, too big)": _refusal(check_gate, 1.5, percent=True),
        "triage gate refusal": _refusal(check_percent_gate, 0.05),
    }
    assert said["pct"] == "+38%" and said["pct small"] == "-0.4%" and said["pct nothing"] == "+0.0%"
    assert said["interval"] == "[-11%, -4.7%]" and said["compare change"] == said["triage run"] == "+3.4%"
    assert said["contributor"] == "830 more LDL/STL in the main loop, +30% on its own"
    assert re.fullmatch(r"±\d+\.\d%", said["model width"]), said["model width"]
    assert [k for k, v in said.items() if SPACED.search(v)] == [], said


def test_every_band_is_spelled_plus_minus_as_triage_spells_its_gate() -> None:
    """The gate read "+-10% gate" in explain's, bisect's and triage's predicted notes and the model line
    "+-3.4%", while triage's setup line said "gate ±10%": one triage report held both spellings of one gate.
    Every band a report names, from the real formatters of each surface, is now "±"."""
    from ktriage.bisect.run import neutral_culprit_note
    from ktriage.explain.predicted import gate_line, prediction_text
    from ktriage.predict.model import Prediction, lean_text
    from ktriage.report.tune import ties_legend
    from ktriage.stats.verdict import compare_samples

    inside = Prediction(1.002, 0.97, 1.035, "neutral", False, 0.1)
    ref = [1.0 + 0.004 * ((i * 7) % 30) for i in range(30)]
    straddles = compare_samples(ref, [1.04 * (1.0 + 0.004 * ((i * 11) % 30)) for i in range(30)])
    assert straddles.unsure_cause == "straddles_gate", straddles.reason
    said = {
        "explain gate line": gate_line(0.1, model_used()),
        "explain bullet": prediction_text([inside]),
        "lean": lean_text("regression", 0.1),
        "bisect note": neutral_culprit_note([inside]) or "",
        "model line": model_used().line(coverage=True),
        "tune legend": ties_legend(),
        "compare verdict": straddles.reason,
    }
    assert [k for k, v in said.items() if "+-" in v or "±" not in v] == [], said
    assert "±10%" in said["explain gate line"] and "within the ±10% gate" in said["explain bullet"]
    assert "±3.4%" in said["model line"] and "±3.4%" in said["tune legend"]


def test_a_contributor_share_is_written_as_the_prediction_is() -> None:
    """A contributor's share was rounded to whole percent while the prediction above it keeps a decimal
    under one percent: "predicted -0.6% ...: ..., -1% on its own", an aspect that alone moved the kernel
    more than the whole prediction. The share now follows ``pct``'s rule (text only: the share is the same)."""
    from ktriage.predict.model import Prediction

    small = Contributor("global", -0.006, "2 more LDG/STG in the main loop (global memory)")
    assert small.text() == "2 more LDG/STG in the main loop (global memory), -0.6% on its own"
    assert small.to_json()["share"] == -0.006  # the number is untouched
    assert Contributor("spills", 0.0004, "1 more LDL").text() == "1 more LDL, +0.0% on its own"
    assert Contributor("spills", 0.3, "x").text() == f"x, {pct(1.3)} on its own" == "x, +30% on its own"
    prediction = Prediction(0.994, 0.97, 1.02, "neutral", False, 0.05, contributors=(small,))
    said = prediction.text()
    assert "-0.6%" in said and "-0.6% on its own" in said and "-1%" not in said, said
