"""The workload file is versioned and validated: damaged or foreign files are a clear error (exit 2,
no traceback), for `workload show` and for `explain`."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from ktriage.cli.app import main
from ktriage.errors import FormatError
from ktriage.record.workload import compact, is_workload_path, load_workload, save_workload

KERNEL = """
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
"""


def _journal(tmp_path: Path) -> list[dict[str, object]]:
    """A journal as the hook writes it (one kernel, two launches), without running a program."""
    src = tmp_path / "src" / "scale.py"
    src.parent.mkdir()
    src.write_text(KERNEL)
    files = {"scale.py": KERNEL}
    tensor = {"tensor": "fp32", "aligned": True, "shape": [4096], "strides": [1]}
    return [
        {"type": "header", "format_version": 1, "kind": "ktriage-record-journal", "argv": ["prog.py"]},
        {"type": "host", "triton": "3.4.0", "target": "sm_90"},
        {
            "type": "kernel",
            "id": "K0",
            "kind": "jit",
            "function": "scale_kernel",
            "module": "scale",
            "original_module": "scale",
            "file": str(src),
            "snapshot": {"files": files, "notes": []},
            "package": None,
        },
        {
            "type": "launch",
            "id": "L0",
            "kernel": "K0",
            "args": [["x_ptr", tensor], ["n", 4096], ["BLOCK", 256]],
            "options": {"num_warps": 8},
            "grid": [16],
        },
        {
            "type": "launch",
            "id": "L1",
            "kernel": "K0",
            "args": [["x_ptr", {**tensor, "shape": [8192]}], ["n", 8192], ["BLOCK", 256]],
            "options": {"num_warps": 8},
            "grid": [32],
        },
        {
            "type": "launch",
            "id": "L2",
            "kernel": "K0",
            "args": [["x_ptr", {"unsupported": "Foo: <foo>"}], ["n", 3], ["BLOCK", 256]],
            "options": {},
            "grid": [1],
        },
        {"type": "counts", "counts": {"L0": 5, "L1": 2, "L2": 1}},
    ]


@pytest.fixture()
def workload_file(tmp_path: Path) -> Path:
    return save_workload(compact(_journal(tmp_path)), tmp_path / "W.json")


def test_a_workload_round_trips(workload_file: Path) -> None:
    w = load_workload(workload_file)
    (kernel,) = w.kernels
    assert [i.count for i in kernel.inputs] == [5, 2] and kernel.launches == 7  # one sweep of one kernel
    assert kernel.inputs[0].spec.num_warps == 8 and kernel.inputs[0].spec.divisible_by_16 == ("x_ptr", "n")
    (missed,) = w.not_captured  # the launch with an argument ktriage cannot describe; the rest intact
    assert "Foo" in missed.why and missed.launches == 1


def test_a_spec_that_is_not_the_jits_is_flagged(tmp_path: Path) -> None:
    records = _journal(tmp_path)
    view = {
        "signature": {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        "divisible": [0],
        "options": {"num_warps": 8},
    }
    records.insert(4, {"type": "jit_compile", "launch": "L0", "view": view})
    (kernel,) = compact(records).kernels
    assert kernel.inputs[0].jit_check == "differs: divisible by 16: JIT ['x_ptr'], spec ['n', 'x_ptr']"
    assert any("not what the JIT compiled" in n for n in kernel.notes)
    records[4] = {"type": "jit_compile", "launch": "L0", "view": {**view, "divisible": [0, 1]}}
    assert compact(records).kernels[0].inputs[0].jit_check == "same"


def test_a_journal_reads_like_its_workload(tmp_path: Path) -> None:
    lines = [json.dumps(r) for r in _journal(tmp_path)]
    journal = tmp_path / "W.json.journal"
    journal.write_text("\n".join(lines) + "\n" + lines[3][:25])  # a torn last line: killed mid-write
    w = load_workload(tmp_path / "W.json")  # W.json missing: its journal is read
    assert [i.count for i in w.kernels[0].inputs] == [5, 2]


def test_a_gzipped_workload_reads_like_the_plain_one(
    workload_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The corpus commits its workloads gzipped (W.workload.json.gz): every verb reads them as W.json,
    through the same schema check, and names the same cells."""
    from ktriage.triage.recorded_match import load_workloads

    packed = tmp_path / "tb_op_fwd.workload.json.gz"
    packed.write_bytes(gzip.compress(workload_file.read_bytes()))
    plain, zipped = load_workload(workload_file), load_workload(packed)
    assert zipped.to_json() == plain.to_json() and zipped.path == packed
    assert is_workload_path(str(packed)) and load_workloads([str(packed)])[0].name == "tb_op_fwd"
    assert main(["workload", "show", str(packed), "-f", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["kernels"][0]["launches"] == 7
    data = json.loads(workload_file.read_text())
    data["kernels"][0]["inputs"][0]["spec"]["signature"] = {"x": "*what"}  # the schema still applies
    packed.write_bytes(gzip.compress(json.dumps(data).encode()))
    with pytest.raises(FormatError, match="workload file"):
        load_workload(packed)
    packed.write_bytes(gzip.compress(workload_file.read_bytes())[:-40])  # cut in transfer
    with pytest.raises(FormatError, match="gzip data is cut short"):
        load_workload(packed)


def _damage(path: Path, how: str) -> None:
    data = json.loads(path.read_text())
    if how == "truncated":
        path.write_text(path.read_text()[:200])
        return
    if how == "future":
        data["format_version"] = 99
    elif how == "foreign":
        data = {"format_version": 1, "cells": []}
    elif how == "no-version":
        del data["format_version"]
    elif how == "snapshot":
        digest = next(iter(data["snapshots"]))
        data["snapshots"][digest]["files"]["scale.py"] += "\n# edited\n"
    elif how == "spec":
        data["kernels"][0]["inputs"][0]["spec"]["signature"] = {"x": "*what"}
    elif how == "missing-key":
        del data["kernels"][0]["inputs"]
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("how", ["truncated", "future", "foreign", "no-version", "snapshot", "spec", "missing-key"])
def test_a_damaged_or_foreign_file_is_a_clear_error(
    workload_file: Path, how: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _damage(workload_file, how)
    with pytest.raises(FormatError):
        load_workload(workload_file)
    assert main(["workload", "show", str(workload_file)]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "Traceback" not in err
    assert main(["explain", str(workload_file), "-t", "triton==3.4.0"]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "Traceback" not in err


def test_options_a_workload_refuses_name_a_fix_for_a_workload(
    workload_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--precision and --mode are refused for a workload as for a spec file (--sm-count prices it for
    another GPU: tests/explain/test_sm_count.py), and the fix
    said "edit the spec file": a recording is not edited, so the fix is to drop the option."""
    for option in (["--precision", "bf16"], ["--mode", "bwd"]):
        assert main(["explain", str(workload_file), "-t", "triton==3.4.0", *option]) == 2
        err = " ".join(capsys.readouterr().err.split())
        assert (
            f"does not apply to the recorded workload {workload_file}: its signature, pass and grid are recorded" in err
        )
        assert "edit the spec file" not in err and "fix: drop it: the workload's kernels are compiled" in err


def test_show_formats(workload_file: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["workload", "show", str(workload_file), "-f", "json", "-o", str(tmp_path / "s.md")]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["kernels"][0]["launches"] == 7 and shown["not_captured"][0]["function"] == "scale_kernel"
    assert "| K0 |" in (tmp_path / "s.md").read_text()
    assert main(["workload", "show", str(workload_file)]) == 0
    assert "not captured" in capsys.readouterr().out


def test_the_json_of_workload_show_is_named_when_given_as_the_workload(
    workload_file: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`workload show -o s.json` keeps "kind": "ktriage-workload" but lists the snapshots' file names
    only; given back to explain it was "damaged: snapshots[...].files: expected object ... record it
    again". The error says what the file is and which one to give."""
    shown = tmp_path / "s.json"
    assert main(["workload", "show", str(workload_file), "-o", str(shown)]) == 0
    capsys.readouterr()
    for argv in (["explain", str(shown), "-t", "triton==3.4.0"], ["workload", "show", str(shown)]):
        assert main(argv) == 2
        err = " ".join(capsys.readouterr().err.split())
        assert f"error: {shown} is the JSON of `ktriage workload show`" in err and "record it again" not in err


def test_record_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["record", "-o", str(tmp_path / "W.json")]) == 2  # no command
    assert main(["record", "-o", str(tmp_path / "W.json"), "--", str(tmp_path / "no-such-program")]) == 2
    err = capsys.readouterr().err
    assert "not found" in err and "Traceback" not in err


def test_an_inductor_input_recorded_without_its_grid_on_the_spec_gets_it_on_load() -> None:
    """Workloads recorded before inductor's specs carried the launcher's grid (the corpus's, committed)
    have it on the input only: explain then priced the kernel without its CTAs, the calibration with them."""
    path = Path(__file__).resolve().parents[2] / "benchmarks/corpus/ind/workloads/ind_cross_entropy.workload.json.gz"
    raw = json.loads(gzip.decompress(path.read_bytes()))
    assert all(i["spec"]["grid"] is None and i["grid"] for k in raw["kernels"] for i in k["inputs"])
    inputs = [i for k in load_workload(path).kernels for i in k.inputs]
    assert inputs and all(i.spec.grid == tuple(i.grid or ()) for i in inputs)
