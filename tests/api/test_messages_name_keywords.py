"""A refusal that reaches a Python caller names the keyword it passes as well as the command's flag
(ktriage.errors.option): kt.triage(limit=3) was told "--limit 3 applies to the GPU re-run (--bundle,
...)", options a library caller cannot pass by those names. One test per verb family, through kt.*."""

from __future__ import annotations

from pathlib import Path

import pytest

import ktriage.api as kt
from ktriage.errors import KtriageError, option

ROOT = Path(__file__).parents[2]
AA = ROOT / "benchmarks/triage/tritonbench_aa"


def test_option_spells_the_keyword_and_the_flag() -> None:
    """Pure wording: the one helper every such message goes through."""
    assert option("limit", "--limit") == "limit (--limit)"
    assert option("limit", "--limit", 20) == "limit=20 (--limit 20)"
    assert option("max_time", "--max-time", 3.0) == "max_time=3 (--max-time 3)"
    assert option("precision", "--precision", "bf16") == "precision='bf16' (--precision bf16)"
    assert option("measure", "--measure", True) == "measure=True (--measure)"
    assert option("op") == "op"


def test_triage_names_limit_and_max_time_as_keywords() -> None:
    old, new = AA / "layer_norm_bwd_run1.csv", AA / "layer_norm_bwd_run2.csv"
    with pytest.raises(KtriageError) as limit:
        kt.triage(old=old, new=new, limit=3)
    assert limit.value.problem.startswith("limit=3 (--limit 3) applies to the GPU re-run (bundle (--bundle), ")
    assert "workloads (--workload)" in limit.value.problem
    assert "add bundle='DIR' (--bundle DIR), or measure=True (--measure)" in (limit.value.fix or "")
    assert "drop limit (--limit)" in (limit.value.fix or "")
    with pytest.raises(KtriageError) as max_time:
        kt.triage(old=old, new=new, max_time=3)
    assert max_time.value.problem.startswith("max_time=3 (--max-time 3) sets the sampling")
    assert (max_time.value.fix or "").startswith("drop max_time (--max-time); or add bundle='DIR' (--bundle DIR)")


def test_bisect_names_gpus_and_metric_as_keywords() -> None:
    with pytest.raises(KtriageError) as refused:
        kt.bisect(source="ptxas", good="12.4.131", bad="12.8.93", op="liger.embedding", metric="sass:ATOMG", gpus="all")
    assert refused.value.problem == (
        "gpus (--gpus) applies to a timed bisect (metric='latency' (--metric latency)), "
        "not metric='sass:ATOMG' (--metric sass:ATOMG)"
    )
    assert refused.value.fix == (
        "leave gpus (--gpus) out: a compile-only bisect uses no GPU (workers (--workers) parallelizes it)"
    )


def test_bench_names_op_and_timing_as_keywords() -> None:
    with pytest.raises(KtriageError) as no_op:
        kt.bench()
    assert no_op.value.problem == "no op (--op) given"
    assert (no_op.value.fix or "").startswith("e.g. op='layer_norm' (--op layer_norm)")
    with pytest.raises(KtriageError) as timing:
        kt.bench(op="layer_norm", timing="nope")
    assert timing.value.problem == "unknown timing='nope' (--timing nope)"


def test_bisect_step_names_baseline_role_and_metric_as_keywords(tmp_path: Path) -> None:
    with pytest.raises(KtriageError) as neither:
        kt.bisect_step()
    assert neither.value.problem == "give exactly one of baseline (--baseline) and record_baseline (--record-baseline)"
    baseline = tmp_path / "baseline.json"
    with pytest.raises(KtriageError) as role:
        kt.bisect_step(record_baseline=baseline, role="worse")
    assert role.value.problem == "role='worse' (--as worse) is not an endpoint of a baseline"
    assert role.value.fix == "use role='good' (--as good) or role='bad' (--as bad)"
    with pytest.raises(KtriageError) as needs:
        kt.bisect_step(record_baseline=baseline, op="liger.layer_norm")
    assert needs.value.problem == (
        "record_baseline (--record-baseline) needs metric (--metric), toolchain (--toolchain) and spec (--spec) "
        "or op (--op)"
    )
    assert not baseline.exists()


