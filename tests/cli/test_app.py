"""The ``ktriage`` entry point, driven through the real ``main(argv)``: the lazy verb listing, the exit
codes of ktriage.cli.exit_codes (user error 2, internal error 3 as one line, ``--debug`` re-raises),
and that help imports neither the heavy libraries nor the verbs it does not show."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ktriage.cli import exit_codes
from ktriage.cli.app import VERBS, load_verb, main
from tests.conftest import RunCli

REPO = Path(__file__).resolve().parents[2]
ALL_VERBS = {
    "explain",
    "calibrate",
    "bench",
    "compare",
    "bisect",
    "bisect-step",
    "tune",
    "fidelity",
    "toolchain",
    "catalog",
    "occupancy",
    "runs",
    "triage",
    "history",
    "cache",
    "profile",
    "record",
    "workload",
}
HEAVY = ("scipy", "sqlalchemy", "numpy", "jinja2")
# What `ktriage --help` imports of ktriage: a new module here costs every short command its import.
HELP_MODULES = {
    "ktriage",
    "ktriage.cli",
    "ktriage.cli.app",
    "ktriage.cli.console",
    "ktriage.cli.exit_codes",
    "ktriage.exit_status",
    "ktriage.cli.listing",
    "ktriage.errors",
}
VERB_MODULES = {v.module for v in VERBS}
OCCUPANCY = ["occupancy", "--registers", "128", "--warps", "8"]


def test_help_lists_every_verb(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == exit_codes.OK
    out = capsys.readouterr().out
    assert {v.name for v in VERBS} == ALL_VERBS
    for name in ALL_VERBS:
        assert f" {name} " in out, name
    assert "--debug" in out


@pytest.mark.parametrize("verb", VERBS, ids=lambda v: v.name)
def test_listing_table_matches_the_real_commands(verb) -> None:  # type: ignore[no-untyped-def]
    """The static help of the listing is the first help paragraph of the command it names (what Typer
    would list if it imported the verb): edit both when a verb's docstring changes."""
    command = load_verb(verb)
    assert command.name == verb.name
    first = inspect.cleandoc(command.help or "").split("\n\n")[0]
    assert " ".join(first.split()) == verb.help


def test_a_verb_that_lists_its_sub_commands_lists_them_all() -> None:
    """`runs` read "list, show, export" and has import and delete too: a summary that names its
    sub-commands after a colon names every one."""
    checked = []
    for verb in VERBS:
        subs = list(getattr(load_verb(verb), "commands", {}))  # a group (typer's vendored click)
        words = verb.help.split(": ", 1)[-1].replace(",", " ").split()
        if any(name in words for name in subs):
            checked.append(verb.name)
            assert all(name in words for name in subs), (verb.name, subs, verb.help)
    assert "runs" in checked


