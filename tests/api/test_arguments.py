"""Every entry point checks its arguments as the command checks its flags (ktriage/api/_args.py):
a lone str where a list goes is one item, a number out of the flag's range or of the wrong type is a
KtriageError naming the keyword and the flag, a GPU target is read in every spelling ``--arch`` takes.

Each case runs the real entry point; those that would compile or measure are refused before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ktriage.api as kt
from ktriage.compile.cache import ArtifactCache
from ktriage.errors import KtriageError


def _cache_entry(home: Path) -> Path:
    store = ArtifactCache(home / "artifacts")
    tmp = store.temp_dir("frontend", "k1")
    (tmp / "kernel.ptx").write_text("// ptx\n")
    (tmp / "result.json").write_text(json.dumps({"kernel_name": "k"}))
    return store.publish("frontend", "k1", tmp)


@pytest.mark.parametrize("days", [-1, -0.5, float("nan"), float("inf"), "30", True])
def test_cache_gc_refuses_an_age_that_is_no_age_and_removes_nothing(
    days: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A negative age listed every entry as unused (and without dry_run removed the whole cache), nan
    listed none, "30" was a TypeError."""
    monkeypatch.setenv("KTRIAGE_HOME", str(tmp_path))
    entry = _cache_entry(tmp_path)
    with pytest.raises(KtriageError, match=r"older_than_days \(--older-than\)"):
        kt.cache_gc(older_than_days=days)  # type: ignore[arg-type]
    assert entry.is_dir()
    assert kt.cache_gc(older_than_days=0.5).items == []  # a fresh entry is kept
    assert entry.is_dir()


# ------------------------------------------------------------------------------------------ ranges
NOWHERE_DB = "postgresql+psycopg://nowhere:1/none"  # never opened: the arguments are refused first
OP = {"target": "liger.layer_norm", "toolchains": ["triton==3.4.0"]}
# a bisect's timeouts killed every build or command at once ("timed out after -1 s" at both endpoints)
BISECT = {"source": "git:/no-such-repo", "good": "v1", "bad": "v2", "command": "true"}  # never reached


@pytest.mark.parametrize(
    "call, kwargs, problem",
    [
        (kt.explain, {**OP, "input_id": -1}, r"input_id \(--input-id\) -1 is out of range"),
        (kt.explain, {**OP, "input_id": 0, "num_inputs": 0}, r"num_inputs \(--num-inputs\) 0 selects no input"),
        (kt.explain, {**OP, "jobs": 0}, r"jobs \(--jobs\) 0 is out of range"),
        (kt.explain, {**OP, "jobs": -1}, r"jobs \(--jobs\) -1 is out of range"),
        (kt.explain, {**OP, "compile_timeout": 0}, r"compile_timeout \(--compile-timeout\) 0 is out of range"),
        (kt.explain, {**OP, "compile_timeout": float("nan")}, r"compile_timeout .* is not a finite number"),
        (kt.explain, {**OP, "threshold": "0.05"}, r"threshold \(--threshold\) '0.05' is a str, not a number"),
        (kt.explain, {**OP, "input_id": "7"}, r"input_id \(--input-id\) '7' is a str, not an int"),
        (kt.explain, {**OP, "input_id": 7.0}, r"input_id \(--input-id\) 7.0 is a float, not an int"),
        (kt.bench, {"op": "layer_norm", "input_id": 7, "num_inputs": 0, "compile_only": True}, r"num_inputs"),
        (kt.bench, {"op": "layer_norm", "max_time": -1, "compile_only": True}, r"max_time \(--max-time\) -1"),
        (kt.bench, {"op": "layer_norm", "min_samples": 0, "compile_only": True}, r"min_samples \(--min-samples\) 0"),
        (kt.bench_recorded, {"workload": "W.json", "min_samples": 0}, r"min_samples \(--min-samples\) 0"),
        (kt.fidelity, {"cases": ["vector_add"], "jobs": 0}, r"jobs \(--jobs\) 0 is out of range"),
        (kt.tune, {**OP, "input_id": 7, "jobs": 2000}, r"jobs \(--jobs\) 2000 is out of range"),
        (kt.tune, {**OP, "input_id": 7, "warps": [4, 0]}, r"warps \(--warps\) 0 is out of range"),
        (kt.tune, {**OP, "input_id": 7, "blocks": {"BLOCK_SIZE": []}}, r"'BLOCK_SIZE': no values given"),
        (kt.history, {"op": "layer_norm", "backend": "b", "db": NOWHERE_DB, "min_segment": 0}, r"min_segment"),
        (kt.history, {"op": "layer_norm", "backend": "b", "db": NOWHERE_DB, "min_segment": -2}, r"min_segment"),
        (kt.history, {"op": "layer_norm", "backend": "b", "db": NOWHERE_DB, "fail_on_recent": 0}, r"fail_on_recent"),
        (kt.history, {"op": "layer_norm", "backend": "b", "db": NOWHERE_DB, "max_pvalue": "0.01"}, r"max_pvalue"),
        (kt.calibrate, {"from_cells": ["c.jsonl"], "level": 80}, r"level \(--level\) 80 is out of range"),
        (kt.calibrate, {"from_cells": ["c.jsonl"], "level": 0}, r"level \(--level\) 0 is out of range"),
        (kt.calibrate, {"from_cells": ["c.jsonl"], "level": -1}, r"level \(--level\) -1 is out of range"),
        (kt.calibrate, {"from_cells": ["c.jsonl"], "level": 1}, r"level \(--level\) 1 is out of range"),
        (kt.runs_list, {"db": NOWHERE_DB, "limit": "5"}, r"limit \(--limit\) '5' is a str, not an int"),
        (kt.runs_list, {"db": NOWHERE_DB, "limit": 0}, r"limit \(--limit\) 0 lists no run"),
        (kt.compare, {"old": "a.json", "new": "b.json", "confidence": "0.99"}, r"confidence \(--confidence\) '0.99'"),
        (kt.compare, {"old": "a.json", "new": "b.json", "threshold": float("inf")}, r"threshold .* not a finite"),
        # the gate's and the confidence's refusals named the flag alone (--threshold -1 is not a gate)
        (kt.compare, {"old": "a.json", "new": "b.json", "confidence": 99}, r"confidence=99 \(--confidence 99\) is out"),
        (
            kt.compare,
            {"old": "a.json", "new": "b.json", "threshold": 5},
            r"threshold=5 \(--threshold 5\) is a fraction",
        ),
        (kt.explain, {**OP, "threshold": -1}, r"threshold=-1 \(--threshold -1\) is not a gate"),
        (kt.calibrate, {"from_cells": ["c.jsonl"], "threshold": 5}, r"threshold=5 \(--threshold 5\) is a fraction"),
        (kt.profile, {"bundle": Path("b"), "warmup": -1}, r"warmup \(--warmup\) -1 is out of range"),
        (kt.profile, {"bundle": Path("b"), "input_id": -1}, r"input_id \(--input-id\) -1 is out of range"),
        (kt.bisect, {**BISECT, "timeout": -1}, r"timeout \(--timeout\) -1 is out of range"),
        (kt.bisect, {**BISECT, "timeout": 0}, r"timeout \(--timeout\) 0 is out of range"),
        (kt.bisect, {**BISECT, "build_timeout": 0}, r"build_timeout \(--build-timeout\) 0 is out of range"),
        # workers and max_samples reached the search as given: True as one worker, 2.5 a thread count
        (kt.bisect, {**BISECT, "workers": True}, r"^workers \(--workers\) True is a bool, not an int"),
        (kt.bisect, {**BISECT, "workers": 2.5}, r"^workers \(--workers\) 2.5 is a float, not an int"),
        (kt.bisect, {**BISECT, "workers": 0}, r"^workers \(--workers\) 0 is out of range"),
        (kt.bisect, {**BISECT, "workers": -2}, r"^workers \(--workers\) -2 is out of range"),
        (kt.bisect, {**BISECT, "max_samples": False}, r"^max_samples \(--max-samples\) False is a bool, not an int"),
        (kt.bisect, {**BISECT, "max_samples": 50.0}, r"^max_samples \(--max-samples\) 50.0 is a float, not an int"),
        (kt.bisect, {**BISECT, "max_samples": 0}, r"^max_samples \(--max-samples\) 0 is out of range"),
        (kt.bisect, {**BISECT, "max_samples": -1}, r"^max_samples \(--max-samples\) -1 is out of range"),
        (kt.bisect, {**BISECT, "max_samples": 9}, r"^max_samples \(--max-samples\) 9 is out of range"),
    ],
)
def test_a_number_out_of_its_flags_range_or_of_another_type_is_refused_before_any_work(
    call: object, kwargs: dict[str, object], problem: str
) -> None:
    """-1 as input_id selected every input, num_inputs=0 with input_id bundled all 30, jobs=-1 was a
    bare ValueError of concurrent.futures, level=80 gave a +-41 % interval: each is refused as the
    command refuses its flag, naming the keyword and the flag."""
    with pytest.raises(KtriageError, match=problem):
        call(**kwargs)  # type: ignore[operator]


