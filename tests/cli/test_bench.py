"""`ktriage bench` on the CPU machine through the real ``main(argv)``: the compile-here half and the errors
(the plan: tests/bench/test_plan.py; the table: tests/report/test_bench.py).
(The measuring half runs on the GPU machine: benchmarks/gpu/issue3_full.sh, results in benchmarks/gpu/issue3.)"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from ktriage.cli import exit_codes
from tests.conftest import RunCli


@pytest.mark.parametrize(
    "args, words",
    [
        (["--op", "layer_nrom"], "layer_norm"),
        (["--op", "layer_norm", "--only", "liger_layernorm"], "liger_layer_norm"),
        (["--op", "layer_norm", "--metrics", "latency,speeed"], "speedup"),
        (["--op", "layer_norm", "--bwd", "--fwd"], "choose one"),
        (
            ["--op", "layer_norm", "--only", "torch_layer_norm", "-t", "triton==3.4.0"],
            "add liger_layer_norm or triton_layer_norm to --only (the layer_norm backends a toolchain compiles)",
        ),
        # no GPU here, and native backends compile nothing: the fix is the GPU machine, not --compile-only
        (["--op", "layer_norm", "--bwd", "--only", "torch_layer_norm"], "run it on the GPU machine"),
        # an operator given where the recorded workload goes is told --op, not that --bwd does not apply
        (["layer_norm", "--bwd", "-t", "triton==3.4.0"], "bench --op layer_norm"),
        (["nosuch", "--bwd"], "is not a recorded workload"),
        # rms_norm has TritonBench's facts (triage reads its files) and catalog kernels, but no native backends
        # and no replay: bench has nothing to run, and says which operators it runs
        (
            ["--op", "rms_norm"],
            "bench has no workload of 'rms_norm': ktriage knows its kernels (catalog: liger.rms_norm)",
        ),
        (["--op", "rms_norm", "-t", "triton==3.4.0", "--compile-only"], "or bench one of: layer_norm, embedding, rope"),
        (["--op", "nosuch_op"], "unknown operator 'nosuch_op'"),
        # --compile-only with no toolchain compiled nothing and exited 0 without a word
        (["--op", "layer_norm", "--compile-only"], "--compile-only with no -t/--toolchain: nothing to compile"),
        # --compile-only measures nothing: -o and --format json wrote and printed nothing, exit 0
        (
            ["--op", "layer_norm", "-t", "triton==3.4.0", "-i", "0", "--compile-only", "-o", "r.json"],
            "error: -o r.json: --compile-only measures nothing, so there are no results to write",
        ),
        (
            ["--op", "layer_norm", "-t", "triton==3.4.0", "-i", "0", "--compile-only", "--format", "json"],
            "error: --format json: --compile-only measures nothing",
        ),
        # the options of measuring were dropped without a word, exit 0 (the bundle keeps none of them)
        (
            ["--op", "layer_norm", "-t", "triton==3.4.0", "-i", "0", "--compile-only", "--max-time", "5"],
            "error: --max-time 5: --compile-only measures nothing",
        ),
        (
            ["--op", "layer_norm", "-t", "triton==3.4.0", "--compile-only", "--timing", "graph", "--profile"],
            "error: --timing graph, --profile: --compile-only measures nothing",
        ),
        (
            ["--op", "layer_norm", "-t", "triton==3.4.0", "--compile-only", "--gpus", "1", "--min-samples", "20"],
            "ktriage bench --bundle DIR --min-samples 20 --gpus 1",  # the fix: the measuring run, as given
        ),
        (
            ["--op", "layer_norm", "-t", "triton==3.4.0", "--compile-only", "--artifact-timing", "kernel"],
            "error: --artifact-timing kernel: --compile-only measures nothing",
        ),
    ],
)
def test_bad_input_names_the_fix(args, words, run_cli: RunCli) -> None:  # type: ignore[no-untyped-def]
    out = run_cli(["bench", *args])
    assert out.exit_code == exit_codes.USAGE, out.output
    assert words in out.err_text  # in the error's problem or fix line


@pytest.mark.slow
def test_compile_only_writes_a_bundle_the_gpu_host_can_read(tmp_path: Path, run_cli: RunCli) -> None:
    from ktriage.workload.bundles.format import load_bundle

    bundle = tmp_path / "b"
    out = run_cli(
        [
            "bench",
            "--op",
            "layer_norm",
            "--bwd",
            "--only",
            "liger_layer_norm,torch_layer_norm",
            "--input-id",
            "6",
            "--num-inputs",
            "2",
            "-t",
            "triton==3.3.1",
            "-t",
            "triton==3.4.0",
            "--compile-only",
            "--bundle",
            str(bundle),
        ]
    )
    assert out.exit_code == exit_codes.OK, out.output
    assert "ktriage bench --bundle" in out.output
    loaded = load_bundle(bundle)
    assert (loaded.op, loaded.mode) == ("layer_norm", "bwd")
    assert [c.id for c in loaded.input_cases()] == [6, 7]
    assert len(loaded.toolchains) == 2
    # N=4608 with 3.4.0 is the spilling kernel: its resources travel with the bundle
    key = loaded.kernel_key("liger_layer_norm", 7, "bwd")
    tc34 = next(t for t in loaded.toolchains if t.startswith("triton-3.4.0"))
    art = loaded.artifact(key, tc34)
    assert art.resources["spill_store_bytes"] > 1000 and art.cubin_bytes()[:4] == b"\x7fELF"


def test_the_default_backends_of_a_backward_bundle_leave_out_forward_only_replays(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """Without --only, layer_norm's default set holds triton_layer_norm, whose replay is forward only: a bwd
    bundle builds the others (it failed with "fix: bundle it with --fwd", though bwd was asked)."""
    from ktriage.workload.bundles.format import load_bundle

    bundle = tmp_path / "b"
    argv = ["bench", "--op", "layer_norm", "--bwd", "-i", "0", "-t", "triton==3.4.0", "--compile-only"]
    out = run_cli([*argv, "--bundle", str(bundle)])
    assert out.exit_code == exit_codes.OK, out.output
    backends = {b for item in load_bundle(bundle).inputs for b in item["kernels"]}
    assert "liger_layer_norm" in backends and "triton_layer_norm" not in backends


def test_a_bundle_measures_the_backends_its_compile_chose(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--only liger_layer_norm --compile-only` printed `ktriage bench --bundle DIR --op layer_norm --bwd`,
    and that run timed every native backend of the op (torch_compile, triton...): the bundle did not keep the
    choice. It keeps it now (its manifest's selection), and `bench --bundle` measures it unless given its own
    --only; a bundle written before (no selection) still measures the op's default set. The GPU session is
    faked: what is checked is the plan it is handed."""
    import json

    import ktriage.api._bench
    import ktriage.bench.session
    from ktriage.errors import KtriageError
    from ktriage.workload.bundles.format import Selection, load_bundle

    plans: list[object] = []

    def fake_run_bench(plan: object, **_: object) -> tuple[object, list[object]]:
        plans.append(plan)
        raise KtriageError("stopped before the GPU session", "none: the test checks the plan")

    monkeypatch.setattr(ktriage.api._bench, "require_torch", lambda: None)
    monkeypatch.setattr(ktriage.bench.session, "run_bench", fake_run_bench)
    bundle = tmp_path / "b"
    argv = ["bench", "--op", "layer_norm", "--bwd", "--only", "liger_layer_norm", "-i", "0", "-t", "triton==3.4.0"]
    built = run_cli([*argv, "--compile-only", "--bundle", str(bundle)])
    assert built.exit_code == exit_codes.OK, built.output
    assert load_bundle(bundle).selection == Selection(("liger_layer_norm",), None)
    assert "the bundle keeps --only liger_layer_norm" in built.output
    db = ["--db", f"sqlite:///{tmp_path / 'k.db'}"]

    def measured(*given: str) -> tuple[list[str], list[str]]:
        plans.clear()
        run_cli(["bench", "--bundle", str(bundle), *db, *given])
        (plan,) = plans
        return plan.native_backends, plan.artifact_backends  # type: ignore[attr-defined]

    # the baseline (the op's, torch_layer_norm) is timed natively, as in the compile's choice; nothing else
    assert measured() == (["torch_layer_norm"], ["liger_layer_norm"])
    assert measured("--only", "liger_layer_norm,torch_compile_layer_norm") == (
        ["torch_layer_norm", "torch_compile_layer_norm"],
        ["liger_layer_norm"],
    )
    manifest = json.loads((bundle / "manifest.json").read_text())
    del manifest["selection"]  # a bundle written before the selection was kept
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    native, _ = measured()
    assert native == ["torch_layer_norm", "triton_layer_norm", "torch_compile_layer_norm"]


