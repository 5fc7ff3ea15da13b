"""`ktriage bisect` and `ktriage bisect-step` through the real entry point: ``main(argv)`` in this process,
``python -m ktriage`` where a fresh process is needed (a real SIGKILL, a real ``git bisect run``).
The repositories are real (tests/bisect/repos.py); compile-only tests use real triton 3.4.0 + ptxas."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from ktriage.cli import exit_codes
from tests.bisect.repos import (
    GIT_ENV,
    KERNEL,
    KTRIAGE,
    SPEC,
    KernelRepo,
    check_script,
    command_runs,
    git,
    make_kernel_repo,
    make_nested_repos,
)
from tests.conftest import RunCli

TOOLCHAIN = "triton==3.4.0"


def test_source_and_option_errors_exit_2(run_cli: RunCli) -> None:
    r = run_cli(
        [
            "bisect",
            "--source",
            "ptxas",
            "--good",
            "12.4.131",
            "--bad",
            "12.8.93",
            "--op",
            "liger.embedding",
            "--metric",
            "sass:ATOMG",
        ]
    )
    assert r.exit_code == exit_codes.USAGE and "--toolchain" in r.err_text, r.output
    r = run_cli(
        [
            "bisect",
            "--source",
            "pypi:triton",
            "--good",
            "3.3.1",
            "--bad",
            "3.4.0",
            "--op",
            "liger.embedding",
            "--metric",
            "spills",
        ]
    )
    assert r.exit_code == exit_codes.USAGE and "unknown metric" in r.err_text, r.output
    r = run_cli(
        [
            "bisect",
            "--source",
            "pypi:triton",
            "--good",
            "3.3.1",
            "--bad",
            "3.4.0",
            "--op",
            "liger.embedding",
            "--metric",
            "latency",
        ]
    )
    assert r.exit_code == exit_codes.USAGE and "--bundle" in r.err_text, r.output


@pytest.mark.parametrize(
    "flags, named",
    [
        (["--threshold", "0.2"], "--threshold applies"),
        (
            ["--max-samples", "50", "--backend", "liger_embedding"],
            "--backend, --max-samples apply",
        ),
        (["--artifact-timing", "library"], "--artifact-timing applies"),
    ],
)
def test_a_timed_bisects_options_are_refused_on_a_compile_metric(flags: list[str], named: str, run_cli: RunCli) -> None:
    """--threshold 0.2 (or --max-samples, --backend, --artifact-timing) next to a compile metric was
    ignored without a word; refused as --gpus is, before the index is asked or anything compiles."""
    r = run_cli(
        ["bisect", "--source", "pypi:triton", "--good", "3.3.1", "--bad", "3.4.0", "--op", "liger.embedding"]
        + ["--metric", "sass:ATOMG", *flags]
    )
    assert r.exit_code == exit_codes.USAGE, r.output
    assert r.problem == (f"{named} to a timed bisect (--metric latency), not to --metric sass:ATOMG")


@pytest.mark.parametrize(
    "flags, named",
    [
        (["--keep-checkouts"], "--keep-checkouts applies"),
        (
            ["--first-parent", "--keep-checkouts"],
            "--first-parent, --keep-checkouts apply",
        ),
        (["--build", "make"], "--build applies"),
    ],
)
def test_a_git_sources_options_are_refused_on_a_release_source(flags: list[str], named: str, run_cli: RunCli) -> None:
    """--keep-checkouts on pypi:triton was accepted and kept nothing (a release is never checked out);
    each git-only option given is named, before the index is asked."""
    r = run_cli(["bisect", "--source", "pypi:triton", "--good", "3.3.1", "--bad", "3.4.0", "--command", "true", *flags])
    assert r.exit_code == exit_codes.USAGE, r.output
    assert r.problem == (f"{named} to --source git:PATH only (commits built in checkouts), not to --source pypi:triton")
    assert "never checked out" in r.err_text


# ----------------------------------------------------------------------------- commits of a git repository


@pytest.mark.slow
def test_cli_reports_terminal_markdown_json_and_exit_status(tmp_path: Path, toolchain, run_cli: RunCli) -> None:  # type: ignore[no-untyped-def]
    toolchain(TOOLCHAIN)
    repo = make_kernel_repo(tmp_path / "repo", n=20, culprit_at=7)
    md, js = tmp_path / "r.md", tmp_path / "r.json"
    r = run_cli(
        [
            "bisect",
            "--source",
            f"git:{repo.path}",
            "--good",
            repo.good,
            "--bad",
            "main",
            "--spec",
            "spec.toml",
            "--metric",
            "sass:STL",
            "-t",
            TOOLCHAIN,
            "--build",
            "none",
            "--state",
            str(tmp_path / "s.json"),
            "--markdown",
            str(md),
            "--json",
            str(js),
        ]
    )
    assert r.exit_code == exit_codes.OK, r.output
    assert "raise RBLOCK to 256" in r.stdout and "first bad" in r.stdout
    data = json.loads(js.read_text())
    assert data["found"] is True and data["culprit"]["id"] == repo.culprit
    assert data["predecessor"]["id"] == repo.commits[6]
    tested = data["stages"][0]["observations"]
    assert all({"outcome", "measurements", "confidence", "reason"} <= set(o) for o in tested)
    assert {o["outcome"] for o in tested} <= {"good", "bad"}
    assert data["explain"][0]["culprit"]["spill_store_bytes"] > 0
    text = md.read_text()
    assert "| decision |" in text and repo.culprit[:12] in text and "## explain" in text
    # the culprit raised RBLOCK in the spec file and one toolchain compiled both commits: the explain names
    # the kernel's own change, line and all, where it said "attribution: frontend" (a compiler that did not change)
    (kernel,) = data["explain"]
    assert kernel["attribution"] == "kernel_source", kernel["attribution"]
    change = kernel["source_change"]
    assert change["same_toolchain"] is True and change["files"] == ["spec.toml", "kernels/red.py"], change
    assert change["hunks"] == [{"file": "spec.toml", "line": 15, "old": ["RBLOCK = 64"], "new": ["RBLOCK = 256"]}]
    assert {c["attribution"] for c in kernel["changes"] + kernel["opcode_changes"]} == {"kernel_source"}
    said = "your kernel's source changed: spec.toml:15: RBLOCK = 64 -> RBLOCK = 256"
    terminal = " ".join(r.stdout.split())
    assert said in terminal and said in text and "attribution: your kernel's source" in terminal, r.stdout
    assert "frontend |" not in text and "attribution: frontend" not in terminal
    # the answer leads, the notes follow it (a note printed above "first bad" pushed the answer down)
    if "note:" in terminal:
        assert terminal.index("first bad:") < terminal.index("note:"), r.stdout


def _repo_with_a_typo_beside_the_culprit(path: Path, fault: str = "load") -> KernelRepo:
    """Six commits; commit 3 raises RBLOCK (the culprit). Commits 2 and 3 (each side of the culprit) also
    add a second kernel, "other", that fails there (fixed at commit 4): with ``fault="load"`` its source
    names a function kernels/red.py does not define (a typo: the kernel does not load); with
    ``fault="compile"`` it loads but its RBLOCK = 48 is no power of 2, so Triton's frontend refuses
    ``tl.arange(0, RBLOCK)``. A kernel unrelated to "red", which loads and compiles at every commit."""
    other = SPEC.format(rblock=48 if fault == "compile" else 64).replace("[kernel]\n", "[[kernel]]\n", 1)
    other = other.replace('name = "red"', 'name = "other"')
    if fault == "load":
        other = other.replace(":red_kernel", ":red_kernle")
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "kernels").mkdir()
    (path / "kernels" / "red.py").write_text(KERNEL.format(rev=0, salt=""))
    commits = []
    for i in range(6):
        red = SPEC.format(rblock=256 if i >= 3 else 64).replace("[kernel]\n", "[[kernel]]\n", 1)
        (path / "spec.toml").write_text(red + ("\n" + other if i in (2, 3) else ""))
        (path / "README.md").write_text(f"notes {i}\n")
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", "raise RBLOCK to 256" if i == 3 else f"change {i}")
        commits.append(git(path, "rev-parse", "HEAD"))
    return KernelRepo(path, commits, commits[3])


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["load", "compile"])
@pytest.mark.parametrize("select", [["-i", "red"], []], ids=["selected", "the-only-one"])
def test_a_commit_where_another_kernel_of_the_spec_fails_is_judged_on_the_bisected_one(
    select: list[str], fault: str, tmp_path: Path, toolchain: Any, run_cli: RunCli
) -> None:
    """``bisect --spec`` read from each checkout: at the commits where another kernel of the file does not
    load (a typo) or does not compile, the bisected kernel ("red", selected by -i or the only one of the
    endpoints) loads and compiles, so those commits are judged on it and the culprit is found exactly;
    the other kernel's compile failure is said in the observation. Before, the file's other kernel
    failed them ("spec file does not load", "other: frontend failed"): both neighbours of the culprit
    were skipped, and the bisect ended with an ambiguous range (exit 1)."""
    toolchain(TOOLCHAIN)
    repo = _repo_with_a_typo_beside_the_culprit(tmp_path / "repo", fault)
    js = tmp_path / "r.json"
    argv = ["bisect", "--source", f"git:{repo.path}", "--good", repo.good, "--bad", repo.bad, "--spec", "spec.toml"]
    argv += ["--metric", "spill_store_bytes", "-t", TOOLCHAIN, "--build", "none", "--state", str(tmp_path / "s.json")]
    r = run_cli([*argv, *select, "--json", str(js)])
    assert r.exit_code == exit_codes.OK, r.output
    data = json.loads(js.read_text())
    assert data["found"] is True and data["culprit"]["id"] == repo.culprit
    observed = {o["candidate"]["id"]: o for stage in data["stages"] for o in stage["observations"]}
    assert observed[repo.commits[2]]["outcome"] == "good" and observed[repo.culprit]["outcome"] == "bad"
    if fault == "compile" and not select:  # measured, and the failure said (with -i, "other" is not compiled)
        for sha in (repo.commits[2], repo.culprit):
            assert "other" in observed[sha]["measurements"]["failed"], observed[sha]
            assert "other" in observed[sha]["reason"] and "did not compile" in observed[sha]["reason"]


@pytest.mark.slow
def test_a_selected_kernel_that_does_not_compile_still_fails_the_candidate(tmp_path: Path, toolchain: Any) -> None:
    """The compile half of the rule: selected by -i, a kernel that does not compile makes the candidate
    untestable, with its error; without -i, the commit is measured on the kernels that compile and the
    failure is kept by kernel (the compile-only rule then skips it only if that kernel is bisected)."""
    from ktriage.bisect.candidate import Candidate
    from ktriage.bisect.predicates import KernelMeasurer, KernelSource
    from ktriage.bisect.workspace import CandidateFailed, Prepared
    from ktriage.compile.compiler import Compiler

    toolchain(TOOLCHAIN)
    repo = _repo_with_a_typo_beside_the_culprit(tmp_path / "repo", "compile")
    git(repo.path, "checkout", "-q", repo.commits[2])
    prepared = Prepared(Candidate(2, repo.commits[2], "change 2"), toolchain=TOOLCHAIN, checkout=repo.path)
    with Compiler(jobs=1, cache_dir=tmp_path / "artifacts") as compiler:
        with pytest.raises(CandidateFailed, match="other: frontend failed"):
            KernelMeasurer(KernelSource(repo_spec="spec.toml", inputs=("other",)), compiler).measure(prepared)
        measured = KernelMeasurer(KernelSource(repo_spec="spec.toml"), compiler).measure(prepared)
    assert list(measured.results) == ["red"] and list(measured.failed) == ["other"]
    assert "frontend failed" in measured.failed["other"]


def test_a_selected_kernel_that_does_not_load_still_fails_the_candidate(tmp_path: Path) -> None:
    """Only the kernel the bisect judges may fail a commit: selected by -i, a kernel with a typo makes the
    candidate untestable, with its error; the file's other kernel is not measured in its place."""
    from ktriage.bisect.candidate import Candidate
    from ktriage.bisect.predicates import KernelSource
    from ktriage.bisect.workspace import CandidateFailed, Prepared

    repo = _repo_with_a_typo_beside_the_culprit(tmp_path / "repo")
    git(repo.path, "checkout", "-q", repo.commits[2])
    prepared = Prepared(Candidate(2, repo.commits[2], "change 2"), toolchain=TOOLCHAIN, checkout=repo.path)
    with pytest.raises(
        CandidateFailed, match="selected kernel other does not load: .*defines no function 'red_kernle'"
    ):
        KernelSource(repo_spec="spec.toml", inputs=("other",)).specs_for(prepared)
    assert [s.name for s in KernelSource(repo_spec="spec.toml", inputs=("red",)).specs_for(prepared)] == ["red"]


