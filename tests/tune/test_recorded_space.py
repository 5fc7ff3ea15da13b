"""A recorded @triton.autotune kernel is tuned over its own config list, with the problem size it ran at.

The workload is the H200 recording of benchmarks/record/programs/autotuned_matmul.py (six configs,
M = N = K = 4096); nothing is compiled here: the space and the grid are pure logic.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ktriage.record.workload import load_workload
from ktriage.tune.space import TuneConfig, config_space

WORKLOAD = Path(__file__).resolve().parents[2] / "benchmarks" / "record" / "h200b" / "autotuned_matmul.workload.json.gz"


def _spec():
    workload = load_workload(WORKLOAD)
    return next(i.spec for k in workload.kernels for i in k.inputs if i.spec.meta["shape"]["M"] == 4096)


def test_the_launch_scalars_are_the_problem_size() -> None:
    spec = _spec()
    assert {k: spec.meta["shape"][k] for k in "MNK"} == {"M": 4096, "N": 4096, "K": 4096}
    assert len(spec.meta["autotune_configs"]) == 6


def test_the_space_is_the_autotuners_list_with_its_choice_first() -> None:
    spec = _spec()
    space = config_space(spec)
    configs = space.configs()
    assert configs[0] == space.default == TuneConfig.of(8, 3, {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64})
    assert len(configs) == 6 and len(set(configs)) == 6
    assert TuneConfig.of(4, 4, {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32}) in configs
    # the grid follows the blocks: cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N), checked against the recorded one
    assert space.apply(configs[0]).grid == (512,)
    assert space.apply(TuneConfig.of(4, 4, {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32})).grid == (64 * 32,)


def test_narrowing_options_search_a_product_instead() -> None:
    space = config_space(_spec(), warps=[4, 8])
    assert not space.listed and {c.num_warps for c in space.configs()} == {4, 8}


DYT = (
    Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "h200" / "workloads" / "liger_dyt.workload.json.gz"
)


def test_a_recorded_grid_axis_that_is_cdiv_of_a_size_by_a_block_follows_the_block() -> None:
    """Liger 0.8.5's dyt bwd launches ``(cdiv(N, BLOCK_N), NUM_SMS)``, recorded on the H200 as (4, 132)
    at BLOCK_N=1024. The space kept (4, 132) for every config of the autotune list, so BLOCK_N=2048
    and 4096 were estimated on 2x and 4x the work of the launch they stand for and ranked far below
    1024 (13.8 and 28.5 us against 7.3). The first axis now follows BLOCK_N; the SM axis stays."""
    spec = next(
        i.spec for k in load_workload(DYT).kernels for i in k.inputs if i.spec.meta["function"] == "_dyt_bwd_kernel"
    )
    assert spec.grid == (4, 132) and spec.constexprs["N"] == 4096 and spec.constexprs["BLOCK_N"] == 1024
    space = config_space(spec)
    assert space.listed
    grids = {c.blocks["BLOCK_N"]: space.apply(c).grid for c in space.configs()}
    assert grids == {1024: (4, 132), 2048: (2, 132), 4096: (1, 132)}


def test_a_recorded_grid_axis_explained_two_ways_stays_as_recorded() -> None:
    """An axis that two sizes of the launch explain (4 = cdiv(4096, 1024) = cdiv(3500, 1024); at
    BLOCK_N=512 they part, 8 against 7) follows neither: a coincidence must not move the grid."""
    spec = next(
        i.spec for k in load_workload(DYT).kernels for i in k.inputs if i.spec.meta["function"] == "_dyt_bwd_kernel"
    )
    meta = dict(spec.meta)
    meta["shape"] = {**meta["shape"], "S": 3500}
    space = config_space(spec.replace(meta=meta))
    assert {space.apply(c).grid for c in space.configs()} == {(4, 132)}


@pytest.mark.slow
def test_tune_bundles_a_recorded_kernel_with_its_timeable_candidates(
    tmp_path: Path, run_cli: Any, toolchain: Any
) -> None:
    """Without a GPU, `tune W.json --input ...` writes a recorded bundle of the tuned input: the
    library's config as the reference and each kept candidate with the recorded grid as a variant
    (the recorded bench replays them on the recorded arguments and checks their results against
    the reference); candidates with another grid are listed as not timed. The winner is read from
    a results file of that bench (FAKE samples here, keyed as the recorded bench keys them)."""
    from ktriage.measure.cells import Cell, CellKey
    from ktriage.tune.gpu import TuneBundle, pick_winner

    toolchain("triton==3.6.0")
    out = tmp_path / "tb"
    result = run_cli(
        ["tune", str(WORKLOAD), "-t", "triton==3.6.0", "--input", "M=4096", "--bundle", str(out), "-f", "json"]
    )
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["mode"] == "recorded"
    tune = manifest["tune"]
    (tuned,) = [t for t in tune["variants"] if t.endswith("+tune1")]
    assert tune["variants"][tuned] == "BLOCK_K=32,BLOCK_M=128,BLOCK_N=256,warps=8,stages=4"  # same grid as 128x256x64
    assert tune["not_timed"] and all("grid" in why for _, why in tune["not_timed"])
    assert "ktriage bench --bundle" in result.err_text.replace("\n", " ")
    tb = TuneBundle(out, tune["op"], tune["mode"], tune["backend"], tune["input_id"], tune["variants"])
    fake = [
        Cell(
            CellKey(tb.op, tb.mode, tb.input_id, "x", tb.backend, tc),
            "ok",
            [ms] * 10,
            accuracy={"agreement": "within tolerance"},
        )
        for tc, ms in zip(tune["variants"], (0.150, 0.140))
    ]
    timed = pick_winner(fake, tb)
    assert timed.winner == "BLOCK_K=32,BLOCK_M=128,BLOCK_N=256,warps=8,stages=4"
    assert timed.speedup_over_default == pytest.approx(0.150 / 0.140)


def test_the_note_names_the_knobs_as_each_reader_passes_them() -> None:
    """The space's note told a user of ``ktriage tune`` that ``warps (--warps), stages (--stages) or blocks
    (--block)`` search a product: the report.notes of ``kt.tune`` name the keyword and the flag, what the
    command prints (``errors.in_flags``) the flag it takes."""
    from ktriage.errors import in_flags

    (note,) = config_space(_spec()).notes
    assert note.endswith("warps (--warps), stages (--stages) or blocks (--block) search a product instead"), note
    assert in_flags(note).endswith("--warps, --stages or --block search a product instead"), in_flags(note)
