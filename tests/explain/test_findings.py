"""Findings a person can act on (issue 10, point 11), pure logic: one bullet per regression with its
evidence grouped, ranked by likely impact (new spills and lost occupancy first, a 1-register drift
last), improvements apart and never called "worst", input ranges only within one sweep, exact
selectors, reports named after what was compiled."""

from __future__ import annotations

from pathlib import Path

import pytest

from ktriage.cli import exit_codes
from ktriage.errors import KtriageError
from ktriage.explain.attribution import CrossCells
from ktriage.explain.engine import Change
from ktriage.explain.findings import DetailFinding, Finding, group_findings, sweep_key
from ktriage.report.explain import report_title
from ktriage.spec.model import KernelSpec
from ktriage.spec.select import select_specs
from tests.conftest import RunCli


def _f(
    metric: str,
    pairs: list[tuple[float, float]],
    inputs: list[str],
    attribution: str = "frontend",
    toolchain: str = "triton==3.4.0",
) -> Finding:
    direction = "up" if pairs[0][1] > pairs[0][0] else "down"
    f = Finding(toolchain, "triton==3.3.1", metric, direction, attribution)
    for (ref, new), label in zip(pairs, inputs, strict=True):
        f.inputs.append(label)
        f.examples.append(Change(metric, ref, new, attribution, CrossCells(ref, new, None, None), ""))  # type: ignore[arg-type]
    return f


CLIFF = ["N=4608", "N=5120"]


def test_one_bullet_per_regression_ranked_by_impact() -> None:
    drift = _f("registers", [(200, 201)], ["N=2560"])
    spills = _f("spill_store_bytes", [(0, 3712), (0, 3000)], CLIFF)
    regs = _f("registers", [(255, 32), (255, 32)], CLIFF)
    stack = _f("stack_bytes", [(0, 1920), (0, 1800)], CLIFF)
    occupancy = _f("ctas_per_sm", [(4, 2)], ["N=1024"])
    better = _f("spill_store_bytes", [(8908, 7596)], ["N=8704"])
    groups = group_findings([drift, regs, spills, stack, occupancy, better])
    assert [g.kind for g in groups] == ["regression", "regression", "regression", "improvement"]
    first, second, last = groups[0], groups[1], groups[2]
    assert first.inputs == CLIFF and {f.metric for f in first.findings} == {
        "spill_store_bytes",
        "registers",
        "stack_bytes",
    }
    assert second.inputs == ["N=1024"]  # lost occupancy, before the 1-register drift
    assert last.inputs == ["N=2560"] and last.impact < second.impact < first.impact
    text = first.summary()
    assert text.startswith("N=4608..5120 (2 inputs), triton==3.4.0 vs triton==3.3.1: spill stores 0 B -> 3712 B; ")
    assert "stack 0 B -> 1920 B" in text and "registers 255 -> 32" in text
    assert text.endswith("(worst at N=4608); the frontend (Triton/LLVM PTX) is responsible.")
    improvement = groups[3].summary()
    assert "worst" not in improvement and "spill stores 8908 B -> 7596 B" in improvement
    assert "worst" not in better.summary() and "largest" in better.summary()  # the per-metric wording too


def test_mixed_attribution_is_said_per_item_and_details_come_last() -> None:
    spills = _f("spill_store_bytes", [(164, 204)], ["N=16384"], attribution="ptxas")
    stack = _f("stack_bytes", [(168, 192)], ["N=16384"], attribution="both")
    loop = DetailFinding(
        "triton==3.4.0",
        "triton==3.3.1",
        "main_loop_instructions",
        "up",
        "both",
        ["N=16384"],
        [Change("main_loop_instructions", 566, 600, "both", CrossCells(566, 600, None, None), "")],
        ["main loop 566 -> 600 instructions (+34)"],
    )
    [group] = group_findings([loop, stack, spills])
    assert group.summary() == (
        "N=16384, triton==3.4.0 vs triton==3.3.1: spill stores 164 B -> 204 B (ptxas); "
        "stack 168 B -> 192 B (frontend and ptxas); main loop 566 -> 600 instructions (+34) "
        "(frontend and ptxas); attribution per item."
    )


