"""The ncu CSV parser and the profile diff, on real ncu output committed from the H200
(benchmarks/profile/h200: ncu 2025.3.1, `--page raw --csv --print-units base`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ktriage.profile.diff import document, to_markdown
from ktriage.profile.ncu import parse_raw_csv, summarize

H200 = Path(__file__).resolve().parents[2] / "benchmarks" / "profile" / "h200"
LN = H200 / "layer_norm_bwd_N4608"
EMB = H200 / "embedding_bwd_input0"
LN_REF, LN_NEW = "triton-3.3.1.ptxas-12.4.99.0c9a828e", "triton-3.4.0.ptxas-12.8.93.da4345e0"
EMB_REF, EMB_NEW = "triton-3.4.0.ptxas-12.4.131.c2c07d18", "triton-3.4.0.ptxas-12.8.93.da4345e0"


def _launches(folder: Path, tc: str) -> list:
    return parse_raw_csv((folder / f"{tc}.raw.csv").read_text())


def test_raw_csv_layer_norm_spills() -> None:
    ref, new = _launches(LN, LN_REF), _launches(LN, LN_NEW)
    assert [x.kernel_name for x in ref] == ["_layer_norm_backward_kernel"] == [x.kernel_name for x in new]
    a, b = summarize(ref[0]), summarize(new[0])
    assert (a["registers_per_thread"], b["registers_per_thread"]) == (255.0, 32.0)
    assert b["local_ld_sectors"] == 52_760_320 and b["local_st_sectors"] == 40_136_704
    assert a["local_share_of_l1_sectors_pct"] == pytest.approx(53.0, abs=0.1)
    assert b["local_share_of_l1_sectors_pct"] == pytest.approx(90.6, abs=0.1)
    assert b["dram_bytes"] > 3.5 * a["dram_bytes"]
    assert b["duration_ns"] > 5 * a["duration_ns"]
    assert b["theoretical_occupancy_pct"] == 100.0 and a["theoretical_occupancy_pct"] == 12.5
    assert b["occupancy_limiter"].startswith("grid (132 CTAs on 132 SMs")  # achieved 6 %: one CTA per SM
    assert max(b["stall_share_pct"], key=b["stall_share_pct"].get) == "long_scoreboard"
    assert ref[0].units["gpu__time_duration.sum"] == "ns"


def test_raw_csv_embedding_atomics() -> None:
    a, b = summarize(_launches(EMB, EMB_REF)[0]), summarize(_launches(EMB, EMB_NEW)[0])
    assert (a["global_red_requests"], a["global_atom_requests"]) == (98_304, 0)
    assert (b["global_red_requests"], b["global_atom_requests"]) == (0, 98_304)
    assert a["local_share_of_l1_sectors_pct"] == 0.0
    assert b["stall_share_pct"]["long_scoreboard"] - a["stall_share_pct"]["long_scoreboard"] > 30
    assert a["occupancy_limiter"] == "registers"


def test_document_ties_counters_to_compile_side() -> None:
    profiles = [{"toolchain": tc, "launches": _launches(EMB, tc), "error": None} for tc in (EMB_REF, EMB_NEW)]
    compile_side = {
        EMB_REF: {"spill_store_bytes": 0, "registers": 234, "sass_opcodes": {"REDG": 32, "MEMBAR": 64}},
        EMB_NEW: {"spill_store_bytes": 0, "registers": 234, "sass_opcodes": {"ATOMG": 32, "CCTL": 32, "MEMBAR": 32}},
    }
    doc = document(
        op="embedding",
        mode="bwd",
        input_id=0,
        backend="liger_embedding",
        reference=EMB_REF,
        profiles=profiles,
        compile_side=compile_side,
        ncu_version="2025.3.1",
    )
    (finding,) = doc["findings"]
    assert "ATOMG 0->32" in finding and "REDG 32->0" in finding
    assert "global atomic requests 0 -> 98,304" in finding and "stall 'long_scoreboard' +39 points" in finding
    assert doc["diffs"][0]["deltas"]["duration_ns"]["ratio"] == pytest.approx(72640 / 51808)
    assert "| global_atom_requests |" in to_markdown(doc)


def test_unavailable_toolchain_is_one_line_and_the_rest_go_on() -> None:
    profiles = [
        {"toolchain": LN_REF, "launches": _launches(LN, LN_REF), "error": None},
        {"toolchain": LN_NEW, "launches": [], "error": "ncu has no permission to the GPU performance counters"},
    ]
    doc = document(
        op="layer_norm",
        mode="bwd",
        input_id=7,
        backend="liger_layer_norm",
        reference=LN_REF,
        profiles=profiles,
        compile_side={},
        ncu_version=None,
    )
    assert doc["notes"] == [f"{LN_NEW}: ncu has no permission to the GPU performance counters"]
    assert doc["toolchains"][LN_NEW]["status"] == "unavailable" and doc["findings"] == []


def test_parser_handles_units_row_thousands_and_prof_lines() -> None:
    text = (
        '==PROF== Connected\n"ID","Process ID","Kernel Name","Grid Size","gpu__time_duration.sum","x"\n'
        '"","","","","ns",""\n"0","1","k<script>","(2, 1, 1)","1,234.5","n/a"\n'
    )
    (launch,) = parse_raw_csv(text)
    assert launch.kernel_name == "k<script>" and launch.number("gpu__time_duration.sum") == 1234.5
    assert launch.metrics["x"] == "n/a" and launch.units == {"gpu__time_duration.sum": "ns"}
    with pytest.raises(ValueError):
        parse_raw_csv('"a","b"\n"1","2"\n')


def test_every_summary_metric_is_in_the_real_export() -> None:
    """The names of ncu.SCALARS are those ncu 2025.3 writes on the H200 (a typo would read nothing)."""
    from ktriage.profile.ncu import SCALARS

    (launch,) = _launches(LN, LN_REF)
    assert [m for m in SCALARS.values() if launch.number(m) is None] == []
