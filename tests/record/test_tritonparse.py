"""tritonparse traces as a source of a recorded workload (`ktriage workload import`).

The traces in tests/data/tritonparse/ are real: make_trace.py ran in a Triton 3.6.0 toolchain with
torch 2.13 (CPU build) and tritonparse 0.6.0, launching tp_kernels.py's kernels with torch tensors
on Triton's real launch path, the GPU faked by ktriage's fake driver (its launcher also calls the
launch hooks, as Triton's C launcher does: without that no launch event is written). One was traced
as TritonBench traces (``enable_trace_launch=True``, the function's source only), one without launch
tracing, with the whole file and tritonparse's gzip compression. The same program recorded by
``ktriage record`` gives the specs the imported workload must have.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from record_helpers import INSITU, record_cli

from ktriage.cli.app import main
from ktriage.record.tritonparse import convert, read_trace
from ktriage.record.workload import Workload, load_workload
from ktriage.spec.packages import snapshot_dir

DATA = Path(__file__).resolve().parent.parent / "data" / "tritonparse"
LAUNCHES = DATA / "add_scale.launches.ndjson.gz"
COMPILE_ONLY = DATA / "add_scale.compile_only.full_source.bin.ndjson"
PROGRAM = DATA / "make_trace.py"


def _spec_facts(workload: Workload) -> list[list[dict[str, Any]]]:
    """Per kernel, per input: the spec as the JIT compiles it (the name, the source module and the
    snapshot differ by design: the recorder snapshots the whole module, the trace has the function)."""
    keep = (
        "signature",
        "constexprs",
        "divisible_by_16",
        "equal_to_1",
        "num_warps",
        "num_stages",
        "num_ctas",
        "maxnreg",
        "target",
    )
    return [[{k: i.spec.to_json()[k] for k in keep} for i in k.inputs] for k in workload.kernels]


def _import(trace: Path | list[Path], out: Path) -> Workload:
    traces = trace if isinstance(trace, list) else [trace]
    assert main(["workload", "import", *map(str, traces), "-o", str(out)]) == 0
    return load_workload(out)


@pytest.mark.slow
def test_the_real_trace_gives_the_specs_ktriage_record_gives(
    toolchain, tmp_path: Path, monkeypatch, capsys: pytest.CaptureFixture[str]
) -> None:
    torch = pytest.importorskip("torch")
    tc = toolchain("triton==3.6.0")
    monkeypatch.setenv("PYTHONPATH", str(Path(torch.__file__).resolve().parent.parent))  # torch next to Triton
    monkeypatch.delenv("TRITONPARSE_DIR", raising=False)
    recorded_path = tmp_path / "rec" / "W.json"
    assert record_cli(recorded_path, [str(tc.python), str(PROGRAM), str(INSITU)]) == 0
    recorded = load_workload(recorded_path)
    imported = _import(LAUNCHES, tmp_path / "imp" / "W.json")
    capsys.readouterr()
    assert _spec_facts(imported) == _spec_facts(recorded)
    assert [[(i.count, i.grid, i.label) for i in k.inputs] for k in imported.kernels] == [
        [(i.count, i.grid, i.label) for i in k.inputs] for k in recorded.kernels
    ]
    assert [[2, 1], [1], [1], [1]] == [[i.count for i in k.inputs] for k in imported.kernels]  # n=1000: its own kernel
    # the argument descriptions, as far as tritonparse records them (no storage size)
    for k_imp, k_rec in zip(imported.kernels, recorded.kernels):
        for i_imp, i_rec in zip(k_imp.inputs, k_rec.inputs):
            rec_args = [
                [n, {a: b for a, b in v.items() if a != "storage_bytes"} if isinstance(v, dict) else v]
                for n, v in i_rec.args
            ]
            assert i_imp.args == rec_args
    # checked against what the JIT compiled (the compilation event of each launch's hash)
    assert [[i.jit_check for i in k.inputs] for k in imported.kernels] == [
        ["same", "same"],
        ["same"],
        ["same"],
        ["same"],
    ]
    assert imported.host == {"triton": "3.6.0", "target": "sm_90"} and not imported.not_captured
    assert imported.kernels[2].inputs[0].spec.num_warps == 2  # scale_rows_kernel[...](..., num_warps=2)
    # @triton.autotune: the config the fake benchmarker picked; its benchmarking launch is dropped, as the
    # recorder drops it (the trace has no config list: tritonparse 0.6 writes no autotune event on 3.6)
    copy = imported.kernels[3]
    assert (copy.inputs[0].spec.constexprs, copy.inputs[0].spec.num_warps) == ({"BLOCK": 64}, 2)
    assert recorded.kernels[3].autotune_configs and copy.autotune_configs is None
    assert any(n.startswith("1 launches of copy_kernel made by @triton.autotune's benchmarking") for n in copy.notes)


@pytest.mark.slow
def test_the_imported_workload_is_explained_with_two_toolchains(
    toolchain, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toolchain("triton==3.3.1")
    toolchain("triton==3.4.0")
    out = tmp_path / "W.json"
    workload = _import(LAUNCHES, out)
    for k in workload.kernels:  # only the workload file: its snapshots are written again from it
        shutil.rmtree(snapshot_dir(f"snapshot:{k.snapshot}"), ignore_errors=True)
    capsys.readouterr()
    assert main(["explain", str(out), "-t", "triton==3.3.1", "-t", "triton==3.4.0", "-f", "json"]) == 0
    text = json.dumps(json.loads(capsys.readouterr().out))
    for k in workload.kernels:
        for i in k.inputs:
            assert i.spec.name in text
    assert "3.3.1" in text and "3.4.0" in text  # exit 0: every cell compiled (a failed one is exit 4)
    # the whole-file trace too (its @triton.autotune kept: the module is the user's file)
    compiled = tmp_path / "C.json"
    _import(COMPILE_ONLY, compiled)
    capsys.readouterr()
    assert main(["explain", str(compiled), "-t", "triton==3.4.0", "-f", "json"]) == 0


def test_a_trace_without_launch_events_gives_one_input_per_compilation(tmp_path: Path) -> None:
    """The compile-only trace (whole file, gzip members): the compile-time specialization is the same
    spec the launches gave, the snapshot is the kernel file, and the inputs have no shapes."""
    assert COMPILE_ONLY.read_bytes()[:2] == b"\x1f\x8b"  # tritonparse's .bin.ndjson: gzip members
    compiled = _import(COMPILE_ONLY, tmp_path / "C.json")
    launched = _import(LAUNCHES, tmp_path / "L.json")
    assert [[i.count for i in k.inputs] for k in compiled.kernels] == [[0], [0], [0], [0]]
    assert _spec_facts(compiled) == [[facts[0]] for facts in _spec_facts(launched)]
    (snap,) = {k.snapshot for k in compiled.kernels}  # one file, one snapshot for all four kernels
    assert list(compiled.snapshots[snap]["files"].values()) == [(DATA / "tp_kernels.py").read_text()]
    assert all("whole kernel file" in k.notes[0] for k in compiled.kernels)
    assert compiled.kernels[2].inputs[0].args[0] == ["x_ptr", {"tensor": "fp16", "aligned": True}]
    # function-only (the default): the function under a synthesized header, on its original line
    files = launched.snapshots[launched.kernels[0].snapshot]["files"]
    (text,) = files.values()
    assert text.startswith("import triton\nimport triton.language as tl\n")
    original = (DATA / "tp_kernels.py").read_text().splitlines()
    assert (
        text.splitlines()[original.index("def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):")]
        == "def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):"
    )
    assert "helpers from other modules are missing" in launched.kernels[0].notes[0]
    # a function alone keeps @triton.jit and leaves out the decorators that name its module's objects
    copy_text = next(iter(launched.snapshots[launched.kernels[3].snapshot]["files"].values()))
    assert "@triton.autotune" not in copy_text and "@triton.jit\ndef copy_kernel(" in copy_text
    assert "@triton.autotune" in launched.kernels[3].notes[1]


# ------------------------------------------------------------------ damaged, foreign, partial traces
def _events() -> list[dict[str, Any]]:
    return read_trace(LAUNCHES)


def _write(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


@pytest.mark.parametrize("damage", ["cut_gzip", "garbage_line", "foreign", "empty", "zstd"])
def test_a_damaged_or_foreign_trace_is_one_error_line(
    damage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "trace.ndjson"
    raw = LAUNCHES.read_bytes()
    if damage == "cut_gzip":
        bad.write_bytes(raw[: len(raw) // 2])
    elif damage == "garbage_line":
        lines = gzip.decompress(raw).decode().splitlines(keepends=True)
        bad.write_text("".join(lines[:2]) + "{not json\n" + "".join(lines[2:]))
    elif damage == "foreign":
        bad.write_text(json.dumps({"kind": "ktriage-workload", "format_version": 1}) + "\n")
    elif damage == "empty":
        bad.write_text("")
    else:
        bad.write_bytes(b"\x28\xb5\x2f\xfd" + raw[:20])
    capsys.readouterr()
    assert main(["workload", "import", str(bad), "-o", str(tmp_path / "W.json")]) == 2
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.startswith("error:")] == [err.splitlines()[0]]
    assert str(bad) in err and "Traceback" not in err and not (tmp_path / "W.json").exists()


def test_a_workload_or_a_results_file_given_as_a_trace_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A workload `ktriage record` wrote (indented JSON) given to `workload import` was "line 1 is not
    JSON ... give the raw trace, undamaged", as if it were a damaged trace: it is named for what it is."""
    workload = Path(__file__).resolve().parents[1] / "data" / "workloads" / "liger_step.workload.json"
    results = tmp_path / "run.json"
    results.write_text(json.dumps({"format_version": 1, "run": {}, "cells": []}, indent=1))
    out = tmp_path / "W.json"
    for given, said in (
        (workload, "is already a ktriage workload: there is nothing to import"),
        (results, "is one JSON document, not a tritonparse trace"),
    ):
        assert main(["workload", "import", str(given), "-o", str(out)]) == 2
        err = " ".join(capsys.readouterr().err.split())
        assert f"error: {given} {said}" in err and "undamaged" not in err and not out.exists()


