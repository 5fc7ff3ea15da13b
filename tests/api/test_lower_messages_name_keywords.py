"""Refusals worded below the api (triage's GPU step, the bench's operator and bundle modules, the input
selectors, the results file, the bisect state) name the keyword a library caller passes as well as the
command's flag (ktriage.errors.option): kt.triage(measure=True, measured=[...]) was told "--measure
re-measures here, --measured reads results measured elsewhere", kt.bench(input_id=99) "--input-id 99 is
out of range". Each fires before any compile or GPU work. Where no kt.* call reaches a message without a
toolchain or a GPU, the module's own function is called with real objects (a Bundle, no fake)."""

from __future__ import annotations

from pathlib import Path

import pytest

import ktriage.api as kt
from ktriage.errors import KtriageError
from tests.store.test_store import make_cells, make_run

DATA = Path(__file__).resolve().parents[1] / "data" / "tritonbench"
RUN1, RUN2 = DATA / "layer_norm_bwd_run1.csv", DATA / "layer_norm_bwd_run2.csv"
AA = {"old_toolchain": "triton==3.4.0", "new_toolchain": "triton==3.4.0", "op": "layer_norm", "mode": "bwd"}


def test_triage_gpu_step_refusals_name_measure_measured_and_bundle(tmp_path: Path) -> None:
    """triage.measure.check_options and triage.measure_read.results_paths."""
    with pytest.raises(KtriageError) as both:
        kt.triage(old=RUN1, new=RUN2, **AA, measure=True, measured=[RUN1])
    assert both.value.problem == (
        "measure=True (--measure) re-measures here, measured (--measured) reads results measured elsewhere: not both"
    )
    assert both.value.fix == (
        "drop one (on a GPU host: measure=True (--measure); on the CPU machine, after the GPU host ran the bundle: "
        "measured (--measured))"
    )
    with pytest.raises(KtriageError) as bundle:
        kt.triage(old=RUN1, new=RUN2, **AA, bundle=tmp_path / "b", measured=[RUN1])
    assert bundle.value.problem == (
        "bundle (--bundle) writes a new bundle, measured (--measured) reads the results of one: not both"
    )
    assert bundle.value.fix == (
        "give measured=['DIR'] (--measured DIR) (the bundle folder, with its results/) or the results files"
    )
    missing = tmp_path / "missing.json"
    with pytest.raises(KtriageError) as absent:
        kt.triage(old=RUN1, new=RUN2, **AA, measured=[missing])
    assert absent.value.problem == f"measured (--measured) {missing}: no such file or folder"


def test_triage_plan_names_the_toolchain_keywords(tmp_path: Path) -> None:
    """triage.measure_plan: TritonBench files do not say their toolchains, and the GPU step needs both."""
    with pytest.raises(KtriageError) as toolchains:
        kt.triage(old=RUN1, new=RUN2, op="layer_norm", mode="bwd", bundle=tmp_path / "b", bisect=False, fixes=False)
    assert toolchains.value.problem == "the GPU step needs both sides' toolchains, and the files do not say them"
    assert toolchains.value.fix == (
        "pass old_toolchain='triton==3.3.1' (--old-toolchain triton==3.3.1) and "
        "new_toolchain='triton==3.4.0' (--new-toolchain triton==3.4.0)"
    )
    assert not (tmp_path / "b").exists()


def test_bench_operator_refusals_name_op_mode_and_input_id() -> None:
    """workload.ops.opdef: the bench's view of an operator."""
    with pytest.raises(KtriageError) as op:
        kt.bench(op="nope")
    assert op.value.fix == "use one of: layer_norm, embedding, rope (TritonBench's operator names, as op (--op))"
    with pytest.raises(KtriageError) as mode:
        kt.bench(op="layer_norm", mode="sideways")
    assert mode.value.problem == "layer_norm has no mode 'sideways'"
    assert mode.value.fix == "use one of: fwd, bwd, fwd_bwd, e.g. mode='fwd' (--mode fwd)"
    with pytest.raises(KtriageError) as input_id:
        kt.bench(op="layer_norm", input_id=99)
    assert input_id.value.problem == "input_id=99 (--input-id 99) is out of range for layer_norm"


