"""The few git operations bisect needs: resolve refs, list a range, check out a commit apart.

Why worktrees: a candidate commit is built and compiled in its own checkout (``git worktree add
--detach``), so the user's checkout is never touched, several candidates can be built at once
(k-ary rounds), and each candidate's kernel file has its own path (a compile worker that imported
one commit's module never serves it for another commit).
"""

from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path

from ktriage.errors import KtriageError, ToolchainError, worded

# `git worktree add/remove` edit .git/worktrees; parallel candidates of one round take turns.
_WORKTREE_LOCK = threading.Lock()


def git(repo: Path, *args: str, check: bool = True, timeout: float = 300.0) -> str:
    """Run ``git -C repo ARGS`` and return stdout (stripped); a failure is a KtriageError."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=timeout, check=False
        )
    except FileNotFoundError:
        raise ToolchainError("git is not installed", "install git (bisecting commits runs git)") from None
    except subprocess.TimeoutExpired:
        raise ToolchainError(
            f"git {' '.join(args)} in {repo} timed out", "check the repository (locks, network remotes)"
        ) from None
    if check and proc.returncode != 0:
        raise ToolchainError(
            f"git {' '.join(args)} failed in {repo}: {proc.stderr.strip() or proc.stdout.strip()}",
            "check the repository path and the refs (git log --oneline shows them)",
        )
    return proc.stdout.strip()


def repo_root(path: Path) -> Path:
    """The top of the repository that contains ``path`` (a KtriageError if it is not in one)."""
    if not path.exists():
        raise ToolchainError(
            f"repository {path} does not exist",
            worded(lambda o: f"give the path of a local git checkout, e.g. {o('source', '--source', 'git:../triton')}"),
        )
    try:
        return Path(git(path, "rev-parse", "--show-toplevel")).resolve()
    except KtriageError:
        raise ToolchainError(
            f"{path} is not a git repository",
            worded(lambda o: f"give the path of a local git checkout, e.g. {o('source', '--source', 'git:../triton')}"),
        ) from None


def resolve_commit(repo: Path, ref: str) -> str:
    """The full sha of a ref (branch, tag, short sha), or a KtriageError naming the ref."""
    proc = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0 or not proc.stdout.strip():
        raise ToolchainError(f"{ref!r} is not a commit in {repo}", "give a branch, tag or sha that `git log` shows")
    return proc.stdout.strip()


def commit_range(repo: Path, good: str, bad: str, *, first_parent: bool = False) -> list[str]:
    """Commits good .. bad in history order: ``good`` first, then ``git rev-list --reverse good..bad``.

    ``good`` must be an ancestor of ``bad``: otherwise "first bad commit after good" has no meaning.
    """
    good_sha, bad_sha = resolve_commit(repo, good), resolve_commit(repo, bad)
    if good_sha == bad_sha:
        raise ToolchainError(
            worded(
                lambda o: (
                    f"{o('good', '--good', good)} and {o('bad', '--bad', bad)} are the same commit ({good_sha[:12]})"
                )
            ),
            "give a good commit older than the bad one",
        )
    anc = subprocess.run(["git", "-C", str(repo), "merge-base", "--is-ancestor", good_sha, bad_sha], check=False)
    if anc.returncode != 0:
        raise ToolchainError(
            f"good commit {good} ({good_sha[:12]}) is not an ancestor of bad commit {bad} ({bad_sha[:12]})",
            worded(
                lambda o: (
                    f"swap {o('good', '--good')} and {o('bad', '--bad')} if they are reversed, "
                    "or pick a good commit on the bad commit's history"
                )
            ),
        )
    args = ["rev-list", "--reverse"] + (["--first-parent"] if first_parent else []) + [f"{good_sha}..{bad_sha}"]
    shas = [s for s in git(repo, *args).splitlines() if s]
    return [good_sha, *shas]


def subject(repo: Path, sha: str) -> str:
    """The first line of a commit message."""
    return git(repo, "log", "-1", "--format=%s", sha)


def subjects(repo: Path, shas: list[str]) -> dict[str, str]:
    """Subjects of many commits in one git call (labels for 1000-commit ranges stay cheap)."""
    if not shas:
        return {}
    out = git(repo, "log", "--no-walk=unsorted", "--format=%H %s", *shas)
    result: dict[str, str] = {}
    for line in out.splitlines():
        sha, _, subj = line.partition(" ")
        result[sha] = subj
    return result


def file_at(repo: Path, sha: str, path: str) -> str | None:
    """A file's text at a commit, or None if it does not exist there."""
    proc = subprocess.run(
        ["git", "-C", str(repo), "show", f"{sha}:{path}"], capture_output=True, text=True, check=False
    )
    return proc.stdout if proc.returncode == 0 else None


def add_worktree(repo: Path, sha: str, where: Path) -> Path:
    """A detached checkout of ``sha`` at ``where`` (reused when it already holds that commit)."""
    if where.exists():
        head = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
        )
        if head.returncode == 0 and head.stdout.strip() == sha:
            status = git(where, "status", "--porcelain", "--untracked-files=no", check=False)
            if not status:
                return where
        remove_worktree(repo, where)
    where.parent.mkdir(parents=True, exist_ok=True)
    with _WORKTREE_LOCK:
        # --force twice: a driver killed while git was adding this checkout leaves it "missing but
        # locked" (git locks a worktree while it creates it), which one --force does not override
        git(repo, "worktree", "add", "--detach", "--force", "--force", str(where), sha)
    return where


def remove_worktree(repo: Path, where: Path) -> None:
    """Remove a checkout made by ``add_worktree`` (and whatever a build left in it)."""
    with _WORKTREE_LOCK:
        subprocess.run(
            ["git", "-C", str(repo), "worktree", "remove", "--force", str(where)], capture_output=True, check=False
        )
        if where.exists():
            shutil.rmtree(where, ignore_errors=True)
        subprocess.run(["git", "-C", str(repo), "worktree", "prune"], capture_output=True, check=False)
