"""The launch hook of ``ktriage record``: runs INSIDE the user's program, with the user's Triton (and torch).

Why from outside: the user's code is not changed. ``ktriage record`` puts a ``sitecustomize.py`` on
``PYTHONPATH`` (see :data:`SITECUSTOMIZE`) that loads this file by path and calls :func:`install`
at interpreter start. :func:`install` patches nothing yet: it adds an import hook that patches Triton
right after ``import triton`` finishes (and inductor's launcher after
``torch._inductor.runtime.triton_heuristics`` is imported), so a program that never imports Triton
pays nothing, and one that imported it before is patched at once.

What is patched (the same in Triton 3.2 through 3.9, whose ``JITFunction.run(self, *args, grid,
warmup, **kwargs)`` and ``Autotuner.run(self, *args, **kwargs)`` keep one signature):

- ``JITFunction.run``: every JIT-level launch, after ``@triton.heuristics`` filled in its values and
  ``@triton.autotune`` its config's keywords: the bound arguments, the option keywords, the grid.
  ``JITFunction.__getitem__`` too: ``fn[grid](...)`` then counts a repeat launch and calls the JIT's
  own ``run`` directly, without the extra call layer of Triton's proxy (the hook's cost per launch).
  Triton's ``knobs.runtime.launch_enter_hook`` (3.4+) and ``jit_post_compile_hook`` were not used:
  the first sees the compiled kernel's metadata, not the Python values the specialization is
  derived from, and neither exists in 3.2/3.3 (``CompiledKernel.launch_enter_hook`` there).
- ``Autotuner.run``: the config list, the key, and the config chosen; the benchmarking launches made
  while it tunes are dropped (only the final launch, with ``best_config``, is the program's).
- inductor (torch.compile): ``CachingAutotuner.run`` in ``torch._inductor.runtime.triton_heuristics``,
  which launches through its compiled launchers or ``StaticallyLaunchedCudaKernel`` and never calls
  ``JITFunction.run``: its ``triton_meta`` (signature, constants, divisibility), the launcher's config
  and the generated module's text.

Cheap by design: a launch is reduced to a key (function, argument dtypes/shapes/strides/alignment,
scalars, options, grid); a key seen before only increments a counter. A new key writes one line to
the journal (append, flush: a SIGKILL of the program keeps every line written before it). Counts are
written with each new line, at most once a second otherwise, and at exit.

Runs in the user's interpreter: stdlib only, never ``ktriage`` (nor sibling modules of this folder,
which would be importable under names like ``worker`` in the user's program).
"""

from __future__ import annotations

import ast
import atexit
import bisect
import functools
import hashlib
import importlib.abc
import importlib.util
import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

JOURNAL_FORMAT = 1
JOURNAL_KIND = "ktriage-record-journal"
ENV_JOURNAL = "KTRIAGE_RECORD_JOURNAL"
ENV_HOOK = "KTRIAGE_RECORD_HOOK"
# Integer tensors up to this many elements are recorded with their values (indices, offsets, cu_seqlens);
# larger ones with their range (``value_range``: min and max) and ``value_sample``: VALUE_SAMPLE values read
# at evenly spaced positions, from which the replay draws (values the program really used, so in range).
SMALL_INT_TENSOR = 4096
VALUE_SAMPLE = 256
# A 64-bit integer tensor whose every value is an address inside a live CUDA allocation is a pointer table
# (grouped GEMMs pass their groups' A/B/C this way): its values mean nothing in another process.
POINTER_TABLE = "pointer_table"
_POINTER_DTYPES = {"i64", "u64"}
_LOWEST_DEVICE_ADDRESS = 1 << 32  # device allocations sit far above 4 GiB in the process's address space
COUNT_FLUSH_S = 1.0
MAX_SNAPSHOT_FILES = 64

# What ``ktriage record`` writes as sitecustomize.py into a temporary directory on PYTHONPATH.
SITECUSTOMIZE = """\
# Written by `ktriage record`: installs its launch hook at interpreter start (user code unchanged).
import importlib.util as _ktr_util
import os as _ktr_os
import sys as _ktr_sys

def _ktr_install():
    path = _ktr_os.environ.get("KTRIAGE_RECORD_HOOK")
    journal = _ktr_os.environ.get("KTRIAGE_RECORD_JOURNAL")
    if not path or not journal:
        return
    spec = _ktr_util.spec_from_file_location("_ktriage_launch_hook", path)
    module = _ktr_util.module_from_spec(spec)
    _ktr_sys.modules["_ktriage_launch_hook"] = module
    spec.loader.exec_module(module)
    module.install(journal)
    # Chain to a sitecustomize the environment had before ours shadowed it.
    here = _ktr_os.path.dirname(_ktr_os.path.abspath(__file__))
    saved = list(_ktr_sys.path)
    ours = _ktr_sys.modules.get("sitecustomize")
    _ktr_sys.path[:] = [p for p in _ktr_sys.path if _ktr_os.path.abspath(p or ".") != here]
    _ktr_sys.modules.pop("sitecustomize", None)
    try:
        import sitecustomize  # noqa: F401
    except ImportError:
        pass
    finally:
        _ktr_sys.path[:] = saved
        if ours is not None:  # site.py's import of this module is still in progress
            _ktr_sys.modules["sitecustomize"] = ours

try:
    _ktr_install()
except Exception as _ktr_exc:  # never break the user's program
    _ktr_sys.stderr.write(f"ktriage record: the launch hook did not install: {_ktr_exc!r}\\n")
"""

# torch dtype names -> Triton type names (what ktriage's specs write).
_TRITON_DTYPE = {
    "float32": "fp32",
    "float16": "fp16",
    "bfloat16": "bf16",
    "float64": "fp64",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "bool": "i1",
    "float8_e4m3fn": "fp8e4nv",
    "float8_e5m2": "fp8e5",
}
_INT_DTYPES = {"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"}
_TL_DTYPES = (
    "float32",
    "float16",
    "bfloat16",
    "float64",
    "int1",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float8e4nv",
    "float8e5",
)


def tl_attribute(dtype: Any) -> str:
    """The ``triton.language`` attribute name of a Triton dtype object (``tl.float32`` -> "float32"), its
    ``.name`` when none matches: how a recorded launch writes a dtype value (``{"tl": name}``), here and
    in jitrun.py / launch_spec.py, which import it (this module imports no sibling, see the module doc)."""
    import triton.language as tl

    for attr in _TL_DTYPES:
        if getattr(tl, attr, None) == dtype:
            return attr
    return str(dtype.name)


# Top-level packages whose modules are never snapshotted (the toolchain provides them, or no kernel lives there).
_NOT_SNAPSHOTTED = {"triton", "torch", "numpy", "builtins", "_ktriage_launch_hook", "ktriage"}


_Pending = tuple[Any, list[str], dict[str, object], dict[str, object], Any, tuple[Any, ...], dict[str, object]]
"""The last launch inside ``Autotuner.run``: (jit function, names, bound, options, grid, key, heuristics)."""