def test_a_bundle_that_is_not_there_names_the_path_given(tmp_path: Path, run_cli: RunCli) -> None:
    missing = tmp_path / "nowhere"
    out = run_cli(["bench", "--bundle", str(missing), "--op", "layer_norm", "--bwd"])
    assert out.exit_code == exit_codes.USAGE
    assert f"no bundle at {missing}: {missing} does not exist" in out.err_text and "--compile-only" in out.err_text


WORKLOAD = Path(__file__).parents[1] / "data" / "workloads" / "liger_step.workload.json"


def test_a_workload_given_as_the_bundle_is_named_as_one(tmp_path: Path, run_cli: RunCli) -> None:
    """`bench --bundle W.json` (plain or gzipped, as the corpus commits them) read the workload as a
    damaged manifest ("missing key 'op'", "not UTF-8") and said to copy the bundle folder again; it
    says what the file is and the command that makes a bundle of it."""
    packed = tmp_path / "W.json.gz"
    packed.write_bytes(gzip.compress(WORKLOAD.read_bytes()))
    for given in (WORKLOAD, packed):
        out = run_cli(["bench", "--bundle", str(given)])
        assert out.exit_code == exit_codes.USAGE, out.output
        assert out.problem == f"{given} is a recorded workload (`ktriage record`), not a bundle"
        assert f"ktriage bench {given} -t OLD -t NEW --compile-only --bundle DIR" in (out.fix or "")
    deep = tmp_path / "deep.json"  # what is read to tell a workload must not fail on its own
    deep.write_text("[" * 100_000 + "]" * 100_000)
    out = run_cli(["bench", "--bundle", str(deep)])
    assert out.exit_code == exit_codes.USAGE and "expected object, got array" in out.problem, out.output


