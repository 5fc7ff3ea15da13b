"""The one place CLI output consoles are made.

Output that is not a terminal (CI logs, pipes, test runners) gets a wide fixed width instead of
rich's 80-column fallback (KTRIAGE_COLUMNS overrides it), so tables are not wrapped or elided into unreadable columns.
"""

from __future__ import annotations

import os
import sys

from rich.console import Console

PIPE_WIDTH = 200


def make_console(*, stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    is_tty = hasattr(stream, "isatty") and stream.isatty()
    width = None if is_tty else int(os.environ.get("KTRIAGE_COLUMNS", PIPE_WIDTH))
    return Console(stderr=stderr, width=width)