def test_atomics_swap_is_a_regression() -> None:
    inputs = ["D=768", "D=4096"]
    atomg = _f("ATOMG", [(0, 32), (0, 32)], inputs, attribution="ptxas")
    redg = _f("REDG", [(32, 0), (32, 0)], inputs, attribution="ptxas")
    [group] = group_findings([atomg, redg])
    assert group.kind == "regression" and group.summary().endswith("(worst at D=768); ptxas is responsible.")


def _spec(name: str, source: str = "k.py:k", **meta: object) -> KernelSpec:
    return KernelSpec(name, source, {"x_ptr": "*fp32"}, meta=dict(meta))


def test_inputs_of_different_kernels_are_different_sweeps() -> None:
    a = _spec(
        "tutorial.matmul.fwd[M=4096]", "matmul.py:matmul_kernel", op="tutorial.matmul", mode="fwd", shape={"M": 4096}
    )
    b = _spec(
        "tutorial.matmul.fwd[M=512]", "matmul.py:matmul_kernel", op="tutorial.matmul", mode="fwd", shape={"M": 512}
    )
    c = _spec("softmax.fwd[M=4096]", "softmax.py:softmax_kernel", op="tutorial.softmax", mode="fwd", shape={"M": 4096})
    assert sweep_key(a) == sweep_key(b) != sweep_key(c)
    assert sweep_key(_spec("k1", "f.py:k1")) != sweep_key(_spec("k2", "f.py:k2"))


def test_selectors_match_exactly_or_say_what_they_matched() -> None:
    specs = [
        _spec("mm[4096^3,128x256x64]", input_label="4096^3,128x256x64"),
        _spec("mm[4096^3,128x128x64]", input_label="4096^3,128x128x64"),
        _spec("softmax_fwd"),
    ]
    assert [s.name for s in select_specs(specs, "4096^3,128x128x64")] == ["mm[4096^3,128x128x64]"]
    assert [s.name for s in select_specs(specs, "softmax")] == ["softmax_fwd"]  # part of one name only
    with pytest.raises(KtriageError, match="part of 2 kernel names") as err:
        select_specs(specs, "4096^3")
    assert "mm[4096^3,128x256x64], mm[4096^3,128x128x64]" in err.value.problem
    with pytest.raises(KtriageError, match=r"matches inputs \(--input\) 'nope'") as err:
        select_specs(specs, "nope")
    assert "softmax_fwd" in (err.value.fix or "")


def test_report_titles_name_what_was_compiled() -> None:
    fwd = [_spec("k_fwd"), _spec("k2_fwd")]  # a spec file: no pass
    assert report_title("kernels/my_kernels.toml", fwd) == "ktriage explain kernels/my_kernels.toml"
    bwd = [_spec("liger.layer_norm.bwd[N=4608]", mode="bwd")]
    assert report_title("liger.layer_norm", bwd) == "ktriage explain liger.layer_norm (bwd)"


LN_BWD_4608 = "X_ptr=4096x4608,W_ptr=4608,Mean_ptr=4096,RSTD_ptr=4096,DX_ptr=4096x4608,DW_ptr=132x4608,stride_x=4608,stride_dx=4608"
LN_FWD_1024 = (
    "Y_ptr=4096x1024,Y_row_stride=1024,X_ptr=4096x1024,X_row_stride=1024,W_ptr=1024,W_row_stride=1,"
    "B_row_stride=1,Mean_row_stride=1"
)


