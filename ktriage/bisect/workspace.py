"""Turn a candidate into something a predicate can test: a toolchain spec, a checkout, a build.

Why one place: every predicate (compile metric, user command, GPU time) needs the same answer to
"what is candidate X?" — the toolchain ``triton==3.4.0,ptxas==12.6.85``, a kernel package pin, or
a worktree of commit X built by the user's command (with a dependency pin rewritten for nested
bisects). A build that fails or times out makes the candidate untestable (``CandidateFailed`` ->
outcome ``skip``), never the bisect.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from filelock import FileLock

from ktriage.atomic import write_atomic
from ktriage.bisect import gitrepo
from ktriage.bisect.candidate import Candidate
from ktriage.errors import KtriageError


class CandidateFailed(Exception):
    """This candidate cannot be tested (build failure, timeout, install failure): skip it."""

    def __init__(self, reason: str, log: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.log = log


class ToolchainUnavailable(CandidateFailed):
    """The candidate's toolchain (a release, or the wheel its build made) cannot be installed here. A
    skip like any other locally; on a cluster node it may be the node's fault (no package index there
    for the wheel's dependencies), so the job tries another node first (``bisect/cluster.py``)."""


@dataclass
class Prepared:
    """A candidate ready to test."""

    candidate: Candidate
    toolchain: str | None = None
    checkout: Path | None = None
    package: str | None = None  # a kernel package pin that replaces the specs' own (pypi:liger-kernel)
    env: dict[str, str] = field(default_factory=dict)
    build_log: str = ""
    build_s: float = 0.0


@dataclass(frozen=True)
class CommandResult:
    """A finished (or killed) shell command."""

    returncode: int | None  # None: killed at the timeout
    output: str
    seconds: float

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def run_shell(command: str, *, cwd: Path, env: dict[str, str], timeout_s: float | None) -> CommandResult:
    """Run ``command`` with ``sh -c`` in its own process group; on timeout kill the whole group.

    A build or test script starts children (make, python, a GPU benchmark); killing only the shell
    would leave them running and holding the checkout or the GPU.
    """
    start = time.monotonic()
    proc = subprocess.Popen(
        ["/bin/sh", "-c", command],
        cwd=str(cwd),
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout_s)
        return CommandResult(proc.returncode, out or "", time.monotonic() - start)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = proc.communicate()
        return CommandResult(None, out or "", time.monotonic() - start)


def tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


