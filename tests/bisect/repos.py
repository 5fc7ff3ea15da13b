"""Git repositories for the bisect tests, built for real with git (one commit at a time).

The kernel is a Triton row-sum with an ``[XBLOCK, RBLOCK]`` accumulator: with XBLOCK=64 it does not
spill at RBLOCK=64 and spills at RBLOCK=256 (triton 3.4.0 / ptxas 12.8.93, sm_90). One commit of the
history raises RBLOCK in the spec TOML; the others change comments in the kernel (a real recompile
with the same resources) or unrelated files. Used by tests/bisect/ and tests/cli/test_bisect.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


def _red_kernel_template() -> str:
    """tests/kernels_for_tests.py's red_kernel as a module, with a ``# revision`` line to vary per commit."""
    import ast

    text = (Path(__file__).resolve().parents[1] / "kernels_for_tests.py").read_text()
    fn = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == "red_kernel")
    lines = text.splitlines()[fn.lineno - 2 : fn.end_lineno]  # the @triton.jit line, then the function
    body = [ln for ln in lines if not ln.strip().startswith('"""')]  # no docstring: .format-safe
    body.insert(2, "    # revision {rev} {salt}")
    return "import triton\nimport triton.language as tl\n\n\n" + "\n".join(body) + "\n"


KERNEL = _red_kernel_template()

SPEC = """[kernel]
name = "red"
source = "kernels/red.py:red_kernel"

[kernel.signature]
in_ptr = "*fp32"
out_ptr = "*fp32"
xnumel = "i32"
rnumel = "i32"
XBLOCK = "constexpr"
RBLOCK = "constexpr"

[kernel.constexprs]
XBLOCK = 64
RBLOCK = {rblock}

[kernel.options]
num_warps = 4
"""

BUILD = """#!/bin/sh
# fails on commits whose BROKEN file says so (a build that does not work there)
if [ -f BROKEN ]; then echo "build broken here"; exit 1; fi
echo built > build.ok
"""

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env={**os.environ, **GIT_ENV}
    ).stdout.strip()


@dataclass
class KernelRepo:
    path: Path
    commits: list[str]  # oldest first; commits[0] is the good endpoint
    culprit: str

    @property
    def good(self) -> str:
        return self.commits[0]

    @property
    def bad(self) -> str:
        return self.commits[-1]

    def index(self, sha: str) -> int:
        return self.commits.index(sha)


