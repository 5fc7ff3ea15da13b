"""A warm explain does not disassemble again: the SASS listing of a cubin is kept in memory for the
rest of the process (analysis and the report's line excerpts need it moments apart), and the line
excerpts a JSON report quotes are kept next to the cubin (a cache sidecar), so a second run writes the
same report without running nvdisasm or cuobjdump at all. Real compiles, real disassembler, no GPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ktriage.analyze import cuobjdump
from ktriage.cli import exit_codes
from tests.conftest import RunCli

pytestmark = pytest.mark.slow
ARGV = [
    "explain",
    "liger.layer_norm",
    "--bwd",
    "--input",
    "N=4608",
    "--arch",
    "sm_90",
    "-t",
    "triton==3.3.1",
    "-t",
    "triton==3.4.0",
    "--format",
    "json",
]


def _excerpts(stdout: str) -> list[object]:
    doc = json.loads(stdout)
    return [
        line["excerpt"]
        for group in doc["grouped_findings"]
        for evidence in group["line_evidence"]
        for line in evidence["lines"]
    ]


def test_a_second_explain_quotes_the_same_lines_without_disassembling(
    run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = run_cli(ARGV)
    assert first.exit_code == exit_codes.OK, first.output
    cited = _excerpts(first.stdout)
    assert cited and any(e["new"] and e["new"]["sass"] for e in cited)  # type: ignore[index]

    def disassembled_again(cubin: Path, **_: object) -> str:
        raise AssertionError(f"disassembled {cubin} again")

    cuobjdump._LISTINGS.clear()  # a new process: nothing in memory, only the cache on disk
    monkeypatch.setattr(cuobjdump, "_disassemble", disassembled_again)
    second = run_cli(ARGV)
    assert second.exit_code == exit_codes.OK, second.output
    assert _excerpts(second.stdout) == cited


def test_a_listing_is_disassembled_once_per_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-memory listing: the same cubin file again is answered without the disassembler; a cubin
    whose file changed (size or modification time) is disassembled again."""
    calls: list[Path] = []

    def fake_disassemble(cubin: Path, **_: object) -> str:  # FAKE disassembler: counts, returns the bytes
        calls.append(cubin)
        return cubin.read_text()

    monkeypatch.setattr(cuobjdump, "_disassemble", fake_disassemble)
    cubin = tmp_path / "k.cubin"
    cubin.write_text("one")
    tools = {"cuobjdump": tmp_path / "cuobjdump", "nvdisasm": tmp_path / "nvdisasm"}
    assert cuobjdump.disassemble(cubin, **tools) == cuobjdump.disassemble(cubin, **tools) == "one"
    assert len(calls) == 1
    cubin.write_text("changed")
    assert cuobjdump.disassemble(cubin, **tools) == "changed" and len(calls) == 2