def test_input_selector_refusals_name_inputs_and_mode() -> None:
    """ops.inputs.select_inputs, as every verb that expands a catalog op reaches it."""
    with pytest.raises(KtriageError) as other_pass:
        kt.catalog_show(op="liger.layer_norm", mode="fwd", inputs=["liger.layer_norm.bwd[N=4608]"])
    assert (other_pass.value.fix or "").startswith("select the bwd kernel's inputs with mode='bwd' (--mode bwd), ")
    with pytest.raises(KtriageError) as backwards:
        kt.catalog_show(op="liger.layer_norm", inputs=["N=8192..4608"])
    assert backwards.value.problem == (
        "inputs (--input) 'N=8192..4608': 'N=4608' is not after 'N=8192' in the same kernel's inputs of liger.layer_norm"
    )
    assert (backwards.value.fix or "").endswith("or select each input with inputs (--input)")


def test_profile_names_its_own_input_keyword_in_a_range() -> None:
    """kt.profile's keyword is ``input`` (one input), bench's ``inputs``: select_inputs takes the caller's."""
    from ktriage.profile.run import select_input
    from ktriage.workload.bundles.format import Bundle

    bundle = Bundle(
        path=Path("b"),
        op="layer_norm",
        mode="bwd",
        precision="fp32",
        target="sm_90",
        sm_count=132,
        backends=("liger_layer_norm",),
        inputs=[{"id": 0, "facts": {"N": 1024}}, {"id": 1, "facts": {"N": 2048}}],
        toolchains={},
        specs={},
    )
    with pytest.raises(KtriageError) as backwards:
        select_input(bundle, "N=2048..1024")
    assert backwards.value.problem.startswith("input (--input) 'N=2048..1024': ")
    # and a kernel the bundle lacks is built with bench's only (workload.bundles.format)
    with pytest.raises(KtriageError) as absent:
        bundle.kernel_key("torch_layer_norm", 0, "bwd")
    assert (absent.value.fix or "").startswith(
        "build a bundle with only=['torch_layer_norm'] (--only torch_layer_norm) and that input"
    )


def test_bundle_without_a_toolchain_names_toolchains(tmp_path: Path) -> None:
    """workload.bundles.build: no kt.* call reaches it without a toolchain (kt.bench compiles only with
    some), so the builder is called as kt.bench and triage call it, with none."""
    from ktriage.compile.compiler import Compiler
    from ktriage.workload.bundles.build import build_bundle

    with Compiler(jobs=1) as compiler, pytest.raises(KtriageError) as none:
        build_bundle("layer_norm", "bwd", [0], [], tmp_path / "b", compiler=compiler)
    assert none.value.fix == "pass one, e.g. toolchains=['triton==3.4.0'] (-t triton==3.4.0)"


def test_csv_export_refusal_names_the_python_export(tmp_path: Path) -> None:
    """measure.results_file.refuse_csv_export: the JSON export is named as kt.runs_export gives it too."""
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    from ktriage.store import open_store

    run = make_run("feedbeef0001")
    with open_store(db) as store, store.recording(run) as rec:
        for cell in make_cells():
            rec.add(cell)
    table = tmp_path / "run.csv"
    table.write_text(kt.runs_export(run=run.run_id, db=db).to_csv())
    with pytest.raises(KtriageError) as refused:
        kt.runs_import(path=table, db=f"sqlite:///{tmp_path / 'here.db'}")
    assert (
        "written by kt.runs_export(run=RUN).to_csv() (`ktriage runs export RUN --format csv`)" in refused.value.problem
    )
    assert refused.value.fix == (
        "export the run as JSON where it is stored and give that file: "
        "kt.runs_export(run=RUN).json_text(), written to a file (`ktriage runs export RUN -o run.json`)"
    )


def test_a_bisect_state_names_its_options_as_keywords() -> None:
    """bisect.search._describe_bisect: which bisect a state file holds, in a refusal kt.bisect meets
    (pure wording over the fingerprint a state keeps; tests/api/test_bisect_messages_name_keywords.py
    meets it through kt.bisect)."""
    from ktriage.bisect.search import _describe_bisect

    fingerprint = {
        "source": "pypi:triton",
        "good": "3.3.1",
        "bad": "3.4.0",
        "metric": "spill_store_bytes",
        "op": "liger.layer_norm",
        "mode": "bwd",
        "inputs": ["7", "N=4608"],
        "toolchain": None,
    }
    assert _describe_bisect(fingerprint) == (
        "pypi:triton 3.3.1..3.4.0 metric='spill_store_bytes' (--metric spill_store_bytes) "
        "op='liger.layer_norm' (--op liger.layer_norm) mode='bwd' (--mode bwd) "
        "inputs=['7', 'N=4608'] (--input 7 --input N=4608)"
    )