def test_explain_names_fail_on_fixes_and_fix_toolchains_as_keywords() -> None:
    with pytest.raises(KtriageError) as fail_on:
        kt.explain(target="liger.layer_norm", toolchains=["triton==3.3.1", "triton==3.4.0"], fail_on="nope")
    assert fail_on.value.problem == "fail_on='nope' (--fail-on nope) is not one of regression, any"
    assert "fail_on='any' (--fail-on any) for any compile-side change" in (fail_on.value.fix or "")
    with pytest.raises(KtriageError) as fixes:
        kt.explain(target="liger.layer_norm", toolchains=["triton==3.4.0"], fix_toolchains=["triton==3.5.1"])
    assert fixes.value.problem == (
        "fix_toolchains (--fix-toolchain) names toolchains to try as fixes, but fixes=True (--fixes) was not given"
    )
    with pytest.raises(KtriageError) as judged:
        kt.explain(target="liger.layer_norm", toolchains=["triton==3.4.0"], fixes=True)
    assert judged.value.problem.startswith("fixes (--fixes) needs a toolchain judged against a reference")
    with pytest.raises(KtriageError) as diff:
        kt.explain(target="liger.layer_norm", toolchains=["triton==3.3.1", "triton==3.4.0"], ptx_diff=True)
    assert diff.value.problem.startswith("ptx_diff (--ptx-diff) and sass_diff (--sass-diff) show one kernel, but ")
    assert (diff.value.fix or "").startswith("select one input, e.g. inputs='")


def test_profile_names_input_db_and_ncu_as_keywords(tmp_path: Path) -> None:
    with pytest.raises(KtriageError) as both:
        kt.profile(bundle=tmp_path, input="7", input_id=7)
    assert both.value.problem == "both input='7' (--input 7) and input_id=7 (--input-id 7) name the input to profile"
    with pytest.raises(KtriageError) as db:
        kt.profile(bundle=tmp_path, db="sqlite:///k.db")
    assert db.value.problem == (
        "db (--db) is the store where the run of results (--results) is updated, and no results (--results) was given"
    )
    with pytest.raises(KtriageError) as ncu:
        kt.profile(bundle=tmp_path, ncu=str(tmp_path / "no-ncu"))
    assert (
        ncu.value.problem
        == f"ncu='{tmp_path / 'no-ncu'}' (--ncu {tmp_path / 'no-ncu'}): no such program (or not executable)"
    )
    (tmp_path / "afile").write_text("x")
    with pytest.raises(KtriageError) as raw:
        kt.profile(bundle=tmp_path, raw_dir=tmp_path / "afile")
    assert raw.value.problem == f"raw_dir (--raw-dir) {tmp_path / 'afile'} is a file, not a folder"


def test_tune_names_results_file_and_compile_only_as_keywords(tmp_path: Path) -> None:
    with pytest.raises(KtriageError) as refused:
        kt.tune(
            target="liger.layer_norm",
            toolchains=["triton==3.4.0"],
            inputs="N=4608",
            compile_only=True,
            results_file=tmp_path / "r.json",
        )
    assert refused.value.problem == (
        "results_file (--results) reports the GPU winner from a timing of the tune bundle, "
        "but compile_only=True (--compile-only) stops before timing"
    )
    assert refused.value.fix == (
        "drop compile_only (--compile-only) to read the results, or drop results_file (--results) to screen only"
    )


def test_calibrate_names_from_cells_results_explain_and_backends_as_keywords(tmp_path: Path) -> None:
    with pytest.raises(KtriageError) as nothing:
        kt.calibrate()
    assert nothing.value.fix == (
        "pass from_cells='cells.jsonl' (--from cells.jsonl), "
        "or results='R.json' (--results R.json) with explain='E.json' (--explain E.json)"
    )
    with pytest.raises(KtriageError) as backend:
        kt.calibrate(from_cells=tmp_path / "c.jsonl", backends="liger_layer_norm")
    assert backend.value.problem == (
        "backends (--backend) names the artifact backend of results (--results) or runs (--run), and none was given"
    )
    with pytest.raises(KtriageError) as unpaired:
        kt.calibrate(results=[tmp_path / "r.json"])
    assert unpaired.value.problem == "1 results file or run but 0 reports in explain (--explain)"
    report = tmp_path / "report.md"
    report.write_text("# a report\n")
    with pytest.raises(KtriageError) as cells_out:
        kt.calibrate(from_cells=tmp_path / "c.jsonl", cells_out=report)
    assert cells_out.value.problem.startswith(f"cells_out (--cells-out) {report} exists and is not a calibration")


