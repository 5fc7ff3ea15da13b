"""Where ktriage keeps toolchains, caches and reports (``KTRIAGE_HOME``, default: the user cache dir)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from ktriage.errors import KtriageError


def _make(path: Path) -> None:
    """Create a folder of the home; a read-only or impossible home is a user error with the fix."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise KtriageError(
            f"cannot create {path} in the ktriage home: {exc.strerror or exc}",
            "set KTRIAGE_HOME to a writable folder (docs/environment.md)",
        ) from exc


def ktriage_home() -> Path:
    """The root of everything ktriage stores; created on first use."""
    env = os.environ.get("KTRIAGE_HOME")
    root = Path(env).expanduser().resolve() if env else Path(platformdirs.user_cache_dir("ktriage"))
    _make(root)
    return root


def home_subdir(name: str) -> Path:
    """A named folder under the ktriage home (``toolchains``, ``artifacts``, ``packages``...)."""
    path = ktriage_home() / name
    _make(path)
    return path