@pytest.mark.parametrize("more", [[], ["--compile-only", "--bundle", "DIR"]])
def test_a_recorded_workload_refuses_host_artifacts_as_an_op_option(more: list[str], run_cli: RunCli) -> None:
    """--host-artifacts times the host's copy of an op's artifact backends; a workload has none, so it was
    ignored (and with --compile-only, its fix named a measuring run that ignored it too)."""
    out = run_cli(["bench", str(WORKLOAD), "-t", "triton==3.4.0", "--host-artifacts", *more])
    assert out.exit_code == exit_codes.USAGE, out.output
    assert (
        out.problem
        == "--host-artifacts does not apply to a recorded workload: its kernels, inputs, dtypes and grids are recorded"
    ), out.err_text


@pytest.mark.parametrize("more", [[], ["--compile-only", "--bundle", "DIR"]])
def test_a_recorded_workload_refuses_profile_and_names_ktriage_profile(more: list[str], run_cli: RunCli) -> None:
    """`bench W.json -t A -t B --profile` timed and exited 0 with no counters (the recorded bench has no
    profiling step); with --compile-only its fix said `bench --bundle DIR --profile`, refused there again."""
    out = run_cli(["bench", str(WORKLOAD), "-t", "triton==3.4.0", "--profile", *more])
    assert out.exit_code == exit_codes.USAGE, out.output
    assert "--profile does not apply to a recorded workload's bench" in out.err_text, out.err_text
    assert "ktriage profile --bundle DIR" in out.err_text and "bench --bundle DIR --profile" not in out.err_text


