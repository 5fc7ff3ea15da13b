"""calibrate's explain report (``--explain E.json``, ``kt.calibrate(explain=...)``) that is not one: every refusal
names the file, what is wrong with it and the file calibrate wants with how to write it; never a traceback.

It was read with ``json.loads(path.read_text())``: a report in another encoding ended in Python's
UnicodeDecodeError, a huge one was read whole, a cut one read "Expecting ',' delimiter: line 9 column 5", and a
results file or compare's JSON given in its place was 'no "tool": "ktriage explain"' without saying what it was.
Real files, written here, through the real CLI."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import RunCli

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks/record/h200d/bench/wl-tb_rms_norm_bwd.json"  # a bench results file of a recorded model
REPORT = REPO / "benchmarks/record/h200/explain_rms_norm_bwd.json"  # the explain report of its kernels
CELLS = REPO / "benchmarks/calibration/cells.jsonl"  # a calibration dataset, what --from reads
CELLS_PROBLEM = "is a calibration dataset (cells.jsonl: one calibration cell a line), not an explain report"
HOW = "`ktriage explain TARGET -t ... --format json -o E.json`"  # how calibrate's fixes say to write a report


def _compare_json(tmp_path: Path, run_cli: RunCli) -> bytes:
    """What `ktriage compare --format json` writes for the results file's toolchains."""
    out = tmp_path / "verdicts.json"
    r = run_cli(["compare", str(RESULTS), "--toolchains", "-o", str(out), "--allow-failures"])
    assert r.exit_code in (0, 1), r.output
    return out.read_bytes()


def _triage_like(tmp_path: Path, run_cli: RunCli) -> bytes:
    return b'{"old": "a.csv", "new": "b.csv", "headline": "0 regressions", "not_compared_cells": []}'


MAKERS: dict[str, tuple[Callable[[Path, RunCli], bytes], str]] = {
    # name: (the file's bytes, what the problem says after the path)
    "latin1": (lambda _d, _r: REPORT.read_bytes().replace(b'"tool"', b'"t\xe9ol"', 1), "is not UTF-8 text (byte "),
    "utf16": (lambda _d, _r: REPORT.read_text().encode("utf-16"), "is not UTF-8 text (byte "),
    "binary": (lambda _d, _r: bytes(range(256)), "is not UTF-8 text (byte "),
    "empty": (lambda _d, _r: b"", "is not valid JSON: the file is empty"),
    "not-json": (lambda _d, _r: b"layer_norm 3.4.0 vs 3.6.0\n", "is not valid JSON: Expecting value"),
    "truncated": (lambda _d, _r: REPORT.read_bytes()[:100_000], "is not valid JSON: it ends before its JSON does"),
    "gzip-truncated": (lambda _d, _r: gzip.compress(REPORT.read_bytes()[:-40]), "it ends before its JSON does"),
    "gzip-cut": (lambda _d, _r: gzip.compress(REPORT.read_bytes())[:-30], "its gzip data is cut short"),
    "deep": (lambda _d, _r: b"[" * 100_000 + b"]" * 100_000, "nests lists/objects deeper than 64 levels"),
    "array": (lambda _d, _r: b"[]", "is a JSON array, not an explain report"),
    "results-file": (lambda _d, _r: RESULTS.read_bytes(), "is a results file (measured cells), not an explain report"),
    "compare-json": (_compare_json, "is the JSON of `ktriage compare` (its verdicts), not an explain report"),
    "triage-json": (_triage_like, "is the JSON of `ktriage triage` (its report), not an explain report"),
    "other-object": (lambda _d, _r: b'{"kernels": []}', 'is a JSON object without "tool": "ktriage explain"'),
    # a calibration dataset (--from's file) read "not valid JSON: Extra data: line 2 column 1 (char 4061)"
    "cells-jsonl": (lambda _d, _r: b"".join(CELLS.read_bytes().splitlines(keepends=True)[:3]), CELLS_PROBLEM),
    "one-cell": (lambda _d, _r: CELLS.read_bytes().splitlines(keepends=True)[0], CELLS_PROBLEM),
    # an explain report by its "tool", but not as explain writes one (by hand, or cut and mended): it was an
    # internal error ("'int' object is not iterable", KeyError: 'id', "'str' object has no attribute 'get'")
    "toolchains-number": (lambda _d, _r: _edited(toolchains=5), '"toolchains" is not a list of objects'),
    "toolchain-no-id": (lambda _d, _r: _edited(toolchains=[{"spec": "triton==3.4.0"}]), '"toolchains" is not a list'),
    "kernels-object": (lambda _d, _r: _edited(kernels={"a": 1}), '"kernels" is not a list of objects'),
    "meta-number": (lambda _d, _r: _edited(kernels=[{"spec": {"meta": 3}, "results": {}}]), '"kernels" is not a list'),
}


