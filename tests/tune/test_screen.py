"""`ktriage tune`: config space, compile-only screening with the real Triton 3.4.0 toolchain (the CI
acceptance on Liger layer_norm backward, N=4608, sm_90), nearest_spill_free and the tune bundle (the
command: tests/cli/test_tune.py); the GPU winner is read from named fake cells (no GPU in CI)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ktriage.catalog import expand_op
from ktriage.errors import KtriageError
from ktriage.measure.cells import Cell, CellKey
from ktriage.predict.model import PARAMS_FILE, Params, load_params
from ktriage.spec.model import KernelSpec
from ktriage.tune.gpu import DEFAULT_VARIANT, TuneBundle, pick_winner, write_tune_bundle
from ktriage.tune.screen import screen
from ktriage.tune.space import TuneConfig, apply_config, config_space
from ktriage.tune.suggest import distance, nearest_spill_free
from tests.red_spec import red_spec as _red_spec


@pytest.fixture(scope="module")
def ln_spec() -> KernelSpec:
    return expand_op("liger.layer_norm", mode="bwd", inputs=["N=4608"])[0]


# --------------------------------------------------------------------- space (pure)
def test_layer_norm_block_must_cover_the_row(ln_spec):
    space = config_space(ln_spec)
    knob = space.knob("BLOCK_SIZE")
    assert knob is not None and min(knob.values) == 8192 and "next_power_of_2(N=4608) = 8192" in knob.why
    assert space.default == TuneConfig.of(4, 3, {"BLOCK_SIZE": 8192})
    assert space.warps == (1, 2, 4, 8, 16, 32) and space.stages == (1, 2, 3, 4)
    with pytest.raises(KtriageError, match="outside the allowed values"):
        config_space(ln_spec, blocks={"BLOCK_SIZE": [4096]})


def test_inductor_style_blocks_and_grid_follow_xblock():
    space = config_space(_red_spec())
    x, r = space.knob("XBLOCK"), space.knob("RBLOCK")
    assert x and r and x.grid_axis == 0 and r.reduction and not x.reduction
    assert 64 in x.values and 256 in r.values and all(v & (v - 1) == 0 for v in x.values + r.values)
    spec = apply_config(space.spec, TuneConfig.of(8, 2, {"XBLOCK": 32, "RBLOCK": 128}), space.knobs)
    assert spec.grid == (2048,) and spec.num_warps == 8 and spec.num_stages == 2 and spec.constexprs["RBLOCK"] == 128


def test_meta_tune_declares_blocks_and_rejects_bad_values():
    spec = _red_spec().replace(meta={"tune": {"RBLOCK": [32, 64]}})
    assert config_space(spec).knob("RBLOCK").values == (32, 64)  # type: ignore[union-attr]
    with pytest.raises(KtriageError, match="not a constexpr"):
        config_space(_red_spec().replace(meta={"tune": {"xnumel": [1]}}))
    with pytest.raises(KtriageError, match="num_warps"):
        config_space(_red_spec(), warps=[64])


def test_distance_counts_doublings():
    a = TuneConfig.of(4, 3, {"B": 256})
    assert distance(TuneConfig.of(8, 3, {"B": 256}), a) == 1
    assert distance(TuneConfig.of(4, 2, {"B": 64}), a) == 3


# --------------------------------------------------------------------- real compiles (CI acceptance)
@pytest.mark.slow
def test_layer_norm_bwd_compile_only_recommends_spill_free(ln_spec, toolchain, shared_compiler):
    """Triton 3.4.0, N=4608, sm_90: the library's config spills 3712 B; tune recommends no spills."""
    space = config_space(ln_spec, warps=[2, 4, 8, 16, 32], stages=[1, 3])
    result = screen(space, toolchain("triton==3.4.0"), shared_compiler, top_k=3)
    default = result.default
    assert default.resources is not None and default.resources.spill_store_bytes == 3712
    assert default.status == "dropped" and "spills 3712 B" in default.reason
    rec = result.recommended
    assert rec is not None and rec.resources is not None and rec.occupancy is not None
    assert rec.resources.spill_store_bytes == 0 and rec.resources.spill_load_bytes == 0
    assert rec.config.blocks["BLOCK_SIZE"] >= 8192  # the correctness constraint held
    assert rec.occupancy.ctas_per_sm >= 1 and rec.estimate and rec.estimate.waves == 1
    kept = result.kept
    assert 1 <= len(kept) <= 3 and all(c.spill_store_bytes == 0 for c in kept)
    assert all(c.reason for c in result.candidates)
    # num_stages changes nothing in this kernel: twins are dropped as duplicates, not timed twice.
    assert any("same cubin" in c.reason for c in result.candidates)


