"""Reports stand alone (issue 26): home-relative paths (``$KTRIAGE_HOME/...`` for the artifact cache,
never the absolute paths of the machine that wrote them; ``expand_portable`` finds the file again), and
the PTX/SASS excerpts of the source lines they cite, instead of pointers into the cache."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ktriage.cli import exit_codes
from ktriage.home import HOME_VAR, expand_portable, ktriage_home, portable_path
from tests.conftest import RunCli


def test_home_cwd_and_elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, work, other = tmp_path / "home", tmp_path / "work", tmp_path / "other"
    for folder in (home, work, other):
        folder.mkdir()
    monkeypatch.setenv("KTRIAGE_HOME", str(home))
    monkeypatch.chdir(work)
    entry = home / "artifacts" / "frontend" / "abc" / "kernel.ptx"
    entry.parent.mkdir(parents=True)
    entry.write_text("//ptx")
    assert portable_path(entry) == f"{HOME_VAR}/artifacts/frontend/abc/kernel.ptx"
    assert expand_portable(portable_path(entry)) == entry.resolve()
    assert portable_path(work / "state.json") == "state.json"  # the user's own folder: relative
    assert portable_path(other / "x.json") == str(other / "x.json")  # elsewhere: as the user gave it
    linked = work / "home-link"
    linked.symlink_to(home)  # the same home reached through a link
    assert portable_path(linked / "artifacts" / "frontend" / "abc" / "kernel.ptx") == portable_path(entry)


def _strings(doc: Any) -> Iterator[str]:
    if isinstance(doc, dict):
        for value in doc.values():
            yield from _strings(value)
    elif isinstance(doc, list):
        for value in doc:
            yield from _strings(value)
    elif isinstance(doc, str):
        yield doc


@pytest.mark.slow
def test_explain_json_names_artifacts_in_the_home_and_carries_excerpts(run_cli: RunCli) -> None:
    """A real explain (committed toolchains, the test home's artifact cache): no string in the JSON
    report is an absolute path of this machine, each artifact path finds its file again, and each cited
    line carries its instructions (the spilling line's SASS has its local loads)."""
    out = run_cli(
        [
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
    )
    assert out.exit_code == exit_codes.OK, out.output
    doc = json.loads(out.stdout)
    home = str(ktriage_home())
    assert not [s for s in _strings(doc) if home in s or s.startswith(str(Path.home()))]
    artifacts = [r["artifact"] for k in doc["kernels"] for r in k["results"].values() if "artifact" in r]
    assert artifacts
    for artifact in artifacts:
        for key in ("ptx", "cubin"):
            assert artifact[key].startswith(f"{HOME_VAR}/"), artifact[key]
            assert expand_portable(artifact[key]).is_file()
    cited = [
        line for group in doc["grouped_findings"] for evidence in group["line_evidence"] for line in evidence["lines"]
    ]
    assert cited
    for line in cited:
        for side in ("ref", "new"):
            if line["excerpt"][side] is not None:
                assert line["excerpt"][side]["ptx"] and line["excerpt"][side]["sass"], line
    spill = next(line for line in cited if line["file"].endswith("layer_norm.py") and line["delta"] > 0)
    assert "LDL" in spill["excerpt"]["new"]["sass"] or "STL" in spill["excerpt"]["new"]["sass"]
