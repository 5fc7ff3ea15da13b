"""``--cluster`` / ``KTRIAGE_CLUSTER``: which executor a verb uses.

``local`` (or nothing): the embedded default, this machine's process pool. ``auto``: the Ray cluster
this machine is part of (``ray start`` ran here). ``HOST:PORT``: a Ray cluster's head (its GCS port,
``ray start --head --port PORT``). ``ray://HOST:PORT``: the same through Ray Client (``ray[client]``).
"""

from __future__ import annotations

import os

from ktriage.errors import KtriageError
from ktriage.execute.base import Executor, LocalExecutor

CLUSTER_ENV = "KTRIAGE_CLUSTER"


def cluster_address(value: str | None) -> str | None:
    """The Ray address for a ``--cluster`` value (None: run locally); the environment is the default."""
    text = (value if value is not None else os.environ.get(CLUSTER_ENV, "")).strip()
    if not text or text == "local":
        return None
    if text == "auto":
        return text
    scheme, has_scheme, rest = text.partition("://")
    if has_scheme and scheme != "ray":  # a pasted URL (the dashboard's http://HOST:8265 among them)
        raise KtriageError(
            f"--cluster {text!r} is not a cluster address: {scheme}:// is no scheme of a Ray head",
            f"give the head's GCS port without it (--cluster {rest.rstrip('/') or 'HOST:PORT'}; `ray start --head "
            "--port PORT`), or ray://HOST:PORT for Ray Client (docs/cluster.md)",
        )
    if has_scheme and rest and "/" not in rest:
        return text
    host, sep, port = text.rpartition(":")
    if not has_scheme and sep and host and port.isdigit() and "/" not in host and not any(c.isspace() for c in host):
        return text
    raise KtriageError(
        f"--cluster {text!r} is not a cluster address",
        "use local, auto, HOST:PORT (the head's GCS port) or ray://HOST:PORT (docs/cluster.md)",
    )


def open_executor(value: str | None, *, workers: int | None = None) -> Executor:
    """The executor for a ``--cluster`` value: ``LocalExecutor(workers)`` or a connected ``RayExecutor``."""
    address = cluster_address(value)
    if address is None:
        return LocalExecutor(workers)
    from ktriage.execute.ray_backend import RayExecutor

    return RayExecutor(address)


def remote_executor(value: str | None) -> Executor | None:
    """The cluster's executor for a ``--cluster`` value, or None to run locally: what
    ``ktriage.compile.remote.ClusterCompiler(executor=...)`` takes (None keeps its own worker pool)."""
    return open_executor(value) if cluster_address(value) is not None else None