def test_triage_note_of_an_unknown_toolchain_names_the_side_as_keyword_and_flag() -> None:
    """triage.pipeline's note on the cells it could not compile said "pass --old-toolchain/--new-toolchain"
    to a kt.triage caller, and named both flags when one side alone was unknown."""
    report = kt.triage(old=RUN1, new=RUN2, op="layer_norm", mode="bwd", old_toolchain="triton==3.4.0")
    fix = "the new side's toolchain is unknown (the files do not say): pass new_toolchain (--new-toolchain)"
    assert report.failures == [fix]
    noted = [c for c in report.cells if f"not compiled: {fix}" in c.notes]
    assert noted and all(c.backend == "liger_layer_norm" for c in noted)


def test_recorded_bundle_refusals_name_kernels_and_toolchains(tmp_path: Path) -> None:
    """workload.recorded.bundle: "choose --kernel among ...", "pass -t twice, e.g. -t ...", and a kernel
    selection shown as "(--kernel K7)". The builder without a toolchain is called as kt.bench_recorded,
    triage and tune call it (no kt.* call reaches it with none); the selection through kt.bench_recorded."""
    from ktriage.compile.compiler import Compiler
    from ktriage.record.workload import load_workload
    from ktriage.workload.recorded.bundle import build_recorded_bundle

    ln_bwd = Path(__file__).parents[2] / "benchmarks/record/h200/tb_layer_norm_bwd.workload.json.gz"
    with Compiler(jobs=1) as compiler, pytest.raises(KtriageError) as none:
        build_recorded_bundle(load_workload(ln_bwd), [], tmp_path / "b", compiler=compiler)
    assert none.value.fix == (
        "pass the toolchains to compare, e.g. toolchains=['triton==3.3.1', 'triton==3.4.0'] "
        "(-t triton==3.3.1 -t triton==3.4.0)"
    )
    with pytest.raises(KtriageError) as typo:
        kt.bench_recorded(
            workload=ln_bwd,
            toolchains=["triton==3.3.1", "triton==3.4.0"],
            compile_only=True,
            bundle=tmp_path / "b",
            kernels=["K7"],
            inputs=["typo"],
        )
    assert (
        typo.value.problem == "no input of the workload's kernels=['K7'] (--kernel K7) matches inputs (--input) 'typo'"
    )
    assert not (tmp_path / "b").exists()
    # a kernel without a recorded input (a real workload, its K7's inputs dropped: pure selection)
    from dataclasses import replace

    from ktriage.workload.recorded.bundle import select_kernels

    wl = load_workload(ln_bwd)
    wl = replace(wl, kernels=[replace(k, inputs=[]) if k.id == "K7" else k for k in wl.kernels])
    with pytest.raises(KtriageError) as empty:
        select_kernels(wl, ["K7"], None)
    assert empty.value.fix == (
        "choose kernels (--kernel) among the kernels with inputs that kt.workload_show(path='W.json') "
        "(`ktriage workload show W.json`) lists"
    )


def test_an_op_bundle_given_as_a_recorded_one_names_the_python_call() -> None:
    """workload.recorded.bundle.recorded_view told a kt.bench_recorded caller the command only. The
    committed H200 op bundle (layer_norm bwd), refused before any GPU is looked for."""
    bundle = Path(__file__).parents[2] / "benchmarks/profile/lines_h200/bundle"
    with pytest.raises(KtriageError) as op_bundle:
        kt.bench_recorded(bundle=bundle)
    assert op_bundle.value.fix == (
        f"bench it as an op bundle: kt.bench(bundle={str(bundle)!r}, op='layer_norm') "
        f"(`ktriage bench --bundle {bundle} --op layer_norm`)"
    )


def test_triage_notes_name_the_workloads_keyword(tmp_path: Path) -> None:
    """A TritonBench backend that is not in ktriage's catalog: triage's note pointed only at --workload W.json."""
    old, new = tmp_path / "old.csv", tmp_path / "new.csv"
    for path, scale in ((old, 1.0), (new, 1.5)):
        rows = ["x_val;torch_layer_norm-latency;my_layer_norm-latency"]
        rows += [f"{n};{0.1 + n / 50000};{(0.2 + n / 20000) * scale}" for n in (1024, 1536)]
        path.write_text("\n".join([*rows, "average;;"]) + "\n")
    report = kt.triage(old=old, new=new, **{**AA, "op": "layer_norm"}, bisect=False, fixes=False)
    notes = [n for c in report.cells if c.backend == "my_layer_norm" for n in c.notes]
    assert any(
        "my_layer_norm has no kernels in ktriage's catalog: nothing to compile (a recorded workload of it could "
        "say: workloads=['W.json'] (--workload W.json))" in n
        for n in notes
    ), notes
