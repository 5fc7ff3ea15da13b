"""Where ktriage keeps toolchains, caches and reports (``KTRIAGE_HOME``, default: the user cache dir)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import platformdirs
from filelock import FileLock

from ktriage.errors import KtriageError

_made: set[Path] = set()


def _make(path: Path) -> None:
    """Create a folder of the home; a read-only or impossible home is a user error with the fix.
    A folder this process saw is not asked for again while it is there (every cache lookup names the
    home: a warm explain asked ~600 times)."""
    if path in _made and path.is_dir():
        return
    try:
        path.mkdir(parents=True, exist_ok=True)
        _made.add(path)
    except OSError as exc:
        raise KtriageError(
            f"cannot create {path} in the ktriage home: {exc.strerror or exc}",
            "set KTRIAGE_HOME to a writable folder (docs/environment.md)",
        ) from exc


def ktriage_home() -> Path:
    """The root of everything ktriage stores; created on first use."""
    root = home_path()
    _make(root)
    return root


def home_path() -> Path:
    """Where the home is, without creating it: for a read-only report (``cache info``, a read of the
    default store) that must not leave a home behind where there was none."""
    env = os.environ.get("KTRIAGE_HOME")
    return _resolved(os.path.expanduser(env)) if env else Path(platformdirs.user_cache_dir("ktriage"))


HOME_VAR = "$KTRIAGE_HOME"
"""How a report names the ktriage home in a path it carries (:func:`portable_path`)."""


def portable_path(path: str | os.PathLike[str]) -> str:
    """How a report names a file: ``$KTRIAGE_HOME/<rest>`` for a file under the ktriage home (the
    artifact cache, toolchains), relative to the current folder for one under it, else as given.

    Why: reports travel (CI artifacts, bug reports, the committed benchmarks); this machine's
    absolute paths mean nothing on the machine that reads them and show its user's folders, while
    ``$KTRIAGE_HOME/artifacts/...`` names the same entry in any home (:func:`expand_portable`)."""
    given = Path(path)
    try:
        resolved = _resolved(str(given))
        home = _resolved(str(home_path()))
        cwd = _resolved(os.getcwd())
    except (OSError, RuntimeError):
        return str(given)
    if resolved.is_relative_to(home):
        return f"{HOME_VAR}/{resolved.relative_to(home).as_posix()}".rstrip("/")
    if resolved.is_relative_to(cwd):
        return resolved.relative_to(cwd).as_posix() or "."
    return str(given)


def _resolved(path: str) -> Path:
    """``Path(path).resolve()``, once per process and absolute path: a report names ~120 files, and
    resolving each with the home and the current folder (a stat per path component) was a tenth of
    a warm explain. A link created or changed later in the same process is not seen."""
    return _resolved_absolute(os.path.join(os.getcwd(), path))  # a relative one: from the current folder


@lru_cache(maxsize=1024)
def _resolved_absolute(path: str) -> Path:
    return Path(path).resolve()


def expand_portable(text: str) -> Path:
    """The file a :func:`portable_path` names, on this machine (``$KTRIAGE_HOME`` is this home)."""
    if text == HOME_VAR or text.startswith(HOME_VAR + "/"):
        return ktriage_home() / text[len(HOME_VAR) + 1 :]
    return Path(text)


def home_subdir(name: str) -> Path:
    """A named folder under the ktriage home (``toolchains``, ``artifacts``, ``packages``...)."""
    path = ktriage_home() / name
    _make(path)
    return path


@contextmanager
def home_lock(path: Path) -> Iterator[None]:
    """Hold the file lock ``path`` of a build or removal in the home (``toolchains/.<id>.lock``...).

    Why not a bare ``FileLock``: on a home that cannot be written (a read-only mount, another user's
    folder) taking the lock is the first write, and its OSError reached the user as an internal error
    with a traceback hint; it is the home's problem, said with the fix. Errors inside the block are
    not touched."""
    lock = FileLock(str(path))
    try:
        lock.acquire()
    except OSError as exc:
        raise KtriageError(
            f"cannot write to the ktriage home at {path.parent}: {exc.strerror or exc}",
            "make it writable, or set KTRIAGE_HOME to a writable folder (docs/environment.md); what is "
            "already built there is still used",
        ) from None
    try:
        yield
    finally:
        lock.release()
