"""Record a library's Triton launches on the GPU host and turn them into KernelSpecs.

Why: a catalog recipe restates by hand what a library passes to its kernels; recording reads it
from one real run instead (any library, any version, no recipe). On the GPU host a backend runs
once with a hook on the JIT's launch path; each launch's function, grid, argument values and
options become a KernelSpec (through ktriage.spec.specialize, the one home of the JIT's rules),
saved as JSON; the CPU machine compiles those specs with any toolchain, and the replays (or a bundle)
launch them.

Hook: ``triton.runtime.jit.JITFunction.run`` is wrapped for the duration of :class:`LaunchRecorder`
(Triton 3.3 through 3.6 call it for every launch, also under ``@autotune``/``@heuristics``, with the
final config's keyword arguments), and the real launch proceeds unchanged.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ktriage.atomic import write_atomic
from ktriage.errors import FormatError, SpecError, check_format_version
from ktriage.schema.bundle import RECORDING_FIX, KernelSpecSchema, RecordingSchema
from ktriage.schema.core import check_depth, convert, parse_json, read_text, size_limit
from ktriage.spec.model import KernelSpec
from ktriage.spec.source import read_params
from ktriage.spec.specialize import specialize_launch
from ktriage.wording import plural
from ktriage.workload.ops.replay import spec_value

# Keyword arguments of a launch that are compile options, not kernel parameters.
OPTION_KEYS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
IGNORED_KEYS = ("enable_fp_fusion", "debug", "grid", "warmup", "stream", "launch_cooperative_grid")
# Triton's CUDA defaults when a launch passes none (CUDAOptions, 3.3-3.6).
DEFAULT_OPTIONS = {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "maxnreg": None}


@dataclass(frozen=True)
class JitSource:
    """Where a @triton.jit function lives: a module of an installed distribution, or a file."""

    function: str
    file: Path
    module: str | None
    package: str | None  # "liger-kernel==0.5.10" when the module belongs to a distribution

    @property
    def source(self) -> str:
        return f"{self.module}:{self.function}" if self.package and self.module else f"{self.file}:{self.function}"


def jit_source(jit_fn: Any) -> JitSource:
    """The function behind a JITFunction (``.fn``), its file, module and distribution (if any)."""
    fn = getattr(jit_fn, "fn", jit_fn)
    file = Path(inspect.getsourcefile(fn) or "")
    module = getattr(fn, "__module__", None)
    package = None
    if module:
        from importlib.metadata import PackageNotFoundError, packages_distributions, version

        dists = packages_distributions().get(module.split(".")[0], [])
        # ktriage's own kernels are named by file, as the catalog names them (never fetched from PyPI).
        if dists and dists[0] != "ktriage":
            try:
                # the normalized name (PEP 503), as catalog specs write it: liger_kernel -> liger-kernel
                package = f"{re.sub(r'[-_.]+', '-', dists[0]).lower()}=={version(dists[0])}"
            except PackageNotFoundError:
                package = None
    return JitSource(fn.__name__, file, module, package)


def launch_to_spec(
    src: JitSource,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    grid: Any,
    *,
    target: str,
    name: str | None = None,
    meta: Mapping[str, Any] | None = None,
) -> KernelSpec:
    """One launch (positional ``args`` and keyword ``kwargs`` as passed to ``kernel[grid](...)``)
    as the spec the JIT compiles for it. Tensors must have ``data_ptr()`` and ``dtype``."""
    params = read_params(src.file, src.function)
    names = [p.name for p in params]
    if len(args) > len(names):
        raise SpecError(
            f"{src.function} got {plural(len(args), 'positional argument')} for {plural(len(names), 'parameter')}",
            "record the launch exactly as the library makes it",
        )
    bound: dict[str, object] = dict(zip(names, args, strict=False))
    options: dict[str, object] = dict(DEFAULT_OPTIONS)
    for key, value in kwargs.items():
        if key in OPTION_KEYS:
            options[key] = value
        elif key in IGNORED_KEYS:
            continue
        elif key in names:
            bound[key] = value
        else:
            raise SpecError(
                f"{src.function} was launched with unknown keyword {key!r}",
                f"parameters: {names}; options: {OPTION_KEYS}",
            )
    sp = specialize_launch(params, {k: _launch_value(v) for k, v in bound.items()})
    grid_t = _resolve_grid(grid, bound, kwargs)
    return KernelSpec(
        name=name or f"{src.function}{list(grid_t)}",
        source=src.source,
        package=src.package,
        signature=sp.signature,
        constexprs=sp.constexprs,
        divisible_by_16=sp.divisible_by_16,
        equal_to_1=sp.equal_to_1,
        num_warps=_number(options["num_warps"]),
        num_stages=_number(options["num_stages"]),
        num_ctas=_number(options["num_ctas"]),
        maxnreg=None if options["maxnreg"] is None else _number(options["maxnreg"]),
        target=target,
        grid=grid_t,
        meta={"recorded": True, **dict(meta or {})},
    )


def _number(value: object) -> int:
    """A launch option the library passed (num_warps, ...): an int, as ``int()`` reads it."""
    if isinstance(value, (int, float, str)):
        return int(value)
    raise TypeError(f"launch option {value!r} is not a number")


# Triton dtype names (tl.dtype.name) -> the spelling specs use for dtype constexprs.
_TL_NAMES = {
    "fp32": "tl.float32",
    "bf16": "tl.bfloat16",
    "fp16": "tl.float16",
    "fp64": "tl.float64",
    "int1": "tl.int1",
    "int8": "tl.int8",
    "int16": "tl.int16",
    "int32": "tl.int32",
    "int64": "tl.int64",
    "uint8": "tl.uint8",
    "fp8e4nv": "tl.float8e4nv",
    "fp8e5": "tl.float8e5",
}


def _launch_value(value: Any) -> Any:
    """Tensors -> Ptr; ``tl.constexpr(x)`` -> x; Triton dtypes -> "tl.float32"; plain values as they are."""
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        return spec_value(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if type(value).__name__ == "constexpr":
        return _launch_value(getattr(value, "value", None))
    name = getattr(value, "name", None)
    if isinstance(name, str) and name in _TL_NAMES:
        return _TL_NAMES[name]
    raise SpecError(
        f"cannot record a launch argument of type {type(value).__name__}: {value!r}",
        "record kernels whose arguments are tensors, numbers, strings or Triton dtypes",
    )


def _resolve_grid(grid: Any, bound: Mapping[str, Any], kwargs: Mapping[str, Any]) -> tuple[int, ...]:
    if callable(grid):
        grid = grid({**bound, **kwargs})
    g = tuple(int(x) for x in grid)
    return g


@dataclass
class LaunchRecorder:
    """Context manager: records every Triton launch made inside it (and still runs it)."""

    target: str | None = None
    specs: list[KernelSpec] = field(default_factory=list)
    _original: Callable[..., Any] | None = None

    def __enter__(self) -> LaunchRecorder:
        from triton.runtime.jit import JITFunction

        if self.target is None:
            self.target = _device_target()
        original = self._original = JITFunction.run
        recorder = self

        def run(jit_self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            if not warmup:
                recorder.specs.append(
                    launch_to_spec(jit_source(jit_self), args, kwargs, grid, target=str(recorder.target))
                )
            return original(jit_self, *args, grid=grid, warmup=warmup, **kwargs)

        JITFunction.run = run
        return self

    def __exit__(self, *exc: object) -> None:
        from triton.runtime.jit import JITFunction

        if self._original is not None:
            JITFunction.run = self._original

    def unique(self) -> list[KernelSpec]:
        """One spec per distinct (source, signature, hints, options, grid), in first-launch order."""
        seen: dict[str, KernelSpec] = {}
        for s in self.specs:
            ident = json.dumps({**s.to_json(), "name": None, "meta": None}, sort_keys=True, default=str)
            seen.setdefault(ident, s)
        return list(seen.values())


def _device_target() -> str:
    import torch

    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


def record_backend(
    op: str, backend: str, input_id: int, mode: str, *, precision: str | None = None, device: str = "cuda"
) -> list[KernelSpec]:
    """Run a native backend once (prepare + one timed call) under the recorder; its kernel launches as specs."""
    from ktriage.workload.ops.backends import get_backend, make_input
    from ktriage.workload.ops.opdef import bench_op

    case = bench_op(op).inputs()[input_id]
    inp = make_input(op, case, precision=precision, device=device)
    b = get_backend(op, backend)
    with LaunchRecorder() as rec:
        b.prepare(inp, mode)()
    meta = {"op": op, "backend": backend, "mode": mode, "input_id": input_id, "shape": dict(case.facts)}
    return [
        s.replace(meta={**s.meta, **meta}, name=f"{backend}.{mode}[{case.label()}].{s.source_function()}")
        for s in rec.unique()
    ]


RECORDING_FORMAT = 1


def save_specs(specs: Sequence[KernelSpec], path: Path) -> Path:
    """Write recorded specs (``{"format_version": 1, "specs": [...]}``; ``KernelSpec.from_json`` reads each)."""
    write_atomic(
        path, json.dumps({"format_version": RECORDING_FORMAT, "specs": [s.to_json() for s in specs]}, indent=1)
    )
    return path


def load_specs(path: Path) -> list[KernelSpec]:
    """Read recorded specs; a bare JSON list is the format before format_version existed."""
    origin = f"recording {path}"
    data = parse_json(
        read_text(path, what="recording", limit=size_limit(256), error=FormatError), origin=origin, fix=RECORDING_FIX
    )
    check_depth(data, origin=origin)
    convert(data, RecordingSchema | list[KernelSpecSchema], origin=origin, fix=RECORDING_FIX)  # type: ignore[arg-type]
    if isinstance(data, list):
        return [KernelSpec.from_json(d) for d in data]
    check_format_version(
        data, RECORDING_FORMAT, what=f"recording {path}", fix="record it again with this ktriage version"
    )
    return [KernelSpec.from_json(d) for d in data["specs"]]
