"""Triage never passes CI having compared nothing (issue 27), through the real ``main(argv)``.

- A cell that cannot be compared (NaN, inf, zero or negative latency, a non-numeric JSON value, a
  cell on one side only) is counted, listed and makes the report incomplete: exit 4, JSON
  ``complete: false`` with ``not_compared`` naming each cell, in every output form.
- Two inputs that share nothing (two operators, fwd against bwd) are a user error: exit 2 with
  ``error:`` and ``fix:`` lines.
- A duplicated x_val row, input or JSON key is refused (exit 2), never averaged.

Both sides name the same toolchain, so nothing is compiled (pure input handling).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ktriage.cli import exit_codes
from ktriage.cli.app import main

SAME = ["--old-toolchain", "triton==3.4.0", "--new-toolchain", "triton==3.4.0"]
HEAD = "x_val;torch_layer_norm-latency;liger_layer_norm-latency\n"
GOOD = HEAD + "1024;0.05;0.18\n2048;0.07;0.19\n4096;0.10;0.30\naverage;;\n"


def _run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: tuple[str, str], new: tuple[str, str], *extra: str
) -> tuple[int, str, str]:
    for name, text in (old, new):
        (tmp_path / name).write_text(text)
    code = main(["triage", str(tmp_path / old[0]), str(tmp_path / new[0]), *SAME, *extra])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert code != exit_codes.INTERNAL, err
    return code, out, err


# ---------------------------------------------------------------------------------- not comparable
CSV_BAD = ["nan", "NaN", "inf", "-inf", "Infinity", "-1", "0", "0.0", "-0.0", "1e400", "-1e-9", "abc", "0x10", "1,5"]


@pytest.mark.parametrize("side", ["old", "new"])
@pytest.mark.parametrize("value", CSV_BAD)
def test_a_csv_cell_that_cannot_be_compared_is_listed_and_exits_4(
    value: str, side: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = HEAD + f"1024;0.05;0.18\n2048;0.07;{value}\n4096;0.10;0.30\naverage;;\n"
    files = [("layer_norm_fwd_old.csv", bad), ("layer_norm_fwd_new.csv", GOOD)]
    if side == "new":
        files = [("layer_norm_fwd_old.csv", GOOD), ("layer_norm_fwd_new.csv", bad)]
    code, out, _ = _run(tmp_path, capsys, files[0], files[1], "--format", "json")
    doc = json.loads(out)
    assert code == exit_codes.INCOMPLETE == doc["exit_code"]
    assert doc["complete"] is False
    assert doc["not_compared_count"] == 1 and "liger_layer_norm" in doc["not_compared"][0]
    assert "NOT compared" in doc["headline"]
    assert doc["compared"] == 5


JSON_BAD = {
    "nan": float("nan"),
    "inf": float("inf"),
    "neg": -1.0,
    "zero": 0,
    "list": [1],
    "object": {"a": 1},
    "true": True,
    "string": "oops",
    "nan-string": "nan",
    "neg-string": "-0.5",
}


@pytest.mark.parametrize("side", ["old", "new"])
@pytest.mark.parametrize("name", list(JSON_BAD))
def test_a_json_value_that_is_no_latency_is_listed_and_exits_4(
    name: str, side: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "tritonbench_layer_norm_fwd[x_{}-liger_layer_norm]_latency"
    good = {key.format(1024): "0.18", key.format(2048): "0.19"}
    bad = {key.format(1024): "0.18", key.format(2048): JSON_BAD[name]}
    files = [("old.json", json.dumps(bad)), ("new.json", json.dumps(good))]
    if side == "new":
        files = [("old.json", json.dumps(good)), ("new.json", json.dumps(bad))]
    code, out, _ = _run(tmp_path, capsys, files[0], files[1], "--format", "json")
    doc = json.loads(out)
    assert code == exit_codes.INCOMPLETE and doc["complete"] is False
    assert doc["not_compared_count"] == 1


def test_a_whole_side_of_errors_compares_nothing_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's case: every cell NaN/inf/negative/zero: "0 cells compared", never exit 0."""
    rows = "".join(f"{1000 + i};{v};{v}\n" for i, v in enumerate(["nan", "inf", "-1", "0"] * 15))
    bad = HEAD + rows + "average;;\n"
    good = HEAD + "".join(f"{1000 + i};0.1;0.2\n" for i in range(60)) + "average;;\n"
    code, out, _ = _run(
        tmp_path, capsys, ("layer_norm_fwd_old.csv", bad), ("layer_norm_fwd_new.csv", good), "--format", "markdown"
    )
    assert code == exit_codes.INCOMPLETE
    assert "120 cells NOT compared" in out and "Not compared: 120 cells" in out
    # one row per reason (nan, inf, -1, 0: 30 cells each, both backends), not one line per cell
    rows = [line for line in out.splitlines() if "is not a positive, finite number of ms" in line]
    assert len(rows) == 4 and all(row.startswith("| 30 | ") for row in rows)