def test_measuring_a_bundle_refuses_the_options_of_compiling(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`bench --bundle DIR -j 8 --compile-timeout 60` compiles nothing (the bundle is measured as built): both
    were dropped without a word, for an op's bundle and a recorded one. $KTRIAGE_COMPILE_TIMEOUT, set for every
    verb, is no request to this run: not refused."""
    import ktriage.api._bench
    import ktriage.bench.session
    from ktriage.errors import KtriageError

    def no_gpu_session(*_: object, **__: object) -> None:
        raise KtriageError("stopped before the GPU session", "none: the test checks what comes before")

    monkeypatch.setattr(ktriage.api._bench, "require_torch", lambda: None)
    monkeypatch.setattr(ktriage.bench.session, "run_bench", no_gpu_session)
    op_bundle, recorded = tmp_path / "op", tmp_path / "rec"
    for source, bundle in ((["--op", "layer_norm", "-i", "0"], op_bundle), ([str(WORKLOAD)], recorded)):
        built = run_cli(["bench", *source, "-t", "triton==3.4.0", "--compile-only", "--bundle", str(bundle)])
        assert built.exit_code == exit_codes.OK, built.output
        for given, problem in (
            (["-j", "8"], "-j/--jobs 8"),
            (["--compile-timeout", "60", "--jobs", "2"], "-j/--jobs 2, --compile-timeout 60"),
        ):
            out = run_cli(["bench", "--bundle", str(bundle), *given])
            assert out.exit_code == exit_codes.USAGE, out.output
            assert (
                out.problem
                == f"{problem}: nothing is compiled when measuring bundle {bundle} (it was compiled where it was built)"
            ), out.err_text
            assert "--compile-only --bundle DIR --jobs" in (out.fix or ""), out.err_text
    out = run_cli(
        ["bench", "--bundle", str(op_bundle), "--db", f"sqlite:///{tmp_path / 'k.db'}"],
        env={"KTRIAGE_COMPILE_TIMEOUT": "60"},
    )
    assert out.problem == "stopped before the GPU session", out.err_text


def test_measuring_with_toolchains_and_no_gpu_is_refused_before_the_compile(tmp_path: Path, run_cli: RunCli) -> None:
    """`bench --op layer_norm -t T` (no --compile-only) on a machine without a GPU compiled every kernel into a
    bundle (minutes with a cold cache), then the worker found no GPU. The CUDA driver is asked first now: exit 2
    at once with the compile-only way, nothing compiled, no bundle. (No GPU is simulated with
    CUDA_VISIBLE_DEVICES="", so the test means the same on the GPU host.)"""
    bundle = tmp_path / "b"
    for source in (["--op", "layer_norm", "-i", "0"], [str(WORKLOAD)]):
        out = run_cli(
            ["bench", *source, "-t", "triton==3.4.0", "--bundle", str(bundle)], env={"CUDA_VISIBLE_DEVICES": ""}
        )
        assert out.exit_code == exit_codes.USAGE, out.output
        assert out.problem.startswith("measuring needs "), out.err_text
        assert "GPU" in out.problem and (out.fix or "").startswith(
            "add --compile-only and --bundle DIR to compile here (no GPU needed), then measure the bundle on the GPU "
            "machine: `ktriage bench --bundle DIR`"
        ), out.err_text
        assert "kt." not in out.err_text, out.err_text
        assert "bundle:" not in out.output and not bundle.exists()  # refused before the compile


def test_measuring_a_bundle_with_no_gpu_says_to_measure_it_on_the_gpu_machine(tmp_path: Path, run_cli: RunCli) -> None:
    """`bench --bundle B` on a machine without a GPU said "compile here with --compile-only --bundle DIR":
    B is compiled already, and --compile-only with no -t is refused. The fix now names the bundle's own
    command on the GPU machine and the offline explain. (No GPU is simulated with CUDA_VISIBLE_DEVICES="",
    so the test means the same on the GPU host.)"""
    sources = {"op": (["--op", "layer_norm", "-i", "0"], "catalog op of layer_norm"), "recorded": ([str(WORKLOAD)], "")}
    for name, (source, explained) in sources.items():
        bundle = tmp_path / name
        built = run_cli(["bench", *source, "-t", "triton==3.4.0", "--compile-only", "--bundle", str(bundle)])
        assert built.exit_code == exit_codes.OK, built.output
        out = run_cli(["bench", "--bundle", str(bundle)], env={"CUDA_VISIBLE_DEVICES": ""})
        assert out.exit_code == exit_codes.USAGE, out.output
        assert "no CUDA GPU is visible" in out.problem, out.err_text
        fix = out.fix or ""
        assert f"run `ktriage bench --bundle {bundle}`" in fix and "on the GPU machine" in fix, fix
        assert "compile here" not in fix and "add --compile-only" not in fix, fix
        # the workload file the bundle was built from, by the path it was given (it named liger_step.json, no file)
        assert f"ktriage explain {'OP' if name == 'op' else WORKLOAD} -t OLD -t NEW" in fix, fix
        assert explained in fix, fix


def test_a_bundle_given_with_a_toolchain_and_no_op_says_to_drop_the_toolchain(tmp_path: Path, run_cli: RunCli) -> None:
    """`bench --bundle DIR -t T` (meaning to measure DIR) said "no --op given, e.g. --op layer_norm", a
    command that compiles into DIR over the bundle: the fix says -t makes DIR the output, and to drop it."""
    out = run_cli(["bench", "--bundle", str(tmp_path / "b"), "-t", "triton==3.4.0"])
    assert out.exit_code == exit_codes.USAGE, out.output
    assert out.problem == "no --op given" and "to measure that bundle, drop -t;" in (out.fix or ""), out.err_text


@pytest.mark.parametrize(
    "args, fix",
    [
        # the fix named liger_layer_norm whatever the op: an embedding bench is told its own artifact backend
        (["--op", "embedding", "--bwd", "--only", "torch_embedding"], "add liger_embedding to --only"),
        # rope has no backend that a toolchain compiles: there is nothing to add to --only, so drop -t
        (
            ["--op", "rope", "--only", "apply_rotary_pos_emb,liger_rotary_pos_emb"],
            "drop -t/--toolchain and measure rope",
        ),
        (["--op", "rope"], "drop -t/--toolchain and measure rope"),
    ],
)
def test_toolchains_without_an_artifact_backend_name_the_ops_own_fix(args, fix, run_cli: RunCli) -> None:  # type: ignore[no-untyped-def]
    out = run_cli(["bench", *args, "-t", "triton==3.4.0", "--compile-only", "--bundle", "unused"])
    assert out.exit_code == exit_codes.USAGE, out.output
    assert fix in (out.fix or ""), out.err_text
    assert "add liger_layer_norm" not in out.err_text  # another op's backend


def test_a_compile_only_report_names_the_toolchains_of_its_bundle(tmp_path: Path) -> None:
    """A compile-only BenchReport measured nothing, but its toolchains are the bundle's records (the field
    said so and was empty)."""
    import ktriage.api as kt

    report = kt.bench(
        op="layer_norm",
        mode="bwd",
        inputs=["0"],
        toolchains=["triton==3.4.0"],
        compile_only=True,
        bundle=tmp_path / "b",
    )
    assert report.plan is None and report.bundle is not None
    assert [t["spec"] for t in report.toolchains] == ["triton==3.4.0"]
