"""``bisect.gitrepo.add_worktree`` after a killed driver (fresh-clone CI, 2026-12-04: the cluster bisect's
resume test failed with "fatal: '...checkouts/cde88c2032df' is a missing but locked worktree"): git locks
a worktree while it creates it, so a driver killed then leaves a registered, locked checkout with no
folder, and the resumed bisect must still check that commit out. A real git repository."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from ktriage.bisect.gitrepo import add_worktree


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def test_a_missing_but_locked_checkout_is_made_again(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "f.txt").write_text("one\n")
    _git(repo, "add", "f.txt")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    sha = _git(repo, "rev-parse", "HEAD")
    where = tmp_path / "checkouts" / sha[:12]
    _git(repo, "worktree", "add", "--detach", str(where), sha)
    _git(repo, "worktree", "lock", str(where))  # as git leaves it when killed mid-add
    shutil.rmtree(where)  # the folder never made it
    assert add_worktree(repo, sha, where) == where
    assert _git(where, "rev-parse", "HEAD") == sha and (where / "f.txt").read_text() == "one\n"
