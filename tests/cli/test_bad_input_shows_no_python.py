"""No refusal on the command line shows its user a Python spelling: every bad-input case of tests/cli, run again.

Why a run and not only tests/test_spellings.py's scan of the source: the scan sees a Worded made in the same
function, not one passed in as a parameter and pasted into an f-string (``f"... {why}"``, ``why`` a Worded
from another module): that lost the command line's spelling in spec/select.py and spec/ranges.py, and the
command printed ``inputs=['7'] (--input 7)``. Here the bad-input cases the verbs' own tests already run
(read from their ``parametrize`` tables, so a case added there is checked here too) go through the real
``main(argv)`` in this process, and no stderr line may name a ``kt.*`` call or a keyword with its flag
(``threshold=5 (--threshold 5)``). Each case is refused before anything compiles: building a toolchain
trips the test (``ensure_toolchain``, the one place every verb builds one).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from ktriage.cli import exit_codes
from ktriage.measure.results_file import write_results
from ktriage.testing import fake_sweep_run
from tests.cli import (
    test_app,
    test_bench,
    test_bisect,
    test_compare,
    test_occupancy,
    test_option_spellings,
    test_options,
    test_output_grammar,
    test_runs,
    test_tune,
)
from tests.conftest import RunCli

KT_CALL = "kt."
KEYWORD_WITH_FLAG = re.compile(r"\w+=\S+ \(--")  # threshold=5 (--threshold 5), inputs=['7'] (--input 7)


def _table(test: Callable[..., object], argname: str) -> Iterator[object]:
    """The values of ``argname`` in the ``parametrize`` table of ``test`` (a test function of tests/cli)."""
    for mark in getattr(test, "pytestmark", []):
        if mark.name != "parametrize":
            continue
        names = mark.args[0]
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        if argname not in names:
            continue
        at = names.index(argname)
        for row in mark.args[1]:
            values = getattr(row, "values", row)  # a pytest.param, or the row itself
            yield values if len(names) == 1 else values[at]


def _compare_files(tmp: Path) -> dict[str, str]:
    """The results files test_compare's ``files`` fixture writes (ktriage.testing's fake runs), by its names."""
    tcs, cliff = test_compare.TCS, test_compare.cliff_at_7
    runs = {
        "both": fake_sweep_run(seed=1, speed=cliff, toolchains=tcs, broken={(tcs[1], 20): "wrong"}),
        "old": fake_sweep_run(seed=2, toolchains=tcs[:1]),
        "new": fake_sweep_run(seed=3, toolchains=tcs[1:], speed=lambda tc, i: 0.8 if i < 20 else 1.2),
    }
    names = {name: str(write_results(tmp / f"{name}.json", *run)) for name, run in runs.items()}
    garbage = tmp / "garbage.json"
    garbage.write_text('{"hello": 1}')
    return names | {"garbage": str(garbage)}


def bad_input_cases(tmp: Path) -> list[list[str]]:
    """Every bad-input argv of tests/cli that is refused before compiling, built as its own test builds it."""
    tc = ["-t", "triton==3.4.0"]
    bisect = ["bisect", "--source", "pypi:triton", "--good", "3.3.1", "--bad", "3.4.0"]
    tune = ["tune", "liger.layer_norm", *tc, "-i", "N=4608"]
    compare = _compare_files(tmp)
    tables: list[tuple[Callable[..., object], str, Callable[[Sequence[str]], list[str]]]] = [
        (test_app.test_usage_errors_exit_2, "argv", list),
        (test_options.test_bad_options_are_refused_with_the_fix, "argv", list),
        (test_output_grammar.test_a_format_or_suffix_without_a_writer_is_refused_with_the_supported_ones, "argv", list),
        (test_occupancy.test_cli_bad_input_is_a_ktriage_error, "argv", lambda a: ["occupancy", *a]),
        (test_bench.test_bad_input_names_the_fix, "args", lambda a: ["bench", *a]),
        (
            test_bench.test_toolchains_without_an_artifact_backend_name_the_ops_own_fix,
            "args",
            lambda a: ["bench", *a, *tc, "--compile-only", "--bundle", "unused"],
        ),
        (
            test_tune.test_a_space_flag_without_values_is_refused_with_its_own_example,
            "flags",
            lambda f: [*tune, "--compile-only", *f],
        ),
        (
            test_tune.test_a_budget_that_leaves_no_gpu_time_is_refused_before_compiling,
            "budget",
            lambda b: [*tune, "--budget", str(b)],
        ),
        (
            test_bisect.test_a_timed_bisects_options_are_refused_on_a_compile_metric,
            "flags",
            lambda f: [*bisect, "--op", "liger.embedding", "--metric", "sass:ATOMG", *f],
        ),
        (
            test_bisect.test_a_git_sources_options_are_refused_on_a_release_source,
            "flags",
            lambda f: [*bisect, "--command", "true", *f],
        ),
        (test_compare.test_bad_input_exits_2, "args", lambda a: ["compare", *(x.format(**compare) for x in a)]),
        (
            test_compare.test_toolchains_reference_bad_input,
            "args",
            lambda a: ["compare", str(test_compare.BF16_EMBEDDING), *a],
        ),
    ]
    cases = [build(value) for test, argname, build in tables for value in _table(test, argname)]  # type: ignore[arg-type]
    return cases + test_option_spellings._cases(tmp)


@pytest.fixture()
def nothing_compiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """A case that got as far as building a toolchain is no case for this test (slow, and not refused)."""

    def building(*_a: object, **_k: object) -> None:
        raise AssertionError("a bad-input case built a toolchain: it was not refused before compiling")

    monkeypatch.setattr("ktriage.toolchain.manager.ensure_toolchain", building)


def test_no_refusal_on_the_command_line_names_a_python_call_or_keyword(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nothing_compiles: None
) -> None:
    work = tmp_path / "cwd"  # relative outputs of the cases (-o r.json) land here, and are refused anyway
    work.mkdir()
    monkeypatch.chdir(work)
    _, _, table = test_runs._exported(tmp_path, run_cli, "run.csv")  # a run's CSV export, given where JSON goes
    here = f"sqlite:///{tmp_path / 'here.db'}"
    cases = [
        *bad_input_cases(tmp_path),
        ["runs", "import", str(table), "--db", here],
        ["compare", str(table), str(table)],
    ]
    assert len(cases) > 60, len(cases)  # the tables were found (a renamed test would leave this empty)
    verbs = {argv[0] for argv in cases}
    assert verbs >= {"bench", "explain", "tune", "bisect", "compare", "runs", "history", "occupancy", "catalog"}
    for argv in cases:
        result = run_cli(argv)
        assert result.exit_code == exit_codes.USAGE, (argv, result.output)
        for line in result.stderr.splitlines():
            assert KT_CALL not in line and not KEYWORD_WITH_FLAG.search(line), (argv, line)


def test_the_guard_sees_a_keyword_or_a_kt_call() -> None:
    """The two patterns match what a flattened Worded prints (and not the command line's own spelling)."""
    from ktriage.errors import option, run_as

    flattened = f"no input matches {option('inputs', '--input', ['7'])}"  # the mistake: str of a Worded
    assert KEYWORD_WITH_FLAG.search(flattened)
    assert KT_CALL in str(run_as("kt.runs_list()", "ktriage runs list"))
    assert not KEYWORD_WITH_FLAG.search("give --threshold 0.05 (a 5% gate), or --input 'M=4096, N=512'")