LAYOUT = {"toolchains-number", "toolchain-no-id", "kernels-object", "meta-number"}


def _edited(**fields: object) -> bytes:
    """The committed report with ``fields`` replaced."""
    return json.dumps({**json.loads(REPORT.read_text()), **fields}).encode()


@pytest.mark.parametrize("case", sorted(MAKERS))
def test_a_report_that_is_no_explain_report_is_refused_naming_file_problem_and_fix(
    case: str, tmp_path: Path, run_cli: RunCli
) -> None:
    make, problem = MAKERS[case]
    report = tmp_path / "E.json"
    report.write_bytes(make(tmp_path, run_cli))
    r = run_cli(["calibrate", "--results", str(RESULTS), "--explain", str(report), "--no-cv"])
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert str(report) in r.problem and problem in r.problem, r.problem
    assert r.fix is not None and HOW in r.fix and "kt.explain" not in r.fix, r.fix  # the command line's way only
    if case in LAYOUT:
        assert r.problem.startswith(f"explain report {report} is not laid out as ktriage explain writes it: ")
    if case in ("cells-jsonl", "one-cell"):  # the right file for another option
        assert r.fix.startswith(f"pass it as --from {report}; --explain takes"), r.fix
    if case == "results-file":  # the right file for the other option
        assert r.fix.startswith("pass it as --results, and as --explain the JSON explain report")


def test_a_huge_report_is_refused_before_it_is_read(tmp_path: Path, run_cli: RunCli) -> None:
    """The size limit (KTRIAGE_MAX_INPUT_MB, as for every input) applies, also once a gzipped report is unpacked."""
    padded = REPORT.read_bytes() + b" " * (2 << 20)
    for name, data in (("E.json", padded), ("E.json.gz", gzip.compress(padded))):
        report = tmp_path / name
        report.write_bytes(data)
        argv = ["calibrate", "--results", str(RESULTS), "--explain", str(report), "--no-cv"]
        r = run_cli(argv, env={"KTRIAGE_MAX_INPUT_MB": "1"})
        assert r.exit_code == 2 and "Traceback" not in r.output, r.output
        assert r.problem.startswith(f"explain report {report} is ") and "over the limit of 1 MB" in r.problem
        assert r.fix is not None and "KTRIAGE_MAX_INPUT_MB=<MB>" in r.fix and HOW in r.fix, r.fix


def test_a_gzipped_report_reads_as_the_plain_one(tmp_path: Path, run_cli: RunCli) -> None:
    """Read as results files are (told by its first bytes): the same cells from E.json.gz as from E.json."""
    packed = tmp_path / "E.json.gz"
    packed.write_bytes(gzip.compress(REPORT.read_bytes()))
    plain = run_cli(["calibrate", "--results", str(RESULTS), "--explain", str(REPORT), "--no-cv"])
    zipped = run_cli(["calibrate", "--results", str(RESULTS), "--explain", str(packed), "--no-cv"])
    assert plain.exit_code == zipped.exit_code == 0, zipped.output
    assert plain.stdout == zipped.stdout


@pytest.mark.parametrize("lines", [3, 1], ids=["cells-jsonl", "one-cell"])
@pytest.mark.parametrize("with_report", [True, False], ids=["with-explain", "alone"])
def test_a_dataset_given_as_results_is_named_with_the_option_that_reads_it(
    lines: int, with_report: bool, tmp_path: Path, run_cli: RunCli
) -> None:
    """`calibrate --results cells.jsonl` read "not valid JSON: Extra data: line 2 column 1" (with --explain),
    or "1 results file or run but 0 reports in explain (--explain)" (alone): neither says the file is a
    calibration dataset, which --from reads."""
    cells = tmp_path / "cells.jsonl"
    cells.write_bytes(b"".join(CELLS.read_bytes().splitlines(keepends=True)[:lines]))
    argv = ["calibrate", "--results", str(cells), "--no-cv"] + (["--explain", str(REPORT)] if with_report else [])
    r = run_cli(argv)
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert r.problem == (
        f"{cells} is a calibration dataset (cells.jsonl: one calibration cell a line), not a results file"
    ), r.problem
    assert r.fix is not None and r.fix.startswith(f"pass it as --from {cells}; --results takes"), r.fix
