"""The command predicate (git bisect run exit codes), ``--resume`` after a real SIGKILL, and
``bisect-step`` under a real ``git bisect run``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_bisect_fixtures import (
    GIT_ENV,
    git,
    make_kernel_repo,
    run_cli,
    write_cli_script,
)

from ktriage.bisect.predicates import classify_exit
from ktriage.bisect.run import BisectOptions, run_bisect
from ktriage.errors import KtriageError

# Bad when the checkout's spec raises RBLOCK; logs every commit it is run on.
CHECK = """#!/bin/sh
echo "$KTRIAGE_COMMIT" >> {log}
{extra}
if grep -q "RBLOCK = 256" spec.toml; then exit 1; fi
exit 0
"""


def _check_script(tmp: Path, extra: str = "") -> tuple[Path, Path]:
    log = tmp / "runs.log"
    script = tmp / "check.sh"
    script.write_text(CHECK.format(log=log, extra=extra))
    return script, log


def _runs(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def test_exit_codes_follow_git_bisect_run() -> None:
    assert classify_exit(0) == "good"
    assert classify_exit(125) == "skip"
    assert [classify_exit(c) for c in (1, 2, 126, 127)] == ["bad"] * 4
    assert classify_exit(128) is None and classify_exit(255) is None


def test_command_finds_the_commit_and_treats_125_and_timeouts_as_skips(tmp_path: Path) -> None:
    repo = make_kernel_repo(tmp_path / "repo", n=24, culprit_at=13)
    skip_at, slow_at = repo.commits[11], repo.commits[12]
    extra = (f'[ "$KTRIAGE_COMMIT" = "{skip_at}" ] && exit 125\n'
             f'[ "$KTRIAGE_COMMIT" = "{slow_at}" ] && sleep 30\n')
    script, _ = _check_script(tmp_path, extra)
    report = run_bisect(BisectOptions(source=f"git:{repo.path}", good=repo.good, bad=repo.bad, command=f"sh {script}",
                                       timeout_s=2, state=tmp_path / "s.json"))  # fmt: skip
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
    script, _ = _check_script(tmp_path, f'[ "$KTRIAGE_COMMIT" = "{repo.commits[3]}" ] && exit 130')
    with pytest.raises(KtriageError, match="exited 130"):
        run_bisect(BisectOptions(source=f"git:{repo.path}", good=repo.good, bad=repo.bad, command=f"sh {script}",
                                 state=tmp_path / "s.json"))  # fmt: skip


def test_resume_after_sigkill_does_not_retest(tmp_path: Path) -> None:
    repo = make_kernel_repo(tmp_path / "repo", n=24, culprit_at=13)
    go_on = tmp_path / "go-on"
    pidfile = tmp_path / "hung.pid"
    # The 4th run (preflight 2 + round 1 done) hangs until the test kills everything.
    extra = (f'if [ ! -f {go_on} ] && [ "$(wc -l < {tmp_path / "runs.log"})" -ge 4 ]; then echo $$ > {pidfile}; sleep 600; fi')
    script, log = _check_script(tmp_path, extra)
    state = tmp_path / "state.json"
    cli = write_cli_script(tmp_path)
    args = ["bisect", "--source", f"git:{repo.path}", "--good", repo.good, "--bad", repo.bad,
            "--command", f"sh {script}", "--state", str(state)]
    proc = subprocess.Popen([sys.executable, str(cli), *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not pidfile.exists() or not pidfile.read_text().strip():
            assert proc.poll() is None, "the bisect ended before the kill"
            assert time.monotonic() < deadline, "the 4th command run never started"
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)  # a real crash: no cleanup, no final save
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        if pidfile.exists() and pidfile.read_text().strip():
            try:
                os.killpg(int(pidfile.read_text().strip()), signal.SIGKILL)  # the hung script's own group
            except ProcessLookupError:
                pass
    assert proc.returncode == -signal.SIGKILL
    saved = json.loads(state.read_text())
    stage = saved["stages"][0]
    done = [o["candidate"]["id"] for o in stage["preflight"]] + [o["candidate"]["id"] for r in stage["rounds"] for o in r]
    assert len(done) == 3 and stage["result"] is None
    before = _runs(log)
    assert before[:3] == done  # the 4th run was in flight when killed

    go_on.write_text("")
    code, out = run_cli([*args, "--resume"])
    assert code == 0, out
    after = _runs(log)[len(before):]
    assert not set(after) & set(done), "a candidate saved in the state was tested again"
    final = json.loads(state.read_text())
    assert final["result"]["culprit"]["id"] == repo.culprit
    assert after  # it did go on, from where it stopped


def test_resume_refuses_a_state_of_another_bisect(tmp_path: Path) -> None:
    repo = make_kernel_repo(tmp_path / "repo", n=6, culprit_at=3)
    script, _ = _check_script(tmp_path)
    state = tmp_path / "s.json"
    base = ["bisect", "--source", f"git:{repo.path}", "--bad", repo.bad, "--command", f"sh {script}", "--state", str(state)]
    assert run_cli([*base, "--good", repo.good])[0] == 0
    code, out = run_cli([*base, "--good", repo.commits[1], "--resume"])
    assert code == 2 and "another bisect" in out


@pytest.mark.slow
def test_bisect_step_under_a_real_git_bisect_run(tmp_path: Path, toolchain) -> None:
    toolchain("triton==3.4.0")
    repo = make_kernel_repo(tmp_path / "repo", n=20, culprit_at=11)
    cli = write_cli_script(tmp_path)
    baseline = tmp_path / "baseline.json"
    env = {**os.environ, **GIT_ENV}
    step = [sys.executable, str(cli), "bisect-step"]
    common = ["--spec", "spec.toml", "--metric", "spill_store_bytes", "--toolchain", "triton==3.4.0"]
    git(repo.path, "checkout", "-q", repo.good)
    subprocess.run([*step, "--record-baseline", str(baseline), *common], cwd=repo.path, env=env, check=True)
    git(repo.path, "checkout", "-q", repo.bad)
    subprocess.run([*step, "--record-baseline", str(baseline), "--as", "bad", *common], cwd=repo.path, env=env, check=True)
    data = json.loads(baseline.read_text())
    assert data["good"]["values"]["red"] == 0 and data["bad"]["values"]["red"] > 0

    git(repo.path, "bisect", "start", repo.bad, repo.good)
    run = subprocess.run(["git", "-C", str(repo.path), "bisect", "run", *step, "--baseline", str(baseline)],
                         capture_output=True, text=True, env=env, timeout=600, check=False)  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"{repo.culprit} is the first bad commit" in run.stdout
    git(repo.path, "bisect", "reset")


def test_bisect_step_exit_codes_for_skip_and_abort(tmp_path: Path) -> None:
    repo = make_kernel_repo(tmp_path / "repo", n=3, culprit_at=2)
    baseline = tmp_path / "b.json"
    baseline.write_text(json.dumps({"config": {"metric": "spill_store_bytes", "toolchain": "triton==3.4.0",
                                               "spec": "missing.toml"}, "good": {"values": {"red": 0}}}))  # fmt: skip
    cwd = os.getcwd()
    try:
        os.chdir(repo.path)
        code, _ = run_cli(["bisect-step", "--baseline", str(baseline)])
        assert code == 125  # the spec does not exist at this commit: untestable, skip
        code, out = run_cli(["bisect-step", "--baseline", str(tmp_path / "nope.json")])
        assert code == 128 and "cannot read baseline" in out  # a ktriage error aborts git bisect run, never "bad"
    finally:
        os.chdir(cwd)
