"""Record the ptxas runs that Triton's own ``make_cubin`` makes: the exact command line and the log.

Why: the cubin the JIT runs is assembled by whichever ptxas that Triton version picks for the arch
(3.3 added ``ptxas-blackwell`` for cc >= 100; 3.9 uses it for every cc >= 90), with the options that
version passes (``-lineinfo``, ``--fmad=false`` per kernel, ``--regAllocOptLevel=2`` from 3.7 on, ...).
ktriage must not restate those rules in a table that drifts with every release. Every Triton 3.x calls
``subprocess.run(ptxas_cmd, check=True, close_fds=False, stderr=flog)`` from
``triton/backends/nvidia/compiler.py``; wrapping that module's ``subprocess`` lets the run proceed
unchanged while we keep its argv and its ``-v`` log (the log file is deleted by Triton afterwards).
The recorded argv is also the template when ktriage re-assembles with another ptxas.

Runs inside a toolchain's interpreter: stdlib + that Triton only, never ``ktriage``.
"""

from __future__ import annotations

import os
import subprocess
import types
from typing import Any, TypedDict


class PtxasRun(TypedDict, total=False):
    """One ptxas run Triton made: its command line, exit status and ``-v`` log."""

    argv: list[str]
    returncode: int
    log: str


_runs: list[PtxasRun] = []


class _RecordingSubprocess(types.ModuleType):
    """``subprocess`` as the nvidia backend sees it: ``run`` of a ptxas is recorded, all else passes."""

    def __init__(self) -> None:
        super().__init__("subprocess")

    def __getattr__(self, name: str) -> Any:
        return getattr(subprocess, name)

    def run(self, cmd: Any, *args: Any, **kwargs: Any) -> Any:
        argv = [str(c) for c in cmd] if isinstance(cmd, (list, tuple)) else None
        if argv is None or "ptxas" not in os.path.basename(argv[0]):
            return subprocess.run(cmd, *args, **kwargs)
        record: PtxasRun = {"argv": argv}
        try:
            result = subprocess.run(cmd, *args, **kwargs)
            record["returncode"] = result.returncode
            return result
        except subprocess.CalledProcessError as exc:
            record["returncode"] = exc.returncode
            raise
        finally:
            log_handle = kwargs.get("stderr")
            name = getattr(log_handle, "name", None)
            if isinstance(name, str) and os.path.exists(name):
                with open(name, errors="replace") as fh:
                    record["log"] = fh.read()
            else:
                record["log"] = ""
            _runs.append(record)


def install() -> None:
    """Wrap the ``subprocess`` that the nvidia backend's ``make_cubin`` sees (idempotent).

    Through the function's own globals: Triton 3.2 loads backend modules under private names, so
    ``triton.backends.nvidia.compiler`` need not be the module object the backend class lives in.
    """
    from triton.backends import backends

    make_cubin = backends["nvidia"].compiler.make_cubin
    namespace = getattr(make_cubin, "__globals__", None) or make_cubin.__func__.__globals__
    if not isinstance(namespace.get("subprocess"), _RecordingSubprocess):
        namespace["subprocess"] = _RecordingSubprocess()


def take() -> list[PtxasRun]:
    """The runs recorded since the last call, oldest first."""
    runs = list(_runs)
    _runs.clear()
    return runs