@dataclass
class Workspace:
    """Prepares candidates of one bisect stage.

    ``toolchain``: the fixed toolchain for git / kernel-package candidates (may name a file in the
    checkout with ``{checkout}``, e.g. ``triton={checkout}/dist/*.whl`` after a wheel build).
    ``build``: a shell command run in each git checkout (None/"none": nothing to build).
    ``pin_repo``: exported to builds as ``KTRIAGE_PIN_REPO`` (nested bisects).
    """

    work_dir: Path
    toolchain: str | None = None
    build: str | None = None
    build_timeout_s: float | None = 3600.0
    pin_repo: Path | None = None
    keep_checkouts: bool = True
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def prepare(self, candidate: Candidate) -> Prepared:
        meta = candidate.meta
        kind = meta.get("kind")
        env = {"KTRIAGE_CANDIDATE": candidate.id, "KTRIAGE_CANDIDATE_INDEX": str(candidate.index)}
        if kind in ("pypi", "ptxas"):
            tc = str(meta["toolchain"])
            env["KTRIAGE_TOOLCHAIN"] = tc
            requirement = meta.get("requirement")
            return Prepared(
                candidate, toolchain=tc, package=requirement if isinstance(requirement, str) else None, env=env
            )
        if kind == "git":
            return self._prepare_git(candidate, env)
        raise KtriageError(
            f"candidate {candidate.label} has no known kind ({kind!r})", "this is a ktriage bug; report it"
        )

    def checkout_dir(self, candidate: Candidate) -> Path:
        """Where a git candidate is checked out (one folder per commit, and per pin for nested ones)."""
        meta = candidate.meta
        name = str(meta["commit"])[:12]
        if meta.get("pin_value"):
            name += f"-pin-{str(meta['pin_value'])[:12]}"
        return self.work_dir / "checkouts" / name

    def _prepare_git(self, candidate: Candidate, env: dict[str, str]) -> Prepared:
        # One preparer per checkout at a time, across processes too: cluster nodes that share this
        # work dir (one host, or shared storage), or a job Ray runs again after its node died.
        lock = self.work_dir / "locks" / f"{self.checkout_dir(candidate).name}.lock"
        lock.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(lock)):
            return self._prepare_git_locked(candidate, env)

    def _prepare_git_locked(self, candidate: Candidate, env: dict[str, str]) -> Prepared:
        meta = candidate.meta
        repo, sha = Path(str(meta["repo"])), str(meta["commit"])
        where = gitrepo.add_worktree(repo, sha, self.checkout_dir(candidate))
        env.update({"KTRIAGE_COMMIT": sha, "KTRIAGE_CHECKOUT": str(where), "KTRIAGE_REPO": str(repo)})
        if self.pin_repo is not None:
            env["KTRIAGE_PIN_REPO"] = str(self.pin_repo)
        pin_file, pin_value = meta.get("pin_file"), meta.get("pin_value")
        if pin_file and pin_value:
            _rewrite_pin(where / str(pin_file), str(meta.get("pin_old", "")), str(pin_value))
            env["KTRIAGE_PIN_COMMIT"] = str(pin_value)
        prepared = Prepared(candidate, checkout=where, env=env)
        if self.build and self.build.strip().lower() != "none":
            marker = where / BUILD_MARKER
            stamp = _build_stamp(sha, self.build, pin_value)
            cached = _read_marker(marker, stamp)
            if cached is not None:  # built here before with this command (a resume, another node's build)
                prepared.build_log, prepared.build_s = str(cached.get("log", "")), 0.0
            else:
                result = run_shell(self.build, cwd=where, env=env, timeout_s=self.build_timeout_s)
                prepared.build_log, prepared.build_s = tail(result.output), result.seconds
                if result.timed_out:
                    raise CandidateFailed(f"build timed out after {self.build_timeout_s:g} s", prepared.build_log)
                if result.returncode != 0:
                    raise CandidateFailed(f"build failed (exit {result.returncode})", prepared.build_log)
                _write_marker(marker, stamp, prepared.build_log, result.seconds)
        if self.toolchain:
            prepared.toolchain = self._toolchain_for(where)
            env["KTRIAGE_TOOLCHAIN"] = prepared.toolchain
        return prepared

    def _toolchain_for(self, checkout: Path) -> str:
        assert self.toolchain is not None
        text = self.toolchain.replace("{checkout}", str(checkout))
        if "*" in text and "{checkout}" in self.toolchain:
            # a wheel the build wrote: triton={checkout}/dist/*.whl -> the one file it made
            for item in text.split(","):
                if "*" in item and "=" in item:
                    key, _, pattern = item.partition("=")
                    found = sorted(glob.glob(pattern.strip()))
                    if len(found) != 1:
                        raise CandidateFailed(f"toolchain {item!r}: the build left {len(found)} matching files, not 1")
                    text = text.replace(item, f"{key}={found[0]}")
        return text

    def release(self, prepared: Prepared, *, keep: bool = False) -> None:
        """Remove a checkout once its candidate is measured (kept for the culprit and its predecessor)."""
        if prepared.checkout is not None and not (keep or self.keep_checkouts):
            gitrepo.remove_worktree(Path(str(prepared.candidate.meta["repo"])), prepared.checkout)


BUILD_MARKER = ".ktriage-build.json"
"""Written into a checkout after its build succeeded: build results are cached by (commit, build command,
pin), and live as long as the checkout that holds them."""


def _build_stamp(commit: str, command: str, pin: object) -> str:
    return hashlib.sha256(f"{commit}\0{command}\0{pin or ''}".encode()).hexdigest()[:24]


class BuildMarker(TypedDict):
    """The build marker's content (:data:`BUILD_MARKER`)."""

    stamp: str  # _build_stamp: the commit, build command and pin it was built for
    log: str
    seconds: float


def _read_marker(marker: Path, stamp: str) -> BuildMarker | None:
    try:
        data = json.loads(marker.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("stamp") != stamp:
        return None
    seconds = data.get("seconds")
    return {
        "stamp": stamp,
        "log": str(data.get("log", "")),
        "seconds": seconds if isinstance(seconds, (int, float)) else 0.0,
    }


def _write_marker(marker: Path, stamp: str, log: str, seconds: float) -> None:
    data: BuildMarker = {"stamp": stamp, "log": log, "seconds": round(seconds, 3)}
    write_atomic(marker, json.dumps(data))


def _rewrite_pin(path: Path, old: str, new: str) -> None:
    """Point a pin file at another commit, keeping its format (the old hash replaced in place)."""
    text = path.read_text() if path.exists() else ""
    if old and old in text:
        write_atomic(path, text.replace(old, new))
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, new + "\n")