@pytest.mark.slow
def test_a_workload_of_several_kernels_names_the_kernel_of_each_bullet(toolchain) -> None:
    """The recorded TritonBench layer_norm (forward and backward kernels): an input's label is its
    launch's arguments, which do not say which kernel it is of, so each bullet names it as the fixes
    and bisect name a spec (``_layer_norm_backward_kernel.K7[...]``); a catalog op's stay ``N=4608..``."""
    import ktriage.api as kt

    workload = Path(__file__).resolve().parents[2] / "benchmarks/record/h200/tb_layer_norm_bwd.workload.json.gz"
    toolchain("triton==3.3.1"), toolchain("triton==3.4.0")
    report = kt.explain(
        target=str(workload), toolchains=["triton==3.3.1", "triton==3.4.0"], inputs=[LN_FWD_1024, LN_BWD_4608]
    )
    spilled = report.regressions[0]
    assert spilled.summary().startswith(f"_layer_norm_backward_kernel.K7[{LN_BWD_4608}], triton==3.4.0 vs")
    assert spilled.to_json()["kernel"] == "_layer_norm_backward_kernel.K7" and spilled.range == LN_BWD_4608
    assert all(
        g.summary().startswith(("_layer_norm_backward_kernel.K", "_layer_norm_forward_kernel.K")) for g in report.groups
    )


LN_WORKLOAD = Path(__file__).resolve().parents[2] / "benchmarks/record/h200/tb_layer_norm_bwd.workload.json.gz"


def test_a_short_label_the_report_prints_selects_its_recorded_input() -> None:
    """What explain prints for a recorded input (``input_places``/``short_labels``: the arguments that
    tell it apart, inside its kernel's name where the report holds several kernels), copied into
    ``-i``, selects that input and no other (it was "no kernel matches" before)."""
    from ktriage.catalog.resolve import resolve_specs
    from ktriage.explain.labels import input_places, short_labels

    specs = resolve_specs(str(LN_WORKLOAD))
    places = input_places(specs)
    assert "_layer_norm_backward_kernel.K7[X_ptr=4096x4608]" in places
    for spec, place in zip(specs, places, strict=True):
        assert [s.name for s in resolve_specs(str(LN_WORKLOAD), inputs=[place])] == [spec.name], place
    # a report of one kernel prints the bare short label; its kernel id alone before it is understood too
    k7 = [s for s in specs if s.meta["workload_kernel"] == "K7"]
    assert short_labels(k7)[1] == "X_ptr=4096x5120"
    assert [s.name for s in resolve_specs(str(LN_WORKLOAD), inputs=["K7[X_ptr=4096x5120]"])] == [k7[1].name]
    # the existing spellings as before: the full label, an input id (one per kernel), part of one name
    assert [s.name for s in resolve_specs(str(LN_WORKLOAD), inputs=[LN_BWD_4608])] == [k7[0].name]
    assert len(resolve_specs(str(LN_WORKLOAD), inputs=["0"])) == 10
    assert [s.meta["workload_kernel"] for s in resolve_specs(str(LN_WORKLOAD), inputs=["Y_ptr=4096x4608"])] == ["K6"]


def test_a_short_label_of_several_recorded_inputs_is_refused(run_cli: RunCli) -> None:
    """``X_ptr=4096x4608`` is K7's short label and an argument of K6's (forward) input too: refused with
    the kernel-qualified labels that pick one (exit 2, no traceback), never one of them picked."""
    from ktriage.catalog.resolve import resolve_specs

    r = run_cli(["explain", str(LN_WORKLOAD), "-i", "X_ptr=4096x4608", "-t", "triton==3.3.1", "-t", "triton==3.4.0"])
    assert r.exit_code == exit_codes.USAGE, r.output
    assert "Traceback" not in r.output
    assert "--input 'X_ptr=4096x4608' is the short label of 2 recorded inputs" in r.err_text
    picks = ["_layer_norm_forward_kernel.K6[X_ptr=4096x4608]", "_layer_norm_backward_kernel.K7[X_ptr=4096x4608]"]
    assert r.fix is not None and " or ".join(picks) in r.fix
    for pick, kid in zip(picks, ("K6", "K7"), strict=True):  # what the fix offers selects one each
        assert [s.meta["workload_kernel"] for s in resolve_specs(str(LN_WORKLOAD), inputs=[pick])] == [kid]


