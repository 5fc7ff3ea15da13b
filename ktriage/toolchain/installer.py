"""Thin wrappers over ``uv`` (fast venvs and installs) and the file-system chores of building safely.

Builds must survive two processes racing and a kill in the middle: every build happens under a
``FileLock`` and ends by atomically writing a JSON marker; a folder without its marker is a dead
build and is wiped before building again.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ktriage.atomic import write_atomic
from ktriage.errors import ToolchainError
from ktriage.schema.jsontypes import JSONObject, JSONValue

Progress = Callable[[str], None]
"""A progress hook: called with one short human sentence per build step ("installing triton==3.4.0")."""


def no_progress(_message: str) -> None:
    """The default hook: say nothing."""


def uv_bin() -> str:
    """The uv executable: the one the ``uv`` Python package ships, else the one on PATH."""
    try:
        import uv

        return str(uv.find_uv_bin())
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found:
            return found
    raise ToolchainError("uv is not installed (ktriage builds toolchain virtualenvs with it)", "pip install uv")


def run_uv(args: Sequence[str], *, what: str) -> subprocess.CompletedProcess[str]:
    """Run ``uv ARGS``; return the finished process (the caller decides what a failure means).

    On Linux uv dies with the process that started it (:func:`die_with_parent`)."""
    cmd = [uv_bin(), *args]
    env = dict(os.environ)
    env.setdefault("UV_NO_PROGRESS", "1")
    try:
        return subprocess.run(cmd, capture_output=True, text=True, env=env, preexec_fn=die_with_parent())
    except OSError as exc:
        raise ToolchainError(f"cannot run uv to {what}: {exc}", "check that uv works: uv --version") from None


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child get SIGKILL when this process dies (Linux ``prctl``
    ``PR_SET_PDEATHSIG``), None elsewhere or when libc has no ``prctl``.

    Why: a ktriage killed with SIGKILL during a build left its uv running; the next build of that
    virtualenv (its lock freed by the kill) wiped the folder while the orphaned uv still wrote into it.
    The signal is delivered when the *thread* that started the child ends; ``subprocess.run`` keeps
    that thread waiting until uv ends, so it cannot end first. ``prctl`` is looked up here, before the
    fork: the child runs only the call and a check that the parent did not die before it."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died between fork and prctl: the signal will not come
            os._exit(1)

    return preexec


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


@functools.cache
def _prctl() -> Callable[..., int] | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn: Callable[..., int] = libc.prctl
    except (OSError, AttributeError):
        return None
    return fn


def uv_failure(proc: subprocess.CompletedProcess[str], *, what: str, fix: str) -> ToolchainError:
    """A ToolchainError carrying the useful tail of uv's message."""
    text = (proc.stderr or proc.stdout or "").strip()
    tail = "\n".join("  " + ln for ln in text.splitlines()[-12:])
    return ToolchainError(f"failed to {what} (uv exit {proc.returncode}):\n{tail}", fix)


def is_missing_version(proc: subprocess.CompletedProcess[str]) -> bool:
    """True when uv failed because the requested version does not exist on the index it asked.

    Not when uv could not ask: offline (``UV_OFFLINE``, a node without network), uv says "No solution
    found" too ("was not found in the cache"), and that is no answer about the index."""
    text = (proc.stderr or "") + (proc.stdout or "")
    if re.search(r"not found in the cache|network was disabled|[Nn]etwork connectivity is disabled", text):
        return False
    return bool(re.search(r"no version of|not found in the package registry|No solution found", text))


def uv_reason(proc: subprocess.CompletedProcess[str]) -> str:
    """uv's own reason for a failed install, on one line (its ``cause:`` lines, else its last line)."""
    lines = [ln.strip() for ln in (proc.stderr or proc.stdout or "").splitlines() if ln.strip()]
    causes = [ln.removeprefix("cause:").strip() for ln in lines if ln.startswith("cause:")]
    text = " / ".join(causes) or (lines[-1] if lines else f"uv exit {proc.returncode}")
    return text[:400]


def release_not_installed(
    proc: subprocess.CompletedProcess[str],
    *,
    key: str,
    version: str,
    package: str,
    example: str,
    suggest: Callable[[str], bool] = lambda _v: True,
) -> ToolchainError:
    """The error for ``uv pip install PACKAGE==VERSION`` that resolved no such release.

    Why asked again with ``pip index versions``: uv's "no version" is an answer of the index (or cache)
    *uv* reaches from this machine; a node offline or behind a mirror without that release got "not
    on the package index", and a fix that offered that very version to pick. When the index does list
    it, the problem is this machine's access, and the versions offered never include the one asked for.
    ``suggest``: which listed versions are worth offering (Triton: the ones ktriage supports)."""
    what = f"{package}=={version}" if package == key else f"{key}=={version}: {package}=={version}"
    listed = available_versions(package, limit=1000)
    others = [v for v in listed if v != version and suggest(v)]
    if version in listed:
        pick = f"; or pick another release: {key}=={others[0]}" if others else ""
        return ToolchainError(
            f"{what}: the package index lists it, but uv could not install it on this machine ({uv_reason(proc)})",
            "let uv reach the index from this machine (network, UV_INDEX_URL / UV_OFFLINE, a mirror that lacks "
            f"it), or build the toolchain once on a machine that can and copy the ktriage home{pick}",
        )
    where = f"no release for Python {sys.version_info.major}.{sys.version_info.minor} on this platform"
    if others:
        fix = f"pick a version that exists ({package} on the index): {key}=={others[0]}, or one of {', '.join(others[1:25])}"
    else:
        fix = f"pick an existing version (see `pip index versions {package}`), e.g. {example}"
    return ToolchainError(f"{what} is not on the package index ({where})", fix)


def available_versions(package: str, limit: int = 25) -> list[str]:
    """Versions of a package on the index, newest first (via ``pip index versions``; [] if unknown).

    Only used to word an error message, so any failure just yields an empty list.
    """
    candidates = [[sys.executable, "-m", "pip"], [shutil.which("pip") or "pip"]]
    for pip in candidates:
        try:
            proc = subprocess.run([*pip, "index", "versions", package], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        m = re.search(r"Available versions:\s*(.+)", proc.stdout)
        if m:
            return [v.strip() for v in m.group(1).split(",") if v.strip()][:limit]
    return []


def write_json_atomic(path: Path, data: Mapping[str, JSONValue]) -> None:
    """Write JSON so that readers see either nothing or the whole file (``ktriage.atomic``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def read_json(path: Path) -> JSONObject | None:
    """A marker's content, or None when it is missing or unreadable (treated as not built)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in chunks (wheels are ~150 MB)."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def wipe(path: Path) -> None:
    """Remove a file or folder if present (a dead build's leftovers)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists() or path.is_symlink():
        path.unlink(missing_ok=True)


def tree_size(path: Path) -> int:
    """Bytes on disk under a folder, each inode once (uv hard-links files from its cache)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            key = (st.st_dev, st.st_ino)
            if key not in seen:
                seen.add(key)
                total += st.st_size
    return total
