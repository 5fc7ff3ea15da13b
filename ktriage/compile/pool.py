"""Long-lived compile workers, one interpreter per worker, inside a toolchain's virtualenv.

Why persistent workers: importing Triton costs about a second; a sweep compiles dozens of kernels
per toolchain. Why processes with timeouts: a compile that hangs or crashes must cost one kernel,
never the sweep, so a dead or stuck worker is killed, reported for that request and replaced.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ktriage.insitu.environment import compile_environment
from ktriage.processes import pid_alive
from ktriage.schema.jsontypes import JSONObject

WORKER_SCRIPT = Path(__file__).resolve().parent.parent / "insitu" / "server.py"  # the protocol loop
DEFAULT_TIMEOUT_S = 600.0
DEFAULT_IMPORT_TIMEOUT_S = 60.0
IMPORT_TIMEOUT_ENV = "KTRIAGE_IMPORT_TIMEOUT_S"
TRITON_CACHE_PREFIX = "ktriage-triton-cache-"
STALE_TRITON_CACHE_S = 6 * 3600.0  # a worker's Triton cache folder of an unknown writer older than this is stale
_LIVE_CACHES: set[Path] = set()  # removed at exit if a worker was never closed (atexit below)


def import_timeout_s() -> float:
    """How long a compile worker may take to import a kernel's module (``KTRIAGE_IMPORT_TIMEOUT_S``,
    default 60 s): shorter than the compile timeout, so that a module that blocks at import (a sleep,
    a network call, a lock) fails in a minute with its own error instead of holding a run for 600 s."""
    from ktriage.errors import KtriageError

    raw = os.environ.get(IMPORT_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_IMPORT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise KtriageError(
            f"{IMPORT_TIMEOUT_ENV}={raw!r} is not a number of seconds above 0",
            f"e.g. {IMPORT_TIMEOUT_ENV}=120, or unset it for the default ({DEFAULT_IMPORT_TIMEOUT_S:.0f} s)",
        )
    return value


def triton_cache_dir() -> Path:
    """A private TRITON_CACHE_DIR for one worker, named with this process's pid so that
    :func:`sweep_triton_caches` can tell a dead host's folder from a live one's."""
    path = Path(tempfile.mkdtemp(prefix=f"{TRITON_CACHE_PREFIX}{os.getpid()}-"))
    if not _LIVE_CACHES:
        import atexit

        atexit.register(_remove_live_caches)
    _LIVE_CACHES.add(path)
    return path


def _remove_live_caches() -> None:
    for path in list(_LIVE_CACHES):
        shutil.rmtree(path, ignore_errors=True)
    _LIVE_CACHES.clear()


def sweep_triton_caches(now: float | None = None) -> int:
    """Remove the worker Triton cache folders in the temp folder that no live process owns: those of
    a dead host pid, and unowned ones (older names, a worker's own) older than a day. Returns how many."""
    now = time.time() if now is None else now
    removed = 0
    for path in Path(tempfile.gettempdir()).glob(f"{TRITON_CACHE_PREFIX}*"):
        owner = path.name[len(TRITON_CACHE_PREFIX) :].split("-", 1)[0]
        try:
            stale = (
                (not pid_alive(int(owner))) if owner.isdigit() else now - path.stat().st_mtime > STALE_TRITON_CACHE_S
            )
        except OSError:
            continue
        if stale and path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    return removed


@dataclass
class WorkerReply:
    """What one request came back with; ``ok`` False carries ``kind`` and ``error``."""

    ok: bool
    data: JSONObject

    @property
    def error(self) -> str:
        return str(self.data.get("error", ""))

    @property
    def kind(self) -> str:
        return str(self.data.get("kind", ""))


class CompileWorker:
    """One worker process speaking the JSON-lines protocol of insitu/server.py."""

    def __init__(self, python: Path, env: dict[str, str] | None = None) -> None:
        self.python = python
        # Triton's knobs from the user's shell would change the cubins (insitu/environment.py).
        self._env = {**compile_environment(os.environ), **(env or {}), "PYTHONUNBUFFERED": "1"}
        self._proc: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr_tail: list[str] = []
        self._triton_cache: Path | None = None

    def _start(self) -> None:
        self._lines = queue.Queue()
        self._stderr_tail = []
        if "TRITON_CACHE_DIR" not in self._env:  # a private one, removed when the worker is closed
            self._triton_cache = triton_cache_dir()
            self._env["TRITON_CACHE_DIR"] = str(self._triton_cache)
        self._proc = subprocess.Popen(
            [str(self.python), str(WORKER_SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self._env,
        )
        threading.Thread(target=self._pump_stdout, args=(self._proc, self._lines), daemon=True).start()
        threading.Thread(target=self._pump_stderr, args=(self._proc,), daemon=True).start()
        hello = self._lines.get(timeout=120)
        if hello is None:
            raise RuntimeError(f"compile worker with {self.python} did not start: {self.stderr_tail()}")
        primed = json.loads(hello).get("primed")
        if isinstance(primed, str):  # asked to prime and could not: its results would depend on order
            raise RuntimeError(f"compile worker with {self.python} could not compile its priming kernel: {primed}")

    @staticmethod
    def _pump_stdout(proc: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    def _pump_stderr(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self._stderr_tail.append(line)
            del self._stderr_tail[:-40]

    def stderr_tail(self) -> str:
        return "".join(self._stderr_tail[-20:]).strip()

    def request(
        self,
        payload: Mapping[str, object],
        timeout: float = DEFAULT_TIMEOUT_S,
        import_timeout: float = DEFAULT_IMPORT_TIMEOUT_S,
    ) -> WorkerReply:
        """Send one request; on timeout or crash, kill the worker (a fresh one starts next time).

        The worker says when the kernel's module is imported (a ``stage`` line): until then the wait
        is bounded by ``import_timeout``, then by ``timeout`` for the whole request."""
        if self._proc is None or self._proc.poll() is not None:
            try:
                self._start()
            except (RuntimeError, OSError, queue.Empty) as exc:
                self.close()
                return WorkerReply(
                    False, {"kind": "start", "error": f"the compile worker of {self.python} did not start: {exc}"}
                )
        assert self._proc is not None and self._proc.stdin is not None
        started = time.monotonic()
        importing = True
        try:
            self._proc.stdin.write(json.dumps(payload) + "\n")
            self._proc.stdin.flush()
            line = self._lines.get(timeout=min(timeout, import_timeout))
            if line is not None and '"stage"' in line and "stage" in json.loads(line):
                importing = False
                line = self._lines.get(timeout=max(0.0, timeout - (time.monotonic() - started)))
        except queue.Empty:
            self.close()
            if importing and import_timeout < timeout:
                return WorkerReply(
                    False,
                    {
                        "kind": "import",
                        "error": (
                            f"importing the kernel's module did not finish within {import_timeout:.0f} s (it blocks at import: "
                            f"a sleep, a network call, a lock?); if the import is only slow, raise {IMPORT_TIMEOUT_ENV}"
                        ),
                    },
                )
            return WorkerReply(False, {"kind": "timeout", "error": f"compile did not finish within {timeout:.0f} s"})
        except (BrokenPipeError, OSError) as exc:
            self.close()
            return WorkerReply(False, {"kind": "crash", "error": f"compile worker died: {exc}: {self.stderr_tail()}"})
        if line is None:
            tail = self.stderr_tail()
            self.close()
            return WorkerReply(False, {"kind": "crash", "error": f"compile worker died: {tail}"})
        data = json.loads(line)
        return WorkerReply(bool(data.get("ok")), data)

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
            for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
                if stream is not None:
                    try:
                        stream.close()
                    except OSError:
                        pass  # the pump thread may be reading it; the process is gone either way
            self._proc = None
        if self._triton_cache is not None:
            shutil.rmtree(self._triton_cache, ignore_errors=True)
            _LIVE_CACHES.discard(self._triton_cache)
            self._triton_cache = None
            self._env.pop("TRITON_CACHE_DIR", None)


PoolKey = tuple[Path, tuple[str, ...]]


class WorkerPool:
    """A few workers per (toolchain python, kernel package path), handed to threads one at a time.

    Keyed by the package path too: a worker that imported liger-kernel 0.5.10 must never serve a
    0.8.5 spec, because Python would reuse the cached 0.5.10 module and compile the wrong kernel.
    """

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        sweep_triton_caches()  # what workers of a killed host left in the temp folder
        self._idle: dict[PoolKey, queue.LifoQueue[CompileWorker]] = {}
        self._created: dict[PoolKey, int] = {}
        self._lock = threading.Lock()

    def acquire(self, python: Path, sys_path: tuple[str, ...] = (), *, prime: bool = False) -> CompileWorker:
        """A worker for ``python`` with ``sys_path``; ``prime``: the frontend is order-sensitive, so a
        new worker compiles the priming kernel before its first request (insitu/server.py)."""
        key = (python, sys_path)
        with self._lock:
            idle = self._idle.setdefault(key, queue.LifoQueue())
            if idle.empty() and self._created.get(key, 0) < self.size:
                self._created[key] = self._created.get(key, 0) + 1
                return CompileWorker(python, {"KTRIAGE_PRIME_COMPILE": "1"} if prime else None)
        return idle.get()

    def release(self, python: Path, worker: CompileWorker, sys_path: tuple[str, ...] = ()) -> None:
        self._idle[(python, sys_path)].put(worker)

    def close(self) -> None:
        for idle in self._idle.values():
            while not idle.empty():
                idle.get().close()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class InFlight:
    """One compile per cache key at a time within a process: threads that ask for a key another thread
    is compiling wait for it and then read its result (the cache entry it published, or its failure),
    so a kernel shared by many inputs of a sweep compiles once.

    ``hold(key)`` is a per-key lock; the caller re-reads the cache (or the memo) after acquiring it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: dict[str, tuple[threading.Lock, int]] = {}

    def acquire(self, key: str) -> None:
        with self._lock:
            lock, users = self._keys.get(key, (threading.Lock(), 0))
            self._keys[key] = (lock, users + 1)
        lock.acquire()

    def release(self, key: str) -> None:
        with self._lock:
            lock, users = self._keys[key]
            if users <= 1:
                del self._keys[key]
            else:
                self._keys[key] = (lock, users - 1)
        lock.release()

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        self.acquire(key)
        try:
            yield
        finally:
            self.release(key)
