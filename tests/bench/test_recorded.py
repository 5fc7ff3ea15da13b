"""`ktriage bench W.json` on the CPU machine through the real ``main(argv)``: the bundle of a committed
recording compiled by two real toolchains, the errors (an unknown kernel, op options, nothing to
measure with), and a results file of recorded cells (made by the real writer) read by ``ktriage compare``.
(The measuring half: tests/gpu/test_recorded_gpu.py and benchmarks/record/bench_workloads_h200.sh.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from ktriage.cli import exit_codes
from tests.conftest import RunCli

REPO = Path(__file__).resolve().parents[2]
RECORDINGS = REPO / "benchmarks" / "record" / "h200"
MANY = RECORDINGS / "many_launches.workload.json.gz"
RMS_FWD = RECORDINGS / "tb_rms_norm_fwd.workload.json.gz"
LN_BWD = RECORDINGS / "tb_layer_norm_bwd.workload.json.gz"
TOOLCHAINS = ["-t", "triton==3.3.1", "-t", "triton==3.4.0"]


@pytest.mark.parametrize(
    "args, words",
    [
        ([str(MANY), "--kernel", "K99", *TOOLCHAINS, "--compile-only"], "K0 (add)"),
        (
            [str(RMS_FWD), "--kernel", "K0", "--input", "7", *TOOLCHAINS, "--compile-only"],
            "no input of the workload's --kernel K0 matches --input '7' fix: give an input id of K0 (0); ",
        ),
        # explain's short label of K7's input is an argument of K6's (forward) input too: refused, not one picked
        (
            [str(LN_BWD), "-i", "X_ptr=4096x4608", *TOOLCHAINS, "--compile-only"],
            "is the short label of 2 recorded inputs in the workload, not of one fix: name its kernel with it: "
            "_layer_norm_forward_kernel.K6[X_ptr=4096x4608] or _layer_norm_backward_kernel.K7[X_ptr=4096x4608] "
            "(or narrow with --kernel K6 or --kernel K7)",
        ),
        # a typo next to a selector that matches: refused by name (it was dropped, input 0 compiled alone)
        (
            [str(LN_BWD), "--kernel", "K7", "-i", "0", "-i", "X_ptr=4096x4609", *TOOLCHAINS, "--compile-only"],
            "no input of the workload's --kernel K7 matches --input 'X_ptr=4096x4609' "
            "(did you mean 'X_ptr=4096x4608'?) fix: give an input id of K7 "
            "(0..7); an input's label as `workload show` prints it, or some of its arguments, alone or inside its "
            "kernel's name (e.g. K7[X_ptr=4096x4608]); its label as bench's and compare's reports print it (K7 input "
            "0: 4096x4608,4608,4096,132x4608 n_rows=4096 n_cols=4608; K7 input 1: ",
        ),
        ([str(MANY), "--op", "layer_norm", *TOOLCHAINS], "--op"),
        ([str(MANY), "--bwd", "--precision", "bf16", *TOOLCHAINS], "--precision"),
        ([str(MANY)], "-t A -t B"),
        (["--kernel", "K0"], "give the workload"),
        ([str(REPO / "pyproject.toml"), *TOOLCHAINS], "not a recorded workload"),
        ([str(MANY), "--arch", "sm_80", *TOOLCHAINS, "--compile-only"], "recorded on sm_90"),
        # without a toolchain: "no bundle at DIR: DIR does not exist", as if the bundle were to be read
        (
            [str(MANY), "--compile-only", "--bundle", "new-dir"],
            "--compile-only with no -t/--toolchain: nothing to compile",
        ),
    ],
)
def test_bad_input_names_the_fix(args, words, run_cli: RunCli) -> None:  # type: ignore[no-untyped-def]
    out = run_cli(["bench", *args])
    assert out.exit_code == exit_codes.USAGE, out.output
    assert words in out.err_text


def test_the_short_labels_explain_prints_select_recorded_inputs_to_bench() -> None:
    """``bench W.json -i`` (and ``bench --bundle -i``) take what explain printed for an input: its
    short label, inside its kernel's name (or after --kernel); one that several inputs have is refused."""
    from types import SimpleNamespace
    from typing import Any, cast

    from ktriage.catalog.resolve import resolve_specs
    from ktriage.errors import SpecError
    from ktriage.explain.labels import input_places
    from ktriage.record.workload import load_workload
    from ktriage.workload.recorded.bundle import Entry, RecordedBundle, select_kernels

    places = input_places(resolve_specs(str(LN_BWD)))
    assert places[22] == "_layer_norm_backward_kernel.K7[X_ptr=4096x4608]"
    workload = load_workload(LN_BWD)
    picked = [(k.id, ids) for k, ids in select_kernels(workload, None, [places[22]])]
    assert picked == [("K7", [0])]
    assert [(k.id, ids) for k, ids in select_kernels(workload, ["K7"], ["X_ptr=4096x5120"])] == [("K7", [1])]
    with pytest.raises(SpecError, match="short label of 2 recorded inputs"):
        select_kernels(workload, None, ["X_ptr=4096x4608"])
    # as before: an input id selects that input of every kernel, a full label its input
    assert len(select_kernels(workload, None, ["0"])) == 10
    full = workload.kernels[7].inputs[0].label
    assert [(k.id, ids) for k, ids in select_kernels(workload, None, [full])] == [("K7", [0])]
    # a bundle's entries, as the GPU host selects them
    entries = [
        Entry(n, k.id, k.function, i.id, f"short {n}", i.label, 1, "spec", [], None)
        for n, (k, i) in enumerate((k, i) for k in workload.kernels for i in k.inputs)
    ]
    bundle = RecordedBundle(cast(Any, SimpleNamespace(path=Path("b"))), entries)
    assert [(e.kernel, e.input) for e in bundle.select(None, [places[22]])] == [("K7", 0)]
    assert [e.id for e in bundle.select(None, ["short 3"])] == [3]  # the bench report's own label, as before
    with pytest.raises(SpecError, match="short label of 2 recorded inputs in bundle b"):
        bundle.select(None, ["X_ptr=4096x4608"])


