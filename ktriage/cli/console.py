"""The one place CLI output consoles, error lines and progress bars are made.

Output that is not a terminal (CI logs, pipes, test runners) gets a wide fixed width instead of
rich's 80-column fallback (KTRIAGE_COLUMNS overrides it), so tables are not wrapped or elided into unreadable columns.
``--help`` pages keep Typer's width (COLUMNS, else 80) unless KTRIAGE_COLUMNS is set (:func:`help_width`).

Errors and progress bars have one definition each so that every verb reports a user error with the
same lines (``error:``, ``fix:``, then any details, indented) and shows the same bar: a CI log or a
user's terminal reads the same whichever verb ran. ``rich.progress`` is imported only when a bar is made, because this
module is on the path of ``ktriage --help``, which must stay fast.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from ktriage.errors import KtriageError, in_flags

if TYPE_CHECKING:
    from rich.progress import Progress

PIPE_WIDTH = 200
COLUMNS_ENV = "KTRIAGE_COLUMNS"
MIN_COLUMNS, MAX_COLUMNS = 20, 100_000


def pipe_width(*, strict: bool = True) -> int:
    """The width of output that is not a terminal: ``KTRIAGE_COLUMNS`` or :data:`PIPE_WIDTH`. A value
    that is no width is a KtriageError (``strict``), or the default where an error is being printed."""
    raw = os.environ.get(COLUMNS_ENV, "").strip()
    if not raw:
        return PIPE_WIDTH
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if MIN_COLUMNS <= value <= MAX_COLUMNS:
        return value
    if not strict:
        return PIPE_WIDTH
    raise KtriageError(
        f"{COLUMNS_ENV}={raw[:40]!r} is not a width in columns",
        f"give a whole number from {MIN_COLUMNS} to {MAX_COLUMNS} (e.g. {COLUMNS_ENV}=160), or unset it",
    )


def _is_terminal(stream: Any) -> bool:
    return hasattr(stream, "isatty") and bool(stream.isatty())


def help_width() -> int | None:
    """The width of a ``--help`` page: ``KTRIAGE_COLUMNS`` where it is set and stdout is not a terminal
    (a KtriageError where it is no width, as everywhere), else None: Typer's own (``TERMINAL_WIDTH``, else
    rich's: the terminal, ``COLUMNS``, 80). Unset, help keeps that width (80 in a pipe without ``COLUMNS``),
    not :data:`PIPE_WIDTH`, as it always had; set, it wins over ``COLUMNS`` and ``TERMINAL_WIDTH``."""
    if _is_terminal(sys.stdout) or not os.environ.get(COLUMNS_ENV, "").strip():
        return None
    return pipe_width()


@contextmanager
def typer_help_width() -> Iterator[None]:
    """Typer draws a verb's ``--help`` on a console of its own, whose width is ``typer.rich_utils.MAX_WIDTH``
    (read from ``TERMINAL_WIDTH`` once, when Typer imports the module): set it to :func:`help_width`
    while the page is drawn. Nothing is imported when that is None."""
    width = help_width()
    if width is None:
        yield
        return
    from typer import rich_utils

    old = rich_utils.MAX_WIDTH
    rich_utils.MAX_WIDTH = width
    try:
        yield
    finally:
        rich_utils.MAX_WIDTH = old


class OutputClosed(Exception):
    """The reader of stdout went away (``ktriage compare A B | head``). Not an OSError on purpose: click
    turns a broken pipe into exit 1 and rich into SystemExit(1), which a CI job reads as "regressions
    found"; ``app.main`` turns this into its own status (BROKEN_PIPE, 141)."""


class PipeAwareConsole(Console):
    """rich's Console, raising :class:`OutputClosed` where rich would exit with 1 on a broken pipe."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise OutputClosed


def silence_stdout() -> None:
    """Point stdout at /dev/null once its reader has gone, so that the interpreter's last flush at exit
    does not fail a second time (and print "Exception ignored ... BrokenPipeError")."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def make_console(*, stderr: bool = False, strict: bool = True) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    width = None if _is_terminal(stream) else pipe_width(strict=strict)
    return PipeAwareConsole(stderr=stderr, width=width)


# Characters ktriage prints, as ASCII, for a terminal or log whose encoding cannot show them (a C or
# POSIX locale with Python's UTF-8 mode off, PYTHONIOENCODING=ascii): "->" rather than a crash.
_ASCII = {
    "\u2192": "->",
    "\u2190": "<-",
    "\u21d2": "=>",
    "\u00d7": "x",
    "\u2014": "-",
    "\u2013": "-",
    "\u2026": "...",
    "\u2248": "~",
    "\u2265": ">=",
    "\u2264": "<=",
    "\u2260": "!=",
    "\u00b5": "u",
    "\u03bc": "u",
    "\u2022": "*",
    "\u0394": "d",
    "\u00b1": "+/-",
    "\u2713": "ok",
    "\u2717": "x",
    "\u2018": "'",
    "\u2019": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u2500": "-",
    "\u2502": "|",
    "\u2191": "^",
    "\u2193": "v",
    "\u00b7": ".",
}
ASCII_ERRORS = "ktriage-ascii"