def test_runs_list_names_status_as_a_keyword() -> None:
    with pytest.raises(KtriageError) as refused:
        kt.runs_list(status="bogus")
    assert refused.value.problem == "status='bogus' (--status bogus) is not a run status"


def test_fidelity_names_cases_as_a_keyword() -> None:
    with pytest.raises(KtriageError) as refused:
        kt.fidelity(cases="nomatch")
    assert (refused.value.fix or "").startswith("cases (-k/--case) takes a part of a case name; ")


def test_bisect_step_baseline_files_name_record_baseline_as_a_keyword(tmp_path: Path) -> None:
    """bisect.step's refusals of a baseline file named only ``--record-baseline``."""
    garbage = tmp_path / "garbage.json"
    garbage.write_text("not json")
    with pytest.raises(KtriageError) as unreadable:
        kt.bisect_step(baseline=garbage)
    assert "record_baseline='FILE' (--record-baseline FILE) at a good commit" in (unreadable.value.fix or "")
    results = tmp_path / "results.json"
    results.write_text('{"format_version": 1, "cells": []}')
    with pytest.raises(KtriageError) as replaced:
        kt.bisect_step(record_baseline=results, metric="registers", toolchain="triton==3.4.0", op="liger.layer_norm")
    assert replaced.value.problem.startswith(f"record_baseline (--record-baseline) {results} exists and is not a ")


def test_catalog_input_selection_names_input_id_and_precision_as_keywords() -> None:
    """catalog.resolve's refusals named only ``--input-id`` and ``--precision``."""
    with pytest.raises(KtriageError) as none:
        kt.tune(target="liger.layer_norm", toolchains="triton==3.4.0", input_id=999, num_inputs=2)
    assert none.value.problem == "input_id=999 (--input-id 999) and num_inputs=2 (--num-inputs 2) selects no input"
    spec_file = ROOT / "examples/specs/scaled_rows.toml"
    with pytest.raises(KtriageError) as precision:
        kt.explain(target=spec_file, toolchains=["triton==3.4.0"], precision="bf16", mode="fwd")
    assert precision.value.problem.startswith(
        f"precision='bf16' (--precision bf16), mode='fwd' (--mode fwd) do not apply to the spec file {spec_file}"
    )
    assert (precision.value.fix or "").startswith("drop them, or edit the spec file")


def test_calibrate_names_backends_as_a_keyword_for_a_results_file(tmp_path: Path) -> None:
    """predict.dataset's refusals of a backend named only ``--backend``."""
    results = ROOT / "benchmarks/perf/h200/ln_bwd.json"
    report = tmp_path / "explain.json"
    report.write_text('{"tool": "ktriage explain", "kernels": [{"spec": {"meta": {"input_id": 0}}}]}')
    with pytest.raises(KtriageError) as unknown:
        kt.calibrate(results=results, explain=report, backends="nope")
    assert unknown.value.problem == f"{results}: backends='nope' (--backend nope) is no artifact backend of the run"
    with pytest.raises(KtriageError) as unnamed:
        kt.calibrate(results=results, explain=report)
    assert "and no backends (--backend) says which of the run's backends it compiled" in unnamed.value.problem
    assert (unnamed.value.fix or "").startswith("add backends=")


def test_tune_names_results_file_as_a_keyword_after_the_compile(tmp_path: Path, toolchain) -> None:  # type: ignore[no-untyped-def]
    """tune.timing_run's refusal of a missing results file named only ``--results`` (it is met after the
    candidates compile, so the toolchain comes from the test home)."""
    toolchain("triton==3.4.0")
    missing = tmp_path / "nowhere.json"
    with pytest.raises(KtriageError) as refused:
        kt.tune(
            target="liger.layer_norm",
            toolchains="triton==3.4.0",
            inputs="N=4608",
            bundle=tmp_path / "b",
            results_file=missing,
        )
    assert refused.value.problem == f"results_file (--results) {missing} does not exist"