def test_a_cell_on_one_side_only_is_not_compared(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    new = HEAD + "1024;0.05;0.18\n2048;0.07;0.19\naverage;;\n"
    code, out, _ = _run(tmp_path, capsys, ("layer_norm_fwd_old.csv", GOOD), ("layer_norm_fwd_new.csv", new))
    assert code == exit_codes.INCOMPLETE
    assert "not compared" in out.lower()


def test_allow_failures_keeps_the_list_but_not_the_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = HEAD + "1024;0.05;0.18\n2048;0.07;nan\n4096;0.10;0.30\naverage;;\n"
    code, out, _ = _run(
        tmp_path,
        capsys,
        ("layer_norm_fwd_old.csv", bad),
        ("layer_norm_fwd_new.csv", GOOD),
        "--allow-failures",
        "--format",
        "markdown",
    )
    assert code == exit_codes.OK
    assert "Not compared: 1 cell" in out


# ---------------------------------------------------------------------------------- nothing shared
SHARE_NOTHING = {
    "two-operators": (
        ("layer_norm_fwd_old.csv", GOOD),
        ("rms_norm_fwd_new.csv", GOOD.replace("layer_norm", "rms_norm")),
    ),
    "fwd-vs-bwd": (("layer_norm_fwd_old.csv", GOOD), ("layer_norm_bwd_new.csv", GOOD)),
    "fwd-vs-fwd_bwd": (("layer_norm_fwd_old.csv", GOOD), ("layer_norm_fwd_bwd_new.csv", GOOD)),
    "other-backends": (
        ("layer_norm_fwd_old.csv", GOOD),
        ("layer_norm_fwd_new.csv", GOOD.replace("liger", "apex").replace("torch", "quack")),
    ),
    "json-fwd-vs-csv-bwd": (
        ("old.json", json.dumps({"tritonbench_layer_norm_fwd[x_1024-liger_layer_norm]_latency": "0.1"})),
        ("layer_norm_bwd_new.csv", GOOD),
    ),
    "name-says-another-op": (("new_layer_norm_fwd.csv", GOOD), ("layer_norm_fwd_new.csv", GOOD)),
}


@pytest.mark.parametrize("name", list(SHARE_NOTHING))
def test_inputs_that_share_nothing_are_a_user_error(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = SHARE_NOTHING[name]
    code, _, err = _run(tmp_path, capsys, old, new)
    assert code == exit_codes.USAGE, err
    expected = {"other-backends": "share no backend", "name-says-another-op": "are layer_norm's"}
    assert expected.get(name, "share no cell") in " ".join(err.split())  # new_layer_norm_fwd.csv: its backends say
    assert any(line.startswith("fix:") for line in err.splitlines())


def test_one_file_as_both_sides_is_a_user_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A TritonBench CSV (or a results file of one toolchain) as OLD and NEW compared every cell with itself:
    "0 cells of N past the gate", exit 0, a typo read as "no regression". compare refused a results file
    twice but not a CSV, which gets a new run id each time it is read."""
    csv = tmp_path / "layer_norm_bwd.csv"
    csv.write_text(GOOD)
    for verb in (["triage", *SAME], ["compare"]):
        code = main([verb[0], str(csv), str(csv), *verb[1:]])
        out, err = capsys.readouterr()
        assert code == exit_codes.USAGE, out + err
        problem = " ".join(err.split())
        assert f"error: both sides are one file ({csv} and {csv}): every cell would be compared with itself" in problem
    from ktriage.measure.results_file import results_to_json
    from ktriage.testing import fake_sweep_run

    run, cells = fake_sweep_run(seed=1, n_inputs=2, samples=5, toolchains=("triton-3.4.0",))
    results = tmp_path / "one.json"
    results.write_text(json.dumps(results_to_json(run, cells)))
    code = main(["triage", str(results), str(results)])
    err = " ".join(capsys.readouterr().err.split())
    assert code == exit_codes.USAGE and "every cell would be compared with itself" in err, err
    assert "split into its toolchains only when it timed two or more side by side (this one timed 1)" in err


# ---------------------------------------------------------------------------------- duplicates
DUPLICATES = {
    "csv-row-twice": HEAD + "1024;0.05;0.119\n1024;0.05;9.9\naverage;;\n",
    "csv-row-twice-spaced": HEAD + "1024;0.05;0.119\n 1024 ;0.05;9.9\naverage;;\n",
    "csv-row-twice-apart": HEAD + "1024;0.05;0.119\n2048;0.05;0.2\n4096;0.1;0.3\n1024;0.05;9.9\naverage;;\n",
    "csv-tuple-twice": HEAD.replace("x_val", "(M, N)") + "(4096, 1024);0.05;0.1\n(4096, 1024);0.05;9.9\naverage;;\n",
}


@pytest.mark.parametrize("name", list(DUPLICATES))
def test_a_duplicated_row_is_refused_not_averaged(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(
        tmp_path, capsys, ("layer_norm_fwd_old.csv", DUPLICATES[name]), ("layer_norm_fwd_new.csv", GOOD)
    )
    assert code == exit_codes.USAGE, err
    assert "appears twice" in err and "fix:" in err


def test_a_duplicated_json_key_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = "tritonbench_layer_norm_fwd[x_1024-liger_layer_norm]_latency"
    text = f'{{"{key}": "0.119", "{key}": "9.9"}}'
    code, _, err = _run(tmp_path, capsys, ("old.json", text), ("new.json", f'{{"{key}": "0.12"}}'))
    assert code == exit_codes.USAGE
    assert "appears twice" in err


def test_two_x_vals_of_one_input_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``1024`` and ``(4096, 1024)`` are the same layer_norm input when the op has it: two latencies of one input."""
    from ktriage.measure.tritonbench_format import InputIndex

    index = InputIndex("layer_norm")
    matched = [x for x in ("1024", "2048", "4096", "8192") if index.match(x, 0)[2]]
    if not matched:
        pytest.skip("no layer_norm input matches these x_vals")
    x = matched[0]
    full = index.by_tail[(int(x),)][0][1]
    dup = HEAD + f"{x};0.05;0.1\n{full};0.05;9.9\naverage;;\n"
    code, _, err = _run(tmp_path, capsys, ("layer_norm_fwd_old.csv", dup), ("layer_norm_fwd_new.csv", GOOD))
    assert code == exit_codes.USAGE, err
    assert "appears twice" in err


def test_an_x_val_no_catalog_input_has_never_takes_a_catalog_id(tmp_path: Path) -> None:
    """A row whose x_val is none of ktriage's inputs gets an id past the catalog's: it is never
    paired, averaged or explained as a catalog input it did not run."""
    from ktriage.measure.tritonbench_format import InputIndex

    index = InputIndex("layer_norm")
    ids = {i for tails in index.by_tail.values() for i, _ in tails}
    assert index.match("123457", 0)[0] not in ids
    assert index.match("123457", 0)[2] is False


# ---------------------------------------------------------------------------------- outputs, checked before the work
OUTPUTS: dict[str, tuple[list[str], tuple[tuple[str, str], ...]]] = {
    "o-folder": (["-o", "{d}"], ()),
    "o-no-suffix": (["-o", "{d}/report"], ()),
    "o-bad-suffix": (["-o", "{d}/report.txt"], ()),
    "o-under-a-file": (["-o", "{d}/afile/r.md"], ()),
    "o-under-proc": (["-o", "/proc/ktriage-no/r.md"], ()),
    "o-name-too-long": (["-o", "{d}/" + "x" * 300 + ".md"], ()),
    "summary-folder": ([], (("GITHUB_STEP_SUMMARY", "{d}"),)),
    "summary-missing-folder": ([], (("GITHUB_STEP_SUMMARY", "{d}/no/such/summary.md"),)),
    "summary-under-a-file": ([], (("GITHUB_STEP_SUMMARY", "{d}/afile/summary.md"),)),
    "summary-under-proc": ([], (("GITHUB_STEP_SUMMARY", "/proc/ktriage-summary.md"),)),
    "bundle-is-a-file": (["--bundle", "{d}/afile"], ()),
}


@pytest.mark.parametrize("name", list(OUTPUTS))
def test_an_output_that_cannot_be_written_is_refused_before_the_work(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "afile").write_text("a file")
    args, env = OUTPUTS[name]
    for key, value in env:
        monkeypatch.setenv(key, value.format(d=tmp_path))
    import ktriage.triage as triage_pkg

    def no_work(*_a: object, **_k: object) -> None:
        raise AssertionError("the triage ran before its outputs were checked")

    monkeypatch.setattr(triage_pkg, "triage", no_work)
    code, _, err = _run(
        tmp_path,
        capsys,
        ("layer_norm_fwd_old.csv", GOOD),
        ("layer_norm_fwd_new.csv", GOOD),
        *[a.format(d=tmp_path) for a in args],
    )
    assert code == exit_codes.USAGE, err
    assert "error:" in err and "fix:" in err


def test_a_row_off_the_catalog_is_not_explained_as_a_catalog_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A liger_layer_norm row whose x_val is none of ktriage's layer_norm inputs, 30 % slower with
    two different toolchains: it is noted, never compiled as another input (the toolchains are
    never built: nothing else is flagged). Both are supported releases: triage checks an unknown one
    against the package index up front (``check_releases_exist``), which this case is not about."""
    old = HEAD + "123457;0.05;0.10\naverage;;\n"
    new = HEAD + "123457;0.05;0.13\naverage;;\n"
    for name, text in (("layer_norm_fwd_old.csv", old), ("layer_norm_fwd_new.csv", new)):
        (tmp_path / name).write_text(text)
    code = main(
        [
            "triage",
            str(tmp_path / "layer_norm_fwd_old.csv"),
            str(tmp_path / "layer_norm_fwd_new.csv"),
            "--old-toolchain",
            "triton==3.3.1",
            "--new-toolchain",
            "triton==3.6.0",
            "--format",
            "json",
        ]
    )
    doc = json.loads(capsys.readouterr().out)
    assert code == exit_codes.OK, doc["failures"]
    (cell,) = doc["cells"]
    assert cell["catalog"] is None and cell["verdict"] == "unexplained"
    assert any("none of ktriage's layer_norm inputs" in n for n in cell["notes"])
