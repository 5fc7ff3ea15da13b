"""Error output (ktriage/cli/console.py): a KtriageError's problem, fix and details as the user sees
them, on a real rich Console and through the real ``main(argv)``."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from rich.console import Console

from ktriage.cli import exit_codes
from ktriage.cli.console import help_width, print_error
from ktriage.errors import DeviceError, KtriageError
from ktriage.store import open_store
from tests.conftest import RunCli

DETAILS = "ptxas fatal   : Unresolved extern function 'vprintf'\n[kernel] line 2 \\\nlast line\n"


def _printed(exc: KtriageError, *, styles: bool = False) -> str:
    console = Console(
        file=io.StringIO(), record=True, width=60, force_terminal=styles, color_system="standard" if styles else None
    )
    print_error(exc, console)
    return console.export_text(styles=styles)


def test_details_follow_the_fix_indented_and_escaped() -> None:
    text = _printed(KtriageError("bad [kernel] table", "add `n` to [kernel.signature]", DETAILS))
    assert text.splitlines() == [
        "error: bad [kernel] table",
        "fix: add `n` to [kernel.signature]",
        "  ptxas fatal   : Unresolved extern function 'vprintf'",  # rich markup would drop '[kernel]'
        "  [kernel] line 2 \\",  # a trailing backslash does not eat the closing style tag
        "  last line",
    ]


def test_details_are_dim_and_not_rewrapped() -> None:
    long = "x" * 150
    text = _printed(KtriageError("problem", None, long), styles=True)
    lines = text.splitlines()
    assert lines[0].endswith("problem") and "fix:" not in text  # no fix: no fix line
    assert lines[1].startswith("\x1b[2m") and f"  {long}" in lines[1]  # dim (SGR 2), one line at width 60


def test_no_details_is_two_lines() -> None:
    assert _printed(KtriageError("problem", "the fix")).splitlines() == ["error: problem", "fix: the fix"]


def test_main_prints_the_details_of_a_user_error(monkeypatch: pytest.MonkeyPatch, run_cli: RunCli) -> None:
    """A KtriageError with details raised inside a verb (here occupancy's library call, faked): exit 2,
    and stderr has the error, the fix, then the details, indented, in that order."""
    import ktriage.analyze.occupancy

    def fails(*_args: object, **_kwargs: object) -> None:
        raise DeviceError("cuModuleLoadData failed", "recompile for this GPU", DETAILS)

    monkeypatch.setattr(ktriage.analyze.occupancy, "compute_occupancy", fails)
    result = run_cli(["occupancy", "--registers", "128", "--warps", "8"])
    assert result.exit_code == exit_codes.USAGE, result.output
    assert result.stderr.splitlines() == [
        "error: cuModuleLoadData failed",
        "fix: recompile for this GPU",
        "  ptxas fatal   : Unresolved extern function 'vprintf'",
        "  [kernel] line 2 \\",
        "  last line",
    ]
    assert "Traceback" not in result.stderr and result.stdout == ""


class _Stdout(io.StringIO):
    def __init__(self, terminal: bool) -> None:
        super().__init__()
        self.terminal = terminal

    def isatty(self) -> bool:
        return self.terminal


@pytest.mark.parametrize(
    "value, terminal, width",
    [
        (None, False, None),  # unset: Typer's own width (COLUMNS, else 80), as before
        ("", False, None),
        ("200", False, 200),
        (" 120 ", False, 120),
        ("200", True, None),  # a terminal is drawn at its own width, as every output is
    ],
)
def test_help_width_is_ktriage_columns_in_a_pipe(
    monkeypatch: pytest.MonkeyPatch, value: str | None, terminal: bool, width: int | None
) -> None:
    if value is None:
        monkeypatch.delenv("KTRIAGE_COLUMNS", raising=False)
    else:
        monkeypatch.setenv("KTRIAGE_COLUMNS", value)
    monkeypatch.setattr(sys, "stdout", _Stdout(terminal))
    assert help_width() == width


@pytest.mark.parametrize("value", ["abc", "19", "100001"])
def test_help_width_refuses_what_pipe_width_refuses(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("KTRIAGE_COLUMNS", value)
    monkeypatch.setattr(sys, "stdout", _Stdout(False))
    with pytest.raises(KtriageError, match="is not a width in columns") as caught:
        help_width()
    assert caught.value.fix is not None and "KTRIAGE_COLUMNS=160" in caught.value.fix


@pytest.mark.parametrize(
    "argv", [["catalog", "list"], ["cache", "info"], ["toolchain", "list"], ["runs", "list"]], ids=" ".join
)
def test_a_verb_draws_at_the_width_set_after_import(argv: list[str], tmp_path: Path, run_cli: RunCli) -> None:
    """``catalog``, ``cache``, ``toolchain`` and ``runs`` made their console when first imported, so a
    ``KTRIAGE_COLUMNS`` set later in the same process (a library user driving the CLI, these tests'
    ``run_cli``) was ignored and the second run below was drawn 250 columns wide. Each draws at the width
    of the moment it runs."""
    if argv[0] == "runs":
        url = f"sqlite:///{tmp_path / 'store' / 'ktriage.db'}"
        open_store(url).close()  # an empty store: "no runs in <url>", wider than 40 columns
        argv = [*argv, "--db", url]
    wide = run_cli(argv)  # imports the verb's module at 250 columns
    assert wide.exit_code == exit_codes.OK, wide.output
    assert max(len(line) for line in wide.stdout.splitlines()) > 40, wide.stdout  # else 40 would prove nothing
    narrow = run_cli(argv, env={"KTRIAGE_COLUMNS": "40"})
    assert narrow.exit_code == exit_codes.OK, narrow.output
    assert all(len(line.rstrip()) <= 40 for line in narrow.stdout.splitlines()), narrow.stdout