def test_option_spells_a_list_as_its_flag_repeated() -> None:
    """Pure wording: a flag given once per item (-t A -t B) next to the keyword's list."""
    assert option("toolchains", "-t", ["triton==3.3.1", "triton==3.4.0"]) == (
        "toolchains=['triton==3.3.1', 'triton==3.4.0'] (-t triton==3.3.1 -t triton==3.4.0)"
    )
    assert option("inputs", "--input", ("7",)) == "inputs=['7'] (--input 7)"


def test_option_quotes_the_flags_value_as_a_shell_needs_it() -> None:
    """A value with a space or a quote was pasted into the command unquoted (``--input (4096, 4096)``,
    ``-t triton==3.4.0,ptxas-options=-O3 -v``): the shell split it. The flag side is quoted (one home: the
    toolchain-split message quoted its own); the keyword side stays Python's repr; plain values are bare."""
    assert option("inputs", "--input", ["(4096, 4096)", "7"]) == (
        "inputs=['(4096, 4096)', '7'] (--input '(4096, 4096)' --input 7)"
    )
    assert option("toolchain", "-t", "triton==3.4.0,ptxas-options=-O3 -v") == (
        "toolchain='triton==3.4.0,ptxas-options=-O3 -v' (-t 'triton==3.4.0,ptxas-options=-O3 -v')"
    )
    assert option("spec", "--spec", "it's.toml") == "spec=\"it's.toml\" (--spec 'it'\"'\"'s.toml')"
    assert option("db", "--db", "sqlite:////tmp/k.db") == "db='sqlite:////tmp/k.db' (--db sqlite:////tmp/k.db)"
    assert option("threshold", "--threshold", -0.5) == "threshold=-0.5 (--threshold -0.5)"


def test_tune_and_explain_name_toolchains_and_inputs_as_keywords() -> None:
    """The api layer's own examples were flags alone: "e.g. -t triton==3.4.0", "pass --input for each"."""
    with pytest.raises(KtriageError) as no_tc:
        kt.tune(target="liger.layer_norm", toolchains=[])
    assert no_tc.value.problem == "no toolchains (-t/--toolchain) given"
    assert no_tc.value.fix == "pass the toolchain to tune for, e.g. toolchains=['triton==3.4.0'] (-t triton==3.4.0)"
    with pytest.raises(KtriageError) as each:
        kt.tune(target="liger.layer_norm", toolchains="triton==3.4.0")
    assert (each.value.fix or "").startswith("pass the inputs to tune as inputs (--input), e.g. inputs=['N=")
    assert "(--input N=" in (each.value.fix or "")
    with pytest.raises(KtriageError) as none:
        kt.explain(target="liger.layer_norm", toolchains=[])
    assert none.value.problem == "no toolchains (-t/--toolchain) given"
    assert (none.value.fix or "").endswith(
        "e.g. toolchains=['triton==3.3.1', 'triton==3.4.0'] (-t triton==3.3.1 -t triton==3.4.0)"
    )
    with pytest.raises(KtriageError) as alone:
        kt.explain(target="liger.layer_norm", toolchains=["triton==3.4.0"], fail_on="any")
    assert (alone.value.fix or "").endswith(
        "e.g. toolchains=['triton==3.3.1', 'triton==3.4.0'] (-t triton==3.3.1 -t triton==3.4.0)"
    )


def test_calibrate_tells_how_to_write_an_explain_report_from_python(tmp_path: Path) -> None:
    """_explain_report's fixes named only `ktriage explain ... -o FILE`."""
    results = ROOT / "benchmarks/perf/h200/ln_bwd.json"
    written = "Path('E.json').write_text(kt.explain(target=..., toolchains=[...]).json_text()) in Python"
    for content, expected in ((None, "write it with "), ("not json", "pass the JSON explain report, written with ")):
        report = tmp_path / "explain.json"
        if content is not None:
            report.write_text(content)
        with pytest.raises(KtriageError) as refused:
            kt.calibrate(results=results, explain=report)
        assert (refused.value.fix or "").startswith(expected + written)
        assert "`ktriage explain TARGET -t ... --format json -o E.json`" in (refused.value.fix or "")
    report.write_text('{"tool": "ktriage bench"}')
    with pytest.raises(KtriageError) as other:
        kt.calibrate(results=results, explain=report)
    assert (other.value.fix or "").startswith("pass the JSON explain report, written with " + written)