def test_a_torn_last_line_is_dropped(tmp_path: Path) -> None:
    """A program killed while tritonparse wrote its last event: the events before it convert."""
    text = gzip.decompress(LAUNCHES.read_bytes()).decode()
    torn = tmp_path / "torn.ndjson"
    torn.write_text(text[: text.rstrip("\n").rfind("\n") + 40])
    workload = convert([torn])
    # the last event was copy_kernel's launch after tuning: what is left of it is the benchmarking launch,
    # which is not the program's (its compilation gives no input either, as a config the tuner only timed)
    assert [[i.count for i in k.inputs] for k in workload.kernels] == [[2, 1], [1], [1]]
    assert [k.function for k in workload.kernels] == ["add_kernel", "add_kernel", "scale_rows_kernel"]


def test_what_a_trace_cannot_carry_is_not_captured(tmp_path: Path) -> None:
    """Fakes made from the real events (named as such): a launch whose compilation is in no given file,
    a launch during a CUDA graph capture (tritonparse records no arguments then), an argument type
    ktriage cannot describe, and the autotuner's benchmarking launches (dropped, as the recorder does)."""
    events = _events()
    comps = [e for e in events if e["event_type"] == "compilation"]
    launches = [e for e in events if e["event_type"] == "launch"]
    fake_graph_launch = {
        **launches[0],
        "extracted_args": {"_note": "argument extraction skipped during CUDA graph capture"},
    }
    fake_descriptor_launch = json.loads(json.dumps(launches[4]))
    fake_descriptor_launch["extracted_args"]["x_ptr"] = {"type": "TensorDescriptor", "shape": [64, 96]}
    fake_bench_launch = json.loads(json.dumps(launches[3]))
    fake_bench_launch["stack"].append({"name": "_bench", "filename": "/x/triton/runtime/autotuner.py", "line": 1})
    fake_trace = _write(
        tmp_path / "fake_partial.ndjson",
        [
            comps[0],
            launches[0],
            launches[1],
            launches[2],
            fake_graph_launch,
            launches[3],
            fake_descriptor_launch,
            fake_bench_launch,
        ],
    )
    workload = convert([fake_trace])
    whys = sorted((n.function, n.why.split(":")[0]) for n in workload.not_captured)
    assert whys == [
        ("add_kernel", "its compilation event is not in the trace (the source is only there)"),
        ("add_kernel", "tritonparse did not record its arguments"),
        ("scale_rows_kernel", "its compilation event is not in the trace (the source is only there)"),
    ]
    (kernel,) = workload.kernels  # the three launches of the first compilation; the graph launch not counted
    assert [i.count for i in kernel.inputs] == [2, 1]
    with_comps = _write(tmp_path / "fake_descriptor.ndjson", [*comps, fake_descriptor_launch, fake_bench_launch])
    workload = convert([with_comps])
    assert any(
        n.why == "a launch argument ktriage cannot describe: x_ptr is TensorDescriptor" for n in workload.not_captured
    )
    notes = [n for k in workload.kernels for n in k.notes if "benchmarking were dropped" in n]
    assert notes and notes[0].startswith("1 launches of add_kernel")