class Journal:
    """Append-only JSON lines, each written by ONE ``write(2)`` on an ``O_APPEND`` descriptor: the
    processes a program starts (torchrun ranks, inductor's compile workers) inherit the hook and
    share the journal, and whole-line appends to a regular file do not interleave."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, record: Mapping[str, object]) -> None:
        data = (json.dumps(record, default=_json_default) + "\n").encode()
        with self._lock:
            written = os.write(self._fd, data)
            while written < len(data):  # a short write (rare): finish the line
                written += os.write(self._fd, data[written:])

    def close(self) -> None:
        with self._lock:
            os.close(self._fd)


def _json_default(value: Any) -> Any:
    return repr(value)[:200]


class Recorder:
    """The state of one recorded program: kernels by function, launches by key, counts."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.kernels: dict[int, str] = {}  # id(JITFunction) -> kernel id
        self.kernel_objects: list[Any] = []  # keeps the functions alive so their ids stay unique
        self.launches: dict[tuple[Any, ...], str] = {}
        self.counts: dict[str, int] = {}
        self.not_captured: set[tuple[str, str]] = set()
        self._dirty = False
        self._last_flush = time.monotonic()
        self._local = threading.local()
        self._lock = threading.RLock()
        self.tuning = 0  # threads inside an outermost Autotuner.run now
        self.host_written = False
        self.tag = str(os.getpid())  # ids are unique across the processes sharing one journal
        self.pending_views: dict[tuple[Any, ...], dict[str, object]] = {}
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forked)

    def _forked(self) -> None:
        """A forked child (DataLoader workers, multiprocessing) records as a process of its own: its
        ids carry its pid, and what the parent recorded and counted is the parent's."""
        self.tag = str(os.getpid())
        self.kernels, self.kernel_objects, self.launches, self.counts = {}, [], {}, {}
        self.pending_views, self.not_captured = {}, set()
        self._dirty, self.host_written, self.tuning = False, False, 0
        self._lock = threading.RLock()
        self.journal._lock = threading.Lock()

    # ------------------------------------------------------------------ the JIT path
    def counted(self, launch_key: tuple[Any, ...]) -> bool:
        """The hot path: a launch seen before (outside an autotuner's benchmarking) is one dict
        lookup and a count. True when it was counted; the caller then skips everything else. The
        thread-local autotune state is read only while some thread tunes (``tuning`` > 0)."""
        launch_id = self.launches.get(launch_key)
        if launch_id is None or (self.tuning and self._local.__dict__.get("autotune") is not None):
            return False
        self.counts[launch_id] += 1  # under the GIL; a race between threads may lose a count
        self._dirty = True
        if time.monotonic() - self._last_flush >= COUNT_FLUSH_S:
            with self._lock:
                self._flush_counts()
        return True

    def jit_launch(
        self,
        jit_fn: Any,
        args: tuple[Any, ...],
        grid: Any,
        kwargs: dict[str, object],
        launch_key: tuple[Any, ...] | None = None,
    ) -> Any:
        """Record (or count) one JIT-level launch; its key, which the compile it may trigger is filed under."""
        local = self._local.__dict__
        tuning = local.get("autotune")
        try:
            if launch_key is None:
                launch_key = jit_key(jit_fn, args, grid, kwargs)
                if tuning is None and self.counted(launch_key):
                    return launch_key
            names = list(jit_fn.arg_names)
            bound = dict(zip(names, args))
            options = {}
            for key, value in kwargs.items():
                if key in names:
                    bound[key] = value
                else:
                    options[key] = value
            bind_defaults(jit_fn, names, bound)
            heuristics = {n: describe(bound[n]) for n in (local.get("heuristics") or []) if n in bound}
            if tuning is not None:  # inside Autotuner.run: the last launch is the program's
                tuning["last"] = (jit_fn, names, bound, options, grid, launch_key, heuristics)
                return launch_key
            self._launch(jit_fn, names, bound, options, grid, launch_key, None, heuristics)
            return launch_key
        except Exception as exc:  # never break the user's program
            self._not_captured(getattr(getattr(jit_fn, "fn", None), "__name__", "?"), f"{type(exc).__name__}: {exc}")
            return None

    def compile_done(self, src: Any, options: Any) -> None:
        """``triton.compile`` returned for the JIT-level launch in progress: file the JIT's own compile
        inputs under that launch, so the host can check its spec against them."""
        key = getattr(self._local, "current_key", None)
        if key is None:
            return
        try:
            view = compile_view(src, options)
            with self._lock:
                launch_id = self.launches.get(key)
                if launch_id is None:  # a launch being tuned: filed when the tuner's final launch is
                    self.pending_views[key] = view
                else:
                    self.journal.write({"type": "jit_compile", "launch": launch_id, "view": view})
        except Exception as exc:
            self._not_captured("<compile>", f"reading the JIT's compile inputs: {type(exc).__name__}: {exc}")

    def _launch(
        self,
        jit_fn: Any,
        names: list[str],
        bound: dict[str, object],
        options: dict[str, object],
        grid: Any,
        key: tuple[Any, ...],
        autotune: dict[str, object] | None,
        heuristics: dict[str, object],
    ) -> None:
        with self._lock:
            if self._count_seen(key):
                return
            kernel_id = self._kernel(jit_fn)
            launch_id = f"{self.tag}:L{len(self.launches)}"
            self.launches[key] = launch_id
            self.counts[launch_id] = 1
            resolved, grid_error = _grid_and_why(grid, bound, options)
            record = {
                "type": "launch",
                "id": launch_id,
                "kernel": kernel_id,
                "args": describe_args([(n, bound[n]) for n in names if n in bound]),
                "options": {k: describe(v) for k, v in options.items()},
                "grid": resolved,
            }
            if grid_error:
                record["grid_error"] = grid_error
            if autotune is not None:
                record["autotune"] = autotune
            if heuristics:
                record["heuristics"] = heuristics
            self.journal.write(record)
            view = self.pending_views.pop(key, None)
            if view is not None:
                self.journal.write({"type": "jit_compile", "launch": launch_id, "view": view})
            self._flush_counts()

    def _count_seen(self, key: tuple[Any, ...]) -> bool:
        """Under the lock: count a launch seen before and say so; False for a new one."""
        launch_id = self.launches.get(key)
        if launch_id is None:
            return False
        self.counts[launch_id] += 1
        self._dirty = True
        self._maybe_flush()
        return True

    def _kernel(self, jit_fn: Any) -> str:
        kernel_id = self.kernels.get(id(jit_fn))
        if kernel_id is not None:
            return kernel_id
        self._host()
        kernel_id = f"{self.tag}:K{len(self.kernels)}"
        fn = getattr(jit_fn, "fn", jit_fn)
        record: dict[str, object] = {"type": "kernel", "id": kernel_id, "kind": "jit", "function": fn.__name__}
        try:
            record.update(snapshot_of(fn))
        except Exception as exc:
            record["snapshot_error"] = f"{type(exc).__name__}: {exc}"
        self.journal.write(record)
        self.kernels[id(jit_fn)] = kernel_id
        self.kernel_objects.append(jit_fn)
        return kernel_id

    # ------------------------------------------------------------------ the autotuner
    def autotune_run(self, tuner: Any, original: Any, args: tuple[Any, ...], kwargs: dict[str, object]) -> Any:
        outer = getattr(self._local, "autotune", None)
        if outer is not None:  # nested tuners: the outermost decides what the program launched
            return original(tuner, *args, **kwargs)
        state: dict[str, _Pending] = {}
        self._local.autotune = state
        with self._lock:
            self.tuning += 1
        try:
            result = original(tuner, *args, **kwargs)
        finally:
            self._local.autotune = None
            with self._lock:
                self.tuning -= 1
        last = state.get("last")
        if last is not None and last[5] in self.launches:  # seen before: count it, build nothing
            jit_fn, names, bound, options, grid, key, heuristics = last
            self._launch(jit_fn, names, bound, options, grid, key, None, heuristics)
        elif last is not None:
            try:
                best = getattr(tuner, "best_config", None)
                info: dict[str, object] = {
                    "configs": [_config_view(c) for c in getattr(tuner, "configs", [])],
                    "chosen": _config_view(best) if best is not None else None,
                    "key": [str(k) for k in getattr(tuner, "keys", None) or getattr(tuner, "key", None) or []],
                }
                jit_fn, names, bound, options, grid, key, heuristics = last
                self._launch(jit_fn, names, bound, options, grid, key, info, heuristics)
            except Exception as exc:
                self._not_captured(type(tuner).__name__, f"autotuned launch: {type(exc).__name__}: {exc}")
        return result

    def heuristics_run(self, heur: Any, original: Any, args: tuple[Any, ...], kwargs: dict[str, object]) -> Any:
        """``@triton.heuristics``: the names it fills in, so the JIT-level launch records their values."""
        stack = getattr(self._local, "heuristics", None)
        names = list(getattr(heur, "values", None) or {})
        self._local.heuristics = [*(stack or []), *names]
        try:
            return original(heur, *args, **kwargs)
        finally:
            self._local.heuristics = stack

    # ------------------------------------------------------------------ inductor
    def inductor_launch(
        self, autotuner: Any, args: tuple[Any, ...], kwargs: dict[str, object], configs: list[Any] | None = None
    ) -> None:
        name: str = "?"
        try:
            launchers = autotuner.launchers
            config = launchers[0].config if launchers else None
            key = ("inductor", id(autotuner), tuple(map(_fast_key, args)), id(config))
            launch_id = self.launches.get(key)
            if launch_id is not None:  # the hot path, as for JIT launches
                self.counts[launch_id] += 1
                self._dirty = True
                if time.monotonic() - self._last_flush >= COUNT_FLUSH_S:
                    with self._lock:
                        self._flush_counts()
                return
            fn = getattr(autotuner, "fn", None)
            name = str(getattr(getattr(fn, "fn", fn), "__name__", None) or getattr(fn, "__name__", "?"))
            meta = getattr(autotuner, "triton_meta", None) or {}
            arg_names = list(meta.get("signature", {}))
            self.kernel_objects.append(config)  # its id is in the key: keep it alive
            with self._lock:
                if self._count_seen(key):
                    return
                kernel_id = self.kernels.get(id(autotuner))
                if kernel_id is None:
                    self._host()
                    kernel_id = f"{self.tag}:K{len(self.kernels)}"
                    record: dict[str, object] = {
                        "type": "kernel",
                        "id": kernel_id,
                        "kind": "inductor",
                        "function": name,
                        "triton_meta": _inductor_meta(meta),
                        "configs": [_config_view(c) for c in configs or getattr(autotuner, "configs", None) or []],
                    }
                    try:
                        real = inductor_function(autotuner)
                        if real is not None:
                            record.update(snapshot_of(real))
                        else:
                            record["snapshot_error"] = (
                                "inductor dropped the kernel's Python function (compiled in a "
                                "subprocess and pickled back) and could not reload it"
                            )
                    except Exception as exc:
                        record["snapshot_error"] = f"{type(exc).__name__}: {exc}"
                    self.journal.write(record)
                    self.kernels[id(autotuner)] = kernel_id
                    self.kernel_objects.append(autotuner)
                launch_id = f"{self.tag}:L{len(self.launches)}"
                self.launches[key] = launch_id
                self.counts[launch_id] = 1
                signature = meta.get("signature") or {}
                constants = meta.get("constants") or {}
                positional = [n for n in arg_names if n not in constants and str(signature.get(n)) != "constexpr"]
                grid, grid_error = _inductor_grid(autotuner, config, positional, args, kwargs)
                record = {
                    "type": "launch",
                    "id": launch_id,
                    "kernel": kernel_id,
                    "args": describe_args(list(zip(positional, args))),
                    "options": {},
                    "grid": grid,
                    "inductor_config": _config_view(config) if config is not None else None,
                }
                if grid_error:
                    record["grid_error"] = grid_error
                self.journal.write(record)
                self._flush_counts()
        except Exception as exc:
            self._not_captured(str(name), f"inductor launch: {type(exc).__name__}: {exc}")

    # ------------------------------------------------------------------ bookkeeping
    def _not_captured(self, function: str, why: str) -> None:
        with self._lock:
            if (function, why) in self.not_captured:
                return
            self.not_captured.add((function, why))
            self.journal.write({"type": "not_captured", "function": function, "why": why[:2000]})

    def _host(self) -> None:
        if not self.host_written:
            self.host_written = True
            self.journal.write({"type": "host", **host_versions()})

    def _maybe_flush(self) -> None:
        if self._dirty and time.monotonic() - self._last_flush >= COUNT_FLUSH_S:
            self._flush_counts()

    def _flush_counts(self) -> None:
        self.journal.write({"type": "counts", "counts": dict(self.counts)})
        self._dirty = False
        self._last_flush = time.monotonic()

    def finish(self) -> None:
        with self._lock:
            if self._dirty:
                self._flush_counts()


