"""Is a process of this host still running? The one test of a pid that a lock, a temporary folder or a
stored run names, so that each can tell a live owner from one that was killed.

Why one home: three places asked it on their own (record's lock, the compile cache's stale folders, the
store's running runs), and they disagreed on a zombie (dead here: it holds no lock and writes nothing) and
on a pid no process can have (0, negative, too large: dead, never an exception).
"""

from __future__ import annotations

import os
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """True when ``pid`` is a live process on this host: one of another user's counts (the kernel says it
    exists), a zombie does not (it has exited; only its parent has not reaped it)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, owned by someone else
    except (OverflowError, ValueError, OSError):
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True  # no /proc (macOS): the kernel's answer stands