def test_several_trace_files_are_one_run(tmp_path: Path) -> None:
    """The files of one run (ranks, processes): a launch finds its compilation in another file."""
    events = _events()
    first = _write(tmp_path / "rank0.ndjson", [e for e in events if e["event_type"] == "compilation"])
    second = _write(tmp_path / "rank1.ndjson", [e for e in events if e["event_type"] == "launch"])
    assert _spec_facts(convert([first, second])) == _spec_facts(convert([LAUNCHES]))


def test_argument_descriptions_follow_the_recorders() -> None:
    """tritonparse's extracted_args entries (as 0.6 writes them) -> the recorder's descriptions."""
    from ktriage.record.tritonparse import describe_arg

    misaligned = {
        "type": "tensor",
        "dtype": "torch.bfloat16",
        "shape": [8, 4],
        "stride": [1, 8],
        "data_ptr": "0x7f0000000004",
    }
    assert describe_arg("x", misaligned) == {"tensor": "bf16", "aligned": False, "shape": [8, 4], "strides": [1, 8]}
    assert (
        describe_arg("m", {"type": "tensor", "dtype": "torch.bool", "shape": [3], "stride": [1], "data_ptr": "0x10"})[
            "tensor"
        ]
        == "i1"
    )
    assert describe_arg("n", {"type": "int", "value": 1}) == 1
    assert describe_arg("flag", {"type": "bool", "value": True}) is True
    assert describe_arg("bias", {"type": "NoneType", "repr": "None"}) is None
    assert describe_arg("DTYPE", {"type": "dtype", "repr": "fp16"}) == {"tl": "float16"}