def test_input_selects_a_checkouts_kernels_as_it_does_elsewhere(tmp_path: Path) -> None:
    """``-i`` on a spec file read from each checkout follows ``--input``'s one rule (spec.select): an exact
    name first ("red" is not also "red_wide"), a part only where it names one kernel; a part of several
    names, or a selector naming nothing at this commit, fails the candidate saying so and the fix.
    Before, any part of a name matched: "red" and "re" silently took both kernels, and a selector naming
    nothing gave only "no kernel selected"."""
    from ktriage.bisect.candidate import Candidate
    from ktriage.bisect.predicates import KernelSource
    from ktriage.bisect.workspace import CandidateFailed, Prepared

    checkout = tmp_path / "checkout"
    (checkout / "kernels").mkdir(parents=True)
    (checkout / "kernels" / "red.py").write_text(KERNEL.format(rev=0, salt=""))
    red = SPEC.format(rblock=64).replace("[kernel]\n", "[[kernel]]\n", 1)
    (checkout / "spec.toml").write_text(red + "\n" + red.replace('name = "red"', 'name = "red_wide"'))
    prepared = Prepared(Candidate(0, "c0", "c0"), toolchain=TOOLCHAIN, checkout=checkout)

    def selected(*inputs: str) -> list[str]:
        return [s.name for s in KernelSource(repo_spec="spec.toml", inputs=inputs).specs_for(prepared)]

    assert selected("red") == ["red"]
    assert selected("wide") == ["red_wide"]
    assert selected("red", "red_wide") == ["red", "red_wide"]
    with pytest.raises(
        CandidateFailed,
        match=r"inputs \(--input\) 're' is part of 2 kernel names in spec.toml at this commit.*fix: select one by its exact name",
    ):
        selected("re")
    with pytest.raises(
        CandidateFailed,
        match=r"no kernel in spec.toml at this commit matches inputs \(--input\) 'blue'.*fix: use one of: red, red_wide",
    ):
        selected("red", "blue")


