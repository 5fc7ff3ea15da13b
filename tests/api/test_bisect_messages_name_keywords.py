"""kt.bisect's and kt.bisect_step's refusals from the bisect's own modules (the source, the release and
commit ranges, the state file, the predicates) name the keyword a library caller passes as well as the
command's flag (ktriage.errors.option): kt.bisect(state=...) was told "give another --state path",
kt.bisect(good='main', bad='main') "--good and --bad are the same commit". Each fires before anything
is built or compiled; the repositories are real (tests/bisect/repos.py). bisect.run's own option
checks: tests/api/test_messages_name_keywords.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ktriage.api as kt
from ktriage.bisect.sources import pypi_candidates, versions_between
from ktriage.errors import KtriageError
from tests.bisect.repos import KernelRepo, check_script, command_runs, make_kernel_repo


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> KernelRepo:
    return make_kernel_repo(tmp_path_factory.mktemp("bisect-keywords") / "repo", n=3, culprit_at=2)


def test_bisect_source_refusals_name_the_source_keyword(tmp_path: Path) -> None:
    with pytest.raises(KtriageError) as form:
        kt.bisect(source="triton", good="3.3.1", bad="3.4.0", command="true")
    assert form.value.problem == "source='triton' (--source triton) is not one of the known forms"
    with pytest.raises(KtriageError) as name:
        kt.bisect(source="pypi:tri ton", good="3.3.1", bad="3.4.0", command="true")
    assert name.value.problem == "source='pypi:tri ton' (--source 'pypi:tri ton'): 'tri ton' is not a package name"
    assert name.value.fix == (
        "e.g. source='pypi:triton' (--source pypi:triton) or source='pypi:liger-kernel' (--source pypi:liger-kernel)"
    )
    with pytest.raises(KtriageError) as missing:
        kt.bisect(source=f"git:{tmp_path / 'nowhere'}", good="a", bad="b", command="true")
    assert (
        missing.value.fix
        == "give the path of a local git checkout, e.g. source='git:../triton' (--source git:../triton)"
    )


def test_release_range_refusals_name_good_and_bad() -> None:
    """The release list itself comes from the index (or a timed bisect's bundle): given here, as
    kt.bisect's range check receives it."""
    listed = ["3.0.0", "3.1.0", "3.2.0"]
    with pytest.raises(KtriageError) as same:
        versions_between(listed, "3.2", "3.2.0")
    assert same.value.problem == (
        "good='3.2' (--good 3.2) and bad='3.2.0' (--bad 3.2.0) are the same release: there is nothing between them "
        "to bisect"
    )
    assert same.value.fix == "give the last release known good as good (--good) and the first known bad as bad (--bad)"
    with pytest.raises(KtriageError) as reversed_:
        versions_between(listed, "3.2.0", "3.0.0")
    assert reversed_.value.problem == "good='3.2.0' (--good 3.2.0) is not older than bad='3.0.0' (--bad 3.0.0)"
    with pytest.raises(KtriageError) as word:
        versions_between(listed, "3.0.0", "latest")
    assert word.value.problem == "bad='latest' (--bad latest) is not a version number"
    with pytest.raises(KtriageError) as absent:
        versions_between(listed, "2.9.0", "3.2.0", what="triton", where="in bundle b")
    assert absent.value.problem == "good='2.9.0' (--good 2.9.0) is not a release of the triton in bundle b"
    with pytest.raises(KtriageError) as package:
        pypi_candidates("liger-kernel", "0.5.8", "0.5.10", versions=["0.5.8", "0.5.10"])
    assert package.value.problem == (
        "source='pypi:liger-kernel' (--source pypi:liger-kernel) needs toolchain (--toolchain) "
        "(the compiler stays fixed while the package moves)"
    )
    assert package.value.fix == "add e.g. toolchain='triton==3.4.0' (--toolchain triton==3.4.0)"


def test_commit_range_refusals_name_good_and_bad(repo: KernelRepo, tmp_path: Path) -> None:
    commits = {"source": f"git:{repo.path}", "command": "true", "state": tmp_path / "s.json"}
    with pytest.raises(KtriageError) as same:
        kt.bisect(**commits, good=repo.bad, bad="main")  # type: ignore[arg-type]
    assert same.value.problem == (
        f"good='{repo.bad}' (--good {repo.bad}) and bad='main' (--bad main) are the same commit ({repo.bad[:12]})"
    )
    with pytest.raises(KtriageError) as reversed_:
        kt.bisect(**commits, good=repo.bad, bad=repo.good)  # type: ignore[arg-type]
    assert (reversed_.value.fix or "").startswith("swap good (--good) and bad (--bad) if they are reversed")


def test_state_refusals_name_state_and_resume(repo: KernelRepo, tmp_path: Path) -> None:
    script, log = check_script(tmp_path)
    commits = {"source": f"git:{repo.path}", "good": repo.good, "bad": repo.bad, "command": f"sh {script}"}
    nothing = tmp_path / "nothing.json"
    with pytest.raises(KtriageError) as absent:
        kt.bisect(**commits, state=nothing, resume=True)
    assert absent.value.fix == "run without resume (--resume) first (or give the same state (--state) path)"
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"format_version": 1, "run": {"run_id": "a"}, "cells": []}))
    with pytest.raises(KtriageError) as held:
        kt.bisect(**commits, state=results)
    assert held.value.problem == (
        f"state='{results}' (--state {results}) exists and is a ktriage results file (measured cells): "
        "the bisect state would replace it"
    )
    other = tmp_path / "results-bisect.json"
    assert held.value.fix == f"give another state (--state) path, e.g. state='{other}' (--state {other})"
    with pytest.raises(KtriageError) as resumed:
        kt.bisect(**commits, state=results, resume=True)
    assert resumed.value.fix == "give the state (--state) path the bisect was started with"
    state = tmp_path / "s.json"
    kt.bisect(**commits, state=state)
    runs = command_runs(log)
    with pytest.raises(KtriageError) as again:
        kt.bisect(**commits, state=state)
    # the bisect it holds, said in the options that asked it (search._describe_bisect), not in flags alone
    assert (again.value.problem or "").startswith(
        f"state='{state}' (--state {state}) already holds this bisect: git:{repo.path} {repo.good}..{repo.bad} "
        f"command='sh {script}' (--command 'sh {script}'), "
    )
    assert again.value.fix == (
        f"add resume=True (--resume) to continue it; to start over, give another state (--state) path or delete {state}"
    )
    assert command_runs(log) == runs  # refused before anything was tested again