def inductor_function(autotuner: Any) -> Any:
    """The Python function of an inductor kernel (what its snapshot is taken from). A kernel compiled
    in inductor's subprocess pool comes back pickled without it (``prepare_for_pickle`` sets
    ``fn.fn = None``); inductor keeps a ``_reload_kernel`` callback that loads the generated module
    again from its file (it does so itself before coordinate descent), which gives it back."""
    real = getattr(getattr(autotuner, "fn", None), "fn", None)
    if real is not None:
        return real
    reload = getattr(autotuner, "_reload_kernel", None)
    if callable(reload):
        try:
            return getattr(getattr(reload(), "fn", None), "fn", None)
        except Exception:
            return None
    return None


def _inductor_grid(
    autotuner: Any, config: Any, names: list[str], args: tuple[Any, ...], kwargs: Mapping[str, Any] | None = None
) -> tuple[list[int] | None, str | None]:
    """The grid inductor's launcher computes for this launch, and why not when it cannot be had.

    Every launcher torch uses: the grid expression (``GridExpr`` from the kernel's ``grid_type`` and
    the chosen config, as the launcher is generated) evaluated with the launch's scalar arguments
    (``xnumel``, ``r0_numel``), the constants inductor specialized away (an ``xnumel`` of 1), and the
    launcher's extra arguments: templates (flex attention's and mm's ``triton_tem_`` kernels) and
    user-defined Triton kernels under torch.compile take their grid as ``FixedGrid`` values
    ``_grid_0.._grid_2`` after the kernel's arguments, or pick a ``PrecomputedGrid`` by config. An
    older torch passes a ``grid`` callable (called with the config's keywords)."""
    kwargs = kwargs or {}
    try:
        cfg = dict(getattr(config, "kwargs", None) or {})
        legacy = kwargs.get("grid")
        if legacy is not None:
            grid = legacy(cfg) if callable(legacy) else legacy
            return [int(g) for g in (list(grid) + [1, 1])[:3]], None
        from torch._inductor.runtime import triton_heuristics

        grid_expr = getattr(triton_heuristics, "GridExpr", None)
        meta = getattr(autotuner, "inductor_meta", None) or {}
        if grid_expr is None:
            return None, "this torch's inductor has no GridExpr (torch older than 2.6 without a grid argument)"
        if config is None:
            return None, "inductor chose no launcher config"
        if "grid_type" not in meta:
            return None, f"the kernel's inductor_meta has no grid_type (keys: {', '.join(sorted(meta)[:12])})"
        scalars: dict[str, object] = {}
        constants = (getattr(autotuner, "triton_meta", None) or {}).get("constants") or {}
        scalars.update({str(k): v for k, v in constants.items() if isinstance(v, int) and not isinstance(v, bool)})
        scalars.update({n: a for n, a in zip(names, args) if isinstance(a, int) and not isinstance(a, bool)})
        extra = [str(e) for e in meta.get("extra_launcher_args") or []]
        if extra:
            scalars.update(zip(extra, args[len(names) :]))
        scalars.update({k: v for k, v in kwargs.items() if isinstance(v, int) and not isinstance(v, bool)})
        grid = grid_expr.from_meta(meta, cfg).eval_slow({**scalars, **cfg})
        return [int(g) for g in grid], None
    except Exception as exc:
        return (
            None,
            f"inductor's {(getattr(autotuner, 'inductor_meta', None) or {}).get('grid_type', '?')} grid: "
            f"{type(exc).__name__}: {exc}"[:500],
        )


_MISSING = object()


def _cheap_key(value: Any) -> Any:
    """What decides a launch's identity, computed without touching the GPU."""
    if value is _MISSING:
        return "<missing>"
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        shape = getattr(value, "shape", ())
        try:
            strides = tuple(value.stride())
        except Exception:
            strides = ()
        return ("T", str(value.dtype), tuple(shape), strides, value.data_ptr() % 16 == 0)
    if value is None or isinstance(value, (bool, int, float, str)):
        return (type(value).__name__, value)
    if type(value).__name__ == "constexpr":
        return _cheap_key(getattr(value, "value", None))
    if type(value).__name__ == "TensorDescriptor":  # by what specializes, never its repr (its tensor's values)
        return (
            "D",
            str(getattr(getattr(value, "base", None), "dtype", None)),
            tuple(getattr(value, "shape", ())),
            tuple(getattr(value, "strides", ())),
            tuple(getattr(value, "block_shape", ())),
            getattr(value, "padding", None),
            repr(getattr(value, "layout", None)),
        )
    kwargs = getattr(value, "kwargs", None)
    if isinstance(kwargs, dict):  # an autotune / inductor Config
        return (
            "C",
            tuple(sorted((k, repr(v)) for k, v in kwargs.items())),
            getattr(value, "num_warps", None),
            getattr(value, "num_stages", None),
        )
    return (type(value).__name__, repr(value)[:200])


# Types seen to be tensors (torch.Tensor, nn.Parameter, a fake tensor): the hot path tests the type
# with one set lookup instead of attribute probes.
_TENSOR_TYPES: set[type] = set()
# Where a flat launch key's keywords start (a value no argument reduces to).
_KWARGS = ("<kwargs>",)