def test_bench_names_compile_only_and_bundle_as_keywords_when_there_is_no_gpu() -> None:
    """The no-GPU refusal's fix said only "add --compile-only --bundle DIR ... ktriage bench --bundle DIR"
    (refusal_before_compiling is pure: the driver's answer is given, as require_gpu_before_compiling reads it)."""
    from ktriage.api._bench import refusal_before_compiling

    refused = refusal_before_compiling("no CUDA driver", None, "python")
    assert refused is not None
    assert refused.fix == (
        "add compile_only=True (--compile-only) and bundle='DIR' (--bundle DIR) to compile here (no GPU needed), "
        "then measure the bundle on the GPU machine: kt.bench(bundle='DIR') (`ktriage bench --bundle DIR`)"
    )


def test_bench_recorded_names_op_toolchains_and_kernels_as_keywords(tmp_path: Path) -> None:
    with pytest.raises(KtriageError) as operator:
        kt.bench_recorded(workload="layer_norm")
    assert operator.value.problem.endswith("bench takes an operator as op (--op)")
    assert (operator.value.fix or "").startswith("kt.bench(op='layer_norm', ...) (`ktriage bench --op layer_norm")
    with pytest.raises(KtriageError) as no_workload:
        kt.bench_recorded(toolchains="triton==3.4.0", bundle=tmp_path / "b", compile_only=True)
    assert no_workload.value.problem == (
        "toolchains (-t/--toolchain) with bundle (--bundle) and no workload: nothing to compile"
    )
    with pytest.raises(KtriageError) as kernels:
        kt.bench_recorded(kernels=["K0"])
    assert kernels.value.problem == "kernels (--kernel) without a workload nor a bundle"
    # the fixes name the kt.bench_recorded call, then the command (the command line gets the command alone:
    # tests/cli/test_option_spellings.py)
    assert no_workload.value.fix == (
        "give the workload file: kt.bench_recorded(workload='W.json', toolchains=['A', 'B'], compile_only=True, "
        "bundle='DIR') (`ktriage bench W.json -t A -t B --compile-only --bundle DIR`)"
    )
    assert kernels.value.fix == (
        "give the workload: kt.bench_recorded(workload='W.json', toolchains=['A', 'B']) (`ktriage bench W.json -t A -t B`)"
    )


def test_bench_of_an_op_without_backends_names_the_kt_calls_that_time_it() -> None:
    """workload.ops.opdef.bench_op: rms_norm has catalog kernels and no backend; the way on is a recording, its
    bench and explain, each as the kt.* call with its command."""
    with pytest.raises(KtriageError) as refused:
        kt.bench(op="rms_norm")
    assert refused.value.fix == (
        "time a program that runs it: kt.record(command=['python', 'prog.py'], output='W.json') "
        "(`ktriage record -o W.json -- python prog.py`), then kt.bench_recorded(workload='W.json', "
        "toolchains=['OLD', 'NEW']) (`ktriage bench W.json -t OLD -t NEW`); compile-side: "
        "kt.explain(target='liger.rms_norm', toolchains=['OLD', 'NEW']) (`ktriage explain liger.rms_norm -t OLD -t NEW`); "
        "or bench one of: layer_norm, embedding, rope (as op (--op))"
    )


def test_record_and_workload_import_name_output_as_a_keyword(tmp_path: Path) -> None:
    with pytest.raises(KtriageError) as record:
        kt.record(command="true", output=tmp_path / "W.txt")
    assert (
        record.value.problem
        == f"output='{tmp_path / 'W.txt'}' (-o {tmp_path / 'W.txt'}): a workload file ends in .json"
    )
    assert record.value.fix == "write it as output='W.json' (-o W.json)"
    with pytest.raises(KtriageError) as imported:
        kt.workload_import(traces=[tmp_path / "t.ndjson"], output=tmp_path / "W.txt")
    assert imported.value.fix == "write it as output='W.json' (-o W.json)"


