"""The one place CLI output consoles, error lines and progress bars are made.

Output that is not a terminal (CI logs, pipes, test runners) gets a wide fixed width instead of
rich's 80-column fallback (KTRIAGE_COLUMNS overrides it), so tables are not wrapped or elided into unreadable columns.

Errors and progress bars have one definition each so that every verb reports a user error with the
same lines (``error:``, ``fix:``, then any details, indented) and shows the same bar: a CI log or a
user's terminal reads the same whichever verb ran. ``rich.progress`` is imported only when a bar is made, because this
module is on the path of ``ktriage --help``, which must stay fast.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from ktriage.errors import KtriageError

if TYPE_CHECKING:
    from rich.progress import Progress

PIPE_WIDTH = 200


def make_console(*, stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    is_tty = hasattr(stream, "isatty") and stream.isatty()
    width = None if is_tty else int(os.environ.get("KTRIAGE_COLUMNS", PIPE_WIDTH))
    return Console(stderr=stderr, width=width)


def print_error(exc: KtriageError, console: Console | None = None) -> None:
    """A user error as one red ``error:`` line plus a ``fix:`` line, on stderr unless ``console`` says
    otherwise, then the error's ``details`` (a compiler's log, a driver message), if any: dim, each line
    indented by two spaces and not re-wrapped (a log line stays one line for grep). No traceback: the
    problem is the user's input or environment, and the fix says what to do.

    The text is escaped because problems quote user text such as a spec file's ``[kernel]`` that rich
    would otherwise take for markup and drop."""
    out = console if console is not None else make_console(stderr=True)
    out.print(f"[bold red]error:[/] {escape(exc.problem)}")
    if exc.fix:
        out.print(f"[yellow]fix:[/] {escape(exc.fix)}")
    if exc.details:
        for line in exc.details.rstrip("\n").splitlines():
            out.print(f"[dim]  {escape(line)}[/]", soft_wrap=True, highlight=False)


def internal_error_line(exc: BaseException) -> str:
    """The one line an uncaught exception is reported with: its type and message (newlines folded, so
    that a log grep finds it whole) and the note that this is ktriage's bug, not a finding."""
    message = " ".join(str(exc).split())
    what = type(exc).__name__ + (f": {message}" if message else "")
    return f"internal error: {what} — this is a bug in ktriage; rerun with --debug for the traceback"


def print_internal_error(exc: BaseException, console: Console | None = None) -> None:
    """Print :func:`internal_error_line` on stderr as one unwrapped line (``soft_wrap``: a 200-column
    pipe console would otherwise break a long message over two lines)."""
    out = console if console is not None else make_console(stderr=True)
    out.print(f"[bold red]{escape(internal_error_line(exc))}[/]", soft_wrap=True, highlight=False)


def show_progress(console: Console) -> bool:
    """Progress bars only where a person watches: a terminal (``KTRIAGE_PROGRESS=1`` forces them on, 0 off)."""
    forced = os.environ.get("KTRIAGE_PROGRESS")
    if forced in ("0", "1"):
        return forced == "1"
    return console.is_terminal


def make_progress(console: Console, *, transient: bool = True) -> Progress:
    """The progress display of every long-running verb: spinner, description, bar, done/total and
    elapsed time. ``transient``: the bars vanish when done, leaving only the verb's results. Quiet
    when the console is not a terminal (a CI log, a pipe). While it is entered it is also the display
    of the library's own steps (``ktriage.progress.task``: a bundle's compiles, fixes tried, bisect
    rounds), so every verb shows them the same way."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    from ktriage import progress

    class _Shown(Progress):
        def __enter__(self) -> _Shown:
            super().__enter__()
            self._showing = progress.showing(self)
            self._showing.__enter__()
            return self

        def __exit__(self, *exc: Any) -> None:
            self._showing.__exit__(*exc)
            super().__exit__(*exc)

    return _Shown(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=transient, disable=not show_progress(console))


class _WarningLines(logging.Handler):
    """Library warnings (logger ``ktriage``, e.g. ``ktriage.cache``'s damaged entries) as one
    ``warning:`` line each on stderr, in the same voice as ``error:``."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            out = make_console(stderr=True)
            out.print(f"[yellow]warning:[/] {escape(record.getMessage())}", soft_wrap=True, highlight=False)
        except Exception:  # a warning must never become the error
            self.handleError(record)


def install_warning_lines() -> None:
    """Route the library's warnings to :class:`_WarningLines` (once per process)."""
    logger = logging.getLogger("ktriage")
    if not any(isinstance(h, _WarningLines) for h in logger.handlers):
        handler = _WarningLines(level=logging.WARNING)
        logger.addHandler(handler)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)
