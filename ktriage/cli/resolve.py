"""The CLI side of turning what the user typed into specs and toolchains.

The logic lives in the library (``ktriage.catalog.resolve.resolve_specs`` for specs,
``ktriage.toolchain.manager.ensure_toolchains`` for toolchains), where bisect uses it too; this
module only shows the toolchain builds as rich progress lines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager

from rich.progress import Progress

from ktriage.catalog.resolve import resolve_specs
from ktriage.toolchain.manager import Toolchain, ensure_toolchains

__all__ = ["resolve_specs", "resolve_toolchains"]


def resolve_toolchains(texts: Sequence[str], progress: Progress | None = None) -> list[Toolchain]:
    """Build (or reuse) every toolchain, one progress line each; duplicates are an error."""
    return ensure_toolchains(texts, progress=_progress_lines(progress) if progress is not None else None)


def _progress_lines(progress: Progress) -> Callable[[str], AbstractContextManager[Callable[[str], None]]]:
    """One line per toolchain build, updated with its messages and removed once it is built."""

    @contextmanager
    def line(text: str) -> Iterator[Callable[[str], None]]:
        task = progress.add_task(f"toolchain {text}", total=None)
        yield lambda message: progress.update(task, description=f"toolchain {text}: {message}")
        progress.remove_task(task)

    return line
