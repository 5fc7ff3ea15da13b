"""Failure isolation: measure in a worker process, so a faulting or hanging kernel costs one cell.

Why a process: an illegal memory access makes the CUDA context unusable for the rest of the
process (every later call returns the same sticky error), and a hung kernel never returns. Inside
one process, either ends the whole run. Here a job (one cell group) runs in a worker started with
multiprocessing's *spawn* method (a fork would inherit the parent's CUDA state, which CUDA does
not support). The worker streams each finished Cell back at once; the parent hands it to
``on_cell`` (the store writes it), so nothing measured is lost. When the worker faults, dies or
stays silent past ``timeout_s``, the cells of the job it did not deliver are reported as
"error" ("CUDA_ERROR_ILLEGAL_ADDRESS: ...") or "timeout" ("timeout after 30 s"), the worker is
replaced, and the next job runs in a fresh process.

The timeout is an inactivity timeout: it restarts whenever the worker delivers a cell, so a large
group of variants may take longer than ``timeout_s`` as long as each cell arrives in time.

One worker serves every job of a run (its imports, CUDA context and loaded kernels are paid once);
``start()`` spawns it without waiting, so its start-up (torch, CUDA, an ``init`` such as reading a
bundle) overlaps whatever the parent does before the first job. Only a fault replaces it.
"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ktriage.errors import KtriageError, MeasureError
from ktriage.measure.cells import Cell, CellKey

Emit = Callable[[Cell], None]
#: A job handler runs in the worker: ``handler(payload, emit)`` calls ``emit(cell)`` per cell.
Handler = Callable[[Any, Emit], None]

DEFAULT_TIMEOUT_S = 30.0
STARTUP_TIMEOUT_S = 180.0  # spawn + importing torch and cuda.bindings on a cold machine


@dataclass
class Job:
    """One unit of isolated work: the cells it should produce and a picklable payload."""

    keys: list[CellKey]
    payload: Any


def _resolve(ref: str | Callable[..., Any]) -> Callable[..., Any]:
    """``"package.module:function"`` or a callable (pickled by reference under spawn)."""
    if callable(ref):
        return ref
    module, _, name = ref.partition(":")
    if not name:
        raise MeasureError(
            f"handler reference {ref!r} is not 'module:function'",
            "use e.g. 'ktriage.measure.jobs:run'",
        )
    fn: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return fn


def _cuda_sticky_error() -> str | None:
    """The sticky CUDA error of this process's context, if the runner's driver layer was used."""
    if "ktriage.measure.driver" not in sys.modules or "cuda.bindings.driver" not in sys.modules:
        return _torch_sticky_error()
    from ktriage.measure import driver as cuda_driver

    try:
        err = cuda_driver.driver().cuCtxSynchronize()
        code = int(err[0] if isinstance(err, tuple) else err)
    except Exception:
        return None
    return None if code == 0 else cuda_driver.error_name(code)


def _torch_sticky_error() -> str | None:
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return None
    try:
        torch.cuda.synchronize()
    except Exception as exc:
        return f"CUDA error ({exc})".splitlines()[0]
    return None


def classify_exception(exc: BaseException) -> tuple[str, bool]:
    """A one-line reason for a failed job and whether the worker must be replaced (sticky CUDA error)."""
    name = getattr(exc, "name", None)
    sticky = bool(getattr(exc, "sticky", False))
    if not sticky:
        probe = _cuda_sticky_error()
        if probe:
            name, sticky = probe, True
    text = f"{type(exc).__name__}: {exc}".splitlines()[0]
    if name and not text.startswith(str(name)) and str(name) not in text:
        text = f"{name}: {text}"
    return text, sticky


def _worker_main(
    conn: Any,
    handler_ref: str | Callable[..., Any],
    init_ref: str | Callable[..., Any] | None,
    env: dict[str, str] | None = None,
) -> None:
    """Worker loop: receive (job_id, payload), stream cells, report done or the error."""
    if env:  # before anything starts CUDA here: the GPU a multi-GPU run pinned this worker to
        os.environ.update(env)
    try:
        handler = _resolve(handler_ref)
        if init_ref is not None:
            _resolve(init_ref)()
    except BaseException as exc:
        problem, fix = (exc.problem, exc.fix) if isinstance(exc, KtriageError) else (None, None)
        conn.send(("init_error", f"{type(exc).__name__}: {exc}", traceback.format_exc(), problem, fix))
        return
    conn.send(("ready", os.getpid()))
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        job_id, payload = msg

        def emit(cell: Cell, _job: int = job_id) -> None:
            conn.send(("cell", _job, cell.to_json()))

        try:
            handler(payload, emit)
        except BaseException as exc:
            reason, sticky = classify_exception(exc)
            conn.send(("error", job_id, reason, sticky, traceback.format_exc()))
            if sticky:
                conn.close()
                os._exit(3)  # the CUDA context is unusable: a fresh worker takes over
            continue
        conn.send(("done", job_id))


class _Worker:
    """A spawned worker; ``wait_ready`` blocks until its start-up (imports, ``init``) is done."""

    def __init__(
        self,
        ctx: mp.context.SpawnContext,
        handler: str | Callable[..., Any],
        init: str | Callable[..., Any] | None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child, handler, init, env), daemon=True)
        self.process.start()
        child.close()
        self.ready = False

    def wait_ready(self) -> None:
        if self.ready:
            return
        if not self.conn.poll(STARTUP_TIMEOUT_S):
            self.stop()
            raise MeasureError(
                f"the measurement worker did not start within {STARTUP_TIMEOUT_S:g} s",
                "check that torch and cuda.bindings import on this host",
            )
        try:
            msg = self.conn.recv()
        except (EOFError, OSError):
            code = self.process.exitcode
            self.stop()
            raise MeasureError(
                f"the measurement worker exited during start-up (exit code {code})",
                "run `python -c 'import torch; torch.zeros(1, device=\"cuda\")'` on this host",
            ) from None
        if msg[0] != "ready":
            self.stop()
            problem, fix = (msg[3], msg[4]) if len(msg) > 4 else (None, None)
            if problem:
                raise MeasureError(f"the measurement worker failed to start: {problem}", fix)
            raise MeasureError(
                f"the measurement worker failed to start: {msg[1]}",
                "see the traceback:\n" + msg[2],
            )
        self.ready = True

    def alive(self) -> bool:
        return self.process.is_alive()

    def stop(self) -> None:
        if self.process.is_alive():
            try:
                self.conn.send(None)
            except (OSError, BrokenPipeError):
                pass
            self.process.join(2)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)
        self.conn.close()


class IsolatedRunner:
    """Runs jobs in a spawned worker process with an inactivity timeout; replaces it after a fault.

    ``handler`` and ``init`` are ``"module:function"`` strings or importable top-level functions;
    ``on_cell(cell)`` is called in the parent for each cell as soon as it arrives (measured,
    or marked error/timeout by the runner); ``env`` is set in every worker before it starts (a
    multi-GPU run pins each runner's workers to one GPU with it, replacements included).
    """

    def __init__(
        self,
        handler: str | Handler,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        on_cell: Callable[[Cell], None] | None = None,
        init: str | Callable[[], None] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.handler = handler
        self.init = init
        self.env = dict(env) if env else None
        self.timeout_s = timeout_s
        self.on_cell = on_cell
        self._ctx = mp.get_context("spawn")
        self._worker: _Worker | None = None
        self._next_id = 0
        self.workers_started = 0
        self.failures: list[str] = []

    def __enter__(self) -> IsolatedRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None

    def start(self) -> None:
        """Spawn the worker now and return at once; the first job waits for its start-up."""
        if self._worker is None:
            self._worker = _Worker(self._ctx, self.handler, self.init, self.env)
            self.workers_started += 1

    def wait_started(self) -> None:
        """Block until the worker is up (a start-up failure raises MeasureError here)."""
        self._ensure_worker()

    def _ensure_worker(self) -> _Worker:
        if self._worker is not None and not self._worker.ready:
            self._worker.wait_ready()  # started early: its start-up ran alongside the parent's work
        if self._worker is None or not self._worker.alive():
            if self._worker is not None:
                self._worker.stop()
            self._worker = _Worker(self._ctx, self.handler, self.init, self.env)
            self.workers_started += 1
            self._worker.wait_ready()
        return self._worker

    def _discard_worker(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None

    def _deliver(self, cell: Cell, out: list[Cell]) -> None:
        out.append(cell)
        if self.on_cell is not None:
            self.on_cell(cell)

    def run_job(self, job: Job) -> list[Cell]:
        """Run one job; always returns one Cell per key (measured or marked failed), in arrival order."""
        worker = self._ensure_worker()
        job_id = self._next_id
        self._next_id += 1
        pending = {k.label(): k for k in job.keys}
        out: list[Cell] = []

        def fail_pending(status: str, reason: str) -> None:
            self.failures.append(reason)
            for key in list(pending.values()):
                self._deliver(Cell(key=key, status=status, error=reason), out)  # type: ignore[arg-type]
            pending.clear()

        try:
            worker.conn.send((job_id, job.payload))
        except (OSError, BrokenPipeError) as exc:
            self._discard_worker()
            fail_pending("error", f"worker pipe broken: {exc}")
            return out
        deadline = time.monotonic() + self.timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._discard_worker()
                fail_pending("timeout", f"timeout after {self.timeout_s:g} s")
                return out
            try:
                has_msg = worker.conn.poll(min(remaining, 0.25))
                msg = worker.conn.recv() if has_msg else None
            except (EOFError, OSError):
                has_msg, msg = False, None
            if msg is None:
                if not worker.alive():
                    code = worker.process.exitcode
                    self._discard_worker()
                    fail_pending("error", f"worker died (exit code {code}) while measuring")
                    return out
                continue
            kind = msg[0]
            if kind == "cell" and msg[1] == job_id:
                cell = Cell.from_json(msg[2])
                pending.pop(cell.key.label(), None)
                self._deliver(cell, out)
                deadline = time.monotonic() + self.timeout_s
            elif kind == "done" and msg[1] == job_id:
                if pending:
                    fail_pending("error", "the job finished without measuring this cell")
                return out
            elif kind == "error" and msg[1] == job_id:
                _, _, reason, sticky, _tb = msg
                if sticky:
                    self._discard_worker()
                fail_pending("error", reason)
                return out

    def run(self, jobs: Iterable[Job]) -> list[Cell]:
        """Run jobs in order; a failure of one job never stops the next."""
        cells: list[Cell] = []
        try:
            for job in jobs:
                cells.extend(self.run_job(job))
        except KeyboardInterrupt:
            self.close()
            raise
        return cells