def test_user_error_exits_2_with_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "show", "liger.layernorm"]) == exit_codes.USAGE
    err = capsys.readouterr().err
    assert "error:" in err and "fix:" in err and "did you mean liger.layer_norm" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "argv, says",
    [
        (["explian"], "Did you mean 'explain'?"),
        (["occupancy", "--registers", "many", "--warps", "8"], "Invalid value"),
        (["occupancy", "--warps", "8"], "Missing option"),
    ],
)
def test_usage_errors_exit_2(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == exit_codes.USAGE
    assert says in capsys.readouterr().err


def broken_compute_occupancy(*_args: object, **_kwargs: object) -> None:
    """A fake library function with a bug: what an unexpected exception inside a verb looks like."""
    raise RuntimeError("fake bug in compute_occupancy\nwith a second line")


@pytest.fixture()
def broken_occupancy(monkeypatch: pytest.MonkeyPatch) -> None:
    import ktriage.analyze.occupancy

    monkeypatch.setattr(ktriage.analyze.occupancy, "compute_occupancy", broken_compute_occupancy)
    monkeypatch.delenv("KTRIAGE_DEBUG", raising=False)


def test_internal_error_exits_3_with_one_line(broken_occupancy: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(OCCUPANCY) == exit_codes.INTERNAL
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        "internal error: RuntimeError: fake bug in compute_occupancy with a second line — this is a bug in "
        "ktriage; rerun with --debug for the traceback"
    ]
    assert "Traceback" not in captured.out + captured.err


def test_debug_reraises(broken_occupancy: None, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(RuntimeError, match="fake bug in compute_occupancy"):
        main(["--debug", *OCCUPANCY])
    monkeypatch.setenv("KTRIAGE_DEBUG", "1")
    with pytest.raises(RuntimeError, match="fake bug in compute_occupancy"):
        main(OCCUPANCY)


def test_verb_exit_codes_pass_through(capsys: pytest.CaptureFixture[str]) -> None:
    """A verb's own code comes back unchanged: bisect-step speaks git bisect's 128 (abort) for a user error."""
    assert main(OCCUPANCY) == exit_codes.OK
    assert main(["bisect-step"]) == 128
    assert "give exactly one of --baseline and --record-baseline" in capsys.readouterr().err


def test_a_command_runs_with_rarer_collections_and_restores_the_collector(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """While a verb runs, the collector's thresholds are the command's and the imported verb is frozen out
    of collections (ktriage.cli.app.command_gc); afterwards, also after a crash, both are as they were."""
    import gc

    import ktriage.analyze.occupancy
    from ktriage.cli.app import COMMAND_GC_THRESHOLDS

    real = ktriage.analyze.occupancy.compute_occupancy
    seen: list[tuple[tuple[int, int, int], int]] = []

    def watched(*args: Any, **kwargs: Any) -> Any:
        seen.append((gc.get_threshold(), gc.get_freeze_count()))
        return real(*args, **kwargs)

    monkeypatch.setattr(ktriage.analyze.occupancy, "compute_occupancy", watched)
    before = gc.get_threshold()
    assert before != COMMAND_GC_THRESHOLDS and gc.get_freeze_count() == 0
    assert main(OCCUPANCY) == exit_codes.OK
    assert seen and seen[0][0] == COMMAND_GC_THRESHOLDS and seen[0][1] > 0
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    monkeypatch.setattr(ktriage.analyze.occupancy, "compute_occupancy", broken_compute_occupancy)
    monkeypatch.delenv("KTRIAGE_DEBUG", raising=False)
    assert main(OCCUPANCY) == exit_codes.INTERNAL
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    capsys.readouterr()


def test_python_m_ktriage_exits_with_mains_code() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ktriage", "catalog", "show", "liger.layernorm"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert proc.returncode == exit_codes.USAGE, proc.stderr
    assert "fix:" in proc.stderr and "Traceback" not in proc.stderr


PROBE = """
import json, sys
from ktriage.cli.app import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


@pytest.mark.parametrize(
    "argv, verb_module",
    [
        (["--help"], None),
        (["compare", "--help"], "ktriage.cli.compare_cmd"),
        (["runs", "--help"], "ktriage.cli.runs_cmd"),
        (["explain", "--help"], "ktriage.cli.explain_cmd"),
        (["history", "--help"], "ktriage.cli.history_cmd"),
    ],
)
def test_help_imports_no_heavy_library_and_no_other_verb(argv: list[str], verb_module: str | None) -> None:
    """Help is what shell completion and a new user run first: it loads no scipy, SQLAlchemy, numpy or
    jinja2, and no verb module but the one asked about (a fresh interpreter, so nothing is preloaded)."""
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["code"] == exit_codes.OK
    modules = set(result["modules"])
    assert not [m for m in HEAVY if m in modules]
    assert {m for m in VERB_MODULES if m in modules} == ({verb_module} if verb_module else set())
    if verb_module is None:  # the listing: the CLI's frame and nothing of the library (no entry point)
        assert {m for m in modules if m.startswith("ktriage")} == HELP_MODULES


def test_a_typer_without_its_vendored_click_is_refused_with_the_fix(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """typer before 0.26 has no ``typer._click`` and 0.26 is untested: ktriage says so up front instead of
    failing somewhere in the CLI."""
    import typer

    monkeypatch.setattr(typer, "__version__", "0.26.8")
    assert main(["occupancy", "--registers", "128", "--warps", "8", "--format", "json"]) == exit_codes.USAGE
    err = capsys.readouterr().err
    assert "typer 0.26.8 is too old" in err and "typer>=0.27,<0.29" in err


def test_format_survives_typer_0_27s_enum_converter() -> None:
    """typer 0.27-0.28 look an enum option's callback result up again by ``str(value)``: the format must
    stringify to its value, or --format json silently became None (a table) on the H200 image's typer 0.27.2."""
    from ktriage.cli.options import Format

    assert [str(f) for f in Format] == [f.value for f in Format]


def test_the_cli_names_the_variables_the_library_checks() -> None:
    """``ktriage --help`` must not import ``ktriage.api``, so the CLI keeps its own list of the library's
    variables (it calls the library's check only when one is set): a variable added to one list and not
    the other would go unchecked before a verb starts."""
    from ktriage.api._checks import CHECKED_VARIABLES
    from ktriage.cli.console import LIBRARY_ENVIRONMENT

    assert set(LIBRARY_ENVIRONMENT) == set(CHECKED_VARIABLES)


@pytest.mark.parametrize(
    "argv",
    [
        ["catalog", "list"],  # rich's table
        ["compare", "benchmarks/perf/h200/ln_bwd.json", "--toolchains", "--format", "json"],  # click's echo
        ["--help"],
    ],
)
def test_a_reader_that_went_away_is_its_own_status_not_a_finding(argv: list[str]) -> None:
    """`ktriage compare A B | head`: rich and click both exit 1 on a broken pipe, which a CI job reads as
    "regressions found" (ln_bwd.json has regressions, so its own status would be 1 too). It is 141, as a
    shell reports SIGPIPE, with nothing on stderr."""
    import os

    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first write
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "ktriage", *argv], stdout=write, stderr=subprocess.PIPE, cwd=REPO, check=False
        )
    finally:
        os.close(write)
    assert proc.returncode == exit_codes.BROKEN_PIPE == 141, proc.stderr
    assert proc.stderr == b""


def test_help_paragraphs_are_wrapped_at_the_terminal_not_at_the_docstrings_lines(run_cli: RunCli) -> None:
    """Typer's rich help kept the docstring's line breaks after the first paragraph: at 80 columns `explain --help`
    read "... its interval" / "(docs/model.md); a" / "finding is a regression ...", a ragged line wherever the
    source broke. On a terminal wide enough, every paragraph of every command's help is one line."""
    from ktriage.cli.docgen import _commands

    for name, command in _commands():
        r = run_cli([*name.split(), "--help"], env={"COLUMNS": "2000", "KTRIAGE_COLUMNS": "2000"})
        assert r.exit_code == exit_codes.OK, r.output
        lines = [" ".join(line.strip(" │").split()) for line in r.stdout.splitlines()]
        for paragraph in inspect.cleandoc(command.help or "").split("\n\n"):
            text = " ".join(paragraph.split())
            assert any(text in line for line in lines), (name, text, r.stdout[:3000])


def _help_in_a_pipe(argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    """``ktriage ARGV`` in a fresh interpreter, stdout a pipe, with no width variable but ``env``'s."""
    widths = ("COLUMNS", "LINES", "TERMINAL_WIDTH", "KTRIAGE_COLUMNS", "KTRIAGE_DEBUG")
    environ = {k: v for k, v in os.environ.items() if k not in widths} | env
    return subprocess.run(
        [sys.executable, "-m", "ktriage", *argv], capture_output=True, text=True, cwd=REPO, env=environ, check=False
    )


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


@pytest.mark.parametrize(
    "argv, code",
    [
        (["--help"], exit_codes.OK),  # the listing (cli/listing.py)
        (["explain", "--help"], exit_codes.OK),  # Typer's renderer
        (["runs", "list", "--help"], exit_codes.OK),  # a group's subcommand
        (["runs"], exit_codes.USAGE),  # a group without its subcommand shows its help
    ],
)
def test_help_in_a_pipe_is_as_wide_as_ktriage_columns(argv: list[str], code: int) -> None:
    """KTRIAGE_COLUMNS=200, set for wide tables in a CI log, used to leave help pages at Typer's 80 columns
    (it read only COLUMNS): in a pipe the help is now as wide as every other output, and KTRIAGE_COLUMNS
    decides over COLUMNS, as it does there. Unset, the width is Typer's as before (COLUMNS, else 80)."""
    wide = _help_in_a_pipe(argv, KTRIAGE_COLUMNS="200")
    assert wide.returncode == code, wide.stderr
    assert "Usage: ktriage" in wide.stdout and _widest(wide.stdout) == 200  # the panels span the width
    assert _widest(_help_in_a_pipe(argv, KTRIAGE_COLUMNS="120", COLUMNS="60").stdout) == 120
    assert _widest(_help_in_a_pipe(argv).stdout) == 80
    assert _widest(_help_in_a_pipe(argv, COLUMNS="100").stdout) == 100


def test_a_group_without_its_subcommand_says_which_it_needs() -> None:
    """`ktriage runs` drew the group's help, then an empty "error:" line (click's message is the help, which
    Typer had printed already): the error now names what is missing and the fix lists the subcommands."""
    proc = _help_in_a_pipe(["runs"])
    assert proc.returncode == exit_codes.USAGE
    assert "Usage: ktriage runs" in proc.stdout
    assert proc.stderr.splitlines()[:2] == [
        "error: ktriage runs needs a subcommand",
        "fix: run `ktriage runs COMMAND`, COMMAND one of: list, show, export, import, delete",
    ]


def test_a_long_option_help_is_one_line_at_ktriage_columns() -> None:
    """explain's --sm-count help (95 characters) wrapped at 80 columns in a pipe whatever KTRIAGE_COLUMNS said."""
    explain = load_verb(next(v for v in VERBS if v.name == "explain"))
    sm_count = next(p for p in explain.params if "--sm-count" in p.opts)
    text = " ".join(str(getattr(sm_count, "help", "")).split())
    assert len(text) > 80
    proc = _help_in_a_pipe(["explain", "--help"], KTRIAGE_COLUMNS="200")
    assert proc.returncode == exit_codes.OK, proc.stderr
    assert any(text in line for line in proc.stdout.splitlines()), proc.stdout
    narrow = _help_in_a_pipe(["explain", "--help"])
    assert not any(text in line for line in narrow.stdout.splitlines())  # unset: Typer's 80, wrapped


@pytest.mark.parametrize("argv", [["--help"], ["explain", "--help"], ["runs", "list", "--help"], ["runs"]])
def test_help_refuses_a_ktriage_columns_that_is_no_width(argv: list[str]) -> None:
    """An invalid KTRIAGE_COLUMNS gets the error every verb gives it (exit 2, error and fix lines, no
    traceback, no help page), not a help page at some other width."""
    proc = _help_in_a_pipe(argv, KTRIAGE_COLUMNS="wide")
    assert proc.returncode == exit_codes.USAGE
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "error: KTRIAGE_COLUMNS='wide' is not a width in columns",
        "fix: give a whole number from 20 to 100000 (e.g. KTRIAGE_COLUMNS=160), or unset it",
    ]


def test_a_verbs_help_drawn_outside_main_refuses_an_invalid_ktriage_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """The help page checks KTRIAGE_COLUMNS itself (``console.help_width``), so a caller that draws a verb's
    help through click, not ``main`` (which checks the environment first), gets the same KtriageError."""
    from ktriage.errors import KtriageError

    monkeypatch.setenv("KTRIAGE_COLUMNS", "0")
    command = load_verb(next(v for v in VERBS if v.name == "occupancy"))
    with pytest.raises(KtriageError, match="KTRIAGE_COLUMNS='0' is not a width"):
        command.main(["--help"], prog_name="ktriage occupancy", standalone_mode=False)