@pytest.mark.parametrize(
    "kwargs, problem",
    [
        (
            {"from_cells": ["c.jsonl"], "backends": ["liger_layer_norm"]},
            r"backends \(--backend\) names the artifact backend of",
        ),
        (
            {"from_cells": ["c.jsonl"], "operators": ["layer_norm"]},
            r"1 name in operators \(--operator\) for 0 results files or runs",
        ),
    ],
)
def test_calibrate_backend_or_operator_without_results_is_refused(kwargs: dict[str, object], problem: str) -> None:
    """--backend and --operator are for --results/--run: with only --from (a dataset, whose cells carry their
    operator and backend) --backend was ignored without a word (``calibrate --from cells.jsonl --backend x`` fitted
    as without it). Refused, as --operator was, and before the dataset is read."""
    with pytest.raises(KtriageError, match=problem) as info:
        kt.calibrate(**kwargs)  # type: ignore[arg-type]
    assert info.value.fix


def _cli_ranges() -> dict[str, tuple[float | None, float | None]]:
    """Every typer min=/max= of the command's options: flag -> (min, max)."""
    from typer import _click

    from ktriage.cli.docgen import _commands

    found: dict[str, tuple[float | None, float | None]] = {}
    for _name, command in _commands():
        for param in command.params:
            if isinstance(param.type, _click.types.IntRange | _click.types.FloatRange):
                for flag in param.opts:
                    if flag.startswith("--"):
                        found.setdefault(flag, (param.type.min, param.type.max))
                        assert found[flag] == (param.type.min, param.type.max), f"{flag}: two ranges"
    return found


def test_the_commands_ranges_are_the_apis() -> None:
    """Each range is a constant of ktriage/api/_args.py; the typer min=/max= of a flag of the same
    name (kept for typer's own messages) must say the same, or the command and the library differ."""
    from ktriage.api import _args

    constants = {
        c.flag: (c.low, c.high)
        for c in vars(_args).values()
        if isinstance(c, _args.Whole | _args.Real) and c.flag and (c.low is not None or c.high is not None)
    }
    cli = _cli_ranges()
    assert cli, "no typer range found"
    for flag, bounds in cli.items():
        assert flag in constants, f"{flag} has a range in the CLI only: add it to ktriage/api/_args.py"
        assert constants[flag] == bounds, f"{flag}: CLI {bounds}, API {constants[flag]}"


def test_bisects_max_samples_starts_at_the_verdicts_minimum() -> None:
    """kt.bisect(max_samples=...) is refused below the samples a verdict needs, before any work: the
    timed predicate refused it only once built. One number, two homes: kept in step here."""
    from ktriage.api import _args
    from ktriage.stats.verdict import DEFAULT_CONFIG

    assert _args.MAX_SAMPLES.low == DEFAULT_CONFIG.min_samples