def _fast_key(value: Any) -> Any:
    """:func:`_cheap_key` for the hot path: plain values as themselves (bools and floats tagged: 1,
    1.0 and True are equal keys otherwise, and specialize differently), tensors by dtype, shape,
    strides and the low bits of their address."""
    t = type(value)
    if t in _TENSOR_TYPES:
        return (value.dtype, value.shape, value.stride(), value.data_ptr() & 15)
    if t is int or t is str or value is None:
        return value
    if t is float or t is bool:
        return (t, value)
    if hasattr(value, "data_ptr") and hasattr(value, "dtype") and callable(getattr(value, "stride", None)):
        _TENSOR_TYPES.add(t)
        return (value.dtype, value.shape, value.stride(), value.data_ptr() & 15)
    return _cheap_key(value)


def jit_key(jit_fn: Any, args: tuple[Any, ...], grid: Any, kwargs: dict[str, object]) -> tuple[Any, ...]:
    """A JIT-level launch's identity: the function, the grid, its arguments and option keywords, in
    ONE flat tuple (hashing nested tuples cost ~0.5 us a launch), tensors inlined (no call each).
    Every argument adds a fixed number of items (a tensor four, anything else one), and keywords
    follow a marker, so two different launches cannot flatten to the same key."""
    key: list[Any] = [id(jit_fn), grid if type(grid) is tuple else _grid_key(grid)]
    tensor_types = _TENSOR_TYPES
    known = len(tensor_types)
    for a in args:
        if type(a) in tensor_types:
            key += (a.dtype, a.shape, a.stride(), a.data_ptr() & 15)
        else:
            key.append(_fast_key(a))
    if kwargs:
        key.append(_KWARGS)
        for k, v in kwargs.items():
            key += (k, _fast_key(v))
    if len(tensor_types) != known:  # a tensor type met for the first time went in nested: again, flat
        return jit_key(jit_fn, args, grid, kwargs)
    return tuple(key)


def _grid_key(grid: Any) -> Any:
    """A grid as a key: a tuple as itself; a callable by its code (a lambda made per call is a new
    object each time, its code is not); its value then depends on the arguments, which the key holds."""
    if type(grid) is tuple:
        return grid
    if callable(grid):
        return ("callable", getattr(grid, "__code__", None) or getattr(grid, "__qualname__", type(grid).__name__))
    try:
        return tuple(int(g) for g in grid)
    except Exception:
        return repr(grid)[:100]


def bind_defaults(jit_fn: Any, names: list[str], bound: dict[str, object]) -> None:
    """Give each parameter the launch left out its default, as the JIT's binder does: the value
    Python evaluated when the ``def`` ran. A default written as a module-level expression
    (``FP8_MIN: tl.constexpr = float8_info.min``, a ``torch.finfo`` of the platform's fp8 type) is
    known only here; the source text alone cannot say it. A default that is no launch value
    (``describe`` cannot say it) is left out: the spec then reads the source's default, as before."""
    if all(n in bound for n in names):
        return
    signature = getattr(jit_fn, "signature", None)
    if signature is None:
        import inspect

        signature = inspect.signature(jit_fn.fn)
    parameters = signature.parameters
    for name in names:
        param = parameters.get(name)
        if name in bound or param is None or param.default is param.empty:
            continue
        described = describe(param.default)
        if not (isinstance(described, dict) and "unsupported" in described):
            bound[name] = param.default


def _grid_and_why(
    grid: Any, bound: dict[str, object], options: dict[str, object]
) -> tuple[list[int] | None, str | None]:
    """A JIT launch's grid (a callable grid called with the launch's arguments), or why it cannot be read."""
    try:
        if callable(grid):
            grid = grid({**bound, **options})
        return [int(g) for g in grid], None
    except Exception as exc:
        return None, f"the launch's grid {'callable ' if callable(grid) else ''}failed: {type(exc).__name__}: {exc}"[
            :500
        ]


def describe_args(pairs: Sequence[tuple[str, Any]]) -> list[list[Any]]:
    """A launch's arguments described (``describe``), each 64-bit integer tensor whose recorded values all
    point into live CUDA allocations marked as a pointer table: the replay cannot rebuild those addresses,
    and zeros or the recording's addresses would make the kernel read and write out of bounds."""
    out = [[name, describe(value)] for name, value in pairs]
    candidates = [
        d for _, d in out if isinstance(d, dict) and d.get("tensor") in _POINTER_DTYPES and d.get("values") is not None
    ]
    if not candidates:
        return out
    ranges = [
        (int(v.data_ptr()), int(v.data_ptr()) + int(d.get("storage_bytes") or 0))
        for (_, v), (_, d) in zip(pairs, out)
        if isinstance(d, dict) and "tensor" in d
    ]
    for d in candidates:
        values = list(_flat(d["values"]))
        if values and min(values) >= _LOWEST_DEVICE_ADDRESS and points_into(values, [*ranges, *_allocator_segments()]):
            d[POINTER_TABLE] = f"{len(values)} of {len(values)} values are addresses in live CUDA allocations"
    return out


def points_into(addresses: Sequence[int], ranges: Sequence[tuple[int, int]]) -> bool:
    """Every address lies in one of the half-open ``[start, end)`` ranges."""
    spans = sorted(r for r in ranges if r[1] > r[0])
    starts = [r[0] for r in spans]
    for a in addresses:
        i = bisect.bisect_right(starts, a) - 1
        if i < 0 or a >= spans[i][1]:
            return False
    return True


def _flat(values: Any) -> Iterator[int]:
    if isinstance(values, list):
        for v in values:
            yield from _flat(v)
    elif isinstance(values, int) and not isinstance(values, bool):
        yield values


def _allocator_segments() -> list[tuple[int, int]]:
    """The live segments of torch's CUDA caching allocator (none without torch or CUDA)."""
    torch = sys.modules.get("torch")
    try:
        if torch is None or not torch.cuda.is_initialized():
            return []
        return [(int(s["address"]), int(s["address"]) + int(s["total_size"])) for s in torch.cuda.memory_snapshot()]
    except Exception:
        return []