def test_each_selector_names_an_input_and_the_reports_labels_and_explains_ranges_select() -> None:
    """``bench W.json -i 0 -i TYPO`` (and ``bench --bundle``) measured input 0 and dropped the typo without
    a word; the label bench's and compare's reports print for an input (its bundle entry's) and a range
    as explain prints it (``_layer_norm_backward_kernel.K7[X_ptr=4096x{4608..6144}]``) were refused
    by ``bench W.json``. One rule now, for a workload's inputs and a bundle's entries:
    ``ktriage.spec.select.select_recorded``."""
    from types import SimpleNamespace
    from typing import Any, cast

    from ktriage.catalog.resolve import resolve_specs
    from ktriage.errors import SpecError
    from ktriage.explain.labels import input_names
    from ktriage.record.workload import load_workload
    from ktriage.spec.ranges import input_place
    from ktriage.workload.recorded.args import short_label
    from ktriage.workload.recorded.bundle import Entry, RecordedBundle, select_kernels

    workload = load_workload(LN_BWD)
    k7 = workload.kernels[7]
    shapes = [short_label(i.args, i.spec.signature) for i in k7.inputs]
    entries = [
        Entry(n, k.id, k.function, i.id, short_label(i.args, i.spec.signature), i.label, 1, "spec", [], None)
        for n, (k, i) in enumerate((k, i) for k in workload.kernels for i in k.inputs)
    ]
    bundle = RecordedBundle(cast(Any, SimpleNamespace(path=Path("b"))), entries)
    for typo in ("X_ptr=4096x4609", "no-such-input"):
        with pytest.raises(SpecError, match=rf"no input of the workload matches inputs \(--input\) '{typo}'"):
            select_kernels(workload, None, ["0", typo])
        with pytest.raises(SpecError, match=rf"no input of bundle b matches inputs \(--input\) '{typo}'") as err:
            bundle.select(None, ["0", typo])
        assert "bench's and compare's reports print it (K0 input 0: " in str(err.value.fix)
    # the label the bench and compare reports print (the bundle entry's), as the bundle already took it
    assert [(k.id, ids) for k, ids in select_kernels(workload, None, [shapes[2]])] == [("K7", [2])]
    assert [(e.kernel, e.input) for e in bundle.select(None, [shapes[2]])] == [("K7", 2)]
    # a range as explain prints it: the inputs from its first to its last
    names = input_names(resolve_specs(str(LN_BWD)))
    kernel = names[22][0]
    printed = input_place(kernel, [short for k, short in names if k == kernel][:4])
    assert printed == "_layer_norm_backward_kernel.K7[X_ptr=4096x{4608..6144}]"
    assert [(k.id, ids) for k, ids in select_kernels(workload, None, [printed])] == [("K7", [0, 1, 2, 3])]
    assert [(e.kernel, e.input) for e in bundle.select(None, [printed])] == [("K7", n) for n in range(4)]
    with pytest.raises(SpecError, match=r"its start: inputs \(--input\) 'X_ptr=4096x4608' is the short label of 2"):
        select_kernels(workload, None, ["X_ptr=4096x{4608..6144}"])


