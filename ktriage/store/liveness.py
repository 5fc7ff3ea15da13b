"""Is the process that writes a run still alive? Tells a running run from one that was killed.

A SIGKILLed or crashed writer cannot mark its run; the run stays "running" in the store forever.
Readers on the same host can check the writer's pid; on another host they cannot, and say so.
"""

from __future__ import annotations

import socket

from ktriage.processes import pid_alive


def this_host() -> str:
    return socket.gethostname()


def writer_alive(writer_host: str, writer_pid: int) -> bool | None:
    """True/False for a writer on this host; None when it ran elsewhere (cannot tell)."""
    if writer_host != this_host():
        return None
    return pid_alive(writer_pid)
