"""The command line names options by their flags and steps by their commands; the library by keyword.

Why: ``errors.option`` made each message name an option both ways (``threshold=5 (--threshold 5)``) and
the command printed that text, so its user read a Python keyword and a ``kt.runs_list()`` they cannot
call. Each case here is a real user error of one verb, run through ``ktriage.cli.app.main`` (no GPU,
no toolchain built: the refusal comes before any work), and the same errors raised through
``ktriage.api`` name the keyword.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import RunCli

KEYWORD = re.compile(r"\b[a-z_]+=(?:['\[\d]|True|False)|\b[a-z_]+ \(--")  # status='x', limit=20, metric (--metric


def _cases(tmp: Path) -> list[list[str]]:
    db = f"sqlite:///{tmp / 'none.db'}"
    empty = tmp / "empty.json"
    empty.write_text("{}")
    return [
        ["bench"],
        ["explain", "tutorial.vector_add", "-t", "triton==3.4.0", "--input-id", "99"],
        ["compare", "A", "B", "--db", "notaurl.db"],
        ["runs", "list", "--status", "bogus", "--db", db],
        ["runs", "show", "nope", "--db", db],
        ["history", "--op", "layer_norm", "--backend", "triton", "--db", db],
        ["tune", "tutorial.matmul", "-t", "triton==3.4.0"],
        ["bisect", "--source", "triton", "--good", "v3.3.0", "--bad", "v3.4.0"],
        ["toolchain", "show", "triton==9.9.9"],
        ["workload", "import", str(empty), "-o", str(empty)],
        ["calibrate"],
    ]


def test_the_command_line_names_flags_and_commands_only(run_cli: RunCli, tmp_path: Path) -> None:
    for argv in _cases(tmp_path):
        result = run_cli(argv)
        assert result.exit_code == 2 and "error: " in result.stderr, (argv, result.stderr)
        said = result.err_text
        assert not KEYWORD.search(said), (argv, said)
        assert "kt." not in said, (argv, said)


def test_some_command_line_errors_name_a_flag(run_cli: RunCli, tmp_path: Path) -> None:
    """The scan above must not pass because the messages name nothing: these name their flag."""
    db = f"sqlite:///{tmp_path / 'none.db'}"
    assert run_cli(["bench"]).problem == "no --op given"
    assert run_cli(["runs", "list", "--status", "bogus", "--db", db]).problem == "--status bogus is not a run status"
    bisect = run_cli(["bisect", "--source", "triton", "--good", "v3.3.0", "--bad", "v3.4.0"])
    assert bisect.problem == "no predicate: give --metric or --command"
    assert "`ktriage toolchain list`" in (run_cli(["toolchain", "show", "triton==9.9.9"]).fix or "")


def test_the_library_names_the_keyword_with_the_flag(tmp_path: Path) -> None:
    import ktriage.api as kt
    from ktriage.errors import KtriageError

    db = f"sqlite:///{tmp_path / 'none.db'}"
    with pytest.raises(KtriageError) as bench:
        kt.bench()
    assert bench.value.problem == "no op (--op) given"
    with pytest.raises(KtriageError) as runs:
        kt.runs_list(status="bogus", db=db)
    assert runs.value.problem == "status='bogus' (--status bogus) is not a run status"
    with pytest.raises(KtriageError) as bisect:
        kt.bisect(source="triton", good="v3.3.0", bad="v3.4.0")
    assert bisect.value.problem == "no predicate: give metric (--metric) or command (--command)"
    with pytest.raises(KtriageError) as show:
        kt.toolchain_show(id_or_spec="triton==9.9.9")
    assert "kt.toolchain_list() (`ktriage toolchain list`)" in (show.value.fix or "")
    with pytest.raises(KtriageError) as history:
        kt.history(op="layer_norm", backend="triton", db=db)
    assert "kt.bench(...)" in (history.value.fix or "")


def test_steps_to_other_verbs_are_commands_on_the_command_line(run_cli: RunCli, tmp_path: Path) -> None:
    """bench's refusals sent the command line to ``(kt.bench_recorded)`` and ``bench_recorded(workload=...)``,
    calls it cannot make: it is shown the commands alone (tests/api/test_messages_name_keywords.py has the
    kt.* calls these same errors name in Python)."""
    rms = run_cli(["bench", "--op", "rms_norm"])
    assert rms.exit_code == 2 and rms.fix == (
        "time a program that runs it: `ktriage record -o W.json -- python prog.py`, then "
        "`ktriage bench W.json -t OLD -t NEW`; compile-side: `ktriage explain liger.rms_norm -t OLD -t NEW`; "
        "or bench one of: layer_norm, embedding, rope (as --op)"
    )
    kernel = run_cli(["bench", "--kernel", "K0"])
    assert kernel.exit_code == 2 and kernel.fix == "give the workload: `ktriage bench W.json -t A -t B`"
    bundle = tmp_path / "new-bundle"
    toolchains = run_cli(["bench", "--kernel", "K0", "-t", "triton==3.4.0", "--compile-only", "--bundle", str(bundle)])
    assert toolchains.problem == "-t/--toolchain with --bundle and no workload: nothing to compile"
    assert toolchains.fix == "give the workload file: `ktriage bench W.json -t A -t B --compile-only --bundle DIR`"
    for said in (rms, kernel, toolchains):
        assert "kt." not in said.err_text and "bench_recorded" not in said.err_text, said.err_text