def describe(value: Any) -> Any:
    """A launch value as JSON: tensors by dtype, alignment, shape, strides, storage size (and the
    values of small integer tensors); Triton dtypes by name; scalars as they are."""
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        torch_name = str(value.dtype).split(".")[-1]
        dtype = _TRITON_DTYPE.get(torch_name, torch_name)
        out: dict[str, object] = {
            "tensor": dtype,
            "aligned": value.data_ptr() % 16 == 0,
            "shape": [int(s) for s in getattr(value, "shape", ())],
        }
        try:
            out["strides"] = [int(s) for s in value.stride()]
        except Exception:
            pass
        try:
            out["storage_bytes"] = int(value.untyped_storage().nbytes())
        except Exception:
            pass
        if dtype in _INT_DTYPES and hasattr(value, "tolist") and not _capturing():
            try:
                if int(value.numel()) <= SMALL_INT_TENSOR:
                    out["values"] = value.tolist()
                elif int(value.numel()) > 0:  # a few reductions and syncs, on a launch's first sighting only
                    out["value_range"] = [int(value.min()), int(value.max())]
                    flat = value.reshape(-1)
                    out["value_sample"] = flat[:: max(1, int(flat.numel()) // VALUE_SAMPLE)][:VALUE_SAMPLE].tolist()
            except Exception:
                pass
        return out
    if type(value).__name__ == "TensorDescriptor":
        return _describe_descriptor(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if type(value).__name__ == "constexpr":
        return describe(getattr(value, "value", None))
    if type(value).__module__.startswith("triton.language") and isinstance(getattr(value, "name", None), str):
        return {"tl": tl_attribute(value)}
    return {"unsupported": f"{type(value).__name__}: {value!r}"[:200]}


HOST_DESCRIPTOR_MODULE = "triton.tools.tensor_descriptor"


def _describe_descriptor(value: Any) -> dict[str, object]:
    """A host-side ``TensorDescriptor`` (Triton 3.4+) as the spec's form (docs/specs.md): its tensor's dtype,
    the descriptor's shape, strides and block shape, and its ``padding`` where this Triton has one (3.5+).
    That is all the JIT specializes on (``tensordesc<fp16[64, 32]>``). Gluon's descriptor (a layout too)
    types otherwise: not described."""
    if type(value).__module__ != HOST_DESCRIPTOR_MODULE:
        return {
            "unsupported": f"{type(value).__module__}.TensorDescriptor (only {HOST_DESCRIPTOR_MODULE}'s is described)"
        }
    torch_name = str(value.base.dtype).split(".")[-1]
    out: dict[str, object] = {
        "descriptor": _TRITON_DTYPE.get(torch_name, torch_name),
        "shape": [int(d) for d in value.shape],
        "strides": [int(d) for d in value.strides],
        "block_shape": [int(d) for d in value.block_shape],
    }
    padding = getattr(value, "padding", None)
    if isinstance(padding, str):
        out["padding"] = padding
    return out


def compile_view(src: Any, options: Any) -> dict[str, object]:
    """What the JIT passed to ``triton.compile``: the ASTSource's signature, constants, the indices
    it marked ``tt.divisibility`` (3.3+; 3.2's AttrsDescriptor as text), and the options."""
    signature = getattr(src, "signature", None) or {}
    view: dict[str, object] = {"signature": {str(k): str(v) for k, v in dict(signature).items()}}
    attrs = getattr(src, "attrs", None)
    if isinstance(attrs, dict):
        view["divisible"] = sorted(
            k[0]
            for k, v in attrs.items()
            if isinstance(k, tuple) and len(k) == 1 and any("tt.divisibility" in str(x) for x in v)
        )
    else:
        view["attrs"] = repr(attrs)[:2000]
    constants = getattr(src, "constants", None) or getattr(src, "constexprs", None) or {}
    view["constants"] = {repr(k): repr(v)[:200] for k, v in dict(constants).items()}
    opts = options if isinstance(options, dict) else dict(getattr(options, "__dict__", {}) or {})
    view["options"] = {k: opts[k] for k in ("num_warps", "num_stages", "num_ctas", "maxnreg") if k in opts}
    return view


def _capturing() -> bool:
    """A CUDA graph is being captured: reading a tensor's values (a device sync) would break it."""
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_current_stream_capturing())
    except Exception:
        return False


def _config_view(config: Any) -> dict[str, object]:
    """An autotune / inductor Config as JSON: its keywords and options."""
    out: dict[str, object] = {"kwargs": {k: describe(v) for k, v in (getattr(config, "kwargs", None) or {}).items()}}
    for opt in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
        value = getattr(config, opt, None)
        if value is not None:
            out[opt] = value
    return out


def _inductor_meta(meta: Mapping[str, Any]) -> dict[str, object]:
    """inductor's triton_meta as JSON: signature, constants, and the divisibility of its configs."""
    out: dict[str, object] = {
        "signature": {str(k): str(v) for k, v in (meta.get("signature") or {}).items()},
        "constants": {str(k): describe(v) for k, v in (meta.get("constants") or {}).items()},
    }
    configs = meta.get("configs") or []
    if configs:
        attrs = configs[0]
        divisible: list[Any] = []
        if isinstance(attrs, dict):  # {(index,): [["tt.divisibility", 16]]} (torch 2.6+)
            divisible = [list(k) for k, v in attrs.items() if any("divisib" in str(x) for x in v)]
        else:
            divisible = list(getattr(attrs, "divisibility_16", None) or getattr(attrs, "divisible_by_16", None) or [])
        out["divisible_by_16"] = divisible
    for key in ("device", "device_type", "cc"):
        if key in meta:
            out[key] = str(meta[key])
    return out


# ---------------------------------------------------------------------------------------- snapshots
def snapshot_of(fn: Any) -> dict[str, object]:
    """The source a kernel needs to compile elsewhere: its module's file, the modules of the same
    top-level package it imports (transitively), and the modules of @triton.jit helpers it calls
    from other packages. Files by path under a root that makes their module names importable;
    parent packages not taken get empty ``__init__.py``. ``notes``: imports left to the toolchain
    (triton, torch: inductor's runtime helpers)."""
    module_name = getattr(fn, "__module__", None) or "__main__"
    file = getattr(getattr(fn, "__code__", None), "co_filename", None)
    files: dict[str, str] = {}
    notes: list[str] = []
    kernel_module, kernel_path = _place(module_name, file)
    queue: list[tuple[str, str | None]] = [(module_name, file)]
    for helper_module, helper_file in _helper_modules(fn):
        queue.append((helper_module, helper_file))
    seen: set[str] = set()
    stubbed: dict[str, str] = {}
    while queue and len(files) < MAX_SNAPSHOT_FILES:
        name, path = queue.pop(0)
        if name in seen or not path or not os.path.isfile(path):
            continue
        seen.add(name)
        _, rel = _place(name, path)
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        files[rel] = text
        top = name.split(".")[0]
        for imported in [*_imports(text, name, path.endswith("__init__.py")), *sorted(_DYNAMIC_IMPORTS.get(name, ()))]:
            if imported.startswith(INDUCTOR_RUNTIME):
                # inductor's runtime: the modules with @triton.jit helpers (triton_helpers) and what
                # they import are carried; host-side ones (triton_heuristics, hints) become stubs
                target = _module_file(imported)
                if target is None:
                    continue
                # (the kernel's own module is no runtime helper, even where inductor names it as one:
                # torch 2.11 registers generated modules as torch._inductor.runtime.compile_tasks.<hash>)
                if (name.startswith(INDUCTOR_RUNTIME) and name != module_name) or _defines_jit(imported):
                    queue.append(target)
                else:
                    stubbed.setdefault(imported, target[1])
                continue
            itop = imported.split(".")[0]
            if itop in _NOT_SNAPSHOTTED:
                continue
            if itop == top:
                target = _module_file(imported)
                if target is not None:
                    queue.append(target)
    stubs = sorted(m for m in stubbed if m not in seen)
    for module in stubs:
        files[_place(module, stubbed[module])[1]] = INDUCTOR_STUB
    for rel in list(files):
        parts = rel.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            init = "/".join(parts[:i]) + "/__init__.py"
            files.setdefault(init, "")
    qualname = str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", ""))
    recorded: dict[str, dict[str, object]] = {}
    try:  # never at the cost of the snapshot: without the file the module's statements run, as before
        recorded = recorded_globals(
            fn, {name: files.get(_place(name, getattr(sys.modules.get(name), "__file__", None))[1]) for name in seen}
        )
        if recorded:
            files[GLOBALS_FILE] = globals_file_text(recorded)
    except Exception as exc:
        notes.append(f"the module-level values the kernel reads were not kept ({type(exc).__name__}: {exc})"[:300])
    if "." in qualname and kernel_path in files:  # defined in a class or function body: no module attribute
        kernel_module = _nested_module(
            fn, qualname, files, kernel_path, module_name, kernel_module, notes, recorded.get(kernel_module)
        )
        kernel_path = kernel_module + ".py"
    carried = sorted(m for m in seen if m.startswith(INDUCTOR_RUNTIME))
    if carried or stubs:
        notes.append(
            f"inductor's runtime helpers carried: {', '.join(carried) or 'none'}; host-side modules "
            f"replaced by inert stubs: {', '.join(stubs) or 'none'} (torch itself is an empty package there)"
        )
    text = files.get(kernel_path, "")
    return {
        "module": kernel_module,
        "original_module": module_name,
        "file": file,
        "source_sha256": hashlib.sha256(text.encode()).hexdigest(),
        "snapshot": {"files": files, "notes": sorted(set(notes))},
        "package": _distribution(module_name),
    }


# A snapshot's record of the module-level values its kernels read (``recorded_globals``); the compile
# worker uses them in place of the module's host code (kernel_source.GLOBALS_FILE: the same name).
GLOBALS_FILE = "_ktriage_globals.py"
GLOBALS_FORMAT = 1
_JIT_TYPES = ("JITFunction", "JITCallable", "ConstexprFunction")


def recorded_globals(fn: Any, modules: dict[str, str | None]) -> dict[str, dict[str, object]]:
    """The module-level values the snapshot's kernels read, as this program has them: per snapshotted
    module (by its name in the snapshot), ``values`` (global name -> encoded value) and ``defaults``
    (function -> parameter -> encoded default).

    Why: a kernel's module computes some of them with host code (``is_hip_ =
    current_platform.is_rocm()``, ``tl`` and ``triton`` re-exported by ``vllm.triton_utils``,
    ``FP8_MIN = float8_info.min`` as a default) that a compile machine cannot run. The JIT compiled
    with these values; the compile worker puts them in place of the statements that computed them.
    Every @triton.jit function of a module is read, not only the launched one, so that the kernels of
    one module share one snapshot. The names are those the functions' code reads (``co_names``) and
    their decorators and defaults read (the module's ``ast``); a value is kept when
    :func:`encode_global` can say it (numbers, bools, strings, None, ``tl.constexpr``, Triton dtypes,
    modules and importable functions), else the statement that computes it stays, as before. Every
    name bound to Triton or its parts is kept too, so that an import statement that binds several
    (``from vllm.triton_utils import tl, triton``) has a value for each."""
    out: dict[str, dict[str, object]] = {}
    for name, text in sorted(modules.items()):
        module = sys.modules.get(name)
        if module is None or text is None:
            continue
        namespace = vars(module)
        functions = [j.fn for j in (_unwrap_jit(v) for v in list(namespace.values())) if j is not None]
        functions = [f for f in functions if getattr(f, "__globals__", None) is namespace]
        if getattr(fn, "__globals__", None) is namespace and fn not in functions:
            functions.append(fn)  # a kernel defined in a class or function body reads this module too
        if not functions:
            continue
        names: set[str] = set()
        defaults: dict[str, dict[str, object]] = {}
        for function in functions:
            names |= _code_names(getattr(function, "__code__", None))
            own = _encoded_defaults(function)
            if own:
                defaults[str(function.__qualname__)] = own
        names |= _decorator_and_default_names(text, tuple(sorted({str(f.__qualname__) for f in functions})))
        # Triton itself as the module binds it (``from vllm.triton_utils import tl, triton``): the
        # statement then has a value for each name it binds, even where no kernel reads one of them
        names |= {n for n, v in list(namespace.items()) if _from_triton(v)}
        values: dict[str, object] = {}
        for global_name in sorted(names):
            if global_name in namespace and not global_name.startswith("__"):
                encoded = encode_global(namespace[global_name], name)
                if encoded is not _NOT_ENCODED:
                    values[global_name] = encoded
        if values or defaults:
            out[_place(name, getattr(module, "__file__", None))[0]] = {"values": values, "defaults": defaults}
    return out


def _from_triton(value: Any) -> bool:
    """Triton or one of its modules, functions or classes (not a value of the user's)."""
    name = getattr(value, "__name__", None) if type(value).__name__ == "module" else getattr(value, "__module__", None)
    return (
        isinstance(name, str)
        and (name == "triton" or name.startswith("triton."))
        and (type(value).__name__ == "module" or callable(value))
    )


def _unwrap_jit(value: Any) -> Any:
    """The @triton.jit function inside ``@triton.autotune``/``@triton.heuristics`` wrappers, or None."""
    for _ in range(8):
        if type(value).__name__ in _JIT_TYPES and callable(getattr(value, "fn", None)):
            return value
        value = getattr(value, "fn", None)
        if value is None or not type(value).__module__.startswith("triton"):
            return None
    return None


def _code_names(code: Any) -> set[str]:
    """The global (and attribute) names a function's code reads, its nested code objects included."""
    names: set[str] = set()
    stack = [code] if code is not None else []
    while stack:
        current = stack.pop()
        names.update(current.co_names)
        stack.extend(c for c in current.co_consts if hasattr(c, "co_names"))
    return names


@functools.lru_cache(maxsize=32)
def _decorator_and_default_names(text: str, qualnames: tuple[str, ...]) -> frozenset[str]:
    """Names the decorators and default values of the module's top-level defs named in ``qualnames``
    read (``@triton.jit`` reads ``triton``; ``= float8_info.min`` reads ``float8_info``). Cached: each
    kernel of a module asks at its first launch, and parsing a large module costs milliseconds."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return frozenset()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in qualnames:
            for expr in [*node.decorator_list, *node.args.defaults, *(d for d in node.args.kw_defaults if d)]:
                names |= {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
    return frozenset(names)


def _encoded_defaults(fn: Any) -> dict[str, object]:
    """A function's parameter defaults as evaluated when its def ran, those :func:`encode_global` can say."""
    import inspect

    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}
    out: dict[str, object] = {}
    for name, param in parameters.items():
        if param.default is not param.empty:
            encoded = encode_global(param.default, getattr(fn, "__module__", None))
            if encoded is not _NOT_ENCODED and not (
                isinstance(encoded, dict) and ("module" in encoded or "import" in encoded)
            ):
                out[name] = encoded
    return out


_NOT_ENCODED = object()


def encode_global(value: Any, module_name: str | None) -> Any:
    """A module-level value as a literal the compile worker turns back into it
    (kernel_source.value_source): plain values as themselves (a float that is not finite as
    ``{"float": "inf"}``), ``{"constexpr": v}``, ``{"tl": "float16"}`` (a Triton dtype),
    ``{"module": "triton.language"}``, ``{"import": "pkg.mod:name"}`` (a function or class that its
    module's attribute of that name is; not the module's own functions, whose defs the worker keeps);
    ``_NOT_ENCODED`` for anything else."""
    if value is None or type(value) in (bool, int, str):  # an IntEnum or str subclass is no plain value
        return value
    if type(value) is float:
        return value if value == value and value not in (float("inf"), float("-inf")) else {"float": repr(value)}
    kind, where = type(value).__name__, type(value).__module__
    if kind == "constexpr" and where.startswith("triton"):
        inner = encode_global(getattr(value, "value", None), module_name)
        plain = not isinstance(inner, dict) or "float" in inner or "tl" in inner
        return {"constexpr": inner} if inner is not _NOT_ENCODED and plain else _NOT_ENCODED
    if where.startswith("triton.language") and isinstance(getattr(value, "name", None), str):
        described = describe(value)
        return described if isinstance(described, dict) and "tl" in described else _NOT_ENCODED
    if kind == "module":
        name = getattr(value, "__name__", None)
        return {"module": name} if isinstance(name, str) and sys.modules.get(name) is value else _NOT_ENCODED
    owner, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if (
        isinstance(owner, str)
        and isinstance(qualname, str)
        and qualname.isidentifier()
        and owner != module_name
        and owner != "__main__"
        and getattr(sys.modules.get(owner), qualname, None) is value
    ):
        return {"import": f"{owner}:{qualname}"}
    return _NOT_ENCODED


def globals_file_text(recorded: dict[str, dict[str, object]]) -> str:
    """The snapshot file of :func:`recorded_globals`: Python literals only (the worker reads it with
    ``ast.literal_eval``, never runs it)."""
    import pprint

    return (
        '"""Written by `ktriage record`: the module-level values the kernels of this snapshot read, as the\n'
        'recorded program had them (the compile worker uses them in place of the module\'s host code)."""\n\n'
        f"FORMAT = {GLOBALS_FORMAT}\nGLOBALS = {pprint.pformat(recorded, width=110)}\n"
    )


def _nested_module(
    fn: Any,
    qualname: str,
    files: dict[str, str],
    kernel_path: str,
    module_name: str,
    placed_as: str,
    notes: list[str],
    recorded: dict[str, object] | None = None,
) -> str:
    """A kernel defined in a class or function body (TritonBench's softmax: a method's kernel) is no
    attribute of its module: its own source (``kernel_source.extract``: its def and the module-level
    statements it needs, relative imports made absolute) becomes a module of the snapshot, with the
    values it closes over as assignments, and the module's recorded values (``recorded_globals``) in
    place of the statements that computed them. Returns that module's name."""
    source = _kernel_source_module()
    package = None
    if placed_as == module_name:
        package = module_name if kernel_path.endswith("/__init__.py") else module_name.rpartition(".")[0] or None
    lines, needs, carried, dropped = closure_lines(fn)
    values, defaults = source.recorded_sources(recorded)  # the module's values, as for a top-level kernel
    text, _ = source.extract(
        files[kernel_path],
        qualname,
        package=package,
        extra_lines=lines,
        extra_needs=needs,
        values=values,
        defaults=defaults.get(qualname),
    )
    name = f"ktr_{fn.__name__}_" + hashlib.sha256(f"{module_name}:{qualname}".encode()).hexdigest()[:8]
    files[name + ".py"] = text
    note = (
        f"{qualname} is defined in a {'function' if '<locals>' in qualname else 'class'} body of {module_name}: "
        f"compiled from its own source (module {name})"
    )
    if carried:
        note += f"; closed-over values carried: {', '.join(carried)}"
    notes.append(note)
    if dropped:
        notes.append(f"closed-over values that cannot be carried (the kernel may not compile): {', '.join(dropped)}")
    return name


def _kernel_source_module() -> Any:
    """``kernel_source.py`` beside this file, loaded by path under a private name (no sibling of the
    hook becomes importable in the user's program)."""
    name = "_ktriage_record_kernel_source"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(
            name, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel_source.py")
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module


def closure_lines(fn: Any) -> tuple[list[str], list[str], list[str], list[str]]:
    """The values a nested kernel closes over, as module-level source: (lines, names of the kernel's
    module they read, ``name=value`` carried, ``name (type)`` dropped). Triton 3.4+ resolves a
    kernel's free variables from its closure (3.3 from its globals only): as globals of the extracted
    module they resolve the same. Plain values, ``tl.constexpr``, Triton dtypes, modules and
    ``@triton.jit`` functions are carried; anything else is named as dropped."""
    lines: list[str] = []
    needs: list[str] = []
    carried: list[str] = []
    dropped: list[str] = []
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    uses_tl = False
    for name, cell in zip(getattr(code, "co_freevars", ()), cells):
        try:
            value = cell.cell_contents
        except ValueError:
            dropped.append(f"{name} (unbound)")
            continue
        expr = _value_source(value)
        if expr is not None:
            uses_tl = uses_tl or "_ktr_tl." in expr
            lines.append(f"{name} = {expr}")
            carried.append(f"{name}={expr.replace('_ktr_tl.', 'tl.')}")
        elif type(value).__name__ == "module":
            lines.append(f"import {value.__name__} as {name}")
            carried.append(f"{name}=module {value.__name__}")
        elif type(value).__name__ in ("JITFunction", "JITCallable", "ConstexprFunction") and hasattr(value, "fn"):
            inner = value.fn
            qn = getattr(inner, "__qualname__", "")
            if "." not in qn and getattr(inner, "__module__", None) == getattr(fn, "__module__", None):
                needs.append(qn)
                if qn != name:
                    lines.append(f"{name} = {qn}")
            elif "." not in qn:
                lines.append(f"from {inner.__module__} import {qn} as {name}")
            else:
                try:
                    import inspect
                    import textwrap

                    src = textwrap.dedent(inspect.getsource(inner))
                except (OSError, TypeError):
                    dropped.append(f"{name} (jit function {qn}: no source)")
                    continue
                more, more_needs, more_carried, more_dropped = closure_lines(inner)
                lines += [*src.splitlines(), *([f"{name} = {inner.__name__}"] if inner.__name__ != name else []), *more]
                needs += more_needs
                carried += more_carried
                dropped += more_dropped
            carried.append(f"{name}=jit {qn}")
        else:
            dropped.append(f"{name} ({type(value).__name__})")
    if uses_tl:
        lines.insert(0, "import triton.language as _ktr_tl")
    return lines, needs, carried, dropped


def _value_source(value: Any) -> str | None:
    """Python source that makes ``value`` again in the extracted module, or None."""
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    if isinstance(value, float):
        return (
            repr(value) if value == value and value not in (float("inf"), float("-inf")) else f"float({str(value)!r})"
        )
    kind = type(value).__name__
    try:
        import triton.language as tl
    except Exception:
        return None
    if isinstance(value, tl.constexpr):
        inner = _value_source(value.value)
        return None if inner is None else f"_ktr_tl.constexpr({inner})"
    if kind in ("dtype", "pointer_type", "block_type") or isinstance(value, getattr(tl, "dtype", ())):
        for attr in dir(tl):
            try:
                if getattr(tl, attr) is value:
                    return f"_ktr_tl.{attr}"
            except Exception:
                continue
    return None


INDUCTOR_RUNTIME = "torch._inductor.runtime."
# A host-side inductor module in a snapshot: everything it defines is an inert object, a decorator
# call returns the function it decorates (``@triton_heuristics.pointwise(...)`` keeps the JITFunction).
INDUCTOR_STUB = '''"""Written by `ktriage record`: a host-side module of inductor's runtime (autotuning, launching).
Compiling a kernel needs none of it; every name it had is an inert object here."""


class _Inert:
    def __call__(self, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return self

    def __getattr__(self, name):
        return self


_inert = _Inert()


def __getattr__(name):
    return _inert
'''


def _defines_jit(module_name: str) -> bool:
    module = sys.modules.get(module_name)
    return module is not None and any(type(v).__name__ == "JITFunction" for v in list(vars(module).values()))


def _place(module_name: str, file: str | None) -> tuple[str, str]:
    """The module name a snapshot file is importable by, and its path in the snapshot. A module whose
    name matches its file's path keeps both (``liger_kernel.ops.utils`` -> liger_kernel/ops/utils.py);
    ``__main__``, a file loaded by path (inductor's generated modules) becomes a top-level module
    named after the file."""
    base = os.path.basename(file or "kernel.py")
    stem = base[:-3] if base.endswith(".py") else base
    parts = module_name.split(".")
    if file and module_name != "__main__" and all(p.isidentifier() for p in parts):
        norm = file.replace(os.sep, "/")
        as_module = "/".join(parts)
        if norm.endswith("/" + as_module + ".py") or norm == as_module + ".py":
            return module_name, as_module + ".py"
        if norm.endswith("/" + as_module + "/__init__.py"):
            return module_name, as_module + "/__init__.py"
    safe = "".join(c if c.isalnum() or c == "_" else "_" for c in stem) or "kernel"
    if not safe[0].isalpha():
        safe = "k_" + safe
    digest = hashlib.sha256((file or module_name).encode()).hexdigest()[:8]
    name = f"ktr_{safe}_{digest}"
    return name, name + ".py"


def _imports(text: str, module_name: str, is_package: bool) -> list[str]:
    """The modules ``text`` imports (relative imports resolved), submodules named in ``from X import y``."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    package = module_name if is_package else module_name.rpartition(".")[0]
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
                base = ".".join([*parts, *([node.module] if node.module else [])])
            if not base:
                continue
            found.append(base)
            found += [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]
    return found


def _module_file(name: str) -> tuple[str, str] | None:
    """(name, file) of an imported module, from sys.modules or a find_spec that runs nothing."""
    module = sys.modules.get(name)
    file = getattr(module, "__file__", None) if module is not None else None
    if file is None:
        try:
            spec = importlib.util.find_spec(name) if name.rpartition(".")[0] in sys.modules or "." not in name else None
        except (ImportError, ValueError, AttributeError):
            spec = None
        file = getattr(spec, "origin", None) if spec is not None else None
    if not file or not str(file).endswith(".py"):
        return None
    return name, str(file)


def _helper_modules(fn: Any) -> list[tuple[str, str | None]]:
    """Modules outside the kernel's top-level package that define @triton.jit functions it references."""
    found: list[tuple[str, str | None]] = []
    top = (getattr(fn, "__module__", "") or "").split(".")[0]
    closed = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            closed.append(cell.cell_contents)
        except ValueError:
            continue
    for value in [*list(getattr(fn, "__globals__", {}).values()), *closed]:
        inner = getattr(value, "fn", None)
        mod_name = None
        if inner is not None and type(value).__name__ in ("JITFunction", "JITCallable", "ConstexprFunction"):
            mod_name = getattr(inner, "__module__", None)
        elif type(value).__name__ == "module" and any(
            type(v).__name__ == "JITFunction" for v in list(vars(value).values())[:2000]
        ):
            mod_name = value.__name__
        if not mod_name or mod_name.split(".")[0] in _NOT_SNAPSHOTTED or mod_name.split(".")[0] == top:
            continue
        module = sys.modules.get(mod_name)
        found.append((mod_name, getattr(module, "__file__", None)))
    return found


_DIST_CACHE: dict[str, str | None] = {}


def _distribution(module_name: str) -> str | None:
    """``name==version`` of the installed distribution that provides a module's top-level package."""
    top = module_name.split(".")[0]
    if top in _DIST_CACHE:
        return _DIST_CACHE[top]
    result = None
    try:
        from importlib.metadata import packages_distributions, version

        dists = packages_distributions().get(top, [])
        if dists:  # the normalized name (PEP 503), as specs write it: liger_kernel -> liger-kernel
            name = "-".join(part for part in dists[0].replace("_", "-").replace(".", "-").lower().split("-") if part)
            result = f"{name}=={version(dists[0])}"
    except Exception:
        result = None
    _DIST_CACHE[top] = result
    return result


def host_versions() -> dict[str, object]:
    """Triton, torch, CUDA, the GPU and its driver, as this process sees them."""
    out: dict[str, object] = {"python": sys.version.split()[0], "pid": os.getpid()}
    try:
        import triton

        out["triton"] = str(triton.__version__)
        target = triton.runtime.driver.active.get_current_target()
        arch = getattr(target, "arch", None)
        out["target"] = f"sm_{arch}" if isinstance(arch, int) else str(arch)
        out["driver_class"] = type(triton.runtime.driver.active).__name__
    except Exception as exc:
        out["triton_error"] = repr(exc)[:200]
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "__version__"):
        out["torch"] = str(torch.__version__)
        try:
            out["cuda_runtime"] = str(torch.version.cuda)
            if torch.cuda.is_available():
                out["gpu"] = torch.cuda.get_device_name()
                # the SMs explain prices the recorded launches for (ktriage.spec.sms)
                out["sm_count"] = int(
                    torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
                )
        except Exception:
            pass
    try:
        import ctypes

        lib = ctypes.CDLL("libcuda.so.1")
        version = ctypes.c_int()
        if lib.cuDriverGetVersion(ctypes.byref(version)) == 0:
            out["cuda_driver"] = f"{version.value // 1000}.{version.value % 1000 // 10}"
    except Exception:
        pass
    return out


# ---------------------------------------------------------------------------------------- patching
_recorder: Recorder | None = None

# Modules imported with importlib.import_module while another module's top-level code ran: the
# importing module -> what it imported. A library that picks its backends at import time (fla-core's
# ``@dispatch('common')`` imports ``fla.ops.common.backends``) has no import statement for them, so
# the snapshot's static reading of the source alone would leave them out.
_DYNAMIC_IMPORTS: dict[str, set[str]] = {}


def _watch_dynamic_imports() -> None:
    """Wrap importlib.import_module (once) to note which module's import asked for what."""
    import importlib

    original = importlib.import_module
    if getattr(original, "_ktriage_record", False):
        return

    def import_module(name: str, package: str | None = None) -> Any:
        module = original(name, package)
        try:
            frame: Any = sys._getframe(1)
            while frame is not None and frame.f_code.co_name != "<module>":
                frame = frame.f_back
            importer = frame.f_globals.get("__name__") if frame is not None else None
            if isinstance(importer, str) and importer.split(".")[0] == module.__name__.split(".")[0]:
                _DYNAMIC_IMPORTS.setdefault(importer, set()).add(module.__name__)
        except Exception:
            pass
        return module

    import_module._ktriage_record = True  # type: ignore[attr-defined]
    importlib.import_module = import_module


def patch_triton() -> None:
    """Wrap JITFunction.run and Autotuner.run (once)."""
    from triton.runtime import autotuner as autotuner_module
    from triton.runtime.jit import JITFunction

    rec = _recorder
    if rec is None or getattr(JITFunction.run, "_ktriage_record", False):
        return
    original_run = JITFunction.run

    def first_launch(fn: Any, args: tuple[Any, ...], grid: Any, kwargs: dict[str, object], key: Any) -> Any:
        """A launch not counted: recorded, with its key filed for the compile it may trigger."""
        key = rec.jit_launch(fn, args, grid, kwargs, key)
        local = rec._local.__dict__
        previous = local.get("current_key")
        local["current_key"] = key
        try:
            return original_run(fn, *args, grid=grid, warmup=False, **kwargs)
        finally:
            local["current_key"] = previous

    def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        """``fn.run``, as autotuners, heuristics and libraries call it."""
        if warmup:
            return original_run(self, *args, grid=grid, warmup=warmup, **kwargs)
        # The hot path, inlined (no method layers, no thread-local bookkeeping): a repeat launch
        # cannot compile, so nothing needs the key filed for triton.compile.
        try:
            key: Any = jit_key(self, args, grid, kwargs)
            if rec.counted(key):
                return original_run(self, *args, grid=grid, warmup=warmup, **kwargs)
        except Exception:
            key = None
        return first_launch(self, args, grid, kwargs, key)

    def getitem(self: Any, grid: Any) -> Any:
        """``fn[grid]``: Triton's proxy calls ``self.run``, one more call layer with its arguments
        packed again (~0.5 us); this one counts a repeat launch and calls the JIT's own run."""
        if type(self).run is not run:  # a subclass with a run of its own: through it, as Triton does
            return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)

        def launch(*args: Any, **kwargs: Any) -> Any:
            try:
                key: Any = jit_key(self, args, grid, kwargs)
                if rec.counted(key):
                    return original_run(self, *args, grid=grid, warmup=False, **kwargs)
            except Exception:
                key = None
            return first_launch(self, args, grid, kwargs, key)

        return launch

    run._ktriage_record = True  # type: ignore[attr-defined]
    JITFunction.run = run
    JITFunction.__getitem__ = getitem
    # The JIT's binder takes ``compile`` from triton.compiler when it is created (first launch of a
    # function): wrapped here, before any launch, it sees what the JIT passes to the compiler.
    import triton.compiler as compiler_package
    import triton.compiler.compiler as compiler_module

    original_compile = compiler_module.compile

    def compile(src: Any, *args: Any, **kwargs: Any) -> Any:
        kernel = original_compile(src, *args, **kwargs)
        rec.compile_done(src, kwargs.get("options") if "options" in kwargs else (args[1] if len(args) > 1 else None))
        return kernel

    compiler_module.compile = compile
    compiler_package.compile = compile
    tuner_cls = autotuner_module.Autotuner
    original_tune = tuner_cls.run

    def tune(self: Any, *args: Any, **kwargs: Any) -> Any:
        return rec.autotune_run(self, original_tune, args, kwargs)

    tuner_cls.run = tune
    heur_cls = autotuner_module.Heuristics
    original_heur = heur_cls.run

    def heur(self: Any, *args: Any, **kwargs: Any) -> Any:
        return rec.heuristics_run(self, original_heur, args, kwargs)

    heur_cls.run = heur


