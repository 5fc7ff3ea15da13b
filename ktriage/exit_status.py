"""What a ktriage result means for CI, in one place: the library's reports say it, the CLI exits with it.

Why distinct statuses: a CI job acts differently on "the kernels regressed" (open an issue), "the
command was used wrongly" (fix the job), "ktriage crashed" (report a bug) and "some cells could not be
computed" (the answer is partial: a failed compile must never pass as "no change").

| code | name | meaning |
|---|---|---|
| 0 | OK | done, nothing to report (or findings that the command does not gate on) |
| 1 | FINDING | the result holds what the command gates on: regressions (``compare``, ``triage``), a predicted regression or any change (``explain --fail-on``), cubins that differ (``fidelity``), a change point in the latest N runs (``history --fail-on-recent N``), damaged entries (``cache verify``); ``bisect`` reads the other way: 1 is *no* single culprit, a culprit found is 0 (no other verb has a culprit) |
| 2 | USAGE | usage or user error: bad option, bad input, a KtriageError (printed with its fix) |
| 3 | INTERNAL | internal error: an uncaught exception, i.e. a bug in ktriage, printed as one ``internal error:`` line (``--debug`` or ``KTRIAGE_DEBUG=1`` re-raises it with the traceback) |
| 4 | INCOMPLETE | some cells failed (compile, assemble, analyze, import, timeout, a spec file's kernel that does not load), or were not compared (``compare``, ``triage``: a cell on one side only, failed, wrong, no latency); wins over FINDING; see ``--allow-failures`` |
| 130 | INTERRUPTED | interrupted (Ctrl-C), as shells report SIGINT |
| 141 | BROKEN_PIPE | the reader of the output went away (a verb piped to ``head``): the output was cut and the result is unknown, as shells report SIGPIPE (it was 1, "regressions found") |

Who decides what: a report decides OK, FINDING and INCOMPLETE from its own content (e.g.
``TriageReport.exit_code``, ``CompareReport.exit_status``, ``ExplainReport.exit_status``, all through
:func:`outcome`); the CLI's ``ktriage.cli.app.main`` maps errors to USAGE, INTERNAL and INTERRUPTED and
exits with the status (an ``IntEnum``: its value is the process exit code). ``bisect-step`` is the
exception by design: it speaks ``git bisect run``'s codes (0 good, 1 bad, 125 skip, 128 abort,
``ktriage.bisect.step``), because git, not a person, reads them.

Lowest layer (imports nothing of ktriage), so every report can carry a status.
"""

from __future__ import annotations

import enum


class ExitStatus(enum.IntEnum):
    """A result's meaning for CI; the value is the process exit code (see the module's table)."""

    OK = 0
    FINDING = 1
    USAGE = 2
    INTERNAL = 3
    INCOMPLETE = 4
    INTERRUPTED = 130
    BROKEN_PIPE = 141


def with_failures(status: ExitStatus, complete: bool, allow_failures: bool) -> ExitStatus:
    """The status of a result some of whose cells may have failed: INCOMPLETE unless the user allowed
    failures, in which case the status the complete part of the result gives."""
    return status if complete or allow_failures else ExitStatus.INCOMPLETE


def outcome(*, finding: bool, complete: bool = True, allow_failures: bool = False) -> ExitStatus:
    """FINDING when the result found what the command gates on, else OK; INCOMPLETE before either when
    the result is partial and failures were not allowed."""
    return with_failures(ExitStatus.FINDING if finding else ExitStatus.OK, complete, allow_failures)