@pytest.mark.slow
def test_screening_prices_waves_for_the_specs_own_sm_count(toolchain, shared_compiler):
    """Without --sm-count, a spec that carries its SM count (a workload recorded on a GPU of 8 SMs, a spec
    file's [kernel.meta]) is priced for it, as explain prices it (ktriage.spec.sms); the screening used
    the target's usual part (132) whatever the spec said. --sm-count still wins."""
    tc = toolchain("triton==3.4.0")

    def waves(spec: KernelSpec, sm_count: int | None = None) -> int:
        space = config_space(spec)
        (cand,) = screen(
            space, tc, shared_compiler, configs=[space.default], sm_count=sm_count, staged=False
        ).candidates
        assert cand.estimate is not None
        return cand.estimate.waves

    usual = waves(_red_spec())
    small = _red_spec().replace(meta={"sm_count": 8})
    assert waves(small) > usual and waves(small) == waves(_red_spec(), sm_count=8)
    assert waves(small, sm_count=132) == usual


@pytest.mark.slow
def test_nearest_spill_free_for_layer_norm(ln_spec, toolchain, shared_compiler):
    tc = toolchain("triton==3.4.0")
    space = config_space(ln_spec, warps=[2, 4, 8, 16], stages=[3])
    sug = nearest_spill_free(ln_spec, tc, shared_compiler, space=space)
    assert sug is not None and sug.spill_store_bytes_before == 3712 and sug.spill_store_bytes_after == 0
    assert sug.changes() == {"num_warps": (4, 8)} and sug.distance == 1
    assert "num_warps 4 -> 8 removes the spills" in sug.sentence
    # A config that does not spill needs no fix.
    assert nearest_spill_free(sug.spec, tc, shared_compiler, space=config_space(sug.spec, stages=[3])) is None


# red at 64x256 spills at 4 warps; with RBLOCK held, three spill-free configs are estimated within 1 %
# (XBLOCK=32, 8 warps at XBLOCK=64, both): a tie under the shipped model's +-3.4 %
RED_SPILLING = _red_spec("red[64x256]", divisible_by_16=("in_ptr", "out_ptr", "xnumel", "rnumel"))


def _model(**changes: float) -> Params:
    """The shipped fit with ``changes``: another calibration's parameters, as a model file would give them."""
    return replace(load_params(PARAMS_FILE), **changes)


@pytest.mark.slow
def test_the_screening_prices_and_ties_with_the_model_given(toolchain, shared_compiler):
    """``screen(params=...)``: the estimates and the tie tolerance are the given model's. The screening
    priced with the default model whatever model explain's fix search or tune was given: a model whose
    interval is 0 tells the three configs apart (none tied, ranked by estimate), one that weighs a round of
    global loads 10x prices every config higher, and the report states the tolerance of the model used."""
    from ktriage.report.tune import to_json

    tc = toolchain("triton==3.4.0")
    space = config_space(RED_SPILLING, warps=[4, 8], blocks={"XBLOCK": [32, 64], "RBLOCK": [256]}, stages=[3])

    def run(params: Params) -> Any:
        return screen(space, tc, shared_compiler, top_k=3, staged=False, params=params)

    shipped, sharp, heavy = run(_model()), run(_model(interval_a=0.0)), run(_model(lambda_global=2285.0))
    assert [c.tied for c in shipped.kept] == [True] * 3 and "within the model's ±3.4%" in shipped.kept[0].reason
    assert not any(c.tied for c in sharp.kept) and "tied" not in sharp.kept[0].reason
    estimates = [c.estimate.estimate_us for c in sharp.kept]  # type: ignore[union-attr]
    assert estimates == sorted(estimates)
    assert to_json(shipped)["tie_tolerance"] == pytest.approx(0.0339, abs=1e-4) and to_json(sharp)["tie_tolerance"] == 0
    by_config = {c.config: c.estimate.estimate_us for c in shipped.kept}  # type: ignore[union-attr]
    assert all(c.estimate.estimate_us > 1.04 * by_config[c.config] for c in heavy.kept)  # type: ignore[union-attr]