def test_workload_show_says_where_an_imported_workload_came_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No program ran: `workload show` names the traces instead of an unknown exit status."""
    out = tmp_path / "L.json"
    _import(LAUNCHES, out)
    capsys.readouterr()
    assert main(["workload", "show", str(out), "-f", "markdown"]) == 0
    shown = capsys.readouterr().out
    assert "tritonparse traces" in shown and "add_scale.launches.ndjson.gz" in shown and "unknown" not in shown


def test_a_trace_given_where_a_workload_goes_is_named_with_its_import(tmp_path: Path, run_cli) -> None:
    """The converse of the test above: a raw trace given to `workload show` was "not valid JSON: Extra
    data ... record it again", and to `explain`/`bench` "a file, not a spec file or a workload"; each
    now says it is a tritonparse trace and gives the `workload import` that makes a workload of it.
    Also when the trace was renamed like a workload (``W.json.gz``): then its content tells."""
    renamed = tmp_path / "trace.json.gz"
    shutil.copy(LAUNCHES, renamed)
    one_event = tmp_path / "one.json"  # a trace of one event is one JSON document, but no workload
    one_event.write_text(gzip.decompress(LAUNCHES.read_bytes()).decode().splitlines()[0] + "\n")
    for trace in (LAUNCHES, COMPILE_ONLY, renamed, one_event):
        for argv in (
            ["workload", "show", str(trace)],
            ["explain", str(trace), "-t", "triton==3.6.0", "-t", "triton==3.5.1"],
            ["bench", str(trace), "-t", "triton==3.6.0", "--compile-only", "--bundle", str(tmp_path / "b")],
        ):
            r = run_cli(argv)
            assert r.exit_code == 2, (argv, r.output)
            assert r.problem.startswith(f"{trace} is a tritonparse trace"), (argv, r.err_text)
            assert r.fix is not None and f"ktriage workload import {trace} -o W.json" in r.fix, (argv, r.err_text)


def test_a_trace_file_given_twice_is_refused(tmp_path: Path, run_cli) -> None:
    """The same file twice (as typed, or under a second name: a link, an overlapping glob) was read
    twice, and the workload counted each of its launches twice (12 launches for the trace's 6)."""
    link = tmp_path / "again.ndjson.gz"
    link.symlink_to(LAUNCHES)
    out = tmp_path / "W.json"
    for second, said in ((LAUNCHES, f"{LAUNCHES} is given twice"), (link, f"{LAUNCHES} and {link} are the same file")):
        r = run_cli(["workload", "import", str(LAUNCHES), str(second), "-o", str(out)])
        assert r.exit_code == 2, r.output
        assert r.problem == f"{said}: its launches would be counted twice", r.err_text
        assert r.fix == "give each trace file of the run once" and not out.exists()
    once = run_cli(["workload", "import", str(LAUNCHES), "-o", str(out)])
    assert once.exit_code == 0 and "6 launches" in once.output, once.output


def test_one_file_with_the_launches_of_two_runs_is_refused(tmp_path: Path, run_cli) -> None:
    """tritonparse writes one file per process; two recordings concatenated into one file (here the
    trace and a second run of the program, pid 40000) were merged into one workload without a word:
    12 launches for each run's 6. Compilation events of another pid (a forked compile worker writes
    into the file it inherited) stay one run."""
    events = _events()
    pid = events[0]["pid"]
    two_runs = _write(tmp_path / "two_runs.ndjson", events + [{**e, "pid": 40000} for e in events])
    out = tmp_path / "W.json"
    r = run_cli(["workload", "import", str(two_runs), "-o", str(out)])
    assert r.exit_code == 2, r.output
    assert r.problem.startswith(
        f"{two_runs} holds the launches of 2 processes (pid {pid}: 7, pid 40000: 7): tritonparse writes one file per process"
    ), r.err_text
    assert r.fix is not None and "import each run on its own" in r.fix, r.err_text
    assert f"jq -c 'select(.pid == {pid})'" in r.fix and not out.exists()
    worker = [{**e, "pid": 40000} for e in events if e["event_type"] == "compilation"]
    one_run = _write(tmp_path / "one_run.ndjson", worker + events)
    r = run_cli(["workload", "import", str(one_run), "-o", str(out)])
    assert r.exit_code == 0 and "6 launches" in r.output, r.output