def test_toolchain_show_names_the_library_calls() -> None:
    with pytest.raises(KtriageError) as unknown:
        kt.toolchain_show(id_or_spec="triton==0.0.1")
    assert unknown.value.fix == (
        "see kt.toolchain_list() (`ktriage toolchain list`), or build it with kt.toolchain_add(spec='SPEC') "
        "(`ktriage toolchain add SPEC`)"
    )


def test_explain_refuses_a_fix_toolchain_it_would_never_try() -> None:
    """`--fix-toolchain` equal to the reference (or to the one toolchain judged) was skipped for every
    finding without a word: the report had no fix of it and never said why. Refused before compiling."""
    ref, new = "triton==3.4.0,ptxas==12.4.131", "triton==3.4.0"
    for neighbour, role in ((ref, "the reference toolchain"), (new, "the toolchain judged")):
        with pytest.raises(KtriageError) as refused:
            kt.explain(
                target="liger.embedding",
                mode="bwd",
                inputs=["0"],
                toolchains=[ref, new],
                fixes=True,
                fix_toolchains=[neighbour],
            )
        assert refused.value.problem.startswith(
            f"fix_toolchains=['{neighbour}'] (--fix-toolchain {neighbour}) is {role}"
        )
        assert refused.value.problem.endswith("so it is never tried as a fix"), refused.value.problem
        assert (refused.value.fix or "").startswith("drop it, or name a toolchain that is neither")


LN_BWD = ROOT / "benchmarks/gpu/issue3/run2_layer_norm_aa/ln_bwd.json"  # one H200 run of three Tritons


@pytest.mark.parametrize(
    "kwargs, problem, fix",
    [
        (
            {"reference": "triton==3.4.0"},
            "reference (--reference) picks the reference among the toolchains of one run, but toolchains "
            "(--toolchains) was not given",
            "add toolchains=True (--toolchains): kt.compare(old=RUN, toolchains=True, reference=TOOLCHAIN) "
            "(`ktriage compare RUN --toolchains --reference TOOLCHAIN`)",
        ),
        (
            {"toolchains": True, "reference": "triton==3.9.0"},
            "reference='triton==3.9.0' (--reference triton==3.9.0) is not a toolchain of the run",
            "give one of those ids",
        ),
        (
            {"toolchains": True, "baseline": "liger_layer_norm"},
            "baseline='liger_layer_norm' (--baseline liger_layer_norm) is compiled by the toolchains being compared",
            "name a backend that runs without a toolchain",
        ),
        (
            {"toolchains": True, "op": "softmax"},
            "op='softmax' (--op softmax) does not match",
            "drop op (--op) (it is for a TritonBench CSV",
        ),
        (
            {"toolchains": True, "new": LN_BWD},
            "toolchains (--toolchains) compares the toolchains of ONE run, but two were given (old and new)",
            "drop new (the second argument), or toolchains (--toolchains)",
        ),
        # compare's lower layer told a kt.compare caller "e.g. ktriage compare old.json new.json" and "compare the
        # toolchains inside this one: ktriage compare RUN --toolchains": a command, not the call
        (
            {},
            "compare needs two runs or result files, old and new (or one run with toolchains=True (--toolchains))",
            "e.g. kt.compare(old='old.json', new='new.json') (`ktriage compare old.json new.json`)",
        ),
        (
            {"new": str(LN_BWD)},
            "both sides are one file",
            f"give two different runs, or compare the toolchains inside this one: kt.compare(old='{LN_BWD}', "
            f"toolchains=True) (`ktriage compare {LN_BWD} --toolchains`)",
        ),
    ],
    ids=["reference-alone", "reference-unknown", "baseline-compiled", "op-other", "two-sides", "no-new", "one-file"],
)
def test_compare_names_reference_toolchains_baseline_and_op_as_keywords(
    kwargs: dict[str, object], problem: str, fix: str
) -> None:
    """kt.compare(reference=...) was told "--reference picks ... but --toolchains was not given", fix "add
    --toolchains (ktriage compare RUN ...)": flags a library caller does not pass. A real H200 run."""
    with pytest.raises(KtriageError) as refused:
        kt.compare(old=LN_BWD, **kwargs)  # type: ignore[arg-type]
    assert refused.value.problem.startswith(problem), refused.value.problem
    assert (refused.value.fix or "").startswith(fix), refused.value.fix


