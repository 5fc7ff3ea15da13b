"""Building the toolchains a verb was given, with one progress line per build.

Why here: every entry point that compiles (explain, tune, bisect...) builds its toolchains the same
way before it starts; the display is whatever :mod:`ktriage.progress` has current (the CLI's rich
progress, nothing for a library caller).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from ktriage import progress
from ktriage.toolchain.manager import Toolchain, ensure_toolchains


def resolve_toolchains(texts: Sequence[str]) -> list[Toolchain]:
    """Build (or reuse) every toolchain of ``texts`` in order; a toolchain given twice is an error."""
    return ensure_toolchains(texts, progress=_line)


@contextmanager
def _line(text: str) -> Iterator[Callable[[str], None]]:
    """One progress line per toolchain build, updated with its messages and gone once built."""
    with progress.task(f"toolchain {text}") as step:
        yield step.say