@pytest.mark.slow
def test_tune_bundle_holds_candidates_as_variants(ln_spec, toolchain, shared_compiler, tmp_path):
    from ktriage.workload.bundles.format import load_bundle

    tc = toolchain("triton==3.4.0")
    result = screen(config_space(ln_spec, warps=[4, 8, 16], stages=[3]), tc, shared_compiler, top_k=2)
    tb = write_tune_bundle(result, tmp_path / "b", shared_compiler)
    bundle = load_bundle(tmp_path / "b")  # hashes and ABI checked
    assert tb.variants[tc.id] == DEFAULT_VARIANT and len(tb.variants) == 3
    key = bundle.kernel_key("liger_layer_norm", 7, "bwd")
    warps = {bundle.artifact(key, vid).launch["num_warps"] for vid in tb.variants}  # type: ignore[union-attr]
    assert warps == {4, 8, 16}
    cmd = tb.bench_command(5, tmp_path / "r.json")
    assert cmd[:4] == ["ktriage", "bench", "--bundle", str(tmp_path / "b")] and "--bwd" in cmd


@pytest.mark.slow
def test_tune_again_in_its_bundle_folder_leaves_no_cubin_of_the_configs_it_dropped(
    ln_spec, toolchain, shared_compiler, tmp_path
):
    """``ktriage tune`` again with other configs into the same --bundle folder left the dropped configs'
    cubins in cubins/, referenced by nothing, and the copy to the GPU host carried them (``bench
    --compile-only`` removed its own; every bundle writer now does, through one function)."""
    from ktriage.workload.bundles.format import BundleArtifact, load_bundle

    tc = toolchain("triton==3.4.0")
    folder = tmp_path / "b"
    first = screen(config_space(ln_spec, warps=[4, 8, 16], stages=[3]), tc, shared_compiler, top_k=2)
    write_tune_bundle(first, folder, shared_compiler)
    old = {p.name for p in (folder / "cubins").iterdir()}
    again = screen(config_space(ln_spec, warps=[4, 8, 16], stages=[2]), tc, shared_compiler, top_k=1)
    tb = write_tune_bundle(again, folder, shared_compiler)
    bundle = load_bundle(folder)  # hashes and ABI checked: every cubin it references is there
    used = {a.cubin_path.name for a in bundle.artifacts.values() if isinstance(a, BundleArtifact)}
    left = {p.name for p in (folder / "cubins").iterdir()}
    assert set(bundle.toolchains) == set(tb.variants)
    assert left == used, sorted(left - used)
    assert old - used  # the first tune's configs are not the second's


def test_tune_bundle_refuses_specs_without_workload(toolchain):
    from ktriage.tune.gpu import bench_target
    from ktriage.tune.screen import ScreenResult

    space = config_space(_red_spec())
    with pytest.raises(KtriageError, match="no bench workload"):
        bench_target(ScreenResult(space, None, [], 0, 1))  # type: ignore[arg-type]


