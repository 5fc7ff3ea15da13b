"""The command predicate: git bisect run's exit codes, skips (125, timeouts) and the abort code
(``--resume`` after a real SIGKILL and ``bisect-step``: tests/cli/test_bisect.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ktriage.bisect.predicates import classify_exit
from ktriage.bisect.run import BisectOptions, run_bisect
from ktriage.errors import KtriageError
from tests.bisect.repos import check_script, make_kernel_repo


def test_exit_codes_follow_git_bisect_run() -> None:
    assert classify_exit(0) == "good"
    assert classify_exit(125) == "skip"
    assert [classify_exit(c) for c in (1, 2, 126, 127)] == ["bad"] * 4
    assert classify_exit(128) is None and classify_exit(255) is None


def test_command_finds_the_commit_and_treats_125_and_timeouts_as_skips(tmp_path: Path) -> None:
    repo = make_kernel_repo(tmp_path / "repo", n=24, culprit_at=13)
    skip_at, slow_at = repo.commits[11], repo.commits[12]
    extra = f'[ "$KTRIAGE_COMMIT" = "{skip_at}" ] && exit 125\n[ "$KTRIAGE_COMMIT" = "{slow_at}" ] && sleep 30\n'
    script, _ = check_script(tmp_path, extra)
    report = run_bisect(
        BisectOptions(
            source=f"git:{repo.path}",
            good=repo.good,
            bad=repo.bad,
            command=f"sh {script}",
            timeout_s=2,
            state=tmp_path / "s.json",
        )
    )
    stage = report.final
    by_id = {o.candidate.id: o for o in stage.observations}
    assert by_id[skip_at].outcome == "skip" and "125" in by_id[skip_at].reason
    assert by_id[slow_at].outcome == "skip" and "timed out" in by_id[slow_at].reason
    # both skips sit right before the culprit: 11, 12 or 13 may be the first bad -> that exact range, not a guess
    assert stage.status == "ambiguous"
    assert [c.id for c in stage.range] == repo.commits[11:14]
    assert stage.candidates[stage.lo].id == repo.commits[10]


def test_command_abort_code_stops_the_bisect(tmp_path: Path) -> None:
    repo = make_kernel_repo(tmp_path / "repo", n=8, culprit_at=5)
    script, _ = check_script(tmp_path, f'[ "$KTRIAGE_COMMIT" = "{repo.commits[3]}" ] && exit 130')
    with pytest.raises(KtriageError, match="exited 130"):
        run_bisect(
            BisectOptions(
                source=f"git:{repo.path}",
                good=repo.good,
                bad=repo.bad,
                command=f"sh {script}",
                state=tmp_path / "s.json",
            )
        )