def make_kernel_repo(
    path: Path, *, n: int = 24, culprit_at: int = 13, broken: tuple[int, ...] = (), salt: str = ""
) -> KernelRepo:
    """A repository with ``n`` commits; commit ``culprit_at`` raises RBLOCK 64 -> 256 (spills).

    Commits listed in ``broken`` carry a BROKEN file, so ``sh build.sh`` fails there. ``salt`` goes into
    the kernel text, so that a test that counts compiles never hits another run's cache entries.
    """
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "kernels").mkdir()
    commits: list[str] = []
    rblock = 64
    for i in range(n):
        if i == culprit_at:
            rblock = 256
        (path / "kernels" / "red.py").write_text(KERNEL.format(rev=i // 2, salt=salt))  # every other commit recompiles
        (path / "spec.toml").write_text(SPEC.format(rblock=rblock))
        (path / "build.sh").write_text(BUILD)
        (path / "README.md").write_text(f"notes {i}\n")
        broken_file = path / "BROKEN"
        if i in broken:
            broken_file.write_text("yes\n")
        elif broken_file.exists():
            broken_file.unlink()
        git(path, "add", "-A")
        msg = "raise RBLOCK to 256" if i == culprit_at else f"change {i}"
        git(path, "commit", "-q", "-m", msg)
        commits.append(git(path, "rev-parse", "HEAD"))
    return KernelRepo(path, commits, commits[culprit_at])


def test_kernel_repo_has_the_culprit_commit(tmp_path: Path) -> None:
    repo = make_kernel_repo(tmp_path / "r", n=6, culprit_at=3, broken=(1,))
    assert len(repo.commits) == 6
    assert git(repo.path, "log", "-1", "--format=%s", repo.culprit) == "raise RBLOCK to 256"
    assert "RBLOCK = 256" in git(repo.path, "show", f"{repo.culprit}:spec.toml")
    assert "RBLOCK = 64" in git(repo.path, "show", f"{repo.commits[2]}:spec.toml")
    assert git(repo.path, "show", f"{repo.commits[1]}:BROKEN") == "yes"


# ----------------------------------------------------------------------------- nested (pin) repos

CHILD_KERNEL = KERNEL.replace("RBLOCK: tl.constexpr)", "RBLOCK: tl.constexpr = {rblock})")

NESTED_SPEC = SPEC.replace("RBLOCK = {rblock}\n", "")

NESTED_BUILD = """#!/bin/sh
# take the kernel from the pinned commit of the child repository (like a build that fetches a dependency)
set -e
mkdir -p kernels
git -C "$KTRIAGE_PIN_REPO" show "$(cat pin.txt):red.py" > kernels/red.py
"""


@dataclass
class NestedRepos:
    parent: KernelRepo  # culprit: the commit that bumps pin.txt
    child: KernelRepo  # culprit: the commit that raises RBLOCK's default


def make_nested_repos(
    root: Path, *, n_parent: int = 8, bump_at: int = 5, n_child: int = 9, child_culprit: int = 6
) -> NestedRepos:
    """A child repository whose kernel starts spilling at ``child_culprit``, and a parent whose
    ``pin.txt`` points at the child's first commit until ``bump_at`` moves it to the child's last."""
    child = root / "child"
    child.mkdir(parents=True)
    git(child, "init", "-q", "-b", "main")
    child_commits = []
    for i in range(n_child):
        rblock = 256 if i >= child_culprit else 64
        (child / "red.py").write_text(CHILD_KERNEL.format(rev=i, salt="", rblock=rblock))
        git(child, "add", "-A")
        git(
            child,
            "commit",
            "-q",
            "-m",
            "raise the default RBLOCK to 256" if i == child_culprit else f"child change {i}",
        )
        child_commits.append(git(child, "rev-parse", "HEAD"))
    parent = root / "parent"
    parent.mkdir()
    git(parent, "init", "-q", "-b", "main")
    parent_commits = []
    for i in range(n_parent):
        pin = child_commits[-1] if i >= bump_at else child_commits[0]
        (parent / "pin.txt").write_text(pin + "\n")
        (parent / "spec.toml").write_text(NESTED_SPEC)
        (parent / "build.sh").write_text(NESTED_BUILD)
        (parent / "NOTES").write_text(f"parent {i}\n")
        git(parent, "add", "-A")
        git(parent, "commit", "-q", "-m", "bump the child pin" if i == bump_at else f"parent change {i}")
        parent_commits.append(git(parent, "rev-parse", "HEAD"))
    return NestedRepos(
        KernelRepo(parent, parent_commits, parent_commits[bump_at]),
        KernelRepo(child, child_commits, child_commits[child_culprit]),
    )


# ----------------------------------------------------------------------------- a --command predicate

# Bad when the checkout's spec raises RBLOCK; logs every commit it is run on.
CHECK = """#!/bin/sh
echo "$KTRIAGE_COMMIT" >> {log}
{extra}
if grep -q "RBLOCK = 256" spec.toml; then exit 1; fi
exit 0
"""


def check_script(tmp: Path, extra: str = "") -> tuple[Path, Path]:
    """A ``--command`` script (:data:`CHECK`) and the log it appends each tested commit to."""
    log = tmp / "runs.log"
    script = tmp / "check.sh"
    script.write_text(CHECK.format(log=log, extra=extra))
    return script, log


def command_runs(log: Path) -> list[str]:
    """The commits a :func:`check_script` was run on, in order."""
    return log.read_text().split() if log.exists() else []


# ----------------------------------------------------------------------------- the CLI in a fresh process

KTRIAGE = [sys.executable, "-m", "ktriage"]  # the real entry point, for SIGKILL and `git bisect run`