# ------------------------------------------------------------------------------------------ a str is one item
def test_a_lone_str_is_one_input_not_its_characters() -> None:
    """inputs="12" expanded inputs 1 and 2 (the characters of the str)."""
    shown = kt.catalog_show(op="liger.layer_norm", mode="bwd", inputs="12")
    assert [s.meta.get("input_id") for s in shown.specs] == [12]
    assert [s.meta.get("input_id") for s in kt.catalog_show(op="liger.layer_norm", mode="bwd", inputs=12).specs] == [12]


def test_bench_only_reads_the_commands_comma_spelling() -> None:
    """only="a,b" was the backends 'a', ',', 'b'... (the characters); the command's --only is split
    on commas."""
    # accepted: the call goes on to its last check (compile_only with no toolchain compiles nothing)
    with pytest.raises(KtriageError, match=r"with no toolchains \(-t/--toolchain\): nothing to compile"):
        kt.bench(op="layer_norm", only="liger_layer_norm,torch_layer_norm", compile_only=True)
    with pytest.raises(KtriageError, match=r"layer_norm has 1 unknown backend \['nope'\]"):
        kt.bench(op="layer_norm", only="nope", compile_only=True)


@pytest.mark.parametrize(
    "call, kwargs",
    [
        (kt.bench, {"op": "layer_norm"}),
        (kt.bench, {"op": "layer_norm", "bundle": "built-elsewhere"}),
        (kt.bench, {"bundle": "built-elsewhere"}),
        (kt.bench_recorded, {"workload": "tests/data/workloads/liger_step.workload.json"}),
        (kt.bench_recorded, {"bundle": "built-elsewhere"}),
    ],
)
def test_compile_only_without_a_toolchain_is_refused_by_the_library_too(call: Any, kwargs: dict[str, Any]) -> None:
    """The command refused `bench --compile-only` with no -t, but kt.bench(compile_only=True) returned an
    empty report that read as a finished compile (bundle None), and with a bundle said 'no bundle at
    DIR'; kt.bench_recorded(bundle=..., compile_only=True) loaded the bundle and did nothing."""
    with pytest.raises(KtriageError, match=r"nothing to compile") as raised:
        call(**kwargs, compile_only=True)
    assert "name the toolchains: toolchains=[...]" in str(raised.value.fix)
    assert raised.value.problem.startswith("compile_only=True (--compile-only) with no toolchains (-t/--toolchain)")


