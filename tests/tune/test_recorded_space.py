"""A recorded @triton.autotune kernel is tuned over its own config list, with the problem size it ran at.

The workload is the H200 recording of benchmarks/record/programs/autotuned_matmul.py (six configs,
M = N = K = 4096); nothing is compiled here: the space and the grid are pure logic.
"""

from __future__ import annotations

from pathlib import Path

from ktriage.record.workload import load_workload
from ktriage.tune.space import TuneConfig, config_space

WORKLOAD = Path(__file__).resolve().parents[2] / "benchmarks" / "record" / "h200b" / "autotuned_matmul.workload.json"


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
