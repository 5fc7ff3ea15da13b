"""The counters in the results file and the store, quoted by compare and triage (issue 16).

The counters are real: the H200's ncu exports committed in benchmarks/profile/h200 (layer_norm bwd
N=4608, triton 3.3.1 vs 3.4.0), through the real parser (``parse_raw_csv``), the real diff
(``document``), the real attach, writer, reader and SQLite store. Only the timing samples are fakes
(``fake_samples``: a lognormal around the medians the H200 measured), since no GPU is here.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ktriage.errors import FormatError
from ktriage.measure.cells import Cell, CellKey, RunInfo
from ktriage.measure.results_file import cell_profile, read_results, run_profile_notes, write_results
from ktriage.profile.attach import attach, attach_to_results_file, attach_to_store, note_run
from ktriage.profile.diff import document
from ktriage.profile.ncu import parse_raw_csv
from ktriage.testing import lognormal

REPO = Path(__file__).resolve().parents[2]
LN = REPO / "benchmarks" / "profile" / "h200" / "layer_norm_bwd_N4608"
REF, NEW = "triton-3.3.1.ptxas-12.4.99.0c9a828e", "triton-3.4.0.ptxas-12.8.93.da4345e0"
LABEL = "(4096, 4608)"
PERM = "ncu could not run: no permission to the GPU performance counters (ERR_NVGPUCTRPERM): run as root"


def ln_document(*, new_error: str | None = None) -> dict[str, Any]:
    """The profile document of the committed layer_norm exports (compile side from the device's profile.json)."""
    device = json.loads((LN / "profile.json").read_text())
    profiles = []
    for tc in (REF, NEW):
        error = new_error if tc == NEW else None
        launches = [] if error else parse_raw_csv((LN / f"{tc}.raw.csv").read_text())
        profiles.append({"toolchain": tc, "launches": launches, "error": error, "files": {"raw_csv": f"{tc}.raw.csv"}})
    return document(
        op="layer_norm",
        mode="bwd",
        input_id=device["input_id"],
        backend="liger_layer_norm",
        reference=REF,
        profiles=profiles,
        compile_side={tc: i["compile_side"] for tc, i in device["toolchains"].items()},
        ncu_version="2025.3.1.0",
    )


def fake_samples(median: float, seed: int) -> list[float]:
    return lognormal(np.random.default_rng(seed), 40, median, 0.01)


def timed_run(input_id: int) -> tuple[RunInfo, list[Cell]]:
    """A bench run of the bundle: torch baseline plus liger under both toolchains (fake samples)."""
    run = RunInfo(
        run_id="profile-test-run",
        gpu={"name": "NVIDIA H200"},
        status="finished",
        toolchains=[{"id": REF, "spec": "triton==3.3.1"}, {"id": NEW, "spec": "triton==3.4.0"}],
        settings={"plan": {"op": "layer_norm"}},
    )

    def cell(backend: str, tc: str | None, median: float, seed: int) -> Cell:
        key = CellKey("layer_norm", "bwd", input_id, LABEL, backend, tc)
        return Cell(key, "ok", fake_samples(median, seed), extra={"stopped_by": "stop"})

    return run, [
        cell("torch_layer_norm", None, 0.30, 1),
        cell("liger_layer_norm", REF, 0.16, 2),
        cell("liger_layer_norm", NEW, 0.80, 3),
    ]


@pytest.fixture()
def profiled(tmp_path: Path) -> tuple[Path, RunInfo, list[Cell]]:
    doc = ln_document()
    run, cells = timed_run(doc["input_id"])
    path = write_results(tmp_path / "results.json", run, cells)
    run, cells, notes = attach_to_results_file(path, [doc], raw_dirs=[str(LN)])
    assert notes == []
    return path, run, cells


def test_results_file_carries_the_counters(profiled: tuple[Path, RunInfo, list[Cell]]) -> None:
    path, _, _ = profiled
    run, cells = read_results(path)
    by_tc = {c.key.toolchain: c for c in cells}
    assert cell_profile(by_tc[None]) is None  # the native baseline is not profiled
    new = cell_profile(by_tc[NEW])
    assert new is not None and new["format"] == 1 and new["status"] == "ok" and new["reference"] == REF
    (launch,) = new["launches"]
    assert launch["kernel_name"] == "_layer_norm_backward_kernel" and launch["registers_per_thread"] == 32.0
    assert launch["local_ld_sectors"] == 52_760_320
    assert new["compile_side"]["spill_store_bytes"] == 3712 and new["compile_side"]["registers"] == 32
    assert "spills 3712 B/thread" in new["findings"][0]
    assert by_tc[NEW].samples_ms and by_tc[NEW].extra["stopped_by"] == "stop"  # the timings are untouched
    assert run.settings["profile"]["ncu_version"] == "2025.3.1.0" and run.settings["plan"] == {"op": "layer_norm"}


def test_counters_attached_to_a_gzipped_results_file_keep_it_gzipped(tmp_path: Path) -> None:
    """A gzipped results file (``R.json.gz``) was refused; read as the plain one now, it is written back
    gzipped, so its name still says what it holds, and it reads back with the counters."""
    doc = ln_document()
    run, cells = timed_run(doc["input_id"])
    path = tmp_path / "results.json.gz"
    path.write_bytes(gzip.compress(write_results(tmp_path / "plain.json", run, cells).read_bytes()))
    attach_to_results_file(path, [doc], raw_dirs=[str(LN)])
    text = gzip.decompress(path.read_bytes()).decode()  # raises if it was written back plain
    assert json.loads(text)["run"]["settings"]["profile"]["ncu_version"] == "2025.3.1.0"
    _, back = read_results(path)
    assert cell_profile(next(c for c in back if c.key.toolchain == NEW)) is not None


def _compare(path_or_cells: Any, tmp_path: Path, other: Path | None = None) -> tuple[str, dict[str, Any], str]:
    from ktriage.compare.run import compare
    from ktriage.report.html import to_html
    from ktriage.report.markdown import to_markdown

    report = compare(str(path_or_cells), str(other) if other else None, toolchains=other is None)
    return to_markdown(report), json.loads(report.json_text()), to_html(report)


def test_compare_quotes_counters_next_to_the_verdict(
    profiled: tuple[Path, RunInfo, list[Cell]], tmp_path: Path
) -> None:
    md, doc, html = _compare(profiled[0], tmp_path)
    (line,) = [ln for ln in md.splitlines() if "spills 3712" in ln]
    assert line.startswith("- **regression +")
    # the compile side, then the counters (H200: 255 -> 32 registers, 53% -> 91% local, long_scoreboard +13)
    for part in (
        "triton-3.4.0.ptxas-12.8.93 spills 3712 B/thread (ref 632 B), 32 registers (ref 255)",
        "SASS LDL 111->940",
        "255 -> 32 registers/thread",
        "local-memory (spill) traffic is 91% of L1 sectors (ref 53%)",
        "stall 'long_scoreboard' +13 points (now 67% of stall cycles)",
        "DRAM throughput 36% -> 22% of peak (218.3 -> 801.4 MB)",
        "kernel 124.8 -> 757.3 us",
    ):
        assert part in line, part
    (q,) = doc["comparisons"][0]["counters"]
    assert q["verdict"] == "regression" and q["available"] and q["new_toolchain"] == NEW
    (k,) = q["kernels"]
    assert k["registers_per_thread"] == [255.0, 32.0]
    assert k["local_share_of_l1_sectors_pct"][1] == pytest.approx(90.61, abs=0.01)
    assert k["top_stall"]["reason"] == "long_scoreboard" and k["top_stall"]["points"] == pytest.approx(12.97, abs=0.01)
    assert k["dram_throughput_pct"] == [36.35, 21.99]
    assert q["compile_side"]["new"]["spill_store_bytes"] == 3712
    assert "Counters (Nsight Compute)" in html and "spills 3712 B/thread (ref 632 B)" in html


def test_store_round_trip_keeps_the_counters(profiled: tuple[Path, RunInfo, list[Cell]], tmp_path: Path) -> None:
    from ktriage.store import open_store

    path, run, cells = profiled
    db = f"sqlite:///{tmp_path / 'store.db'}"
    timed_only = read_results(path)[1]
    for c in timed_only:
        c.extra = {k: v for k, v in c.extra.items() if k != "profile"}
    with open_store(db) as store:  # the run as bench stored it: timings, no counters yet
        store.import_run(RunInfo(**{**run.to_json(), "settings": {"plan": {"op": "layer_norm"}}}), timed_only)
    assert "counters of 2 cells stored" in attach_to_store(db, run, cells)
    with open_store(db) as store:
        stored_run, stored = store.load_run(run.run_id)
        exported = store.export(run.run_id)
    by_tc = {c.key.toolchain: c for c in stored}
    assert cell_profile(by_tc[NEW]) == cell_profile({c.key.toolchain: c for c in cells}[NEW])
    assert by_tc[NEW].samples_ms == {c.key.toolchain: c for c in timed_only}[NEW].samples_ms
    assert by_tc[NEW].extra["stopped_by"] == "stop" and cell_profile(by_tc[None]) is None
    assert stored_run.settings["profile"]["ncu_version"] == "2025.3.1.0"
    # the store's export is a results file again, counters included, and compare reads it
    again = tmp_path / "export.json"
    again.write_text(exported)
    md, _, _ = _compare(again, tmp_path)
    assert "spills 3712 B/thread (ref 632 B)" in md


def test_attach_to_store_without_the_run_says_so(profiled: tuple[Path, RunInfo, list[Cell]], tmp_path: Path) -> None:
    _, run, cells = profiled
    line = attach_to_store(f"sqlite:///{tmp_path / 'empty.db'}", run, cells)
    assert line.startswith(f"run {run.run_id} is not in the store") and "runs import" in line


def test_old_results_file_without_profile_still_reads(tmp_path: Path) -> None:
    old = REPO / "benchmarks" / "gpu" / "issue3" / "run1_embedding_tritonbench_style" / "aa_1.json"
    assert "format_version" not in json.loads(old.read_text())  # written before the key (and the section) existed
    run, cells = read_results(old)
    assert len(cells) == 60 and all(cell_profile(c) is None for c in cells) and run_profile_notes(run) == []
    md, doc, _ = _compare(old, tmp_path, old.with_name("aa_2.json"))
    assert "Counters (Nsight Compute)" not in md and doc["comparisons"][0]["counters"] == []


def test_ncu_could_not_run_is_one_line_and_the_timings_stay(tmp_path: Path) -> None:
    doc = ln_document(new_error=PERM)
    run, cells = timed_run(doc["input_id"])
    notes = attach(cells, doc)
    note_run(run, [doc], notes)
    assert notes == [f"input {doc['input_id']} liger_layer_norm@{NEW}: {PERM}"]
    path = write_results(tmp_path / "r.json", run, cells)
    assert run_profile_notes(read_results(path)[0]) == notes
    md, js, _ = _compare(path, tmp_path)
    (line,) = [ln for ln in md.splitlines() if "ERR_NVGPUCTRPERM" in ln and ln.startswith("- **")]
    assert line.endswith(f"counters: new triton-3.4.0.ptxas-12.8.93: {PERM}")
    assert "- not profiled:" not in md  # the pair's line already says it: once
    assert "| 1 | layer_norm.bwd |" in md  # the regression is still ranked from the timings
    (q,) = js["comparisons"][0]["counters"]
    assert not q["available"] and q["kernels"] == [] and "ERR_NVGPUCTRPERM" in q["text"]


def test_a_profile_section_of_an_unknown_format_is_refused(profiled: tuple[Path, RunInfo, list[Cell]]) -> None:
    path, _, _ = profiled
    data = json.loads(path.read_text())
    data["cells"][2]["extra"]["profile"]["format"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(FormatError, match=r"cells\[2\]\.extra\.profile has format_version 99"):
        read_results(path)
    data["cells"][2]["extra"]["profile"] = {
        "format": 1,
        "toolchain": NEW,
        "status": "ok",
        "launches": [{"registers_per_thread": "x"}],
    }
    path.write_text(json.dumps(data))
    with pytest.raises(FormatError, match="registers_per_thread"):
        read_results(path)


def test_triage_quotes_counters_next_to_the_compile_side_finding(profiled: tuple[Path, RunInfo, list[Cell]]) -> None:
    from ktriage.report.triage import to_html, to_markdown
    from ktriage.triage.model import Cause, CellTriage, TriageOptions, TriageReport, attach_counters

    _, _, cells = profiled
    old = [c for c in cells if c.key.toolchain in (None, REF)]
    new = [c for c in cells if c.key.toolchain in (None, NEW)]
    flagged = CellTriage(
        "layer_norm",
        "bwd",
        cells[0].key.input_id,
        LABEL,
        "liger_layer_norm",
        0.16,
        0.80,
        5.0,
        "regression",
        "regression",
        False,
        "liger.layer_norm",
        cause=Cause("spills", "ptxas", "spill stores 632 -> 3712 B"),
    )
    other = CellTriage(
        "layer_norm",
        "bwd",
        cells[0].key.input_id,
        LABEL,
        "torch_layer_norm",
        0.3,
        0.3,
        1.0,
        "not_compile_side",
        "same",
        False,
    )
    assert attach_counters([flagged, other], old, new) == 1 and other.counters is None
    assert flagged.counters is not None and "spills 3712 B/thread (ref 632 B)" in flagged.counters
    assert "stall 'long_scoreboard' +13 points" in flagged.counters
    report = TriageReport(
        "old.json", "new.json", "triton==3.3.1", "triton==3.4.0", TriageOptions(), [flagged, other], compared=2
    )
    md = to_markdown(report)
    assert f"- layer_norm.bwd[{LABEL}] liger_layer_norm (spills, ptxas): triton-3.4.0.ptxas-12.8.93 spills 3712" in md
    assert report.to_json()["cells"][0]["counters"] == flagged.counters
    assert "local-memory (spill) traffic is 91% of L1 sectors" in to_html(report)
