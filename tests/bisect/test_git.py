"""Bisecting the commits of a real git repository, compile-only (real triton 3.4.0 + ptxas); the
``ktriage bisect`` command on such repositories: tests/cli/test_bisect.py.

Each test builds its own repository (tests/bisect/repos.py): 24 commits of a Triton kernel and
its spec TOML, one of which raises RBLOCK so that the kernel spills.
"""

from __future__ import annotations

import json
import math
import uuid
from pathlib import Path

import pytest

from ktriage.bisect.run import BisectOptions, run_bisect
from tests.bisect.repos import make_kernel_repo, make_nested_repos

TOOLCHAIN = "triton==3.4.0"
pytestmark = pytest.mark.slow


def _opts(repo_path: Path, good: str, bad: str, tmp: Path, **kw) -> BisectOptions:
    base: dict = {
        "source": f"git:{repo_path}",
        "good": good,
        "bad": bad,
        "metric": "spill_store_bytes",
        "spec": "spec.toml",
        "toolchain": TOOLCHAIN,
        "build": "none",
        "state": tmp / "state.json",
        "cache_dir": tmp / "artifacts",
    }
    base.update(kw)
    return BisectOptions(**base)


def test_names_the_spilling_commit_within_the_compile_budget(tmp_path: Path, toolchain) -> None:
    toolchain(TOOLCHAIN)
    repo = make_kernel_repo(tmp_path / "repo", n=24, culprit_at=13, salt=uuid.uuid4().hex)
    report = run_bisect(_opts(repo.path, repo.good, repo.bad, tmp_path))
    stage = report.final
    assert report.found and stage.culprit is not None and stage.predecessor is not None
    assert stage.culprit.id == repo.culprit
    assert stage.predecessor.id == repo.commits[12]
    n = len(stage.candidates)
    assert n == 24
    endpoint_compiles = sum(o.cost["compiles"] for o in stage.observations[:2])
    after = report.frontend_compiles - endpoint_compiles
    assert endpoint_compiles == 2  # private cache: both endpoints really compiled
    assert 1 <= after <= math.ceil(math.log2(n)) + 2
    assert stage.tested <= math.ceil(math.log2(n)) + 2
    # the explain between the predecessor and the culprit shows the spill
    (kernel,) = report.explain or []
    assert kernel.predecessor["spill_store_bytes"] == 0 and (kernel.culprit["spill_store_bytes"] or 0) > 0
    assert any(c.to_json()["metric"] == "STL" for c in kernel.opcode_changes)
    # only the culprit's and its predecessor's checkouts are kept
    checkouts = sorted(p.name for p in (tmp_path / "state.work" / "checkouts").iterdir())
    assert checkouts == sorted([repo.culprit[:12], repo.commits[12][:12]])


def test_build_failures_away_from_the_culprit_are_skipped(tmp_path: Path, toolchain) -> None:
    toolchain(TOOLCHAIN)
    repo = make_kernel_repo(tmp_path / "repo", n=24, culprit_at=14, broken=(11, 12, 18))
    report = run_bisect(_opts(repo.path, repo.good, repo.bad, tmp_path, build="sh build.sh"))
    stage = report.final
    assert report.found and stage.culprit is not None and stage.culprit.id == repo.culprit
    skipped = [o for o in stage.observations if o.outcome == "skip"]
    assert skipped and all("build failed" in o.reason for o in skipped)
    assert {o.candidate.index for o in skipped} <= {11, 12, 18}


def test_nested_pin_bump_is_bisected_inside_the_child(tmp_path: Path, toolchain) -> None:
    toolchain(TOOLCHAIN)
    repos = make_nested_repos(tmp_path / "repos", n_parent=8, bump_at=5, n_child=9, child_culprit=6)
    report = run_bisect(
        _opts(
            repos.parent.path,
            repos.parent.good,
            repos.parent.bad,
            tmp_path,
            build="sh build.sh",
            pin_file="pin.txt",
            pin_repo=repos.child.path,
        )
    )
    assert len(report.stages) == 2
    assert report.stages[0].culprit is not None and report.stages[0].culprit.id == repos.parent.culprit
    final = report.final
    assert report.found and final.culprit is not None and final.predecessor is not None
    assert final.culprit.id == repos.child.culprit
    assert final.predecessor.id == repos.child.commits[5]
    assert "raise the default RBLOCK" in final.culprit.label
    assert report.explain and (report.explain[0].culprit["spill_store_bytes"] or 0) > 0
    # the child commit changed the kernel file the build writes into each checkout: named by its line
    change = report.explain[0].source_change
    assert report.explain[0].attribution == "kernel_source" and change is not None
    (signature,) = [h for h in change.hunks if h.file == "kernels/red.py" and "RBLOCK" in h.new[0]]
    assert signature.text().endswith("RBLOCK: tl.constexpr = 64): -> ...RBLOCK: tl.constexpr = 256):"), signature


def test_k_ary_search_needs_fewer_rounds(tmp_path: Path, toolchain) -> None:
    toolchain(TOOLCHAIN)
    repo = make_kernel_repo(tmp_path / "repo", n=24, culprit_at=9)
    one = run_bisect(_opts(repo.path, repo.good, repo.bad, tmp_path / "k1", explain=False))
    three = run_bisect(_opts(repo.path, repo.good, repo.bad, tmp_path / "k3", workers=3, explain=False))
    assert one.final.culprit is not None and three.final.culprit is not None
    assert one.final.culprit.id == three.final.culprit.id == repo.culprit
    assert three.final.rounds < one.final.rounds
    assert max(len(r) for r in json.loads((tmp_path / "k3" / "state.json").read_text())["stages"][0]["rounds"]) == 3