def test_a_report_label_selects_with_or_without_its_id() -> None:
    """Where two inputs of a kernel have the same shapes, the bench report adds ``#ID`` to the label of
    the second it bundled (which depends on what was bundled): either spelling names the input."""
    from ktriage.spec.select import RecordedInput

    twin = RecordedInput("K0", "f", 3, "a=1", "2048x1024")
    assert twin.names("2048x1024 #3") and twin.names("2048x1024") and twin.names("3") and twin.names("a=1")
    assert not twin.names("2048x1024 #2")


@pytest.mark.slow
def test_compile_only_bundles_every_kernel_input_with_both_toolchains(tmp_path: Path, run_cli: RunCli) -> None:
    from ktriage.workload.bundles.format import BundleArtifact
    from ktriage.workload.recorded.bundle import load_recorded_bundle

    bundle = tmp_path / "rms"
    out = run_cli(
        [
            "bench",
            str(RMS_FWD),
            "--kernel",
            "K0",
            "--kernel",
            "K2",
            *TOOLCHAINS,
            "--compile-only",
            "--bundle",
            str(bundle),
        ]
    )
    assert out.exit_code == exit_codes.OK, out.output
    assert f"ktriage bench --bundle {bundle}" in out.output.replace("\n", "")
    rec = load_recorded_bundle(bundle)  # what the GPU host reads: hashes and ABIs checked
    assert rec.name == "tb_rms_norm_fwd" and rec.bundle.mode == "recorded"
    # numbered across the workload: K0's input is entry 0, K2's entry 2 (K1 left out)
    assert [(e.id, e.kernel, e.function, e.input) for e in rec.entries] == [
        (0, "K0", "_rms_norm_forward_kernel", 0),
        (2, "K2", "_rms_norm_forward_kernel", 0),
    ]
    assert rec.entries[0].backend == "K0:_rms_norm_forward_kernel"
    assert rec.entries[0].label.startswith("2048x1024,1024,2048")
    assert [t.split(".ptxas")[0] for t in rec.bundle.toolchains] == ["triton-3.3.1", "triton-3.4.0"]
    for e in rec.entries:
        spec = rec.bundle.specs[e.spec_key]
        plan = e.plan(spec)
        for tc in rec.bundle.toolchains:
            art = rec.bundle.artifact(e.spec_key, tc)
            assert isinstance(art, BundleArtifact), art
            # the replay passes exactly the parameters the cubin's ABI takes, in its order
            assert [p["name"] for p in art.abi if not p.get("hidden")] == [a.name for a in plan.runtime]
    # the GPU host's selection reads the bundle alone
    assert [e.id for e in rec.select(["K2"], None)] == [2]
    with pytest.raises(Exception, match=r"choose kernels \(--kernel\) from: K0"):
        rec.select(["K5"], None)
    # an input the bundle lacks: its fix lists the bundle's own inputs (it said "see `ktriage workload
    # show`", which needs the workload file, not what a GPU host measuring the bundle has)
    missing = run_cli(["bench", "--bundle", str(bundle), "--input", "7"])
    assert missing.exit_code == exit_codes.USAGE, missing.output
    assert missing.fix is not None and "workload show" not in missing.fix, missing.err_text
    assert f"(K0 input 0: {rec.entries[0].label}; K2 input 0: {rec.entries[1].label})" in missing.fix
    assert "K0: 0, K2: 0" in missing.fix  # each kernel's ids: an id selects that input of each


