"""`SassLoop.load_waits`: the dependent round trips to global memory one loop iteration makes.

Real SASS (tests/analyze/data/README.md): TritonBench's `_layer_norm_bwd_dwdb` issues the same 16
`LDG.E.128` an iteration with Triton 3.3.1 and 3.6.0, but 3.6.0 consumes them sooner, so it waits on
them 13 times an iteration against 8 (1.4x slower measured on an H200 where the loop is latency-bound).
Plus small hand-written listings for the counting rule itself (pure logic).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ktriage.analyze.sass import parse_instruction, parse_sass
from ktriage.analyze.sass_loops import SassLoop, find_loops, load_waits

DATA = Path(__file__).resolve().parent / "data"


def _main_loop(name: str) -> SassLoop:
    fn = parse_sass((DATA / name).read_text())["_layer_norm_bwd_dwdb"]
    loops = find_loops(fn)
    assert loops and loops[0].main
    return loops[0]


@pytest.mark.parametrize(("version", "instructions", "waits"), [("331", 181, 8), ("360", 161, 13)])
def test_layer_norm_bwd_dwdb_waits_per_iteration(version: str, instructions: int, waits: int) -> None:
    loop = _main_loop(f"layer_norm_bwd_dwdb.{version}.sass")
    assert loop.innermost
    assert loop.instructions == instructions
    assert loop.opcodes["LDG"] == 16  # the same loads with both toolchains: only their order differs
    assert loop.load_waits == waits


def test_load_waits_round_trips_through_json() -> None:
    loop = _main_loop("layer_norm_bwd_dwdb.360.sass")
    assert SassLoop.from_json(loop.to_json()).load_waits == 13
    old = loop.to_json()
    del old["load_waits"]  # a report of a ktriage that did not count them
    assert SassLoop.from_json(old).load_waits is None


def _body(*lines: str) -> list:
    return [parse_instruction(0x10 * i, text) for i, text in enumerate(lines)]


def test_independent_loads_are_one_round_trip() -> None:
    body = _body(
        "LDG.E.128 R4, desc[UR4][R2.64]",
        "LDG.E.128 R8, desc[UR4][R2.64+0x10]",
        "FADD R12, R4, R8",  # waits for both: one round trip
        "FADD R13, R5, R9",  # already returned
    )
    assert load_waits(body) == 1


def test_a_load_consumed_before_the_next_is_issued_is_its_own_round_trip() -> None:
    body = _body(
        "LDG.E R4, desc[UR4][R2.64]",
        "FADD R12, R12, R4",
        "LDG.E R5, desc[UR4][R2.64+0x4]",
        "FADD R12, R12, R5",
        "LDL R6, [R1]",  # a spill reload: priced by the model on its own, not a global round trip
        "FADD R12, R12, R6",
    )
    assert load_waits(body) == 2


def test_a_wide_register_read_and_a_store_of_loaded_data_wait() -> None:
    body = _body(
        "LDG.E.64 R4, desc[UR4][R2.64]",
        "IADD3 R20, R20, 0x1, RZ",  # reads nothing loaded
        "STG.E.64 desc[UR4][R6.64], R4",  # stores the loaded pair: waits
        "LD.E R8, [R10.64]",
        "DADD R14, R8.64, R14",  # R8.64 reads R8 and R9: waits
        "UIADD3 UR4, UR4, 0x1, URZ",  # uniform registers are not R registers
    )
    assert load_waits(body) == 2
