"""Every explain report says the gate its findings were sorted by (``--threshold``): the JSON had it
(``threshold``), the terminal, markdown and HTML did not, so with a wide gate embedding bwd's +65 %
REDG -> ATOMG change read "predicted neutral" as if the model said so on its own."""

from __future__ import annotations

import re

import pytest
from rich.console import Console

import ktriage.api as kt

pytestmark = pytest.mark.slow

TOOLCHAINS = ["triton==3.4.0,ptxas==12.4.131", "triton==3.4.0"]
GATE = "Gate: ±80% (--threshold): a change is a regression or an improvement only where its predicted interval"


def test_every_report_says_the_gate(toolchain) -> None:
    toolchain(TOOLCHAINS[0])
    report = kt.explain(
        target="liger.embedding", mode="bwd", inputs="0", arch="sm_90", toolchains=TOOLCHAINS, threshold=0.8
    )
    assert not report.regressions  # +65 % [+60 %, +71 %] lies inside the +-80 % gate
    console = Console(record=True, width=250)
    report.print_table(console)
    html = re.sub(r"<[^>]*>", "", report.to_html())
    for where, text in (("terminal", console.export_text()), ("markdown", report.to_markdown()), ("html", html)):
        assert GATE in text, f"{where}:\n{text[:3000]}"
    assert report.to_json()["threshold"] == 0.8