@pytest.mark.slow
def test_a_skip_next_to_the_culprit_gives_the_exact_range(tmp_path: Path, toolchain, run_cli: RunCli) -> None:  # type: ignore[no-untyped-def]
    toolchain(TOOLCHAIN)
    repo = make_kernel_repo(tmp_path / "repo", n=24, culprit_at=13, broken=(13,))
    md = tmp_path / "r.md"
    r = run_cli(
        [
            "bisect",
            "--source",
            f"git:{repo.path}",
            "--good",
            repo.good,
            "--bad",
            repo.bad,
            "--spec",
            "spec.toml",
            "--metric",
            "spill_store_bytes",
            "-t",
            TOOLCHAIN,
            "--build",
            "sh build.sh",
            "--state",
            str(tmp_path / "s.json"),
            "--json",
            str(tmp_path / "r.json"),
            "--markdown",
            str(md),
        ]
    )
    assert r.exit_code == exit_codes.FINDING, r.output  # no single culprit: CI sees it
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["found"] is False and data["culprit"] is None
    assert [c["id"] for c in data["range"]] == [repo.commits[13], repo.commits[14]]
    assert "ambiguous" in data["summary"] and "ambiguous" in md.read_text()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("metric", "words"),
    [
        ("spill_store_bytes", "endpoints do not differ"),
        # the fix suggests metrics other than the one that did not differ (it offered stack_bytes for stack_bytes)
        ("stack_bytes", "pick another --metric (e.g. registers, sass:STL)"),
        # an opcode no kernel issues at either endpoint is named, as a misspelling most often is
        ("sass:ATOMGX", "neither endpoint's SASS has ATOMGX in any kernel"),
    ],
)
def test_endpoints_that_do_not_differ_stop_with_a_clear_message(  # type: ignore[no-untyped-def]
    metric: str, words: str, tmp_path: Path, toolchain, run_cli: RunCli
) -> None:
    toolchain(TOOLCHAIN)
    repo = make_kernel_repo(tmp_path / "repo", n=6, culprit_at=4)
    r = run_cli(
        [
            "bisect",
            "--source",
            f"git:{repo.path}",
            "--good",
            repo.good,
            "--bad",
            repo.commits[3],
            "--spec",
            "spec.toml",
            "--metric",
            metric,
            "-t",
            TOOLCHAIN,
            "--build",
            "none",
            "--state",
            str(tmp_path / "s.json"),
        ]
    )
    assert r.exit_code == exit_codes.USAGE and words in r.err_text, r.output