def test_kernel_takes_the_form_the_reports_print(tmp_path: Path, run_cli: RunCli, has_gpu: bool) -> None:
    """The kernel column of bench's and compare's reports prints ``K0:_rms_norm_forward_kernel``; copied
    into ``--kernel`` it was 'the workload has no kernel' (bench W.json) and 'bundle has no kernel'
    (bench --bundle). It selects that kernel now; an id whose function is another kernel's is refused
    naming both, and the no-match fix says which forms are taken."""
    from ktriage.workload.recorded.bundle import load_recorded_bundle

    bundle = tmp_path / "rms"
    printed = "K0:_rms_norm_forward_kernel"
    out = run_cli(["bench", str(RMS_FWD), "--kernel", printed, *TOOLCHAINS, "--compile-only", "--bundle", str(bundle)])
    assert out.exit_code == exit_codes.OK, out.output
    rec = load_recorded_bundle(bundle)
    assert [(e.id, e.backend) for e in rec.entries] == [(0, printed)]  # the report's kernel column, K0 alone

    # K7 is the backward kernel; _layer_norm_forward_kernel is K6's function: neither half is guessed
    wrong = run_cli(["bench", str(LN_BWD), "--kernel", "K7:_layer_norm_forward_kernel", *TOOLCHAINS, "--compile-only"])
    assert wrong.exit_code == exit_codes.USAGE, wrong.output
    assert wrong.problem == (
        "--kernel 'K7:_layer_norm_forward_kernel': K7 in the workload is the function "
        "_layer_norm_backward_kernel, not _layer_norm_forward_kernel"
    ), wrong.output
    assert wrong.fix == (
        "give --kernel the kernel as the report prints it, K7:_layer_norm_backward_kernel (or K7 alone)"
    )
    missing = run_cli(["bench", str(LN_BWD), "--kernel", "K99", *TOOLCHAINS, "--compile-only"])
    assert missing.exit_code == exit_codes.USAGE and missing.problem == "the workload has no kernel 'K99'", (
        missing.output
    )
    assert missing.fix is not None and missing.fix.endswith(
        "; give each as its id (K0), its function (_layer_norm_forward_kernel) or both as the reports print them "
        "(K0:_layer_norm_forward_kernel)"
    ), missing.fix

    # the GPU host, from the bundle alone: the same rule
    wrong = run_cli(["bench", "--bundle", str(bundle), "--kernel", "K0:_layer_norm_forward_kernel"])
    assert wrong.exit_code == exit_codes.USAGE, wrong.output
    assert wrong.problem == (
        f"--kernel 'K0:_layer_norm_forward_kernel': K0 in bundle {bundle} is the function "
        "_rms_norm_forward_kernel, not _layer_norm_forward_kernel"
    ), wrong.output
    missing = run_cli(["bench", "--bundle", str(bundle), "--kernel", "K5:_rms_norm_forward_kernel"])
    assert missing.exit_code == exit_codes.USAGE, missing.output
    assert missing.problem == (  # the kernel it is near: K0, the bundle's only one
        f"bundle {bundle} has no kernel 'K5:_rms_norm_forward_kernel' (did you mean 'K0:_rms_norm_forward_kernel'?)"
    )
    assert missing.fix == (
        "choose --kernel from: K0 (_rms_norm_forward_kernel); give each as its id (K0), its function "
        f"(_rms_norm_forward_kernel) or both as the reports print them ({printed})"
    )
    if not has_gpu:  # selected, then stopped where a CPU machine stops: at the measuring
        chosen = run_cli(["bench", "--bundle", str(bundle), "--kernel", printed])
        assert "kernel" not in (chosen.problem or "") and "GPU" in chosen.err_text, chosen.output


@pytest.mark.slow
def test_a_kernel_that_cannot_compile_is_recorded_in_the_bundle_not_fatal(tmp_path: Path, run_cli: RunCli) -> None:
    """many_launches.py is a script: its snapshot runs the program at import, which a compile worker
    cannot (explain reports the same). The bundle is still written, each (spec, toolchain) recorded."""
    from ktriage.workload.recorded.bundle import load_recorded_bundle

    bundle = tmp_path / "many"
    out = run_cli(["bench", str(MANY), *TOOLCHAINS, "--compile-only", "--bundle", str(bundle)])
    assert out.exit_code == exit_codes.OK, out.output
    rec = load_recorded_bundle(bundle)
    assert [(e.id, e.label) for e in rec.entries] == [
        (0, "4096 n=4096"),
        (1, "8192 n=8192"),
        (2, "16384 n=16384"),
        (3, "65536 n=65536"),
    ]
    keys = {e.spec_key for e in rec.entries}
    assert {(k, tc) for k in keys for tc in rec.bundle.toolchains} == set(rec.bundle.artifacts)