def test_bisects_option_checks_name_the_keywords() -> None:
    """bisect.run's checks of the options' combination named flags only ("no predicate: give --metric or
    --command", "--source ptxas needs the fixed frontend", "add --toolchain ..."), met by kt.bisect
    before any index lookup or build."""
    releases = {"source": "pypi:triton", "good": "3.3.1", "bad": "3.4.0"}
    with pytest.raises(KtriageError) as none:
        kt.bisect(**releases)
    assert none.value.problem == "no predicate: give metric (--metric) or command (--command)"
    assert none.value.fix == (
        "e.g. metric='spill_store_bytes' (--metric spill_store_bytes), metric='latency' (--metric latency), "
        "or command='./test.sh' (--command ./test.sh)"
    )
    with pytest.raises(KtriageError) as kernels:
        kt.bisect(**releases, metric="spill_store_bytes")
    assert kernels.value.problem == "metric='spill_store_bytes' (--metric spill_store_bytes) needs kernels"
    assert kernels.value.fix == "add op='NAME' (--op NAME) (a catalog op) or spec='FILE.toml' (--spec FILE.toml)"
    with pytest.raises(KtriageError) as git_only:
        kt.bisect(**releases, command="true", keep_checkouts=True)
    assert git_only.value.problem == (
        "keep_checkouts (--keep-checkouts) applies to source='git:PATH' (--source git:PATH) only (commits built in "
        "checkouts), not to source='pypi:triton' (--source pypi:triton)"
    )
    with pytest.raises(KtriageError) as frontend:
        kt.bisect(source="ptxas", good="12.4.131", bad="12.8.93", op="liger.embedding", metric="spill_store_bytes")
    assert frontend.value.problem == "source='ptxas' (--source ptxas) needs the fixed frontend"
    assert frontend.value.fix == "add toolchain='triton==3.4.0' (--toolchain triton==3.4.0)"
    with pytest.raises(KtriageError) as bundle:
        kt.bisect(**releases, metric="latency")
    assert bundle.value.problem == (
        "metric='latency' (--metric latency) measures on the GPU from a compile-here bundle"
    )
    assert (bundle.value.fix or "").endswith("pass bundle='DIR' (--bundle DIR) with backend='NAME' (--backend NAME)")


def test_history_messages_name_the_keywords(tmp_path: Path) -> None:
    """kt.history's store-side refusals named flags only: "--fail-on-recent 40 holds the whole series",
    "can never fire with --min-segment 2", "no stored cell ... with --toolchain 9.9", "pick one with
    --toolchain": options a kt.history caller passes as keywords. Fake nightlies (ktriage.testing) in a real
    SQLite store."""
    from ktriage.store import open_store
    from ktriage.testing import fake_nightly_runs

    db = f"sqlite:///{tmp_path / 'runs.db'}"
    with open_store(db) as store:
        for run, cells in fake_nightly_runs(seed=11):
            store.import_run(run, cells)
    series = {"op": "layer_norm", "backend": "liger_layer_norm", "db": db}
    with pytest.raises(KtriageError) as whole:
        kt.history(**series, inputs=7, fail_on_recent=40)  # type: ignore[arg-type]
    assert whole.value.problem.startswith("fail_on_recent=40 (--fail-on-recent 40) holds the whole series")
    assert (whole.value.fix or "").startswith("give fail_on_recent (--fail-on-recent) below 30")
    with pytest.raises(KtriageError) as never:
        kt.history(**series, inputs=7, fail_on_recent=1)  # type: ignore[arg-type]
    assert "can never fire with min_segment=2 (--min-segment 2)" in never.value.problem
    with pytest.raises(KtriageError) as nothing:
        kt.history(**series, toolchain="9.9")  # type: ignore[arg-type]
    assert nothing.value.problem.endswith("with toolchain='9.9' (--toolchain 9.9)")
    assert (nothing.value.fix or "").startswith("toolchain (--toolchain) (a Triton version")
