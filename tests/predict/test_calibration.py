"""The fit reproduces from the committed dataset, the shipped parameters are that fit, and the
leave-one-operator-out verdicts hold where the issue asks (pure numpy on committed data)."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import pytest

from ktriage.predict.calibration import CellResult, RecallBySize, WidthCeiling, calibrate, held_out_groups
from ktriage.predict.dataset import CalibrationCell, read_cells
from ktriage.predict.facts import data_bytes, launch_inputs, tensor_bytes
from ktriage.predict.model import PARAMS_FILE, Params, load_params, predict

CALIBRATION = Path(__file__).resolve().parents[2] / "benchmarks" / "calibration"


@lru_cache(maxsize=1)
def _committed() -> tuple[CalibrationCell, ...]:
    return tuple(read_cells(CALIBRATION / "cells.jsonl"))


def _cells(operator: str, kernel_prefix: str, toolchain: str) -> list[CalibrationCell]:
    """The committed cells of one kernel and toolchain (the calibration's real GPU measurements)."""
    return [
        c
        for c in _committed()
        if c.operator == operator and c.kernel.startswith(kernel_prefix) and c.toolchain == toolchain
    ]


@pytest.fixture(scope="module")
def fitted():
    return calibrate(read_cells(CALIBRATION / "cells.jsonl"))


def test_the_fit_reproduces_from_the_committed_data(fitted) -> None:
    committed = json.loads((CALIBRATION / "fit.json").read_text())
    for name in Params.FREE + ("interval_a", "interval_b"):
        assert math.isclose(getattr(fitted.params, name), committed["params"][name], rel_tol=1e-3), name
    assert fitted.scores is not None and fitted.scores.to_json()["matrix"] == committed["cross_validation"]["matrix"]
    assert fitted.params.cv["blind_spots"] == committed["params"]["cv"]["blind_spots"]
    shipped = json.loads(PARAMS_FILE.read_text())["params"]  # the model's default is this fit
    assert all(math.isclose(shipped[k], committed["params"][k], rel_tol=1e-9) for k in Params.FREE)


def test_held_out_operators_keep_their_verdicts(fitted) -> None:
    cv = fitted.cv_cells
    emb = [
        r
        for r in cv
        if r.cell.operator == "liger.embedding.bwd"
        and any(op.startswith("ATOMG") for op in r.cell.new.opcodes)
        and not any(op.startswith("ATOMG") for op in r.cell.ref.opcodes)
    ]
    assert emb and all(r.kind == "regression" for r in emb)  # REDG -> ATOMG+CCTL, never seen in training
    ln = [
        r
        for r in cv
        if r.cell.operator == "liger.layer_norm.bwd"
        and r.cell.toolchain == "triton==3.4.0"
        and r.cell.measured.verdict == "regression"
    ]
    assert ln and all(r.kind == "regression" and r.predicted_ratio > 2.5 for r in ln)  # several times
    # the same change in the corpus replay (tb_embedding_bwd: every index 0, so every atomic hits one row)
    # is held out as the L2's queue, not the returning atomic's wait: not a regression, not an improvement
    replay = [r for r in cv if r.cell.operator == "tb_embedding_bwd" and r.cell.kernel == "embedding_backward_kernel"]
    assert replay and all(r.cell.new.uniform_indices and r.kind == "neutral" for r in replay)


def test_operators_that_launch_a_kernel_of_one_name_are_held_out_together() -> None:
    """Fake operators and kernels on a real cell (pure logic): A and B share k1, B and C share k2, so A, B and C
    are one group, through B; D shares nothing and is held out alone."""
    cell = _committed()[0]
    cells = [
        replace(cell, operator=op, kernel=kernel)
        for op, kernel in (("A", "k1"), ("B", "k1"), ("B", "k2"), ("C", "k2"), ("D", "k3"))
    ]
    assert held_out_groups(cells) == {"A": "A", "B": "A", "C": "A", "D": "D"}


def test_copies_of_a_kernel_under_other_operator_names_are_held_out_with_it(fitted) -> None:
    """The corpus records some programs under several names: TritonBench's jsd fwd and bwd both measure
    ``triton_red_fused_exp_lerp_log_mul_sub_sum_0`` on the same inputs; Liger's ``embedding_backward_kernel`` is the
    catalog's ``liger.embedding.bwd`` and three recordings. Held out one name at a time, the fit that predicted
    ``tb_jsd_fwd`` had its copy ``tb_jsd_bwd`` in its training data. 55 operators, 24 groups."""
    group = {op: s["held_out_with"] for op, s in fitted.per_operator.items()}
    assert group["tb_jsd_fwd"] == group["tb_jsd_bwd"]
    assert group["liger.embedding.bwd"] == group["tb_embedding_bwd_r3"] == group["tb_embedding_bwd"]
    assert group["serving_kernels_r3"] == group["serving_kernels_rerecorded"]
    assert group["tb_sum_fwd"] != group["tb_jsd_fwd"]
    assert len(group) == 55 and fitted.params.cv["groups"] == len(set(group.values())) == 24


def test_held_out_precision_and_recall_floors(fitted) -> None:
    """What the model reaches held out by operator on the 968 committed cells, labeled by the fixed bench
    (issue 24 asks >= 80 % precision AND recall for both kinds: improvement recall NOT met; regression
    99 %/83 % (128 of 155 found), improvement 94 %/50 % (16 of the 17 predicted improvements that measured a
    verdict right, 16 of 32 found), see benchmarks/calibration/README.md). Floors at or a few points under the
    reached values (regression recall at the issue's 80 %), so a change that loses ground fails here."""
    scores = fitted.scores
    assert scores is not None
    assert scores.precision("regression") >= 0.95 and scores.recall("regression") >= 0.8
    assert scores.precision("improvement") >= 0.88 and scores.recall("improvement") >= 0.45


def test_recall_by_size_partitions_each_kind_by_its_measured_change(fitted) -> None:
    """Every measured regression and improvement falls in exactly one size band, the called ones are
    the matrix's, and on the committed corpus both kinds are called alike per band: nothing inside 8 %,
    most above 15 % (the README's reading of the improvement recall)."""
    by_size = RecallBySize.of(fitted.cv_cells, 0.05)
    matrix = fitted.scores.matrix
    for kind in ("regression", "improvement"):
        pairs = by_size.counts[kind]
        assert len(pairs) == 3 and sum(b for _, b in pairs) == sum(matrix[p][kind] for p in matrix)
        assert sum(a for a, _ in pairs) == matrix[kind][kind]
        (small, _), (large, n_large) = pairs[0], pairs[-1]
        assert small == 0 and large >= 0.85 * n_large, pairs
    assert by_size.labels() == ["5%..8%", "8%..15%", "15% and more"]
    assert "| improvement | 0 of 8 (0%) |" in by_size.markdown()


def test_recall_by_size_bands_a_change_by_its_factor_either_way() -> None:
    """A 0.87 improvement is a x1.149 change (8..15 %), a 1.20 regression x1.20 (15 % and more): the band
    is the factor, not the ratio's distance from 1 (pure logic on a committed cell with its measurement
    replaced)."""
    base = _committed()[0]

    def result(ratio: float, verdict: str, called: str) -> CellResult:
        cell = replace(base, measured=replace(base.measured, ratio=ratio, verdict=verdict))
        return CellResult(cell, ratio, ratio, ratio, called)

    rows = [result(0.87, "improvement", "improvement"), result(1.20, "regression", "neutral")]
    rows.append(result(1.06, "regression", "neutral"))
    by_size = RecallBySize.of(rows, 0.05)
    assert by_size.counts["improvement"] == [(0, 0), (1, 1), (0, 0)]
    assert by_size.counts["regression"] == [(0, 1), (0, 0), (0, 1)]


def test_the_width_ceiling_counts_what_an_oracle_calls_at_a_half_width() -> None:
    """A measured 0.94x is 1.3 % beyond the -4.8 % gate (log(0.952/0.94)): an oracle calls it under a 1 %
    half-width and not under 2 %; a 1.20x regression is 13.4 % beyond the +5 % gate. The widest half-width
    for all of them is the nearest one's room (pure logic on committed cells with their measurements replaced)."""
    base = _committed()[0]
    cells = [
        replace(base, measured=replace(base.measured, ratio=r, verdict=v))
        for r, v in ((0.94, "improvement"), (0.80, "improvement"), (1.20, "regression"), (1.00, "same"))
    ]
    narrow, wide = WidthCeiling.of(cells, 0.01, share=1.0), WidthCeiling.of(cells, 0.02, share=1.0)
    assert narrow.called == {"regression": (1, 1), "improvement": (2, 2)}
    assert wide.called == {"regression": (1, 1), "improvement": (1, 2)}
    assert narrow.widest["improvement"] == pytest.approx(math.log(1 / 1.05 / 0.94))
    assert narrow.widest["regression"] == pytest.approx(math.log(1.20 / 1.05))
    # a width growing with the effect leaves the large change less room
    assert WidthCeiling.of(cells, 0.0, width_b=0.5, share=1.0).widest["improvement"] == pytest.approx(
        math.log(1 / 1.05 / 0.94) - 0.5 * abs(math.log(0.94))
    )


def test_on_the_corpus_the_width_alone_keeps_improvement_recall_under_the_target(fitted) -> None:
    """At the shipped half-width (3.33 %) an oracle calls 21 of the 32 measured improvements: 11 of the
    model's 16 misses are the width's whatever the points; 80 % needs a half-width under 1.56 %, regressions
    allow 6.9 % (replicate/ceiling.md, the same numbers from the same function)."""
    ceiling = WidthCeiling.of([r.cell for r in fitted.cv_cells], fitted.params.interval_a)
    assert ceiling.called["improvement"] == (21, 32) and ceiling.called["regression"] == (139, 155)
    assert ceiling.widest["improvement"] == pytest.approx(0.0156, abs=5e-4)
    assert ceiling.widest["regression"] == pytest.approx(0.0691, abs=5e-4)
    assert "would call 21 of 32 (66%); 80% needs a half-width under 1.56%" in ceiling.text()


def test_waits_for_the_tensor_cores_are_priced_apart_from_barriers() -> None:
    """Triton 3.3.1's flex attention bwd template waits for its wgmma ops after each HGMMA of its loop
    (24 WARPGROUP ops an iteration, half of them WARPGROUP.DEPBAR), 3.6.0 twice: a real committed cell
    (measured +8..15 % on the H200). The waits are their own aspect, named in the SASS's words, and
    priced at the fitted ``lambda_mma_wait``, not as barriers."""
    cell = _cells("tb_flex_attention_bwd", "triton_tem_fused_flex_attention", "triton==3.3.1")[0]
    p = predict(cell.ref, cell.new)
    waits = next(c for c in p.contributors if c.aspect == "mma_waits")
    assert waits.share > 0.005 and "more WARPGROUP.DEPBAR in the main loop" in waits.text(), p.text()
    free = predict(cell.ref, cell.new, Params.from_json({**load_params().to_json(), "lambda_mma_wait": 0.0}))
    assert free.ratio < p.ratio  # the waits cost something: without their price the change is smaller


def test_a_small_launch_shows_its_latency_path() -> None:
    """TritonBench's inductor cross-entropy reduction runs 2 CTAs (one on each of 2 SMs); Triton 3.3.1 loops
    where 3.6.0 unrolls, with 3 waits an iteration on its loads (real committed cells, measured +8..9 % on the
    H200; ncu: DRAM at 0.1 % of peak, a latency chain). With a wave's fixed cost (``lambda_wave``) on the
    latency path, the launch's latency reaches its bandwidth share and the waits show: a regression. Priced
    without it, the bandwidth share hides them (+6 %, within the interval)."""
    cells = _cells("tb_cross_entropy_fwd", "triton_red_fused__log_softmax_nll_loss", "triton==3.3.1")
    assert len(cells) == 3 and all(c.measured.verdict == "regression" for c in cells)
    params = load_params()
    assert params.lambda_wave > 1000.0
    no_wave_cost = Params.from_json({**params.to_json(), "lambda_wave": 0.0})
    for c in cells:
        assert predict(c.ref, c.new, params).kind == "regression"
        assert predict(c.ref, c.new, no_wave_cost).kind == "neutral"


def test_a_loop_unrolled_further_is_not_priced_as_more_passes() -> None:
    """TritonBench's layer_norm fwd at N=2048 (a real committed cell): each of the kernel's three loops runs
    once, and Triton 3.3.1 unrolls the variance loop 4x further than 3.6.0 (352 B of static loads a thread
    against 256), the extra copies predicated off. Measured +2.5 % (the same); the model priced the copies
    as a second pass (+49 %) while it kept every loop at one iteration or more."""
    cell = next(
        c
        for c in read_cells(CALIBRATION / "cells.jsonl")
        if c.operator == "tb_layer_norm_fwd"
        and c.kernel == "_layer_norm_fwd_fused"
        and c.toolchain == "triton==3.3.1"
        and c.input.startswith("X=4096x2048")
    )
    p = predict(cell.ref, cell.new)
    assert p.kind == "neutral" and 0.9 < p.ratio < 1.05, p.text()


def test_a_multi_pass_reduction_rereads_from_l2_and_is_priced_by_its_instructions() -> None:
    """TritonBench's inductor layer_norm without welford (real committed cells, 262144 rows of 1024..2048 bf16,
    one row a CTA): three loops, mean, variance and normalize, each reading the row. ncu on the H200: issue-bound
    (558M warp instructions, 534 of 601 us), DRAM at 37 % of peak; Triton 3.3.1 executes 12 % fewer and measures
    0.915..0.945x. The model priced each loop's loads at DRAM bandwidth and called it bandwidth-bound (0.98..0.99x).
    With the launch's tensor bytes (``KernelFacts.tensor_bytes``) DRAM moves each tensor once and the rest is
    served at L2's rate (``arch``'s ``l2_bytes_per_clk``), so the instructions show: within 1.5 % of each
    measurement. Without the tensor bytes (the passes alone) the prediction stays 2+ % short."""
    cells = _cells("tb_welford_fwd", "triton_red_fused_native_layer_norm_no_welford", "triton==3.3.1")
    assert len(cells) == 3 and all(c.measured.verdict == "improvement" for c in cells)
    for c in cells:
        assert c.ref.tensor_bytes and c.ref.data_bytes and c.ref.tensor_bytes > 2 * c.ref.data_bytes  # in, out, weights
        measured = c.measured.ratio
        assert abs(predict(c.ref, c.new).ratio - measured) < 0.015
        unknown = predict(replace(c.ref, tensor_bytes=None), replace(c.new, tensor_bytes=None))
        assert unknown.ratio - measured > 0.02


def test_tensor_bytes_are_all_the_recorded_launch_tensors() -> None:
    """A recorded launch's label names every pointer argument's shape and the signature its element type: the
    sum is what DRAM can move at most. A catalog launch (its operator names its largest tensor only) has none."""
    signature = {"x_ptr": "*bf16", "w_ptr": "*fp32", "out_ptr": "*bf16", "n": "i32"}
    meta = {"recorded": True, "input_label": "x_ptr=4096x1024,w_ptr=1024,out_ptr=4096x1024,n=1024"}
    assert tensor_bytes(signature, meta) == 2 * 4096 * 1024 * 2 + 1024 * 4
    assert data_bytes(signature, meta) == 4096 * 1024 * 2
    assert tensor_bytes(signature, {"op": "layer_norm", "mode": "bwd", "shape": {"M": 4096, "N": 1024}}) is None


def test_a_host_side_tensor_descriptor_counts_as_its_tensor() -> None:
    """A TMA kernel sees its big tensors through host-side TensorDescriptors only (Triton 3.4+): a recorded
    launch's label names the descriptor's shape and the signature its element type (``tensordesc<fp16[..]>``),
    a spec by values its ``{"descriptor": "fp16", "shape": ..}``. Before, both had no data size (the small
    tensors' or none), so the model priced the main loop with its fitted trip count."""
    signature = {"a_desc": "tensordesc<fp16[128, 64]>", "b_desc": "tensordesc<fp8e4nv[64, 64]>", "c_ptr": "*fp32"}
    expected = (4096 * 2048 * 2, 4096 * 2048 * 2 + 2048 * 1024 + 64 * 4)
    label = "a_desc=4096x2048,b_desc=2048x1024,c_ptr=64,M=4096"
    recorded = launch_inputs(signature, {"recorded": True, "input_label": label})
    assert (recorded.data_bytes, recorded.tensor_bytes) == expected

    def desc(dtype: str, shape: list[int]) -> dict[str, object]:
        return {"descriptor": dtype, "shape": shape, "strides": [shape[1], 1], "block_shape": [64, 64]}

    args = [["a_desc", desc("fp16", [4096, 2048])], ["b_desc", desc("fp8e4nv", [2048, 1024])]]
    by_values = launch_inputs(signature, {}, {"args": [*args, ["c_ptr", {"tensor": "fp32", "shape": [64]}]]})
    assert (by_values.data_bytes, by_values.tensor_bytes) == expected


def test_bank_conflicts_read_from_the_sass_are_priced() -> None:
    """TritonBench's inductor mul_sum reduction with 3.3.1 (a real committed cell): 129 LDS became 32
    LDS.128 and the stores of its layout conversion 8-way bank-conflicted (ncu on the H200: 4.25M store
    wavefronts against 0.55M, benchmarks/calibration/misses), measured +14 %. Read from the SASS
    addresses, the conflicts are priced, and named among the contributors."""
    cell = next(
        c
        for c in read_cells(CALIBRATION / "cells.jsonl")
        if c.operator == "tb_rms_norm_bwd"
        and c.kernel == "triton_red_fused_mul_sum_0"
        and c.toolchain == "triton==3.3.1"
        and c.measured.ratio > 1.1
    )
    assert cell.new.shared_wavefronts["STS"] > 7 and cell.ref.shared_wavefronts["STS"] == 1.0
    p = predict(cell.ref, cell.new)
    assert p.kind == "regression" and p.blind_spot is None, p.text()
    assert "bank conflicts" in p.text() and "STS x1.0 -> x7.9" in p.text()


def test_a_neutral_prediction_says_when_shared_memory_addresses_could_not_be_read(fitted) -> None:
    """FLA's gated delta rule ``h`` kernel with 3.3.1 (a real committed cell, measured +31 %): its
    shared-memory accesses changed, and the bank analysis could not read 32 of the reference's addresses
    (its 3.3.1 side it did read: x2.6 on LDS; ncu counts 9x the reference's conflicts,
    ``benchmarks/calibration/misses/``), so the conflicts are not priced: the neutral prediction names that
    blind spot with the calibration's held-out rate; a neutral prediction whose shared-memory accesses did
    not change does not."""
    cells = read_cells(CALIBRATION / "cells.jsonl")
    attention = next(
        c
        for c in cells
        if c.operator == "fla_gated_delta"
        and c.kernel.startswith("chunk_gated_delta_rule_fwd_kernel_h")
        and c.measured.ratio > 1.3
    )
    assert attention.ref.shared_wavefronts["unrated"] > 0 and not attention.new.shared_wavefronts["unrated"]
    p = predict(attention.ref, attention.new)
    seen = fitted.params.cv["blind_spots"]["shared_memory"]
    assert p.kind == "neutral" and p.blind_spot is not None
    assert (
        f"{seen['measured_regression']} of {seen['neutral']} such neutral predictions measured slower" in p.blind_spot
    )
    assert "blind spot: shared-memory accesses changed" in p.text() and p.to_json()["blind_spot"] == p.blind_spot
    # the rate is the model's blind spot: such pairs are where its neutral calls miss most
    other = fitted.params.cv["blind_spots"]["other"]
    assert seen["measured_regression"] / seen["neutral"] > 2 * other["measured_regression"] / other["neutral"]
    welford = next(c for c in cells if c.kernel == "triton_red_fused_native_layer_norm_no_welford")
    q = predict(welford.ref, welford.new)
    assert q.kind == "neutral" and q.blind_spot is None, q.text()


def test_identical_kernels_are_exactly_neutral() -> None:
    cell = read_cells(CALIBRATION / "cells.jsonl")[0]
    p = predict(cell.ref, cell.ref)
    assert p.identical and (p.ratio, p.low, p.high, p.kind) == (1.0, 1.0, 1.0, "neutral")


def test_more_registers_fewer_spills_shorter_loop_is_not_a_regression() -> None:
    """The int4_gemm shape of change (issue 24): registers 128 -> 160, spills 8 B -> 0, main loop
    -93 instructions, LDS -> LDSM. Built from a real matmul cell's facts (autotuned_matmul), edited
    the way that change reads (a constructed variant: the model's logic, not a measurement)."""
    from dataclasses import replace

    from ktriage.predict.facts import LoopFacts

    cell = next(c for c in read_cells(CALIBRATION / "cells.jsonl") if c.operator == "autotuned_matmul")
    ref = replace(
        cell.ref,
        registers=128,
        spill_store_bytes=8,
        spill_load_bytes=8,
        stack_bytes=8,
        opcodes={**cell.ref.opcodes, "LDL": 2, "STL": 2, "LDS.128": 16},
    )
    assert ref.main_loop is not None
    loop = LoopFacts(
        ref.main_loop.instructions + 93,
        {**ref.main_loop.opcodes, "LDS": 16, "IMAD": 77},
        ref.main_loop.depth,
        ref.main_loop.innermost,
    )
    ref = replace(ref, main_loop=loop)
    new = replace(cell.ref, registers=160, opcodes={**cell.ref.opcodes, "LDSM.16.M88.4": 4})
    assert new.main_loop is not None
    new = replace(
        new,
        main_loop=LoopFacts(
            new.main_loop.instructions,
            {**new.main_loop.opcodes, "LDSM": 4},
            new.main_loop.depth,
            new.main_loop.innermost,
        ),
    )
    p = predict(ref, new)
    assert p.kind != "regression" and p.ratio < 1.0, p.text()


def test_a_model_file_is_read_and_a_bad_one_named(tmp_path: Path) -> None:
    from ktriage.errors import FormatError

    good = tmp_path / "m.json"
    good.write_text(json.dumps({"format": 1, "params": {"trips": 3.0}}))
    assert load_params(good).trips == 3.0
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(FormatError, match="no 'params'"):
        load_params(bad)


def test_a_large_soft_maximum_exponent_is_the_largest_term_not_an_overflow() -> None:
    """softmax_p 342 (a hand-edited file; the fit itself may reach 80) raised OverflowError in the soft maximum,
    a launch's cycles to the 342nd power: computed relative to its largest term, it is that term."""
    from ktriage.predict.model import breakdown, load_params, profile

    cell = _committed()[0]
    steep = load_params().with_free({"softmax_p": 342.0})
    assert math.isfinite(predict(cell.ref, cell.new, steep).ratio)
    parts = breakdown(profile(cell.ref), steep)
    largest = max(parts[k] for k in ("issue", "latency", "bandwidth", "serial", "shared"))
    assert math.isfinite(parts["total"]) and math.isclose(parts["total"], largest, rel_tol=0.02)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"lamda_wave": 0.0}, "'lamda_wave' is no parameter of the cost model"),  # was dropped: the default priced
        ({"softmax_p": 0}, "softmax_p is 0, not a positive number"),  # was ZeroDivisionError, an internal error
        ({"kappa_l2": 0.0}, "kappa_l2 is 0.0, not a positive number"),
        ({"lambda_global": None}, "lambda_global is null"),  # was TypeError, an internal error
        ({"lambda_global": -1000}, "lambda_global is -1000, not a finite number, 0 or more"),  # was read as it was
        ({"trips": "8"}, 'trips is "8"'),
        ({"interval_a": True}, "interval_a is true"),
        (5, "'params' is not an object"),  # was TypeError
    ],
)
def test_a_hand_written_model_file_with_a_wrong_parameter_is_refused(
    tmp_path: Path, params: object, message: str
) -> None:
    """docs/model.md: a hand-written file gets the defaults for what it leaves out; a name that is no parameter, or
    a value the model cannot price with, is refused naming the file and the parameter (exit 2), not ignored nor
    an internal error at the first prediction."""
    from ktriage.errors import FormatError

    path = tmp_path / "hand.json"
    path.write_text(json.dumps({"format": 1, "params": params}))
    with pytest.raises(FormatError, match=re.escape(message)) as info:
        load_params(path)
    assert str(path) in info.value.problem and info.value.fix
    fitted = tmp_path / "fitted.json"  # what calibrate writes (every parameter, fitted_on, cv) is read
    fitted.write_text(json.dumps({"format": 1, "params": load_params().to_json()}))
    assert load_params(fitted) == load_params()