def test_a_pin_file_or_pin_repo_that_cannot_serve_is_refused_before_anything_runs(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """Both were read only once the culprit was found: a misspelt --pin-file ended the bisect at the
    parent's culprit without a word (no nested stage, no note), a --pin-repo that is no repository was
    never looked at. Now: exit 2 before any checkout or compile, each naming its flag."""
    repos = make_nested_repos(tmp_path / "repos", n_parent=3, bump_at=2, n_child=2, child_culprit=1)
    base = ["bisect", "--source", f"git:{repos.parent.path}", "--good", repos.parent.good, "--bad", "main"]
    base += [
        "--spec",
        "spec.toml",
        "-t",
        TOOLCHAIN,
        "--metric",
        "spill_store_bytes",
        "--state",
        str(tmp_path / "s.json"),
    ]
    r = run_cli([*base, "--pin-file", "cmake/llvm-hash.txt", "--pin-repo", str(repos.child.path)])
    assert r.exit_code == exit_codes.USAGE, r.output
    assert r.problem.startswith("--pin-file cmake/llvm-hash.txt holds no commit hash at --bad main"), r.output
    r = run_cli([*base, "--pin-file", "spec.toml", "--pin-repo", str(repos.child.path)])  # a file without a hash
    assert r.exit_code == exit_codes.USAGE and "--pin-file spec.toml holds no commit hash" in r.problem, r.output
    r = run_cli([*base, "--pin-file", "pin.txt", "--pin-repo", str(tmp_path / "no-such-checkout")])
    assert r.exit_code == exit_codes.USAGE and r.problem.startswith("--pin-repo: repository "), r.output
    assert not (tmp_path / "s.json").exists() and not (tmp_path / "s.work").exists()  # nothing ran


def test_a_state_path_that_is_a_folder_is_refused_before_anything_runs(tmp_path: Path, run_cli: RunCli) -> None:
    """--state DIR ran the preflight and then failed at the first save with "internal error:
    IsADirectoryError ... this is a bug in ktriage" (exit 3)."""
    repo = make_kernel_repo(tmp_path / "repo", n=3, culprit_at=2)
    script, runs = check_script(tmp_path)
    folder = tmp_path / "states"
    folder.mkdir()
    r = run_cli(
        ["bisect", "--source", f"git:{repo.path}", "--good", repo.good, "--bad", repo.bad]
        + ["--command", f"sh {script}", "--state", str(folder)]
    )
    assert r.exit_code == exit_codes.USAGE and r.problem == f"--state {folder} is a folder", r.output
    assert r.fix == f"give a file name, e.g. {folder / 'bisect-state.json'}"
    assert command_runs(runs) == [] and not list(folder.iterdir())  # not one commit tested


# ----------------------------------------------------------------------------- --command, --resume, bisect-step


class _HungBisect(NamedTuple):
    """A --command bisect whose 4th command run (preflight 2 + round 1 done) waits, its pid in ``pidfile``,
    until ``go_on`` exists."""

    repo: KernelRepo
    go_on: Path
    pidfile: Path
    log: Path
    state: Path
    args: list[str]

    @classmethod
    def make(cls, tmp_path: Path, *, in_preflight: bool = False) -> _HungBisect:
        """``in_preflight``: the first command run waits instead (only the first: mkdir is atomic)."""
        repo = make_kernel_repo(tmp_path / "repo", n=24, culprit_at=13)
        go_on, pidfile = tmp_path / "go-on", tmp_path / "hung.pid"
        when = (
            f"mkdir {tmp_path / 'hung.once'} 2>/dev/null"
            if in_preflight
            else f'[ "$(wc -l < {tmp_path / "runs.log"})" -ge 4 ]'
        )
        extra = f"if [ ! -f {go_on} ] && {when}; then echo $$ > {pidfile}; sleep 600; fi"
        script, log = check_script(tmp_path, extra)
        state = tmp_path / "state.json"
        args = ["bisect", "--source", f"git:{repo.path}", "--good", repo.good, "--bad", repo.bad]
        return cls(repo, go_on, pidfile, log, state, [*args, "--command", f"sh {script}", "--state", str(state)])

    def wait_for_the_4th_run(self, proc: subprocess.Popen[Any], before: str) -> None:
        deadline = time.monotonic() + 120
        while not self.pidfile.exists() or not self.pidfile.read_text().strip():
            assert proc.poll() is None, f"the bisect ended before the {before}"
            assert time.monotonic() < deadline, "the 4th command run never started"
            time.sleep(0.1)

    def ctrl_c(self) -> tuple[int | None, str]:
        """Run the bisect, press Ctrl-C (SIGINT) once the waiting run started: its exit status and stderr."""
        proc = subprocess.Popen([*KTRIAGE, *self.args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            self.wait_for_the_4th_run(proc, "Ctrl-C")
            os.kill(proc.pid, signal.SIGINT)
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
            self.kill_the_4th_run()
        return proc.returncode, err

    def kill_the_4th_run(self) -> None:
        if self.pidfile.exists() and self.pidfile.read_text().strip():
            try:
                os.killpg(int(self.pidfile.read_text().strip()), signal.SIGKILL)  # the hung script's own group
            except ProcessLookupError:
                pass


def test_resume_after_sigkill_does_not_retest(tmp_path: Path, run_cli: RunCli) -> None:
    # The 4th run hangs until the test kills everything.
    hung = _HungBisect.make(tmp_path)
    repo, go_on, log, state, args = hung.repo, hung.go_on, hung.log, hung.state, hung.args
    proc = subprocess.Popen(
        [*KTRIAGE, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        hung.wait_for_the_4th_run(proc, "kill")
        os.kill(proc.pid, signal.SIGKILL)  # a real crash: no cleanup, no final save
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        hung.kill_the_4th_run()
    assert proc.returncode == -signal.SIGKILL
    saved = json.loads(state.read_text())
    stage = saved["stages"][0]
    done = [o["candidate"]["id"] for o in stage["preflight"]] + [
        o["candidate"]["id"] for r in stage["rounds"] for o in r
    ]
    assert len(done) == 3 and stage["result"] is None
    before = command_runs(log)
    assert before[:3] == done  # the 4th run was in flight when killed

    go_on.write_text("")
    r = run_cli([*args, "--resume"])
    assert r.exit_code == exit_codes.OK, r.output
    after = command_runs(log)[len(before) :]
    assert not set(after) & set(done), "a candidate saved in the state was tested again"
    final = json.loads(state.read_text())
    assert final["result"]["culprit"]["id"] == repo.culprit
    assert after  # it did go on, from where it stopped


def test_ctrl_c_says_the_rounds_are_kept_and_resume_continues(tmp_path: Path, run_cli: RunCli) -> None:
    """Ctrl-C ended a bisect with exit 130 and nothing on stderr: not a word that the rounds done were
    kept, nor that only --resume reads them (the same command without it starts over)."""
    # The 4th run waits until the test has pressed Ctrl-C.
    hung = _HungBisect.make(tmp_path)
    repo, go_on, state, args = hung.repo, hung.go_on, hung.state, hung.args
    returncode, err = hung.ctrl_c()
    assert returncode == exit_codes.INTERRUPTED, err
    said = " ".join(err.split())
    assert f"interrupted: the rounds done are kept in {state}; run the same command with --resume" in said, err
    assert "Traceback" not in err
    go_on.write_text("")
    r = run_cli([*args, "--resume"])
    assert r.exit_code == exit_codes.OK, r.output
    assert json.loads(state.read_text())["result"]["culprit"]["id"] == repo.culprit


def test_ctrl_c_in_the_preflight_says_nothing_was_done_yet(tmp_path: Path, run_cli: RunCli) -> None:
    """Ctrl-C while the preflight measured the endpoints said "the rounds done are kept in S; run the same
    command with --resume": no round had run, and nothing was measured. It says so now, and that the same
    command starts again; it does."""
    hung = _HungBisect.make(tmp_path, in_preflight=True)
    repo, go_on, state, args = hung.repo, hung.go_on, hung.state, hung.args
    returncode, err = hung.ctrl_c()
    assert returncode == exit_codes.INTERRUPTED, err
    said = " ".join(err.split())
    assert (
        "interrupted during the preflight, before any candidate was measured: nothing was done yet; "
        "run the same command again to start"
    ) in said, err
    assert "rounds done are kept" not in said and "--resume" not in said and "Traceback" not in err
    go_on.write_text("")
    r = run_cli(args)  # as it says: the same command, no --resume
    assert r.exit_code == exit_codes.OK, r.output
    assert json.loads(state.read_text())["result"]["culprit"]["id"] == repo.culprit


@pytest.mark.slow
def test_resume_counts_this_runs_compiles_apart_from_the_earlier_runs(
    tmp_path: Path, toolchain: Any, run_cli: RunCli
) -> None:
    """After --resume the stage line said "N frontend compiles", adding the compiles of the runs before,
    while the JSON's ``frontend_compiles`` counted this run's only: the two disagreed. The line now says
    how many this run ran and how many the earlier runs did, and the JSON has both. Real compiles (triton
    3.4.0) of a salted kernel, so that the first run does compile."""
    toolchain(TOOLCHAIN)
    repo = make_kernel_repo(tmp_path / "repo", n=8, culprit_at=5, salt=uuid.uuid4().hex)
    args = ["bisect", "--source", f"git:{repo.path}", "--good", repo.good, "--bad", repo.bad, "--spec", "spec.toml"]
    args += ["--metric", "spill_store_bytes", "-t", TOOLCHAIN, "--build", "none", "--state", str(tmp_path / "s.json")]
    first = run_cli([*args, "--no-explain", "--json", str(tmp_path / "1.json")])
    assert first.exit_code == exit_codes.OK, first.output
    ran = json.loads((tmp_path / "1.json").read_text())["frontend_compiles"]
    assert ran > 0 and f"{ran} frontend compiles\n" in first.stdout, first.output
    again = run_cli(
        [*args, "--resume", "--no-explain", "--json", str(tmp_path / "2.json"), "-o", str(tmp_path / "2.md")]
    )
    assert again.exit_code == exit_codes.OK, again.output
    said = f"{ran} frontend compiles (0 in this run, {ran} in earlier runs, read back with --resume)"
    assert said in again.stdout and said in (tmp_path / "2.md").read_text(), again.output
    data = json.loads((tmp_path / "2.json").read_text())
    assert (data["frontend_compiles"], data["frontend_compiles_earlier_runs"]) == (0, ran)
    assert data["stages"][0]["cost"]["compiles"] == ran  # the stage's cost: every run's


def test_resume_refuses_a_state_of_another_bisect(tmp_path: Path, run_cli: RunCli) -> None:
    """The refusal names the bisect the state holds and how to start this one (another --state path:
    the same path without --resume is refused too now)."""
    repo = make_kernel_repo(tmp_path / "repo", n=6, culprit_at=3)
    script, _ = check_script(tmp_path)
    state = tmp_path / "s.json"
    base = [
        "bisect",
        "--source",
        f"git:{repo.path}",
        "--bad",
        repo.bad,
        "--command",
        f"sh {script}",
        "--state",
        str(state),
    ]
    assert run_cli([*base, "--good", repo.good]).exit_code == exit_codes.OK
    r = run_cli([*base, "--good", repo.commits[1], "--resume"])
    assert r.exit_code == exit_codes.USAGE and "another bisect" in r.err_text, r.output
    assert f"git:{repo.path} {repo.good}..{repo.bad} --command 'sh {script}'" in r.problem, r.output
    assert "(differs in: good)" in r.problem
    assert (
        r.fix == "resume it with its own options; to start this bisect, give another --state path "
        f"(or delete {state} to discard that one)"
    )


def test_a_state_holding_rounds_is_not_started_over_without_resume(tmp_path: Path, run_cli: RunCli) -> None:
    """``--state F`` without --resume replaced F even when it held the rounds of an earlier bisect, of
    this one or of another (other ends): work that cost builds or GPU time, gone without a word. Now
    refused before anything is tested, naming what F holds and both ways on; an empty F starts."""
    repo = make_kernel_repo(tmp_path / "repo", n=24, culprit_at=13)
    script, log = check_script(tmp_path)
    state = tmp_path / "s.json"
    base = ["bisect", "--source", f"git:{repo.path}", "--bad", repo.bad, "--command", f"sh {script}"]
    base += ["--state", str(state)]
    assert run_cli([*base, "--good", repo.good]).exit_code == exit_codes.OK
    kept, runs = state.read_bytes(), command_runs(log)
    rounds = len(json.loads(kept)["stages"][0]["rounds"])
    held = f"{rounds} rounds recorded ({len(runs)} candidates tested, endpoints included; finished)"

    r = run_cli([*base, "--good", repo.good])  # the same bisect again
    assert r.exit_code == exit_codes.USAGE, r.output
    assert r.problem == (
        f"--state {state} already holds this bisect: git:{repo.path} {repo.good}..{repo.bad} "
        f"--command 'sh {script}', {held}; starting over would discard them"
    ), r.output
    assert r.fix == (f"add --resume to continue it; to start over, give another --state path or delete {state}")

    r = run_cli([*base, "--good", repo.commits[2]])  # another bisect (other good end) into the same file
    assert r.exit_code == exit_codes.USAGE, r.output
    assert r.problem.startswith(f"--state {state} already holds another bisect: git:{repo.path} {repo.good}..")
    assert r.fix == (
        f"to start over, give another --state path or delete {state} "
        "(--resume continues that bisect only with its own options)"
    )
    assert state.read_bytes() == kept and command_runs(log) == runs  # nothing tested, nothing replaced

    r = run_cli([*base, "--good", repo.good, "--resume"])  # the first fix: nothing tested again
    assert r.exit_code == exit_codes.OK and command_runs(log) == runs, r.output
    state.write_text("")  # an empty file starts as before
    r = run_cli([*base, "--good", repo.commits[2]])
    assert r.exit_code == exit_codes.OK, r.output
    assert json.loads(state.read_text())["fingerprint"]["good"] == repo.commits[2]


def test_a_state_path_holding_another_file_or_an_unreadable_state_is_refused(tmp_path: Path, run_cli: RunCli) -> None:
    """``--state F`` replaced F whatever it held: a bench results file, a workload, a report, or a
    bisect state it could not read (cut short, an older format) was overwritten by the new state.
    Now refused before anything is tested, naming what F holds, with the fix; F is left as it was.
    ``--resume`` on a results file said to delete it; it names the file's kind now."""
    repo = make_kernel_repo(tmp_path / "repo", n=3, culprit_at=2)
    script, log = check_script(tmp_path)
    base = [
        "bisect",
        "--source",
        f"git:{repo.path}",
        "--good",
        repo.good,
        "--bad",
        repo.bad,
        "--command",
        f"sh {script}",
    ]
    files = {
        "results.json": json.dumps({"format_version": 1, "run": {"run_id": "a"}, "cells": []}),
        "W.json": json.dumps({"format_version": 1, "kind": "ktriage-workload", "kernels": []}),
        "report.md": "# ktriage bench: liger.rms_norm\n\n| kernel | input |\n",
        "cut.json": '{"format_version": 1, "fingerprint": {"source": "git:',
        "old.json": json.dumps({"format_version": 0, "fingerprint": {}, "stages": [], "result": None}),
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    for name, problem, fix in (
        (
            "results.json",
            "exists and is a ktriage results file (measured cells): the bisect state would replace it",
            "give another --state path, e.g. --state {dir}/results-bisect.json",
        ),
        (
            "W.json",
            "exists and is a ktriage workload: the bisect state would replace it",
            "give another --state path, e.g. --state {dir}/W-bisect.json",
        ),
        (
            "report.md",
            "exists and is no bisect state (it begins '# ktriage bench: liger.rms_norm'): the bisect state would replace it",
            "give another --state path, e.g. --state {dir}/report-bisect.json",
        ),
        (
            "cut.json",
            "holds a bisect state that cannot be read (bisect state {path} is not valid JSON: ",
            "give another --state path, or delete {path} to start over there",
        ),
        (
            "old.json",
            "holds a bisect state that cannot be read (bisect state {path} has format_version 0; "
            "this ktriage reads 1): starting over would replace it",
            "give another --state path, or delete {path} to start over there",
        ),
    ):
        path = tmp_path / name
        r = run_cli([*base, "--state", str(path)])
        assert r.exit_code == exit_codes.USAGE, r.output
        assert r.problem.startswith(f"--state {path} " + problem.format(path=path)), r.output
        assert r.fix == fix.format(dir=tmp_path, path=path), r.output
        assert path.read_text() == files[name], name  # not replaced
    assert command_runs(log) == [] and not list(tmp_path.glob("*.work"))  # not one commit tested

    results = tmp_path / "results.json"
    r = run_cli([*base, "--state", str(results), "--resume"])
    assert r.exit_code == exit_codes.USAGE, r.output
    assert (
        r.problem == f"--state {results} is a ktriage results file (measured cells), not a bisect state: "
        "there is nothing to resume"
    )
    assert r.fix == "give the --state path the bisect was started with"
    assert results.read_text() == files["results.json"]


@pytest.mark.slow
def test_bisect_step_under_a_real_git_bisect_run(tmp_path: Path, toolchain) -> None:
    toolchain("triton==3.4.0")
    repo = make_kernel_repo(tmp_path / "repo", n=20, culprit_at=11)
    baseline = tmp_path / "baseline.json"
    env = {**os.environ, **GIT_ENV}
    step = [*KTRIAGE, "bisect-step"]
    common = ["--spec", "spec.toml", "--metric", "spill_store_bytes", "--toolchain", "triton==3.4.0"]
    git(repo.path, "checkout", "-q", repo.good)
    subprocess.run([*step, "--record-baseline", str(baseline), *common], cwd=repo.path, env=env, check=True)
    git(repo.path, "checkout", "-q", repo.bad)
    subprocess.run(
        [*step, "--record-baseline", str(baseline), "--as", "bad", *common], cwd=repo.path, env=env, check=True
    )
    data = json.loads(baseline.read_text())
    assert data["good"]["values"]["red"] == 0 and data["bad"]["values"]["red"] > 0

    git(repo.path, "bisect", "start", repo.bad, repo.good)
    run = subprocess.run(
        ["git", "-C", str(repo.path), "bisect", "run", *step, "--baseline", str(baseline)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"{repo.culprit} is the first bad commit" in run.stdout
    git(repo.path, "bisect", "reset")


def test_bisect_step_refuses_a_metric_toolchain_or_arch_other_than_the_baselines(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """``--baseline b.json --metric registers`` on a spill-bytes baseline compiled the checkout and
    judged its 255 registers "closer to the bad endpoint" of 0 and 48 bytes (exit 1: git marked the
    commit bad); ``--as bad`` next to --baseline was ignored, ``--as worse`` said only "--as 'worse'".
    Each is a ktriage error now, 128: git aborts instead of recording a meaningless verdict."""
    baseline = tmp_path / "b.json"
    config = {"metric": "spill_store_bytes", "toolchain": "triton==3.4.0", "spec": "spec.toml", "arch": "sm_90"}
    baseline.write_text(json.dumps({"config": config, "good": {"values": {"red": 0}}, "bad": {"values": {"red": 48}}}))
    step = ["bisect-step", "--baseline", str(baseline)]
    for extra, problem in (
        (
            ["--metric", "registers"],
            "--metric registers differs from the baseline's (spill_store_",
        ),
        (["-t", "triton==3.3.1"], "--toolchain triton==3.3.1 differs from the baseline's"),
        (["--arch", "sm_80"], "--arch sm_80 differs from the baseline's (sm_90"),
        (["--as", "bad"], "--as bad goes with --record-baseline"),
        (["--as", "worse"], "--as worse is not an endpoint of a baseline"),
    ):
        r = run_cli([*step, *extra])
        assert r.exit_code == 128 and r.problem.startswith(problem), r.output


@pytest.mark.parametrize(
    ("metric", "why"),
    [
        ("latency", "bisect-step judges compile metrics only: time toolchains with `ktriage bisect --metric latency"),
        ("spill_store_byte", "unknown metric 'spill_store_byte' (did you mean spill_store_bytes?), so no baseline"),
    ],
)
def test_bisect_step_on_a_baseline_offers_no_baseline_of_a_metric_it_refuses(
    metric: str, why: str, tmp_path: Path, run_cli: RunCli
) -> None:
    """``--baseline b.json --metric latency`` on a spill-bytes baseline was refused with the fix "record a
    baseline with it: --record-baseline FILE with --metric latency", which bisect-step refuses in turn (it
    compiles, never times); a misspelt metric got the same offer. The fix offers only what works now."""
    baseline = tmp_path / "b.json"
    config = {"metric": "spill_store_bytes", "toolchain": "triton==3.4.0", "spec": "spec.toml", "arch": "sm_90"}
    baseline.write_text(json.dumps({"config": config, "good": {"values": {"red": 0}}, "bad": {"values": {"red": 48}}}))
    r = run_cli(["bisect-step", "--baseline", str(baseline), "--metric", metric])
    assert r.exit_code == 128 and r.problem.startswith(f"--metric {metric} differs"), r.output
    fix = r.fix or ""
    assert fix.startswith("drop --metric (the baseline's spill_store_bytes is used); " + why), r.output
    assert "--record-baseline" not in fix, r.output


def test_bisect_step_refuses_a_baseline_path_that_is_a_folder_before_compiling(tmp_path: Path, run_cli: RunCli) -> None:
    """--record-baseline DIR compiled the checkout, then failed with "internal error: IsADirectoryError"."""
    folder = tmp_path / "baselines"
    folder.mkdir()
    r = run_cli(
        ["bisect-step", "--record-baseline", str(folder), "--spec", "spec.toml", "--metric", "registers"]
        + ["-t", "triton==3.4.0"]
    )
    assert r.exit_code == 128 and r.problem == f"--record-baseline {folder} is a folder", r.output
    assert r.fix == f"give a file name, e.g. {folder / 'baseline.json'}"


def test_bisect_step_refuses_a_baseline_that_is_another_file(tmp_path: Path, run_cli: RunCli) -> None:
    """``--record-baseline results.json`` replaced a bench results file (GPU measurements) with a
    baseline without a word, and a ``--baseline`` or ``--record-baseline`` file that was not UTF-8 (a
    ``W.json.gz``) or lacked ``config`` was an internal error (UnicodeDecodeError, KeyError), so
    ``git bisect run`` aborted on exit 3 without a reason. Each is a user error naming the file now
    (exit 128), and the results file is left as it was, before anything compiles."""
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"format_version": 1, "run": {"run_id": "a"}, "cells": []}))
    before = results.read_bytes()
    r = run_cli(
        ["bisect-step", "--record-baseline", str(results), "--op", "liger.layer_norm", "--metric", "registers"]
        + ["-t", TOOLCHAIN, "-i", "0"]
    )
    assert r.exit_code == 128 and r.problem.startswith(
        f"--record-baseline {results} exists and is not a bisect-step baseline"
    ), r.output
    assert r.fix == f"give a new file name, or remove {results} first" and results.read_bytes() == before
    gz = tmp_path / "w.json.gz"
    gz.write_bytes(b"\x1f\x8b\x08\x00" + b"\xff" * 20)
    r = run_cli(["bisect-step", "--baseline", str(gz)])
    assert r.exit_code == 128 and r.problem == f"baseline {gz} is gzip-compressed, and this file is read as plain text"
    r = run_cli(["bisect-step", "--baseline", str(results)])
    assert r.exit_code == 128 and r.problem == f"baseline {results}: top level: missing key 'config'", r.output
    assert "record one with --record-baseline FILE" in (r.fix or "")


def test_bisect_step_exit_codes_for_skip_and_abort(tmp_path: Path, run_cli: RunCli) -> None:
    repo = make_kernel_repo(tmp_path / "repo", n=3, culprit_at=2)
    baseline = tmp_path / "b.json"
    baseline.write_text(
        json.dumps(
            {
                "config": {"metric": "spill_store_bytes", "toolchain": "triton==3.4.0", "spec": "missing.toml"},
                "good": {"values": {"red": 0}},
            }
        )
    )
    cwd = os.getcwd()
    try:
        os.chdir(repo.path)
        r = run_cli(["bisect-step", "--baseline", str(baseline)])
        # git bisect run's codes (125 skip, 128 abort), not exit_codes
        assert r.exit_code == 125  # the spec does not exist at this commit: untestable, skip
        r = run_cli(["bisect-step", "--baseline", str(tmp_path / "nope.json")])
        assert (
            r.exit_code == 128 and "cannot read baseline" in r.output
        )  # a ktriage error aborts git bisect run, never "bad"
    finally:
        os.chdir(cwd)


_OTHER_FAILS = {"compile": "other: frontend failed: ", "load": "other does not load: "}


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["load", "compile"])
@pytest.mark.parametrize("bad", [None, {"red": 0, "other": 8}], ids=["good-only", "good-and-bad"])
def test_bisect_step_skip_says_the_error_that_left_a_kernel_without_a_value(
    bad: dict[str, float] | None, fault: str, tmp_path: Path, toolchain: Any, run_cli: RunCli, monkeypatch: Any
) -> None:
    """At a commit where a kernel of the baseline does not load or compile, the step skips (125), and its
    reason is that kernel's error (one line, named), as ``bisect``'s observation says it. Before, the
    reason was "kernels missing here: other" (no bad endpoint) or "kernel other has no value" (with
    one): the user had to rerun by hand to learn why."""
    toolchain(TOOLCHAIN)
    repo = _repo_with_a_typo_beside_the_culprit(tmp_path / "repo", fault)
    git(repo.path, "checkout", "-q", repo.commits[2])
    baseline = tmp_path / "b.json"
    config = {"metric": "spill_store_bytes", "toolchain": TOOLCHAIN, "spec": "spec.toml"}
    sides: dict[str, Any] = {"good": {"values": {"red": 0, "other": 0}}} | ({"bad": {"values": bad}} if bad else {})
    baseline.write_text(json.dumps({"config": config, **sides}))
    monkeypatch.chdir(repo.path)
    r = run_cli(["bisect-step", "--baseline", str(baseline)])
    assert r.exit_code == 125, r.output
    assert f"skip: {_OTHER_FAILS[fault]}" in r.err_text, r.output
    if fault == "load":
        assert "red_kernle" in r.err_text, r.output


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["load", "compile"])
def test_bisect_step_record_baseline_says_which_kernels_it_leaves_out(
    fault: str, tmp_path: Path, toolchain: Any, run_cli: RunCli, monkeypatch: Any
) -> None:
    """Without -i, a kernel of the spec file that does not load or compile at the baseline's commit has
    no value there, so later commits are not judged on it. The baseline is recorded (as ``bisect``
    judges on the others), with a warning naming the kernel, its error and the fixes, and the kernel
    and its error are kept in the file (``left_out``). Before, it was left out without a word. With -i
    naming it, the recording is refused (exit 128) with its error."""
    toolchain(TOOLCHAIN)
    repo = _repo_with_a_typo_beside_the_culprit(tmp_path / "repo", fault)
    git(repo.path, "checkout", "-q", repo.commits[2])
    baseline = tmp_path / "b.json"
    monkeypatch.chdir(repo.path)
    argv = ["bisect-step", "--record-baseline", str(baseline), "--spec", "spec.toml"]
    argv += ["--metric", "spill_store_bytes", "-t", TOOLCHAIN]
    r = run_cli(argv)
    assert r.exit_code == 0, r.output
    assert (
        f"warning: the good baseline in {baseline} leaves out other: no value at this commit "
        f"({_OTHER_FAILS[fault]}" in r.err_text
    ), r.output
    assert "record the good baseline at a commit where it loads and compiles" in r.err_text, r.output
    assert "--input" in r.err_text, r.output
    good = json.loads(baseline.read_text())["good"]
    assert list(good["values"]) == ["red"] and list(good["left_out"]) == ["other"], good
    assert good["left_out"]["other"].startswith(_OTHER_FAILS[fault]), good

    r = run_cli([*argv, "-i", "other"])
    assert r.exit_code == 128 and "cannot record the good baseline here" in r.err_text, r.output


def _repo_where_other_compiles_between(path: Path) -> KernelRepo:
    """Three commits: "red" spills from commit 2 on (RBLOCK 256); "other" fails to compile at commits 0
    and 2 (RBLOCK = 48, which Triton's arange refuses) and compiles at commit 1 (RBLOCK = 64)."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "kernels").mkdir()
    (path / "kernels" / "red.py").write_text(KERNEL.format(rev=0, salt=""))
    commits = []
    for i, (red, other) in enumerate(((64, 48), (64, 64), (256, 48))):
        first = SPEC.format(rblock=red).replace("[kernel]\n", "[[kernel]]\n", 1)
        second = SPEC.format(rblock=other).replace("[kernel]\n", "[[kernel]]\n", 1).replace('"red"', '"other"')
        (path / "spec.toml").write_text(first + "\n" + second)
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", f"change {i}")
        commits.append(git(path, "rev-parse", "HEAD"))
    return KernelRepo(path, commits, commits[2])


@pytest.mark.slow
@pytest.mark.parametrize("with_bad", [False, True], ids=["good-only", "good-and-bad"])
def test_bisect_step_does_not_judge_a_kernel_the_baseline_left_out(
    with_bad: bool, tmp_path: Path, toolchain: Any, run_cli: RunCli, monkeypatch: Any
) -> None:
    """A kernel recorded in the baseline's ``left_out`` (it did not compile at the baseline's commit)
    has no baseline value, so a step does not judge it, and says so once, with the error recorded
    for it, whether it compiles at the step or not. Before, the baseline's ``left_out`` was not read:
    where the kernel compiled the verdict did not mention it, and where it failed again the reason
    said "other did not compile here (not bisected: it does not differ between the endpoints)", which
    is not why it was not judged."""
    toolchain(TOOLCHAIN)
    repo = _repo_where_other_compiles_between(tmp_path / "repo")
    baseline = tmp_path / "b.json"
    monkeypatch.chdir(repo.path)
    record = ["bisect-step", "--record-baseline", str(baseline), "--spec", "spec.toml"]
    record += ["--metric", "spill_store_bytes", "-t", TOOLCHAIN]
    git(repo.path, "checkout", "-q", repo.commits[0])
    assert run_cli(record).exit_code == 0
    if with_bad:
        git(repo.path, "checkout", "-q", repo.commits[2])
        assert run_cli([*record, "--as", "bad"]).exit_code == 0
    left_out = json.loads(baseline.read_text())["good"]["left_out"]["other"]
    note = f"other not judged: the baseline has no value for it ({left_out})"

    for commit, code in ((repo.commits[1], 0), (repo.commits[2], 1)):
        git(repo.path, "checkout", "-q", commit)
        r = run_cli(["bisect-step", "--baseline", str(baseline)])
        assert r.exit_code == code, r.output
        assert r.output.count(note) == 1 and r.output.count("other") == 2, r.output  # the note and its error


def test_record_baseline_where_no_kernel_loads_keeps_every_kernels_error(
    tmp_path: Path, toolchain: Any, run_cli: RunCli, monkeypatch: Any
) -> None:
    """``bisect-step --record-baseline`` at a commit where no kernel of the spec file loads said only the
    first kernel's error ("spec file does not load: ... red_kernle"): the file reader's refusal kept the
    others in its details, and the step dropped them. Every kernel's error is in the message now (a line
    each, named), with each one's whole error and fix in the details, and in the candidate's failure
    record (``CandidateFailed.log``, which ``bisect`` stores as the skipped commit's log)."""
    from ktriage.bisect.candidate import Candidate
    from ktriage.bisect.predicates import KernelSource
    from ktriage.bisect.workspace import CandidateFailed, Prepared

    toolchain(TOOLCHAIN)
    checkout = tmp_path / "checkout"
    (checkout / "kernels").mkdir(parents=True)
    (checkout / "kernels" / "red.py").write_text(KERNEL.format(rev=0, salt=""))
    red = SPEC.format(rblock=64).replace("[kernel]\n", "[[kernel]]\n", 1).replace(":red_kernel", ":red_kernle")
    blue = red.replace('name = "red"', 'name = "blue"').replace("kernels/red.py:red_kernle", "kernels/blue.py:blue")
    (checkout / "spec.toml").write_text(red + "\n" + blue)
    baseline = tmp_path / "b.json"
    monkeypatch.chdir(checkout)
    argv = ["bisect-step", "--record-baseline", str(baseline), "--spec", "spec.toml", "--metric", "registers"]
    for select in ([], ["-i", "red", "-i", "blue"]):
        r = run_cli([*argv, "-t", TOOLCHAIN, *select])
        assert r.exit_code == 128 and not baseline.exists(), r.output
        assert r.problem.startswith("cannot record the good baseline here: "), r.output
        assert "red does not load: " in r.problem and "defines no function 'red_kernle'" in r.problem, r.output
        assert "; blue does not load: " in r.problem and "blue.py does not exist" in r.problem, r.output
        assert "fix: fix the path" in r.err_text and "fix: did you mean red_kernel?" in r.err_text, r.output

    prepared = Prepared(Candidate(0, "c0", "c0"), toolchain=TOOLCHAIN, checkout=checkout)
    with pytest.raises(CandidateFailed, match="no kernel of spec.toml loads: red does not load: .*; blue") as failed:
        KernelSource(repo_spec="spec.toml").specs_for(prepared)
    assert "red_kernle" in failed.value.log and "blue.py does not exist" in failed.value.log, failed.value.log


def test_a_terminal_shows_the_round_under_test_while_it_runs(tmp_path: Path) -> None:
    """The search reports each step (preflight, the round under test, a toolchain being installed) to the
    progress display, but ``ktriage bisect`` made none current: on a terminal nothing showed until a
    round had finished, for minutes when a build or a first toolchain install runs. Here stderr is a
    real pseudo-terminal and the 4th command run (round 2) waits: the line naming it must be there."""
    import pty
    import select

    hung = _HungBisect.make(tmp_path)
    master, slave = pty.openpty()
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.Popen([*KTRIAGE, *hung.args], stdout=subprocess.DEVNULL, stderr=slave, env=env)
    os.close(slave)
    seen = b""
    try:
        hung.wait_for_the_4th_run(proc, "progress was read")
        deadline = time.monotonic() + 30
        while b"round 2: " not in seen and time.monotonic() < deadline:
            if select.select([master], [], [], 0.5)[0]:
                seen += os.read(master, 65536)
    finally:
        proc.kill()
        proc.wait(timeout=60)
        hung.kill_the_4th_run()
        os.close(master)
    text = seen.decode(errors="replace")
    assert "bisect 24 candidates: round 2: " in text, text[-2000:]
    assert "untested left" in text, text[-2000:]


@pytest.mark.parametrize(
    ("metric", "problem", "fix_has", "fix_lacks"),
    [
        (
            "latency",
            "--metric latency is a timed bisect's metric: bisect-step compiles the checked-out "
            "kernels and judges a compile metric",
            "ktriage bisect --metric latency --bundle DIR",
            "or latency (GPU time)",
        ),
        (
            "spill_store_byte",
            "unknown metric 'spill_store_byte' (did you mean spill_store_bytes?)",
            "stack_bytes",
            "latency",
        ),
    ],
)
def test_bisect_step_metric_errors_offer_only_what_it_can_judge(
    metric: str, problem: str, fix_has: str, fix_lacks: str, tmp_path: Path, run_cli: RunCli
) -> None:
    """``bisect-step --metric latency`` was refused as "unknown metric", with a fix listing "or latency (GPU
    time)": the one it had just refused. A typo named no nearest metric. Both before anything compiles."""
    r = run_cli(
        ["bisect-step", "--record-baseline", str(tmp_path / "b.json"), "--spec", "spec.toml", "--metric", metric]
        + ["-t", TOOLCHAIN]
    )
    assert r.exit_code == 128 and r.problem == problem, r.output
    assert fix_has in (r.fix or "") and fix_lacks not in (r.fix or ""), r.output
    assert not (tmp_path / "b.json").exists()


def test_a_bisect_metric_typo_names_the_nearest_metric(run_cli: RunCli) -> None:
    r = run_cli(
        ["bisect", "--source", "pypi:triton", "--good", "3.3.1", "--bad", "3.4.0", "--op", "liger.layer_norm"]
        + ["--metric", "registrs"]
    )
    assert r.exit_code == exit_codes.USAGE and r.problem == "unknown metric 'registrs' (did you mean registers?)"
    assert "or latency (GPU time)" in (r.fix or ""), r.output


@pytest.mark.slow
def test_bisect_step_refuses_a_bad_baseline_equal_to_the_good_one(
    tmp_path: Path, toolchain: Any, run_cli: RunCli, monkeypatch: Any
) -> None:
    """Recording the bad endpoint at a commit whose values equal the good one's was accepted (exit 0);
    every commit of ``git bisect run`` then skipped ("no kernel differs between the endpoints") until git
    gave up with "We cannot bisect more!", never saying the endpoints do not differ. It is refused now
    (128, as ``bisect``'s preflight refuses such a range), the good endpoint kept, nothing else written;
    a bad commit that does differ is then recorded as before. Real compiles (triton 3.4.0)."""
    toolchain(TOOLCHAIN)
    repo = make_kernel_repo(tmp_path / "repo", n=3, culprit_at=2)
    baseline = tmp_path / "b.json"
    common = ["--spec", "spec.toml", "--metric", "spill_store_bytes", "-t", TOOLCHAIN]
    monkeypatch.chdir(repo.path)
    git(repo.path, "checkout", "-q", repo.commits[0])
    assert run_cli(["bisect-step", "--record-baseline", str(baseline), *common]).exit_code == 0
    good_only = baseline.read_text()
    git(repo.path, "checkout", "-q", repo.commits[1])  # before the culprit: the same spills as the good one
    r = run_cli(["bisect-step", "--record-baseline", str(baseline), "--as", "bad", *common])
    assert r.exit_code == 128, r.output
    assert r.problem == (
        f"endpoints do not differ: spill_store_bytes is the same at the good commit {repo.commits[0][:12]} and the "
        f"bad commit {repo.commits[1][:12]} (red=0); nothing recorded"
    ), r.output
    assert (r.fix or "").startswith("record the bad baseline at a commit that shows the change (the good one is kept)")
    assert baseline.read_text() == good_only
    git(repo.path, "checkout", "-q", repo.culprit)
    r = run_cli(["bisect-step", "--record-baseline", str(baseline), "--as", "bad", *common])
    assert r.exit_code == 0, r.output
    assert json.loads(baseline.read_text())["bad"]["values"]["red"] > 0
