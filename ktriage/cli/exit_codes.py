"""The CLI's names for the exit statuses: what each code means is :mod:`ktriage.exit_status` (its table),
which the library's reports carry; this module only lets the verbs write ``exit_codes.FINDING``.

How the CLI maps them, in one place: ``ktriage.cli.app.main`` turns a KtriageError into USAGE (2), any
other exception into INTERNAL (3), Ctrl-C into INTERRUPTED (130), a closed output pipe into BROKEN_PIPE
(141), and exits with the status a verb
returns (``typer.Exit(report.exit_status)``: an ``IntEnum``, its value is the process exit code).
"""

from __future__ import annotations

from typing import Final

from ktriage.exit_status import ExitStatus, outcome, with_failures

OK: Final = ExitStatus.OK
FINDING: Final = ExitStatus.FINDING
USAGE: Final = ExitStatus.USAGE
INTERNAL: Final = ExitStatus.INTERNAL
INCOMPLETE: Final = ExitStatus.INCOMPLETE
INTERRUPTED: Final = ExitStatus.INTERRUPTED
BROKEN_PIPE: Final = ExitStatus.BROKEN_PIPE

__all__ = [
    "BROKEN_PIPE",
    "FINDING",
    "INCOMPLETE",
    "INTERNAL",
    "INTERRUPTED",
    "OK",
    "USAGE",
    "ExitStatus",
    "outcome",
    "with_failures",
]
