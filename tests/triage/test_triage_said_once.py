"""What `ktriage triage --bundle` says, and where, on the real TritonBench layer_norm backward pair (tests/data/
tritonbench = shared/data/tritonbench_outputs) named as triton==3.3.1 -> triton==3.4.0: real compiles (both
wheels), a real bundle, the real CLI and renderers; nothing faked.

Found by running it as a user: each of the 12 rows ended in ``bundled for the GPU re-run: /abs/DIR/layer_norm-bwd-
c83665a8a7`` (the same path twelve times); the command told its user ``measured=['DIR'] (--measured DIR)`` and
``sm_count (--sm-count) prices for another`` (kt.triage's keywords, which the command does not take), and its
errors ``error: limit=3 (--limit 3) applies ...``; each baseline row's note (``torch_layer_norm is layer_norm's
baseline: it moved itself, so the machine or the environment changed``) said again what its verdict said (``the
baseline moved: the machine or the environment, or noise``), and more surely than the verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ktriage.api as kt
from ktriage.errors import KtriageError
from tests.conftest import RunCli

DATA = Path(__file__).resolve().parents[1] / "data" / "tritonbench"
RUN1, RUN2 = DATA / "layer_norm_bwd_run1.csv", DATA / "layer_norm_bwd_run2.csv"
CROSS = ["--old-toolchain", "triton==3.3.1", "--new-toolchain", "triton==3.4.0", "--no-bisect", "--no-fixes"]


@pytest.fixture(scope="module")
def bundled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, kt.TriageReport]:
    out = tmp_path_factory.mktemp("said-once") / "tri"
    report = kt.triage(
        old=RUN1,
        new=RUN2,
        old_toolchain="triton==3.3.1",
        new_toolchain="triton==3.4.0",
        bisect=False,
        fixes=False,
        bundle=out,
    )
    return out, report


def _rows(markdown: str) -> list[str]:
    return [x for x in markdown.splitlines() if x.startswith("| layer_norm.bwd[")]


def test_the_bundle_folder_is_said_once_not_on_every_row(bundled: tuple[Path, kt.TriageReport]) -> None:
    out, report = bundled
    assert report.measured is not None and report.measured.bundle == str(out) and len(report.cells) == 12
    # no row repeats the folder: not the markdown's, not the JSON's notes
    rows = _rows(report.to_markdown())
    assert len(rows) == 12 and not [r for r in rows if str(out) in r], rows
    data = json.loads(report.json_text())
    assert not [n for c in data["cells"] for n in c["notes"] if "bundled" in n]
    # one bundle folder of one bundle: the GPU re-run's line says which cells, where; the command is said once
    (dirname,) = [b.split(" ")[3] for b in report.measured.bench]
    line = f"12 of 12 flagged cells bundled in {out} ({dirname})"
    assert report.to_markdown().count(line) == 1
    assert f"GPU re-run: {line}" in _terminal(report)


def test_the_baseline_rows_do_not_repeat_their_verdict(bundled: tuple[Path, kt.TriageReport]) -> None:
    _, report = bundled
    base = [c for c in report.cells if c.is_baseline]
    assert len(base) == 5 and all(c.verdict_text.startswith("the baseline moved:") for c in base)
    assert all(c.notes == [] for c in base), [c.notes for c in base]
    row = next(r for r in _rows(report.to_markdown()) if "torch_layer_norm" in r)
    assert row.count("baseline") == 1 and row.endswith("one value per side) |  |"), row


def test_the_command_names_its_flags_and_the_library_its_keywords(
    bundled: tuple[Path, kt.TriageReport], run_cli: RunCli, tmp_path: Path
) -> None:
    out, report = bundled
    # the library: the keyword a Python caller passes, and the flag
    assert f"measured=['{out}'] (--measured {out})" in report.gpu_needed[-1]
    assert report.pricing is not None and "sm_count (--sm-count) prices for another" in report.pricing.text
    # the command, the same triage: its flags alone, in the terminal and in the markdown it writes
    again = tmp_path / "tri"
    md = tmp_path / "r.md"
    r = run_cli(["triage", str(RUN1), str(RUN2), *CROSS, "--bundle", str(again), "-o", str(md)])
    assert r.exit_code == 0, r.stderr
    terminal = " ".join(r.stdout.split())
    for text in (terminal, md.read_text()):
        assert f"then here the same triage with --measured {again}" in text
        assert "--sm-count prices for another" in text
        assert "measured=" not in text and "sm_count (" not in text
    # its errors too (the library's message is one text, spelled for each reader)
    r = run_cli(["triage", str(RUN1), str(RUN2), *CROSS, "--limit", "3"])
    err = " ".join(r.stderr.split())
    assert r.exit_code == 2 and err.startswith(
        "error: --limit 3 applies to the GPU re-run (--bundle, --measure, --measured)"
    )
    assert "fix: add --bundle DIR, or --measure on a GPU host" in err and "limit=" not in err and "bundle=" not in err
    with pytest.raises(KtriageError) as refused:
        kt.triage(old=RUN1, new=RUN2, old_toolchain="triton==3.3.1", new_toolchain="triton==3.4.0", limit=3)
    assert refused.value.problem.startswith("limit=3 (--limit 3) applies to the GPU re-run (bundle (--bundle)")


def _terminal(report: kt.TriageReport) -> str:
    from rich.console import Console

    console = Console(record=True, width=100_000)  # no wrapping: a sentence is found whole
    report.print_table(console)
    return console.export_text()