@pytest.mark.parametrize(
    "call, kwargs, named",
    [
        (kt.calibrate, {"from_cells": "no-such-cells.jsonl"}, "no-such-cells.jsonl"),
        (kt.calibrate, {"results": "no-such.json", "explain": "e.json"}, "no-such.json"),
        (kt.workload_import, {"traces": "no-such.ndjson", "output": "W-never.json"}, "no-such.ndjson"),
        (kt.fidelity, {"cases": "QX"}, r"contains 'QX'\n"),
    ],
)
def test_a_lone_str_where_a_list_goes_is_one_item(
    call: object, kwargs: dict[str, object], named: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(KtriageError, match=named):
        call(**kwargs)  # type: ignore[operator]


def test_a_command_given_as_one_str_is_split_as_a_shell_splits_it(tmp_path: Path, probe_sees_a_gpu: None) -> None:
    """record(command="python -c ...") ran the program 'p' (the first character)."""
    import sys

    report = kt.record(command=f"{sys.executable} -c 'import sys; sys.exit(3)'", output=tmp_path / "W.json")
    assert report.result.returncode == 3 and not report.complete
    with pytest.raises(KtriageError, match="cannot be split into words"):
        kt.record(command="python -c 'unclosed", output=tmp_path / "W.json")
    with pytest.raises(KtriageError, match="command is empty"):
        kt.record(command=[], output=tmp_path / "W.json")


def test_explain_reads_a_lone_toolchain_a_lone_input_and_every_arch_spelling() -> None:
    """toolchains="triton==3.4.0" was "toolchain spec item 't' ...", arch="9.0" "unknown target '9.0'"."""
    report = kt.explain(target="liger.layer_norm", mode="bwd", toolchains="triton==3.4.0", inputs="12", arch="9.0")
    assert [s.meta.get("input_id") for s in report.specs] == [12]
    assert report.specs[0].target == "sm_90" and len(report.result.toolchains) == 1


# ------------------------------------------------------------------------------------------ arch
@pytest.mark.parametrize("spelling", ["9.0", "90", "cuda:90", 90])
def test_catalog_show_takes_every_arch_spelling(spelling: object) -> None:
    shown = kt.catalog_show(op="liger.layer_norm", mode="bwd", inputs=["7"], target=spelling)  # type: ignore[arg-type]
    assert shown.target == "sm_90" and shown.specs[0].target == "sm_90"


def test_normalize_arch_and_a_specs_target_name_the_same_targets() -> None:
    from ktriage.arch import SPEC_TARGETS

    assert kt.normalize_arch(90) == "sm_90"
    with pytest.raises(KtriageError) as refused:
        kt.normalize_arch("sm_12")
    assert refused.value.fix is not None and refused.value.fix.endswith(", ".join(SPEC_TARGETS))
    with pytest.raises(KtriageError, match="sm_80 has no arch-specific"):
        kt.normalize_arch("sm_80a")  # was 'sm_80a', then "unknown target" deep in a verb


# ------------------------------------------------------------------------------------------ types
@pytest.mark.parametrize(
    "call, kwargs, problem",
    [
        (kt.explain, {"target": "liger.layer_norm", "toolchains": None}, r"toolchains \(-t/--toolchain\) is None"),
        (kt.explain, {"target": None, "toolchains": ["triton==3.4.0"]}, r"target is None"),
        (kt.compare, {"old": None}, r"old \(A\) is None"),
        (kt.compare, {"old": ["a.json"], "new": "b.json"}, r"old \(A\) is a list"),
        (kt.workload_show, {"path": None}, r"path is None"),
        (kt.runs_show, {"run": None, "db": NOWHERE_DB}, r"run is None"),
        (kt.runs_export, {"run": 7, "db": NOWHERE_DB}, r"run is an int"),
        (kt.toolchain_show, {"id_or_spec": None}, r"id_or_spec is None"),
        (kt.toolchain_remove, {"id_or_spec": None}, r"id_or_spec is None"),
        (kt.toolchain_add, {"spec": ["triton==3.4.0"]}, r"spec is a list, not a str"),
        (kt.catalog_show, {"op": None}, r"op is None"),
        (kt.catalog_show, {"op": "liger.layer_norm", "target": None}, r"target \(--arch/--target\) is None"),
        (kt.record, {"command": ["true"], "output": "W.json", "env": "A=1"}, r"env is a str, not a mapping"),
        (kt.record, {"command": ["true"], "output": "W.json", "env": {"A": 1}}, r"env\['A'\] = 1"),
        (kt.record, {"command": ["true", 1], "output": "W.json"}, r"command .*the item 1 is an int"),
        (kt.explain, {**OP, "inputs": [b"7"]}, r"inputs \(--input\): the item b'7' is a bytes"),
        (kt.explain, {**OP, "inputs": {"7": 1}}, r"inputs \(--input\) is a dict, not a list"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_the_argument(
    call: object, kwargs: dict[str, object], problem: str
) -> None:
    """These were AttributeError/TypeError/ValueError from deep inside (None has no 'partition'...)."""
    with pytest.raises(KtriageError, match=problem):
        call(**kwargs)  # type: ignore[operator]


def test_a_path_is_taken_wherever_a_path_or_a_name_is(tmp_path: Path) -> None:
    """target=Path(...) and workload=Path(...) were AttributeError ('PosixPath' has no 'endswith'),
    bisect_step(baseline="bl.json") "'str' object has no attribute 'read_text'"."""
    with pytest.raises(KtriageError, match="does not exist"):
        kt.explain(target=tmp_path / "missing.toml", toolchains=["triton==3.4.0"])
    workload = Path("benchmarks/corpus/h200/workloads/fla_ops.workload.json.gz").resolve()
    with pytest.raises(KtriageError, match="no kernel 'K999'"):
        kt.bench_recorded(workload=workload, toolchains=["triton==3.4.0"], kernels="K999", compile_only=True)
    with pytest.raises(KtriageError, match="cannot read baseline"):
        kt.bisect_step(baseline=str(tmp_path / "bl.json"))


def test_tune_takes_a_lone_int_as_one_warps_value() -> None:
    from ktriage.api import _args

    assert _args.wholes(4, _args.Whole("warps", "--warps", low=1)) == (4,)
    with pytest.raises(KtriageError, match=r"warps \(--warps\) '4' is a str"):
        kt.tune(target="liger.layer_norm", toolchains="triton==3.4.0", input_id=7, num_inputs=1, warps="4")


def test_bench_refuses_a_file_as_the_bundle_folder_before_compiling(tmp_path: Path) -> None:
    """An existing file as --bundle was a NotADirectoryError after every compile."""
    file = tmp_path / "h.py"
    file.write_text("")
    with pytest.raises(KtriageError, match=r"bundle \(--bundle\) .*h.py is a file, not a folder"):
        kt.bench(op="layer_norm", toolchains=["triton==3.4.0"], compile_only=True, bundle=file, input_id=7)
    with pytest.raises(KtriageError, match=r"bundle \(--bundle\) .*h.py is a file, not a folder"):
        kt.bench_recorded(workload="W.json", toolchains=["triton==3.4.0"], bundle=file)


# ------------------------------------------------------------------------------------------ the cause named
def test_the_message_names_what_is_wrong(tmp_path: Path) -> None:
    import sys

    with pytest.raises(KtriageError, match="cwd .*nonexistent is missing") as missing:
        kt.record(command=[sys.executable, "-c", "pass"], output=tmp_path / "W.json", cwd=tmp_path / "nonexistent")
    assert "not found" not in str(missing.value)  # was "cannot run .../python: not found"
    with pytest.raises(KtriageError) as no_bundle:
        kt.bench_recorded(toolchains=["triton==3.4.0"])
    assert "--bundle" not in no_bundle.value.problem and "no workload" in no_bundle.value.problem
    with pytest.raises(KtriageError) as none:
        kt.explain(target="liger.layer_norm", toolchains=[])
    assert none.value.fix is not None and "one or more (two or more to compare)" in none.value.fix


# ------------------------------------------------------------------------------------------ a new user's pass (s17d)
AA = "benchmarks/triage/tritonbench_aa/layer_norm_bwd_run"
AA_PAIR = "benchmarks/gpu/issue3/run2_layer_norm_aa/aa_"


@pytest.mark.parametrize(
    "call, kwargs, problem",
    [
        (kt.explain, {**OP, "sm_count": "132"}, r"sm_count \(--sm-count\) '132' is a str, not an int"),
        (kt.catalog_show, {"op": "liger.layer_norm", "sm_count": "132"}, r"sm_count \(--sm-count\) '132' is a str"),
        (kt.catalog_show, {"op": "liger.layer_norm", "sm_count": 0}, r"sm_count \(--sm-count\) 0 is out of range"),
        (kt.bench, {"op": "layer_norm", "sm_count": "132", "compile_only": True}, r"sm_count \(--sm-count\) '132'"),
        (kt.tune, {**OP, "input_id": 7, "top_k": "3"}, r"top_k \(--top-k\) '3' is a str, not an int"),
        (kt.tune, {**OP, "input_id": 7, "top_k": 0}, r"top_k \(--top-k\) 0 keeps nothing"),
        (kt.tune, {**OP, "input_id": 7, "max_spill_bytes": "0"}, r"max_spill_bytes \(--max-spill-bytes\) '0'"),
        (kt.tune, {**OP, "input_id": 7, "sm_count": "132"}, r"sm_count \(--sm-count\) '132' is a str"),
        (kt.compare, {"old": "a.json", "new": "b.json", "reference": 3}, r"reference \(--reference\) is an int"),
        (kt.compare, {"old": "a.json", "new": "b.json", "op": ["layer_norm"]}, r"op \(--op\) is a list, not a str"),
        (kt.compare, {"old": "a.json", "new": "b.json", "mode": 1}, r"mode \(--mode\) is an int, not a str"),
        (kt.compare, {"old": "a.json", "new": "b.json", "baseline": ["x"]}, r"baseline \(--baseline\) is a list"),
        (kt.triage, {"old": "a.csv", "new": "b.csv", "old_toolchain": ["triton==3.6.0"]}, r"old_toolchain .* a list"),
        (kt.triage, {"old": "a.csv", "new": "b.csv", "new_toolchain": 3.6}, r"new_toolchain .* is a float"),
        (kt.triage, {"old": "a.csv", "new": "b.csv", "threshold": "0.1"}, r"threshold \(--threshold\) '0.1' is a str"),
        (kt.triage, {"old": "a.csv", "new": "b.csv", "limit": "5"}, r"limit \(--limit\) '5' is a str, not an int"),
        (kt.calibrate, {"from_cells": "c.jsonl", "cells_out": 3}, r"cells_out \(--cells-out\) is an int"),
        (kt.profile, {"bundle": None}, r"bundle \(--bundle\) is None, not a str or a path"),
        (kt.cache_verify, {"fix": "no"}, r"fix \(--fix\) is a str \('no'\), not True or False"),
        (kt.cache_gc, {"dry_run": "yes"}, r"dry_run \(--dry-run\) is a str"),
        (kt.check_percent_gate, {"percent": "10"}, r"percent \(--threshold\) '10' is a str, not a number"),
        # cluster=["local"] was AttributeError: 'list' object has no attribute 'strip'; mode=["bwd"] and
        # precision=["bf16"] "liger.layer_norm has no mode ['bwd']", a fix listing the very value given
        (kt.explain, {**OP, "input_id": 7, "cluster": ["local"]}, r"cluster \(--cluster\) is a list, not a str"),
        (kt.explain, {**OP, "input_id": 7, "mode": ["bwd"]}, r"mode \(--mode\) is a list, not a str"),
        (kt.explain, {**OP, "input_id": 7, "precision": ["bf16"]}, r"precision \(--precision\) is a list"),
        (kt.explain, {**OP, "input_id": 7, "model": ["m.json"]}, r"model \(--model\) is a list, not a str or a path"),
        (kt.tune, {**OP, "input_id": 7, "cluster": ["local"]}, r"cluster \(--cluster\) is a list, not a str"),
        (kt.tune, {**OP, "input_id": 7, "mode": ["bwd"]}, r"mode \(--mode\) is a list, not a str"),
        # tune's bundle and results_file reached pathlib unchecked: TypeError: expected str, bytes or os.PathLike
        (kt.tune, {**OP, "input_id": 7, "bundle": ["b"]}, r"bundle \(--bundle\) is a list, not a str or a path"),
        (
            kt.tune,
            {**OP, "input_id": 7, "results_file": ["r.json"]},
            r"results_file \(--results\) is a list, not a str",
        ),
        (kt.catalog_show, {"op": "liger.layer_norm", "mode": ["bwd"]}, r"mode \(--mode\) is a list, not a str"),
        (kt.catalog_show, {"op": "liger.layer_norm", "dtype": ["bf16"]}, r"dtype \(--precision/--dtype\) is a list"),
        # bisect's one-string arguments reached the lower layers as they were: cluster=["local"] was
        # AttributeError: 'list' object has no attribute 'strip', state/bundle/pin_repo a TypeError from pathlib,
        # the others were read after the repository (or never); refused before any checkout or download
        (kt.bisect, {**BISECT, "cluster": ["local"]}, r"cluster \(--cluster\) is a list, not a str"),
        (kt.bisect, {**BISECT, "state": ["s.json"]}, r"state \(--state\) is a list, not a str or a path"),
        (kt.bisect, {**BISECT, "bundle": ["b"]}, r"bundle \(--bundle\) is a list, not a str or a path"),
        (kt.bisect, {**BISECT, "mode": ["bwd"]}, r"mode \(--mode\) is a list, not a str"),
        (kt.bisect, {**BISECT, "toolchain": ["triton==3.4.0"]}, r"toolchain \(-t/--toolchain\) is a list"),
        (kt.bisect, {**BISECT, "command": ["true"]}, r"command \(--command\) is a list, not a str"),
        (kt.bisect, {**BISECT, "gpus": [0, 1]}, r"gpus \(--gpus\) is a list, not a str"),
        (kt.bisect, {**BISECT, "artifact_timing": 1}, r"artifact_timing \(--artifact-timing\) is an int"),
        (kt.bisect_step, {"baseline": "no-such.json", "op": ["layer_norm"]}, r"op \(--op\) is a list, not a str"),
        (kt.bisect_step, {"baseline": "no-such.json", "metric": ["x"]}, r"metric \(--metric\) is a list"),
        (kt.bisect_step, {"baseline": "no-such.json", "role": ["good"]}, r"role \(--as\) is a list, not a str"),
        # bench: op=["layer_norm"] was TypeError: unhashable type: 'list', bundle=[...] a TypeError from pathlib
        (kt.bench, {"op": ["layer_norm"], "compile_only": True}, r"op \(--op\) is a list, not a str"),
        (kt.bench, {"op": "layer_norm", "mode": ["bwd"], "compile_only": True}, r"mode \(--mode\) is a list"),
        (kt.bench, {"op": "layer_norm", "bundle": ["b"], "compile_only": True}, r"bundle \(--bundle\) is a list"),
        (kt.bench, {"op": "layer_norm", "baseline": ["torch_layer_norm"]}, r"baseline \(--baseline\) is a list"),
        (kt.bench, {"op": "layer_norm", "timing": ["cuda_event"]}, r"timing \(--timing\) is a list"),
        (kt.bench_recorded, {"workload": "W.json", "bundle": ["b"]}, r"bundle \(--bundle\) is a list"),
        (kt.bench_recorded, {"workload": "W.json", "results_path": ["r.json"]}, r"results_path \(-o\) is a list"),
        (kt.profile, {"bundle": "no-such-bundle", "ncu": ["ncu"]}, r"ncu \(--ncu\) is a list, not a str"),
        (kt.profile, {"bundle": "no-such-bundle", "backend": ["b"]}, r"backend \(--backend\) is a list, not a str"),
        (kt.fidelity, {"cases": ["vector_add"], "spec": ["s.toml"]}, r"spec \(--spec\) is a list, not a str or"),
        # toolchain=["3.4"] was AttributeError: 'list' object has no attribute 'strip' from the selector
        (kt.history, {"op": "layer_norm", "backend": "b", "db": NOWHERE_DB, "toolchain": ["3.4"]}, r"toolchain \("),
        (kt.history, {"op": "layer_norm", "backend": "b", "db": NOWHERE_DB, "gpu": ["H100"]}, r"gpu \(--gpu\) is"),
        (kt.runs_list, {"db": NOWHERE_DB, "toolchain": ["3.4"]}, r"toolchain \(--toolchain\) is a list"),
        (kt.runs_list, {"db": NOWHERE_DB, "op": ["layer_norm"]}, r"op \(--op\) is a list, not a str"),
        (kt.triage, {"old": "a.csv", "new": "b.csv", "bundle": ["b"]}, r"bundle \(--bundle\) is a list"),
        (kt.triage, {"old": "a.csv", "new": "b.csv", "arch": ["sm_90"]}, r"arch \(--arch\) is a list, not a str"),
        (kt.triage, {"old": "a.csv", "new": "b.csv", "db": ["sqlite://"]}, r"db \(--db\) is a list, not a str"),
        (kt.compare, {"old": "a.json", "new": "b.json", "db": ["sqlite://"]}, r"db \(--db\) is a list, not a str"),
        (kt.calibrate, {"from_cells": ["c.jsonl"], "db": ["sqlite://"]}, r"db \(--db\) is a list, not a str"),
        (kt.runs_import, {"path": "x.json", "db": ["sqlite://"]}, r"db \(--db\) is a list, not a str"),
        (kt.explain, {**OP, "input_id": 7, "fail_on": ["any"]}, r"fail_on \(--fail-on\) is a list, not a str"),
        # registers=True was read as 1 register (the report's JSON said "registers": true); "64" and
        # ["sm_90"] were refused without naming the keyword
        (kt.occupancy, {"registers": True, "warps": 4}, r"registers \(--registers\) True is a bool, not an int"),
        (kt.occupancy, {"registers": 64, "warps": True}, r"warps \(--warps\) True is a bool, not an int"),
        (kt.occupancy, {"registers": 64, "warps": 4, "shared": True}, r"shared \(--shared\) True is a bool"),
        (kt.occupancy, {"registers": 64, "warps": 4, "barriers": True}, r"barriers \(--barriers\) True is a bool"),
        (kt.occupancy, {"registers": "64", "warps": 4}, r"registers \(--registers\) '64' is a str, not an int"),
        (kt.occupancy, {"arch": ["sm_90"], "registers": 64, "warps": 4}, r"arch \(--arch\) is a list, not a str"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_it_not_a_typeerror_from_inside(
    call: object, kwargs: dict[str, object], problem: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each was a TypeError or AttributeError from deep inside ('<' not supported between 'str' and 'int' in
    the catalog, 'int' object has no attribute 'replace' in compare's pairing, unhashable type: 'list', 'list'
    object has no attribute 'triton_host', expected str, bytes or os.PathLike object, not NoneType), or, for
    fix="no", read for its truth: the damaged cache entries were moved aside."""
    monkeypatch.setenv("KTRIAGE_HOME", str(tmp_path))  # cache_verify/cache_gc: a private, empty cache
    with pytest.raises(KtriageError, match=problem) as refused:
        call(**kwargs)  # type: ignore[operator]
    assert refused.value.fix


@pytest.mark.parametrize("given", [["triton==3.3.1", "triton==3.4.0"], "triton==3.4.0"])
def test_compare_refuses_toolchain_names_where_it_takes_a_switch(given: object) -> None:
    """Every other verb's toolchains= is a list of specs; compare's is --toolchains, a switch. A list (or a
    str) was read for its truth: the run's toolchains were compared against its first, whichever were named."""
    with pytest.raises(KtriageError, match=r"toolchains \(--toolchains\) is a .*in compare it is a switch") as refused:
        kt.compare(old=AA_PAIR + "1.json", toolchains=given)  # type: ignore[arg-type]
    assert "reference=" in str(refused.value.fix)
    assert kt.compare(old=AA_PAIR + "1.json", new=AA_PAIR + "2.json", toolchains=False).regression_count == 0


def test_triage_reads_a_lone_workload_as_one_file_not_its_characters() -> None:
    """workloads="W.json" was the workload files 'W', '.', 'j'... ("workload file n does not exist")."""
    with pytest.raises(KtriageError, match=r"no-such\.workload\.json does not exist"):
        kt.triage(old=AA + "1.csv", new=AA + "2.csv", workloads="no-such.workload.json", limit=1)


def test_bench_takes_metrics_as_a_list_too() -> None:
    """metrics=["latency"] reached the compile-only refusal as its repr, shell-quoted: --metrics '['"'"'...'."""
    with pytest.raises(KtriageError, match=r"--metrics latency,speedup:") as refused:
        kt.bench(op="layer_norm", metrics=["latency", "speedup"], compile_only=True, toolchains=["triton==3.4.0"])
    assert "[" not in refused.value.problem
    with pytest.raises(KtriageError, match=r"metrics \(--metrics\): the item 1 is an int"):
        kt.bench(op="layer_norm", metrics=["latency", 1], compile_only=True)


def test_is_workload_path_reads_a_path_by_its_name() -> None:
    """is_workload_path(Path("W.json")) was AttributeError: 'PosixPath' object has no attribute 'endswith'."""
    assert kt.is_workload_path(Path("W.json")) and kt.is_workload_path(Path("w/W.json.gz"))
    assert not kt.is_workload_path(Path("spec.toml")) and kt.is_workload_path("W.json")


@pytest.mark.parametrize(
    "call, kwargs",
    [
        (kt.calibrate, {"from_cells": "benchmarks/calibration/cells.jsonl", "say": True}),
        (kt.bench, {"op": "layer_norm", "compile_only": True, "say": "verbose"}),
        (kt.bench_recorded, {"workload": "W.json", "compile_only": True, "say": 1}),
        (kt.fidelity, {"cases": "vector_add", "on_row": []}),
        (kt.triage, {"old": "a.csv", "new": "b.csv", "say": True}),
        (kt.triage_run, {"command": "true", "old_toolchain": None, "new_toolchain": None, "say": True}),
        (kt.toolchain_add, {"spec": "triton==3.4.0", "say": True}),
        (kt.bisect, {**BISECT, "say": True}),
    ],
)
def test_a_progress_hook_that_is_no_function_is_refused_first(call: object, kwargs: dict[str, object]) -> None:
    """say=True (meant as "verbose") fitted the whole model and then failed at the first message with
    TypeError: 'bool' object is not callable."""
    with pytest.raises(KtriageError, match=r"(say|on_row) is .*not a function") as refused:
        call(**kwargs)  # type: ignore[operator]
    assert "print" in str(refused.value.fix)


@pytest.mark.parametrize(
    "given, kind, goes",
    [
        (AA_PAIR + "1.json", "a results file", "pass it as results (--results) with"),
        (
            "benchmarks/explain/layer_norm_bwd_triton_3.3.1_vs_3.4.0.json",
            "an explain report",
            "pass it as explain (--explain), one per",
        ),
    ],
)
def test_calibrate_names_a_results_file_or_a_report_given_as_the_cells(given: str, kind: str, goes: str) -> None:
    """from_cells=R.json said "R.json:1 is not a calibration cell (JSONDecodeError: Expecting property name...)"
    with the fix "regenerate the file with `ktriage calibrate`": the file was right, its keyword was not."""
    with pytest.raises(KtriageError, match=rf"is {kind}, not a calibration dataset") as refused:
        kt.calibrate(from_cells=given)
    assert goes in str(refused.value.fix)


TC = {"old_toolchain": "triton==3.5.1", "new_toolchain": "triton==3.6.0"}


@pytest.mark.parametrize(
    "call, kwargs, problem",
    [
        (kt.bench, {"op": "layer_norm", "compile_only": "no"}, r"compile_only \(--compile-only\) is a str \('no'\)"),
        (kt.bench, {"op": "layer_norm", "l2_flush": 0}, r"l2_flush \(--no-l2-flush\) is an int \(0\)"),
        (kt.bench, {"op": "layer_norm", "host_artifacts": "yes"}, r"host_artifacts \(--host-artifacts\) is a str"),
        (kt.bench, {"op": "layer_norm", "profile": 1}, r"profile \(--profile\) is an int"),
        (kt.bench_recorded, {"workload": "W.json", "compile_only": "no"}, r"compile_only \(--compile-only\) is a str"),
        (kt.bench_recorded, {"workload": "W.json", "l2_flush": None}, r"l2_flush \(--no-l2-flush\) is None"),
        (kt.bisect, {"source": "pypi:triton", "good": "3.3.1", "bad": "3.4.0", "resume": "no"}, r"resume \(--resume\)"),
        (kt.bisect, {"source": "pypi:triton", "good": "3.3.1", "bad": "3.4.0", "pre": 1}, r"pre \(--pre\) is an int"),
        (
            kt.bisect,
            {"source": "pypi:triton", "good": "3.3.1", "bad": "3.4.0", "explain": "no"},
            r"explain \(--no-explain\)",
        ),
        (kt.bisect, {"source": "s", "good": "a", "bad": "b", "first_parent": "no"}, r"first_parent \(--first-parent\)"),
        (
            kt.bisect,
            {"source": "s", "good": "a", "bad": "b", "keep_checkouts": "no"},
            r"keep_checkouts \(--keep-checkouts\)",
        ),
        (kt.calibrate, {"from_cells": "c.jsonl", "cross_validate": "no"}, r"cross_validate \(--no-cv\) is a str"),
        (kt.explain, {**OP, "fixes": "no"}, r"fixes \(--fixes\) is a str \('no'\), not True or False"),
        (kt.explain, {**OP, "ptx_diff": "no"}, r"ptx_diff \(--ptx-diff\) is a str"),
        (kt.explain, {**OP, "sass_diff": 1}, r"sass_diff \(--sass-diff\) is an int"),
        (kt.triage, {"old": "a.csv", "new": "b.csv", "fixes": "no"}, r"fixes \(--no-fixes\) is a str \('no'\)"),
        (kt.triage, {"old": "a.csv", "new": "b.csv", "bisect": "no"}, r"bisect \(--no-bisect\) is a str"),
        (kt.triage, {"old": "a.csv", "new": "b.csv", "measure": "yes"}, r"measure \(--measure\) is a str"),
        (kt.triage, {"old": "a", "new": "b", "allow_precision_mismatch": 1}, r"allow_precision_mismatch .* is an int"),
        (kt.triage_run, {"command": "python x.py", **TC, "fixes": "no"}, r"fixes \(--no-fixes\) is a str \('no'\)"),
        (kt.triage_run, {"command": "python x.py", **TC, "bisect": "no"}, r"bisect \(--no-bisect\) is a str"),
        (kt.tune, {**OP, "compile_only": "no"}, r"compile_only \(--compile-only\) is a str \('no'\)"),
    ],
)
def test_a_switch_given_anything_but_true_or_false_is_refused_naming_it(
    call: object, kwargs: dict[str, object], problem: str
) -> None:
    """Every switch of the library was read for its truth: fixes="no" proposed and compiled fixes,
    compile_only="no" compiled only. Now each is checked (``_args.switch``) before any work."""
    with pytest.raises(KtriageError, match=problem) as refused:
        call(**kwargs)  # type: ignore[operator]
    assert "not True or False" in refused.value.problem and refused.value.fix


@pytest.mark.parametrize("arch, limit", [("sm_90", 232448), ("sm_80", 166912), ("sm_75", 65536)])
def test_occupancy_refuses_more_shared_memory_than_a_block_may_have(arch: str, limit: int) -> None:
    """shared=10**9 gave a report of 0 CTAs per SM, read as a result; the limit is the arch's opt-in
    maximum per block (ktriage.arch), and the limit itself still has one CTA."""
    from ktriage.arch import parse_arch

    assert parse_arch(arch).shared_per_block_optin == limit
    assert kt.occupancy(arch=arch, registers=32, warps=4, shared=limit).result.ctas_per_sm >= 1
    for shared in (limit + 1, 10**9):
        with pytest.raises(KtriageError, match=rf"shared \(--shared\) {shared} bytes .* at most {limit} bytes") as no:
            kt.occupancy(arch=arch, registers=32, warps=4, shared=shared)
        assert str(limit) in (no.value.fix or "")


def test_profile_attach_checks_its_arguments(tmp_path: Path) -> None:
    """profile_attach(report="x") failed with "'str' object has no attribute 'doc'"; results and db were
    not checked at all."""
    with pytest.raises(KtriageError, match=r"report is a str, not a ProfiledBundle"):
        kt.profile_attach("profile.json", tmp_path / "results.json")  # type: ignore[arg-type]
    report = kt.ProfiledBundle.__new__(kt.ProfiledBundle)  # never used: the arguments are refused first
    with pytest.raises(KtriageError, match=r"results \(--results\) is an int, not a str or a path"):
        kt.profile_attach(report, 3)  # type: ignore[arg-type]
    with pytest.raises(KtriageError, match=r"db \(--db\) is an int, not a str"):
        kt.profile_attach(report, tmp_path / "results.json", db=1)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "call, kwargs, problem",
    [
        (kt.record, {"command": None, "output": "W.json"}, r"command is None: there is no program to run"),
        (kt.triage_run, {"command": None, **TC}, r"command \(--run\) is None, not a str"),
    ],
)
def test_none_is_named_as_none_not_as_empty(call: object, kwargs: dict[str, object], problem: str) -> None:
    """command=None read "command is empty" (record) and "--run is empty" (triage_run)."""
    with pytest.raises(KtriageError, match=problem) as refused:
        call(**kwargs)  # type: ignore[operator]
    assert "empty" not in refused.value.problem


@pytest.mark.parametrize(
    "kwargs, problem",
    [
        ({"threshold": "0.05"}, r"threshold \(--threshold\) '0.05' is a str, not a number"),
        ({"jobs": 0}, r"jobs \(--jobs\) 0 is out of range"),
        ({"jobs": "8"}, r"jobs \(--jobs\) '8' is a str, not an int"),
        ({"max_time": "5"}, r"max_time \(--max-time\) '5' is a str, not a number"),
        ({"db": 1}, r"db \(--db\) is an int, not a str"),
        ({"db": Path("k.db")}, r"db \(--db\) is a path \(\w*Path: .k\.db.\), not a database URL"),
    ],
    ids=["threshold-str", "jobs-0", "jobs-str", "max_time-str", "db-int", "db-path"],
)
def test_triage_run_checks_its_numbers_and_db_as_triage_and_bench_do(
    kwargs: dict[str, object], problem: str, tmp_path: Path
) -> None:
    """triage_run took threshold, jobs, max_time and db unchecked: threshold="0.05" (a ValueError) and
    max_time="5" (a TypeError) failed inside its preflight, and jobs=0 or db=1 were not looked at before
    the program ran (on a CPU host the refusal was "no GPU", on a GPU host the run went on). Each is
    refused first, naming the keyword and the flag, with the fix."""
    with pytest.raises(KtriageError, match=problem) as refused:
        kt.triage_run(command="python x.py", **TC, workdir=tmp_path / "run", **kwargs)  # type: ignore[arg-type]
    assert refused.value.fix and not (tmp_path / "run").exists()


# ------------------------------------------------------------------------------------------ the call itself
@pytest.mark.parametrize(
    "call, args, kwargs, problem, fix",
    [
        (
            kt.explain,
            (),
            {"target": "liger.layer_norm", "toolchain": ["triton==3.4.0"]},
            "takes no keyword 'toolchain'",
            "did you mean toolchains=",
        ),
        (
            kt.compare,
            (),
            {"old": "a.json", "new": "b.json", "thresold": 0.1},
            "takes no keyword 'thresold'",
            "did you mean threshold=",
        ),
        (
            kt.runs_list,
            (),
            {"database": "sqlite:////x.db"},
            "takes no keyword 'database'",
            "kt.runs_list takes: db, limit",
        ),
        (kt.catalog_list, (), {"op": "liger.layer_norm"}, "takes no keyword 'op'", "kt.catalog_list takes: none"),
        (
            kt.explain,
            ("liger.layer_norm",),
            {"toolchains": ["triton==3.4.0"]},
            "by keyword only, and 1 was given by position",
            "kt.explain(target=..., toolchains=...)",
        ),
        (kt.occupancy, (), {"registers": 64}, "kt.occupancy() needs warps=: not given", "pass warps=..."),
    ],
)
def test_a_call_that_does_not_bind_is_refused_naming_the_keyword_meant(
    call: Any, args: tuple[object, ...], kwargs: dict[str, object], problem: str, fix: str
) -> None:
    """These were Python's TypeError ("explain() got an unexpected keyword argument 'toolchain'"),
    naming the mistake but not the keyword meant. Still a TypeError, for code that catches one."""
    with pytest.raises(KtriageError) as refused:
        call(*args, **kwargs)
    assert isinstance(refused.value, TypeError)
    assert problem in refused.value.problem and refused.value.fix and fix in refused.value.fix
