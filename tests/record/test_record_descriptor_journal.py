"""A journal whose launches pass host-side tensor descriptors, as the hook writes them (``launch_hook.describe``:
``{"descriptor": dtype, "shape", "strides", "block_shape"}`` and ``"padding"`` from Triton 3.5), compacted
into a workload without running a program (the recording itself, on Triton's real launch path, is
tests/record/test_record_descriptor.py). Before, ``named_args`` had no rule for such a value: compact's spec
would have failed ("unknown recorded launch value"), and the hook never wrote one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ktriage.record.workload import compact
from ktriage.workload.recorded.args import short_label
from ktriage.workload.recorded.bundle import bench_blockers

KERNEL = """\
import triton
import triton.language as tl


@triton.jit
def copy_tile(in_desc, out_desc, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    tile = in_desc.load([tl.program_id(0) * BLOCK_M, tl.program_id(1) * BLOCK_N])
    out_desc.store([tl.program_id(0) * BLOCK_M, tl.program_id(1) * BLOCK_N], tile)
"""
DESC = {"descriptor": "fp16", "shape": [4096, 2048], "strides": [2048, 1], "block_shape": [64, 32]}
TYPE = "tensordesc<fp16[64, 32]>"


def _journal(tmp_path: Path, *launches: list[list[Any]]) -> list[dict[str, Any]]:
    src = tmp_path / "tiles.py"
    src.write_text(KERNEL)
    records: list[dict[str, Any]] = [
        {"type": "header", "format_version": 1, "kind": "ktriage-record-journal", "argv": ["prog.py"]},
        {"type": "host", "triton": "3.6.0", "target": "sm_90"},
        {
            "type": "kernel",
            "id": "K0",
            "kind": "jit",
            "function": "copy_tile",
            "module": "tiles",
            "original_module": "tiles",
            "file": str(src),
            "snapshot": {"files": {"tiles.py": KERNEL}, "notes": []},
            "package": None,
        },
    ]
    for n, args in enumerate(launches):
        records.append({"type": "launch", "id": f"L{n}", "kernel": "K0", "args": args, "options": {}, "grid": [64, 64]})
    return records


def test_a_recorded_descriptor_becomes_the_jit_s_type_and_bench_says_why_it_cannot_replay(tmp_path: Path) -> None:
    args = [["in_desc", DESC], ["out_desc", {**DESC, "padding": "nan"}], ["BLOCK_M", 64], ["BLOCK_N", 32]]
    records = _journal(tmp_path, args)
    view = {"signature": {"in_desc": TYPE, "out_desc": TYPE, "BLOCK_M": "constexpr", "BLOCK_N": "constexpr"}}
    records.append({"type": "jit_compile", "launch": "L0", "view": {**view, "divisible": []}})
    workload = compact(records)
    assert not workload.not_captured, workload.not_captured
    ((kernel),) = workload.kernels
    ((inp),) = kernel.inputs
    assert inp.spec.signature == view["signature"]
    assert inp.spec.constexprs == {"BLOCK_M": 64, "BLOCK_N": 32}
    assert inp.spec.divisible_by_16 == ()  # nothing of a descriptor is specialized
    assert inp.jit_check == "same"
    assert dict(inp.args)["out_desc"]["padding"] == "nan"  # kept as recorded
    assert inp.label.startswith("in_desc=4096x2048,out_desc=4096x2048")
    assert short_label(inp.args, inp.spec.signature) == "4096x2048"  # a bundle entry's label (was "no args")
    ((blocker),) = bench_blockers(workload)
    assert blocker.why.startswith(
        "argument in_desc cannot be benched: it is a host-side tensor descriptor (TMA), and ktriage's runner cannot "
        "fill a CUtensorMap"
    )


def test_a_damaged_descriptor_loses_its_launch_only_with_the_cause(tmp_path: Path) -> None:
    good = [["in_desc", DESC], ["out_desc", DESC], ["BLOCK_M", 64], ["BLOCK_N", 32]]
    damaged = [["in_desc", {**DESC, "block_shape": "64x32"}], ["out_desc", DESC], ["BLOCK_M", 128], ["BLOCK_N", 32]]
    padded = [["in_desc", {**DESC, "padding": "inf"}], ["out_desc", DESC], ["BLOCK_M", 64], ["BLOCK_N", 64]]
    workload = compact(_journal(tmp_path, good, damaged, padded))
    assert [len(k.inputs) for k in workload.kernels] == [1]
    whys = [n.why for n in workload.not_captured]
    assert len(whys) == 2
    assert "lacks a shape, strides or block_shape of integers" in whys[0]
    assert "has padding 'inf'" in whys[1]