def test_bench_bundle_on_a_machine_without_gpu_says_where_to_run(
    tmp_path: Path, run_cli: RunCli, has_gpu: bool
) -> None:
    from ktriage.workload.bundles.format import write_manifest

    if has_gpu:
        pytest.skip("this machine has a GPU")
    bundle = tmp_path / "b"
    bundle.mkdir()
    write_manifest(
        bundle,
        {
            "format_version": 1,
            "op": "w",
            "mode": "recorded",
            "precision": "",
            "target": "sm_90",
            "sm_count": 0,
            "backends": [],
            "inputs": [],
            "toolchains": {},
            "specs": {},
            "artifacts": {},
        },
    )
    out = run_cli(["bench", "--bundle", str(bundle)])
    assert out.exit_code == exit_codes.USAGE, out.output
    assert "GPU" in out.err_text


def test_compare_reads_recorded_cells_from_the_real_results_writer(tmp_path: Path, run_cli: RunCli) -> None:
    from ktriage.bench.recorded import summary_rows
    from ktriage.measure.cells import Cell, CellKey, RunInfo
    from ktriage.measure.results_file import read_results, write_results

    ref, new = "triton-3.3.1.ptxas-x", "triton-3.4.0.ptxas-y"
    run = RunInfo(toolchains=[{"id": ref, "spec": "triton==3.3.1"}, {"id": new, "spec": "triton==3.4.0"}])
    fast = [0.010 + 0.0001 * (i % 5) for i in range(40)]  # synthetic samples (ms)
    slow = [s * 1.5 for s in fast]
    cells = []
    for entry, backend, label in (
        (0, "K0:_rms_norm_forward_kernel", "2048x1024,1024,2048 n_cols=1024"),
        (1, "K1:_rms_norm_backward_kernel", "2048x1024,1024,132x1024 n_rows=2048"),
    ):
        cells.append(
            Cell(
                CellKey("tb_rms_norm_bwd", "recorded", entry, label, backend, ref),
                "ok",
                samples_ms=fast,
                accuracy={"reference": True, "deterministic": True},
            )
        )
    cells.append(
        Cell(
            CellKey("tb_rms_norm_bwd", "recorded", 0, cells[0].key.input_label, cells[0].key.backend, new),
            "ok",
            samples_ms=slow,
            accuracy={"agreement": "bitwise equal", "passed": True},
        )
    )
    cells.append(
        Cell(
            CellKey("tb_rms_norm_bwd", "recorded", 1, cells[1].key.input_label, cells[1].key.backend, new),
            "wrong",
            error="results differ from the reference: miscompile or non-determinism (max abs err 0.5, at arg dW_ptr)",
        )
    )
    path = write_results(tmp_path / "r.json", run, cells)
    assert len(read_results(path)[1]) == 4
    out = run_cli(["compare", str(path), "--toolchains", "--format", "json"])
    assert out.exit_code == exit_codes.INCOMPLETE, out.output  # a regression, and a wrong cell not compared
    text = out.stdout
    assert "K0:_rms_norm_forward_kernel" in text and "regression" in text
    assert "K1:_rms_norm_backward_kernel" in text and "miscompile" in text
    rows = summary_rows(cells, ref)
    assert [(r["kernel"][:2], r["toolchain"][:12], r["status"], r["check"][:14]) for r in rows] == [
        ("K0", "triton-3.3.1", "ok", "reference"),
        ("K0", "triton-3.4.0", "ok", "bitwise equal"),
        ("K1", "triton-3.3.1", "ok", "reference"),
        ("K1", "triton-3.4.0", "wrong", "-"),
    ]
    assert rows[1]["vs_ref"].startswith("1.5")


def test_a_kernel_as_the_reports_print_it_selects_its_inputs_for_bench() -> None:
    """``bench W.json -i K7:_layer_norm_backward_kernel``: the kernel column bench's own report prints,
    copied into ``--input``, was 'no input matches'; it selects that kernel's inputs now, as explain's."""
    from ktriage.record.workload import load_workload
    from ktriage.workload.recorded.bundle import select_kernels

    workload = load_workload(LN_BWD)
    k7 = [i.id for i in workload.kernels[7].inputs]
    for form in ("K7:_layer_norm_backward_kernel", "K7", "K7:_layer_norm_backward_kernel[X_ptr=4096x4608]"):
        want = k7 if "[" not in form else [0]
        assert [(k.id, ids) for k, ids in select_kernels(workload, None, [form])] == [("K7", want)], form