def test_untimed_tune_says_why_with_or_without_a_fix(tmp_path, monkeypatch):
    """When the tune bundle cannot be written, `ktriage tune` says why and goes on untimed: the
    error's fix is shown in parentheses when it has one, and an error without a fix (fix=None) is
    reported too instead of failing while printing it."""
    import io

    from rich.console import Console

    import ktriage.tune.gpu
    from ktriage.cli.tune_cmd import print_notes
    from ktriage.tune.screen import ScreenResult
    from ktriage.tune.timing_run import time_candidates

    notes: list[tuple[str, str]] = []

    def time_on_gpu(console: Console) -> list[Any]:
        run = time_candidates(results, None, bundle=tmp_path / "b", budget=1.0, results_file=None, sm_count=None)
        print_notes(run.notes, console)
        notes[:] = run.notes
        return list(run.timings)

    results = [ScreenResult(config_space(_red_spec()), None, [], 0, 1)]  # type: ignore[arg-type]
    out = io.StringIO()
    console = Console(file=out, width=400)
    timings = time_on_gpu(console)
    assert timings == [{"timed": False, "why": "red has no bench workload, so its candidates cannot be timed on a GPU"}]
    assert (
        out.getvalue().startswith("not timed: red has no bench workload")
        and "(use --compile-only, or tune a catalog op" in out.getvalue()  # the command's flag, on the command line
    )
    assert "(use compile_only=True (--compile-only)" in notes[0][1]  # kt.tune's report.notes: the keyword too

    def fails_without_fix(*_args: object, **_kw: object) -> None:
        raise KtriageError("the bundle directory is not writable")

    monkeypatch.setattr(ktriage.tune.gpu, "write_tune_bundles", fails_without_fix)
    out.truncate(0)
    out.seek(0)
    timings = time_on_gpu(console)
    assert timings == [{"timed": False, "why": "the bundle directory is not writable"}]
    assert out.getvalue() == "not timed: the bundle directory is not writable\n"


def _fake_cell(tc: str, samples: list[float], status: str = "ok", passed: bool = True) -> Cell:
    key = CellKey("layer_norm", "bwd", 7, "4608", "liger_layer_norm", tc)
    return Cell(key, status, samples, accuracy={"passed": passed})  # type: ignore[arg-type]


def test_pick_winner_from_fake_bench_cells():
    """Named fake: bench cells as `ktriage bench --bundle` would store them for a tune bundle."""
    tb = TuneBundle(
        Path("b"),
        "layer_norm",
        "bwd",
        "liger_layer_norm",
        7,
        {"tc": DEFAULT_VARIANT, "tc+tune1": "warps=8", "tc+tune2": "warps=16", "tc+tune3": "warps=32"},
    )
    cells = [
        _fake_cell("tc", [0.40, 0.42, 0.41]),
        _fake_cell("tc+tune1", [0.10, 0.11, 0.10]),
        _fake_cell("tc+tune2", [0.05, 0.05], passed=False),
        _fake_cell("tc+tune3", [], status="error"),
        Cell(CellKey("layer_norm", "bwd", 7, "4608", "torch_layer_norm"), "ok", [0.2]),
    ]
    timed = pick_winner(cells, tb)
    assert timed.winner == "warps=8" and timed.speedup_over_default == pytest.approx(0.41 / 0.10)
    assert set(timed.failed) == {"warps=16", "warps=32"}  # a wrong result never wins


def test_pick_winner_reads_one_input_of_a_merged_run_with_its_baselines():
    """Named fake: a merged tune bundle's bench run holds every input; each input's tune report
    reads its own cells, and the compare-with toolchain and the native baseline are reported."""
    tb = TuneBundle(
        Path("b"),
        "layer_norm",
        "bwd",
        "liger_layer_norm",
        7,
        {"tc": DEFAULT_VARIANT, "tc+tune1": "warps=8"},
        native="torch_layer_norm",
        compare_with={"old": "triton==3.3.1"},
    )
    other = CellKey("layer_norm", "bwd", 8, "5120", "liger_layer_norm", "tc+tune1")
    cells = [
        _fake_cell("tc", [0.75, 0.76]),
        _fake_cell("tc+tune1", [0.12, 0.12]),
        _fake_cell("old", [0.127, 0.128]),
        Cell(other, "ok", [0.01]),
        Cell(CellKey("layer_norm", "bwd", 7, "4608", "torch_layer_norm"), "ok", [0.154]),
    ]  # type: ignore[arg-type]
    timed = pick_winner(cells, tb).to_json()
    assert timed["winner"] == "warps=8" and timed["medians_ms"]["warps=8"] == pytest.approx(0.12)
    assert timed["baselines_ms"] == {"triton==3.3.1": pytest.approx(0.1275), "torch_layer_norm": pytest.approx(0.154)}
    assert timed["winner_vs_baselines"]["torch_layer_norm"] == pytest.approx(0.154 / 0.12, rel=1e-3)
    cmd = tb.bench_command(5, Path("r.json"))
    assert "liger_layer_norm,torch_layer_norm" in cmd and cmd[cmd.index("--artifact-timing") + 1] == "kernel"
    assert "--artifacts-only" not in cmd  # a no-op since the host copy is off by default: printed, it misleads


