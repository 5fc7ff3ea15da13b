"""Is the process that writes a run still alive? Tells a running run from one that was killed.

A SIGKILLed or crashed writer cannot mark its run; the run stays "running" in the store forever.
Readers on the same host can check the writer's pid; on another host they cannot, and say so.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path


def this_host() -> str:
    return socket.gethostname()


def pid_alive(pid: int) -> bool:
    """True when ``pid`` is a live process on this host (a zombie counts as dead)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def writer_alive(writer_host: str, writer_pid: int) -> bool | None:
    """True/False for a writer on this host; None when it ran elsewhere (cannot tell)."""
    if writer_host != this_host():
        return None
    return pid_alive(writer_pid)
