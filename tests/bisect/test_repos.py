"""The bisect tests' git repositories (tests/bisect/repos.py) are what the tests say they are."""

from __future__ import annotations

from pathlib import Path

from tests.bisect.repos import git, make_nested_repos


def test_nested_repos_pin_moves_the_child(tmp_path: Path) -> None:
    repos = make_nested_repos(tmp_path, n_parent=4, bump_at=2, n_child=4, child_culprit=2)
    before = git(repos.parent.path, "show", f"{repos.parent.commits[1]}:pin.txt")
    after = git(repos.parent.path, "show", f"{repos.parent.culprit}:pin.txt")
    assert (before, after) == (repos.child.commits[0], repos.child.commits[-1])
    assert "RBLOCK: tl.constexpr = 256" in git(repos.child.path, "show", f"{repos.child.culprit}:red.py")