def patch_inductor() -> None:
    """Wrap inductor's CachingAutotuner.run (once): torch.compile's Triton kernels launch there."""
    from torch._inductor.runtime import triton_heuristics

    rec = _recorder
    cls = getattr(triton_heuristics, "CachingAutotuner", None)
    if rec is None or cls is None or getattr(cls.run, "_ktriage_record", False):
        return
    original = cls.run

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        # inductor drops its config list once compiled (self.configs = None): read it before the first run
        configs = list(getattr(self, "configs", None) or []) if id(self) not in rec.kernels else None
        result = original(self, *args, **kwargs)
        rec.inductor_launch(self, args, kwargs, configs)
        return result

    run._ktriage_record = True  # type: ignore[attr-defined]
    cls.run = run


class _PostImport(importlib.abc.MetaPathFinder):
    """Runs a patch right after a watched module finished importing."""

    def __init__(self, watched: dict[str, Callable[[], None]]) -> None:
        self.watched = watched
        self._busy: set[str] = set()

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in self.watched or fullname in self._busy:
            return None
        self._busy.add(fullname)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy.discard(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        patch = self.watched[fullname]
        original_exec = loader.exec_module

        def exec_module(module: Any) -> None:
            original_exec(module)
            _safely(patch)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _safely(patch: Any) -> None:
    try:
        patch()
    except Exception as exc:
        sys.stderr.write(f"ktriage record: could not hook {getattr(patch, '__name__', patch)}: {exc!r}\n")
        if _recorder is not None:
            _recorder._not_captured("<hook>", f"{getattr(patch, '__name__', patch)}: {traceback.format_exc()[-800:]}")


WATCHED = {"triton": patch_triton, "torch._inductor.runtime.triton_heuristics": patch_inductor}


def install(journal_path: str) -> Recorder:
    """Start recording into ``journal_path``: patch now what is imported, the rest when imported."""
    global _recorder
    if _recorder is not None:
        return _recorder
    journal = Journal(journal_path)
    _recorder = Recorder(journal)
    _safely(_watch_dynamic_imports)
    journal.write(
        {
            "type": "header",
            "format_version": JOURNAL_FORMAT,
            "kind": JOURNAL_KIND,
            "argv": list(sys.argv),
            "pid": os.getpid(),
            "started": time.time(),
        }
    )
    pending = {}
    for name, patch in WATCHED.items():
        if name in sys.modules:
            _safely(patch)
        else:
            pending[name] = patch
    if pending:
        sys.meta_path.insert(0, _PostImport(pending))
    atexit.register(_recorder.finish)
    return _recorder


def recorder() -> Recorder | None:
    return _recorder