def test_a_model_fitted_before_a_term_existed_is_read_without_it(tmp_path: Path) -> None:
    """A file ``ktriage calibrate`` wrote before ``lambda_wave`` existed was fitted without it: read back, it
    prices no wave cost (its predictions stay the ones it was fitted to give); a hand-written file gets the
    default."""
    shipped = load_params().to_json()
    older = {k: v for k, v in shipped.items() if k != "lambda_wave"}
    fitted = tmp_path / "fitted.json"
    fitted.write_text(json.dumps({"format": 1, "params": older}))
    assert load_params(fitted).lambda_wave == 0.0
    hand = tmp_path / "hand.json"
    hand.write_text(json.dumps({"format": 1, "params": {"trips": 3.0}}))
    assert load_params(hand).lambda_wave == Params().lambda_wave > 0


def test_the_shipped_model_on_fresh_cells_it_was_not_fitted_on() -> None:
    """270 GPU cells measured after the model shipped and kept out of every fit
    (benchmarks/calibration/fresh/: Liger layer_norm and embedding in bf16 and fp16 on the H200, labeled by
    the fixed bench): what the shipped parameters score there (regression precision 100 %, recall 82 %, no
    false alarm) must hold for a new fit too."""
    from ktriage.predict.calibration import Scores

    cells = read_cells(CALIBRATION / "fresh" / "cells.jsonl")
    assert len(cells) == 270
    params = load_params()
    scores = Scores.of([predict(c.ref, c.new, params).kind for c in cells], [c.measured.verdict for c in cells])
    assert scores.precision("regression") == 1.0 and (scores.recall("regression") or 0) >= 0.8
    assert sum(scores.matrix["regression"].values()) + sum(scores.matrix["improvement"].values()) == 47


def test_the_shipped_model_on_operators_no_fit_has_seen() -> None:
    """118 GPU cells of 12 Liger operators that neither the calibration nor TritonBench holds
    (benchmarks/calibration/fresh_ops/): no cell that measures the same is called a change, and the one
    large change (sparsemax forward at 2048x32768, 3.3.1 0.86x of 3.6.0: 3.6.0 spills more) is called."""
    cells = read_cells(CALIBRATION / "fresh_ops" / "cells.jsonl")
    assert len(cells) == 118 and len({c.operator for c in cells}) == 12
    params = load_params()
    kinds = {id(c): predict(c.ref, c.new, params).kind for c in cells}
    assert not [c for c in cells if c.measured.verdict == "same" and kinds[id(c)] != "neutral"]
    spills = [c for c in cells if c.operator == "liger_sparsemax" and c.measured.verdict == "improvement"]
    assert len(spills) == 1 and "32768" in spills[0].input and kinds[id(spills[0])] == "improvement"
