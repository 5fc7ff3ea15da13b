"""Where ktriage keeps toolchains, caches and reports (``KTRIAGE_HOME``, default: the user cache dir)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs


def ktriage_home() -> Path:
    """The root of everything ktriage stores; created on first use."""
    env = os.environ.get("KTRIAGE_HOME")
    root = Path(env).expanduser().resolve() if env else Path(platformdirs.user_cache_dir("ktriage"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def home_subdir(name: str) -> Path:
    """A named folder under the ktriage home (``toolchains``, ``artifacts``, ``packages``...)."""
    path = ktriage_home() / name
    path.mkdir(parents=True, exist_ok=True)
    return path
