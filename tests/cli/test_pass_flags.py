"""The pass flags: every ``--mode`` whose help says "also --fwd, --bwd, --fwd-bwd" accepts them (issue 26:
``ktriage triage --bwd`` was refused although its help documented it), through the real commands."""

from __future__ import annotations

from typing import Any

import pytest

from ktriage.cli import exit_codes
from ktriage.cli.app import VERBS, load_verb
from ktriage.cli.options import MODE_HELP, PASS_FLAGS, pass_flags_as_mode
from tests.conftest import RunCli


def _commands_with_documented_flags() -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []

    def walk(path: str, command: Any) -> None:
        for name, sub in (getattr(command, "commands", None) or {}).items():
            walk(f"{path} {name}", sub)
        mode = next((p for p in command.params if "--mode" in getattr(p, "opts", ())), None)
        if mode is not None and MODE_HELP in (getattr(mode, "help", None) or ""):
            out.append((path, command))

    for verb in VERBS:
        walk(verb.name, load_verb(verb))
    return out


DOCUMENTED = _commands_with_documented_flags()


def test_the_documented_verbs_are_found() -> None:
    names = {path for path, _ in DOCUMENTED}
    assert {"triage", "explain", "bench", "bisect", "tune", "compare", "history", "catalog show"} <= names


@pytest.mark.parametrize(("path", "command"), DOCUMENTED, ids=[p for p, _ in DOCUMENTED])
@pytest.mark.parametrize("flag", sorted(PASS_FLAGS))
def test_every_documented_flag_is_accepted(path: str, command: Any, flag: str) -> None:
    """Parsed by the command itself (resilient: its required arguments may be missing); the flag lands
    on ``--mode`` or on the command's own flag of that name, never "No such option"."""
    ctx = command.make_context(path, [flag], resilient_parsing=True)
    own = {opt for p in command.params for opt in getattr(p, "opts", ())}
    if flag in own:
        assert ctx.params[flag.lstrip("-").replace("-", "_")] is True
    else:
        mode = ctx.params["mode"]
        assert getattr(mode, "value", mode) == PASS_FLAGS[flag]


def test_triage_bwd_is_the_same_as_mode_bwd(run_cli: RunCli, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The issue's example: the flag gets past parsing (the error is then about the missing side files,
    the same one --mode bwd gives)."""
    missing = [str(tmp_path / "old.json"), str(tmp_path / "new.json")]
    by_flag = run_cli(["triage", *missing, "--bwd"])
    by_mode = run_cli(["triage", *missing, "--mode", "bwd"])
    assert by_flag.exit_code == by_mode.exit_code == exit_codes.USAGE, by_flag.output
    assert "No such option" not in by_flag.output
    assert by_flag.problem == by_mode.problem and by_flag.problem


def test_catalog_show_bwd_lists_the_bwd_kernels(run_cli: RunCli) -> None:
    by_flag = run_cli(["catalog", "show", "liger.embedding", "--bwd", "--input", "0", "--format", "json"])
    by_mode = run_cli(["catalog", "show", "liger.embedding", "--mode", "bwd", "--input", "0", "--format", "json"])
    assert by_flag.exit_code == exit_codes.OK, by_flag.output
    assert by_flag.stdout == by_mode.stdout and ".bwd[" in by_flag.stdout


def test_two_passes_are_refused_not_last_one_wins(run_cli: RunCli) -> None:
    result = run_cli(["catalog", "show", "liger.embedding", "--bwd", "--mode", "fwd"])
    assert result.exit_code == exit_codes.USAGE
    assert "more than one pass" in (result.problem or "") and "--mode" in (result.fix or "")


def test_what_follows_a_double_dash_is_left_alone() -> None:
    flags = {"--bwd": "bwd"}
    assert pass_flags_as_mode(["x", "--bwd", "--", "prog", "--bwd"], flags) == [
        "x",
        "--mode",
        "bwd",
        "--",
        "prog",
        "--bwd",
    ]