def test_a_run_never_crosses_an_input_explain_did_not_see() -> None:
    """``explain liger.layer_norm -i N=4608 -i N=5632``: the two inputs were merged into one finding
    printed ``N=4608..5632``, which ``--input`` reads back as every input from the first to the last
    (N=5120 too, never compiled). A run goes on only between inputs with equal or consecutive ids
    (a catalog op's, a workload kernel's); a spec file's kernels carry none and go on as listed."""
    from ktriage.explain.findings import continues

    def ln(input_id: int, n: int) -> KernelSpec:
        return _spec(f"liger.layer_norm.bwd[N={n}]", "ln.py:k", op="liger.layer_norm", mode="bwd", input_id=input_id)

    assert continues(ln(7, 4608), ln(8, 5120)) and continues(ln(7, 4608), ln(7, 4608))
    assert not continues(ln(7, 4608), ln(9, 5632))  # N=5120 (id 8) left out by -i
    assert not continues(ln(8, 5120), ln(7, 4608)) and not continues(None, ln(7, 4608))
    assert continues(_spec("k[a=1]"), _spec("k[a=2]"))  # a spec file's, as listed


def test_a_run_never_crosses_a_spec_file_kernel_that_input_left_out(tmp_path: Path) -> None:
    """A spec file's kernels carry no input id, so ``continues`` took them as listed: ``-i`` of a file's
    1st and 3rd kernel let a finding merge the two into one range, which ``--input`` pasted back reads as
    the 2nd too (never compiled). Each kernel read from a file knows its position in it
    (``KernelSpec.file_position``, neither in its JSON nor its meta), and a run goes on only between
    kernels the file lists one after the other."""
    from ktriage.catalog.resolve import resolve_specs
    from ktriage.explain.findings import continues

    specs = Path(__file__).resolve().parents[2] / "examples" / "specs"
    example = (specs / "scaled_rows.toml").read_text()
    table = example[example.index("[kernel]\n") :].replace("[kernel]\n", "[[kernel]]\n", 1)
    table = table.replace('"scaled_rows.py:', f'"{specs / "scaled_rows.py"}:')
    text = "\n".join(
        table.replace("[M=N=4096,bf16]", f"[BLOCK_N={b}]").replace("BLOCK_N = 1024", f"BLOCK_N = {b}")
        for b in (256, 512, 1024)
    )
    path = tmp_path / "three.toml"
    path.write_text(text)
    every = resolve_specs(str(path))
    assert [s.name for s in every] == [f"scaled_rows[BLOCK_N={b}]" for b in (256, 512, 1024)]
    assert continues(every[0], every[1]) and continues(every[1], every[2])  # as listed: one sweep
    first, third = resolve_specs(str(path), inputs=["scaled_rows[BLOCK_N=256]", "scaled_rows[BLOCK_N=1024]"])
    assert (first.file_position, third.file_position) == (0, 2)
    assert not continues(first, third)  # the 2nd, left out, lies between them
    assert "file_position" not in first.to_json() and "file_position" not in first.meta


def test_a_failure_whose_fix_asks_ends_with_its_question_mark() -> None:
    """A kernel of a spec file with a typo in its function's name was listed as `... — fix: did you mean
    online_softmax_kernel?.` (a full stop added after the question); a fix that ends a sentence keeps
    its mark, one that does not gets the stop, for a kernel not loaded and for a toolchain's failure."""
    from ktriage.explain.findings import FailureFinding

    def failure(toolchain: str | None, fix: str | None) -> FailureFinding:
        return FailureFinding(
            inputs=["osm[N=8192]"],
            kernel="",
            names={},
            toolchain=toolchain,
            stage="spec" if toolchain is None else "frontend",
            kind="spec",
            message="k.py defines no function 'online_softmax_kernl'",
            fix=fix,
            fallback=None,
        )

    asks = "did you mean online_softmax_kernel?"
    assert failure(None, asks).summary().endswith(f"— fix: {asks}")
    assert failure("triton==3.4.0", asks).summary().endswith(f"— fix: {asks}")
    assert failure(None, "add n_cols = <value>").summary().endswith("— fix: add n_cols = <value>.")
    assert failure("triton==3.4.0", None).summary().endswith("'online_softmax_kernl'.")