def test_a_merged_bundle_numbers_each_config_once_across_inputs():
    """Named fake: screenings of two inputs that rank the same configs in another order (only ``kept``
    and each candidate's ``config`` are read). Each part numbered its own ranks, so ``+tune1`` was
    8 warps in one input and 16 in the other; one number is now one config in every input."""
    from types import SimpleNamespace

    from ktriage.tune.gpu import config_numbering
    from ktriage.tune.space import TuneConfig

    w4, w8, w16, w32 = (TuneConfig.of(w, 3, {"BLOCK_SIZE": 8192}) for w in (4, 8, 16, 32))

    def kept(*configs: TuneConfig) -> list[SimpleNamespace]:
        return [SimpleNamespace(config=c, is_default=c == w4) for c in configs]

    fake_screenings = [SimpleNamespace(kept=kept(w4, w8, w16)), SimpleNamespace(kept=kept(w16, w32, w4, w8))]
    # the library's config (4 warps here), the bundle's reference, is numbered in neither input
    assert config_numbering(fake_screenings) == {w8: 1, w16: 2, w32: 3}  # type: ignore[arg-type]


def test_a_config_reads_back_from_its_record_and_its_label():
    """The two ways a results file names a tuned variant's config: the record ktriage writes now and
    the label every bench wrote; anything else is no config (then the reader falls back on rank)."""
    from ktriage.tune.space import TuneConfig

    cfg = TuneConfig.of(8, 3, {"BLOCK_SIZE": 8192})
    assert TuneConfig.from_json(cfg.to_json()) == cfg == TuneConfig.from_label(cfg.label())
    assert TuneConfig.from_label("BLOCK_SIZE=8192,warps=8") is None and TuneConfig.from_label("fix: relaxed") is None
    assert TuneConfig.from_json({"num_warps": "8", "num_stages": 3}) is None


def test_a_recorded_kernel_is_told_how_to_tune_it_from_python_too(tmp_path: Path) -> None:
    """Timing a recorded kernel whose workload file is not known, or several recorded inputs at once, was
    told only the command: "tune it as `ktriage tune W.json --input ...`", "(--input ...)". Both are
    refused before anything is built (no toolchain: None), and now name kt.tune's keywords too."""
    from ktriage.tune.gpu import write_tune_bundles
    from ktriage.tune.screen import ScreenResult

    recorded = _red_spec().replace(meta={"recorded": True, "workload_kernel": "red", "input_id": 0})
    result = ScreenResult(config_space(recorded), None, [], 0, 1)  # type: ignore[arg-type]
    with pytest.raises(KtriageError) as unknown:
        write_tune_bundle(result, tmp_path / "b", None)
    assert unknown.value.fix == (
        "tune it with the workload file as the target: kt.tune(target='W.json', inputs=[...]) "
        "(`ktriage tune W.json --input ...`)"
    )
    with pytest.raises(KtriageError) as several:
        write_tune_bundles([result, result], tmp_path / "b", None)
    assert several.value.fix == "tune one recorded input at a time: one item in inputs (--input)"
    assert not (tmp_path / "b").exists()
