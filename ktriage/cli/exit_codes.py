"""The exit codes of every ktriage command, in one place, so that CI can tell them apart.

Why distinct codes: a CI job acts differently on "the kernels regressed" (open an issue), "the command
was used wrongly" (fix the job), "ktriage crashed" (report a bug) and "some cells could not be
computed" (the answer is partial: a failed compile must never pass as "no change").

| code | name | meaning |
|---|---|---|
| 0 | OK | done, nothing to report (or findings that the command does not gate on) |
| 1 | FINDING | regressions or a culprit found (``compare``, ``fidelity``; ``bisect``: no single culprit; ``history --fail-on-recent N``: a change point in the latest N runs) |
| 2 | USAGE | usage or user error: bad option, bad input, a KtriageError (printed with its fix) |
| 3 | INTERNAL | internal error: an uncaught exception, i.e. a bug in ktriage, printed as one ``internal error:`` line (``--debug`` or ``KTRIAGE_DEBUG=1`` re-raises it with the traceback) |
| 4 | INCOMPLETE | some cells failed (compile, assemble, analyze, import, timeout); see ``--allow-failures`` |
| 130 | INTERRUPTED | interrupted (Ctrl-C), as shells report SIGINT |

``ktriage.cli.app.main`` maps the error cases (2, 3, 130); the verbs return 0, 1 and 4 themselves.
``bisect-step`` is the exception by design: it speaks ``git bisect run``'s codes (0 good, 1 bad,
125 skip, 128 abort), because git, not a person, reads them.
"""

from __future__ import annotations

from typing import Final

OK: Final = 0
FINDING: Final = 1
USAGE: Final = 2
INTERNAL: Final = 3
INCOMPLETE: Final = 4
INTERRUPTED: Final = 130


def with_failures(code: int, complete: bool, allow_failures: bool) -> int:
    """The code a command exits with when some of its cells may have failed: INCOMPLETE unless the user
    allowed failures, in which case the code the complete part of the result gives."""
    return code if complete or allow_failures else INCOMPLETE
