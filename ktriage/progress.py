"""Progress of long library steps (compiles done of total, fixes tried, bisect rounds), one helper for all.

Why a module of its own, at the bottom of the layers: the steps that take minutes run deep in the
library (a bundle's compiles, ``explain --fixes`` trying each fix, a bisect's rounds), while the
display belongs to the CLI (``cli/console.make_progress``, rich, on stderr, quiet when stderr is not a
terminal). The CLI makes the display current with :func:`showing` (``make_progress`` does it on
entering), and the library reports through :func:`task` without knowing whether anyone shows it:
with no display current (the Python API, tests, a pipe) every call is a no-op that costs nothing.

Imports nothing of ktriage and nothing outside the standard library.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol


class Display(Protocol):
    """What a progress display takes (``rich.progress.Progress`` has these)."""

    def add_task(self, description: str, *, total: float | None = ...) -> Any: ...

    def advance(self, task_id: Any, advance: float = ...) -> None: ...

    def update(self, task_id: Any, **fields: Any) -> None: ...

    def remove_task(self, task_id: Any) -> None: ...


_current: contextvars.ContextVar[Display | None] = contextvars.ContextVar("ktriage_progress", default=None)


class Step:
    """One line of progress: ``advance()`` as each unit is done (safe from worker threads: the display
    locks), ``say(text)`` to change what it says. ``callback`` suits ``on_done=`` hooks."""

    def __init__(self, display: Display | None, task_id: Any, description: str) -> None:
        self._display, self._id, self.description = display, task_id, description

    def advance(self, n: int = 1) -> None:
        if self._display is not None:
            self._display.advance(self._id, n)

    def callback(self, _outcome: Any = None) -> None:
        self.advance()

    def say(self, text: str) -> None:
        if self._display is not None:
            self._display.update(self._id, description=f"{self.description}: {text}")


@contextmanager
def showing(display: Display) -> Iterator[Display]:
    """Make ``display`` the one :func:`task` reports to while the block runs (nested: the inner wins)."""
    token = _current.set(display)
    try:
        yield display
    finally:
        _current.reset(token)


@contextmanager
def task(description: str, total: int | None = None) -> Iterator[Step]:
    """A progress line for the block: ``description``, and ``done/total`` when ``total`` is given. The
    line goes when the block ends; nothing at all when no display is current."""
    display = _current.get()
    if display is None:
        yield Step(None, None, description)
        return
    task_id = display.add_task(description, total=total)
    try:
        yield Step(display, task_id, description)
    finally:
        display.remove_task(task_id)