def test_predicate_refusals_name_metric_good_and_bad(repo: KernelRepo, tmp_path: Path) -> None:
    with pytest.raises(KtriageError) as lower:
        kt.bisect(source="pypi:triton", good="3.3.1", bad="3.4.0", op="liger.embedding", metric="sass:atomg")
    assert lower.value.problem == "metric='sass:atomg' (--metric sass:atomg): SASS opcodes are written in upper case"
    assert lower.value.fix == "write metric='sass:ATOMG' (--metric sass:ATOMG)"
    with pytest.raises(KtriageError) as step:
        kt.bisect_step(
            record_baseline=tmp_path / "b.json", metric="sass:stl", toolchain="triton==3.4.0", op="liger.embedding"
        )
    assert step.value.fix == "write metric='sass:STL' (--metric sass:STL)"
    commits = {"source": f"git:{repo.path}", "good": repo.good, "bad": repo.bad, "state": tmp_path / "s.json"}
    with pytest.raises(KtriageError) as same:
        kt.bisect(**commits, command="true")  # type: ignore[arg-type]
    assert same.value.fix == (
        "check good (--good), bad (--bad) and the command (it must exit 0 at the good endpoint and 1-127 at the bad one)"
    )
    with pytest.raises(KtriageError) as reversed_:
        kt.bisect(**commits, command=f'test "$(git rev-parse HEAD)" = {repo.bad}')  # type: ignore[arg-type]
    assert reversed_.value.fix == (
        "the command must exit 0 at good (--good) and 1-127 (not 125) at bad (--bad); swap them if they are reversed"
    )