def _to_ascii(exc: UnicodeError) -> tuple[str, int]:
    import unicodedata

    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    text = exc.object[exc.start : exc.end]
    out = []
    for ch in text:
        plain = _ASCII.get(ch)
        if plain is None:
            plain = unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode() or "?"
        out.append(plain)
    return "".join(out), exc.end


def degrade_encoding() -> None:
    """Make stdout and stderr write what their encoding cannot show as ASCII (:data:`_ASCII`, then
    the letter without its accent, then ``?``) instead of raising UnicodeEncodeError: a C/ASCII
    locale gets ``->`` where a UTF-8 terminal gets an arrow. Streams that encode UTF-8 are untouched."""
    import codecs

    try:
        codecs.lookup_error(ASCII_ERRORS)
    except LookupError:
        codecs.register_error(ASCII_ERRORS, _to_ascii)
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
        if encoding.startswith("utf") or not hasattr(stream, "reconfigure"):
            continue
        try:
            stream.reconfigure(errors=ASCII_ERRORS)
        except (ValueError, OSError):  # pragma: no cover - a stream that cannot be reconfigured
            pass


LIBRARY_ENVIRONMENT = ("KTRIAGE_MAX_INPUT_MB", "KTRIAGE_IMPORT_TIMEOUT_S")
"""The library's variables that ``ktriage.api.check_environment`` checks (docs/environment.md): the
same as ``ktriage.api._checks.CHECKED_VARIABLES``, named here so that ``--help`` imports no entry point
(tests/cli/test_app.py keeps the two in step)."""


def check_environment() -> None:
    """Refuse ``KTRIAGE_*`` values that are no value of theirs before a verb starts (a raw
    ``int('abc')`` traceback used to end ``KTRIAGE_COLUMNS=abc``): each checked only when set, by the
    module that reads it (their one home): the CLI's own here, the library's through ``ktriage.api``."""
    pipe_width()
    if os.environ.get("KTRIAGE_PROGRESS", "").strip() not in ("", "0", "1"):
        raise KtriageError(
            f"KTRIAGE_PROGRESS={os.environ['KTRIAGE_PROGRESS'][:40]!r} is neither 0 nor 1",
            "KTRIAGE_PROGRESS=1 shows progress bars, 0 hides them; unset: on a terminal only",
        )
    # the library's own variables, checked by their readers through ktriage.api; only when one is set,
    # so that `ktriage --help` imports no entry point
    if any(os.environ.get(name, "").strip() for name in LIBRARY_ENVIRONMENT):
        from ktriage.api import check_environment as check_library_environment

        check_library_environment()


def print_error(exc: KtriageError, console: Console | None = None) -> None:
    """A user error as one red ``error:`` line plus a ``fix:`` line, on stderr unless ``console`` says
    otherwise, then the error's ``details`` (a compiler's log, a driver message), if any: dim, each line
    indented by two spaces and not re-wrapped (a log line stays one line for grep). No traceback: the
    problem is the user's input or environment, and the fix says what to do.

    The text is escaped because problems quote user text such as a spec file's ``[kernel]`` that rich
    would otherwise take for markup and drop. A problem or fix that names options is a
    :class:`~ktriage.errors.Worded`: printed with its flags (``--measured DIR``), the command's own words,
    where a Python caller reads the keyword too (``measured=['DIR'] (--measured DIR)``)."""
    out = console if console is not None else make_console(stderr=True, strict=False)
    out.print(f"[bold red]error:[/] {escape(in_flags(exc.problem))}")
    if exc.fix:
        out.print(f"[yellow]fix:[/] {escape(in_flags(exc.fix))}")
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
    out = console if console is not None else make_console(stderr=True, strict=False)
    out.print(f"[bold red]{escape(internal_error_line(exc))}[/]", soft_wrap=True, highlight=False)


COMPILES_KEPT = (
    "interrupted: the compiles that finished are kept in the compile cache; run the same command again to "
    "resume from them"
)


@contextmanager
def say_compiles_kept() -> Iterator[None]:
    """On Ctrl-C, say in one line what is kept before the interrupt goes on (exit 130, as before).

    Why: an interrupted ``explain`` (or ``tune``) ended with exit 130 and not a word, and a user could
    not tell that the compiles done so far are in the cache and that the same command picks them up
    (bisect says what its interruptions keep too). The compiles are published one by one as they finish
    (``ktriage.compile.cache``), so the line is true whenever Ctrl-C comes."""
    try:
        yield
    except KeyboardInterrupt:
        make_console(stderr=True, strict=False).print(escape(COMPILES_KEPT), soft_wrap=True, highlight=False)
        raise


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

    return _Shown(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=transient,
        disable=not show_progress(console),
    )


class _WarningLines(logging.Handler):
    """Library warnings (logger ``ktriage``, e.g. ``ktriage.cache``'s damaged entries) as one
    ``warning:`` line each on stderr, in the same voice as ``error:``."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            out = make_console(stderr=True, strict=False)
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
