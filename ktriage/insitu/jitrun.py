"""Drive Triton's real launch path for described launches, without a GPU, and record what the JIT did.

Run inside a toolchain's interpreter as ``python jitrun.py REQUEST.json RESULT.json``. For each case of
the request it imports the kernel as the library exposes it (decorators kept), builds stand-in
arguments (fakedriver.FakeTensor for tensors), and calls ``kernel[grid](**args, **options)``: the
``@triton.heuristics`` rules, the ``@triton.autotune`` binding (the fake benchmarker picks one config
and compiles only that one), the JIT's binder and specialization, and ``triton.compile`` all run as on a
GPU host. Recorded per case:

- every JIT-level launch (``JITFunction.run``): its bound arguments by name, encoded (tensors as their
  dtype and alignment, Triton dtypes by name), and its option keywords (num_warps, num_stages, ...);
- every compile the JIT made: the ASTSource it built (signature, constants, attributes), the options,
  the cubin (written next to the result) and Triton's ptxas command line and log;
- the autotuner's config list and the config the launch ran with.

The host then derives ktriage's own spec from each recorded launch, compiles it through ktriage, and
compares (ktriage/fidelity). Recording without a GPU in tests uses the same file.

Request: {"target_cc": 90, "prime": bool, "out_dir": str, "cases": [{"id": str, "source": str,
          "sys_path": [str], "args": [[name, encoded]], "options": {...}, "grid": [int],
          "autotune_pick": int}]}
Encoded values: JSON scalars as they are; {"tensor": "fp32", "aligned": true, "shape": [..]};
          {"tl": "float32"} for a Triton dtype; {"constexpr": v} for ``tl.constexpr(v)``; a host-side tensor
          descriptor as {"descriptor": "fp16", "shape", "strides", "block_shape"} (and "padding": "nan").

Runs inside a toolchain's interpreter: stdlib + that Triton only, never ``ktriage``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
import tempfile
import traceback
from collections.abc import Iterable
from typing import Any, TypedDict

if __package__:
    from ktriage.insitu import fakedriver, launch_hook, ptxas_capture, worker
else:
    import fakedriver  # type: ignore[import-not-found,no-redef]
    import launch_hook  # type: ignore[import-not-found,no-redef]
    import ptxas_capture  # type: ignore[import-not-found,no-redef]
    import worker  # type: ignore[import-not-found,no-redef]

FORMAT_VERSION = 1


def decode(value: Any, name: str = "") -> Any:
    """An encoded launch value as the object the library would pass."""
    if isinstance(value, dict):
        if "descriptor" in value:
            return descriptor(value, name)
        if "tensor" in value:
            return fakedriver.FakeTensor(
                value["tensor"], aligned=bool(value.get("aligned", True)), shape=tuple(value.get("shape") or (1,))
            )
        if "tl" in value:
            import triton.language as tl

            return getattr(tl, value["tl"])
        if "constexpr" in value:
            import triton.language as tl

            return tl.constexpr(value["constexpr"])
        raise worker.WorkerError("case", f"unknown encoded value {value!r}")
    return value


def descriptor(value: dict[str, Any], name: str) -> Any:
    """The host-side ``TensorDescriptor`` a launch passes, over a stand-in tensor of its shape and strides:
    the JIT types it from the descriptor itself (``tensordesc<fp16[64, 64]>``), as for a real one. A Triton
    without ``triton.tools.tensor_descriptor`` (before 3.4) has no such argument, one without its
    ``padding`` field (3.4) no NaN padding: refused, naming the version and the fix."""
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
    except ImportError:
        raise worker.no_host_descriptors(name) from None
    shape, strides = list(value["shape"]), list(value["strides"])
    base = fakedriver.FakeTensor(value["descriptor"], shape=tuple(shape), strides=tuple(strides))
    padding = value.get("padding", "zero")
    if padding == "zero":  # the default; Triton 3.4's descriptor has no field for it
        return TensorDescriptor(base, shape, strides, list(value["block_shape"]))
    if "padding" not in {f.name for f in dataclasses.fields(TensorDescriptor)}:
        import triton

        raise worker.no_descriptor_padding(name, str(padding), triton.__version__)
    return TensorDescriptor(base, shape, strides, list(value["block_shape"]), padding=padding)


def encode_descriptor(
    dtype: str, shape: Iterable[int], strides: Iterable[int], block_shape: Iterable[int], padding: str = "zero"
) -> dict[str, Any]:
    """A host-side tensor descriptor as this harness's request and result encode it, and the spec's
    ``launch`` keeps it (spec/launch.encode_value): ``padding`` only when not ``"zero"``, the default and
    all Triton 3.4 has, so the same descriptor is one spec and 3.4 compiles it. The launch hook writes
    its own (it imports no sibling, and keeps ``"zero"`` where the recording Triton has the field)."""
    encoded: dict[str, Any] = {
        "descriptor": dtype,
        "shape": [int(d) for d in shape],
        "strides": [int(d) for d in strides],
        "block_shape": [int(d) for d in block_shape],
    }
    if padding != "zero":
        encoded["padding"] = padding
    return encoded


_TRITON_DTYPE = {torch_name: triton_name for triton_name, torch_name in fakedriver.TORCH_DTYPE.items()}


def encode(value: Any) -> Any:
    """What the JIT received, as JSON the host can turn back into launch values (stand-in tensors, and
    real torch tensors when a real program is recorded on a GPU host)."""
    if isinstance(value, fakedriver.FakeTensor):
        return {"tensor": value.triton_dtype, "aligned": value.data_ptr() % 16 == 0}
    if type(value).__name__ == "TensorDescriptor" and isinstance(getattr(value, "base", None), fakedriver.FakeTensor):
        # a spec's descriptor (launch_spec._descriptor), as the spec wrote it
        return encode_descriptor(
            value.base.triton_dtype, value.shape, value.strides, value.block_shape, getattr(value, "padding", "zero")
        )
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        name = str(value.dtype).split(".")[-1]
        return {
            "tensor": _TRITON_DTYPE.get(name, name),
            "aligned": value.data_ptr() % 16 == 0,
            "shape": list(getattr(value, "shape", ())),
        }
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if type(value).__name__ == "constexpr":
        return encode(getattr(value, "value", None))
    dtype_name = getattr(value, "name", None)
    if type(value).__module__.startswith("triton.language") and isinstance(dtype_name, str):
        return {"tl": launch_hook.tl_attribute(value)}
    return {"unsupported": f"{type(value).__name__}: {value!r}"[:200]}


class Launch(TypedDict, total=False):
    """One ``JITFunction.run`` the case made: the function, its arguments (encoded), the compiles it caused."""

    function: str
    module: str | None
    file: str | None
    args: list[list[object]]
    options: dict[str, object]
    compiles: list[int]
    kernel_hash: str | None


class Case(TypedDict, total=False):
    """One case of the harness's input: a launchable by source and the launch's encoded values."""

    id: str
    source: str
    sys_path: list[str]
    args: list[list[Any]]  # [name, encoded value] pairs
    autotune_pick: int
    grid: list[int]
    options: dict[str, object]


class Recorder:
    """Wraps ``JITFunction.run`` and ``triton.compiler.compile`` for the duration of a case."""

    def __init__(self, out_dir: str) -> None:
        self.out_dir = out_dir
        self.launches: list[Launch] = []
        self.compiles: list[dict[str, object]] = []
        self._current: Launch | None = None

    def install(self) -> None:
        import triton.compiler
        from triton.runtime.jit import JITFunction

        recorder = self
        original_run = JITFunction.run
        original_compile = triton.compiler.compile

        def run(jit_self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            names = list(jit_self.arg_names)
            bound = dict(zip(names, args))
            options: dict[str, object] = {}
            for key, value in kwargs.items():
                if key in names:
                    bound[key] = value
                else:
                    options[key] = encode(value)
            launch: Launch = {
                "function": jit_self.fn.__name__,
                "module": getattr(jit_self.fn, "__module__", None),
                "file": getattr(jit_self.fn.__code__, "co_filename", None),
                "args": [[n, encode(bound[n])] for n in names if n in bound],
                "options": options,
                "compiles": [],
            }
            previous, recorder._current = recorder._current, launch
            try:
                kernel = original_run(jit_self, *args, grid=grid, warmup=warmup, **kwargs)
            finally:
                recorder._current = previous
            launch["kernel_hash"] = getattr(kernel, "hash", None)
            recorder.launches.append(launch)
            return kernel

        def compile(src: Any, *args: Any, **kwargs: Any) -> Any:
            ptxas_capture.take()
            kernel = original_compile(src, *args, **kwargs)
            runs = ptxas_capture.take()
            cubin = kernel.asm.get("cubin", b"")
            index = len(recorder.compiles)
            path = os.path.join(recorder.out_dir, f"jit-{index}.cubin")
            with open(path, "wb") as fh:
                fh.write(cubin)
            options = kwargs.get("options") or (args[1] if len(args) > 1 else {})
            record: dict[str, object] = {
                "index": index,
                "ast_source": worker.ast_source_view(src),
                "options": {str(k): worker._jsonable(v) for k, v in dict(options or {}).items()},
                "cubin": path,
                "cubin_sha256": hashlib.sha256(cubin).hexdigest(),
                "ptx_sha256": hashlib.sha256(kernel.asm.get("ptx", "").encode()).hexdigest(),
                "name": kernel.metadata.name,
                "ptxas_runs": runs,
            }
            recorder.compiles.append(record)
            if recorder._current is not None:
                recorder._current.setdefault("compiles", []).append(index)
            return kernel

        JITFunction.run = run
        triton.compiler.compile = compile  # create_binder imports it from here at first launch
        import triton.compiler.compiler as compiler_module

        compiler_module.compile = compile

    def take(self) -> tuple[list[Launch], list[dict[str, object]]]:
        launches, compiles = self.launches, self.compiles
        self.launches, self.compiles = [], []
        return launches, compiles


def _autotune_configs(launchable: Any) -> list[dict[str, object]] | None:
    """The config list of the launchable's ``@triton.autotune`` (subclasses too), None without one."""
    from triton.runtime.autotuner import Autotuner, Heuristics

    obj = launchable
    while isinstance(obj, (Heuristics, Autotuner)):
        if isinstance(obj, Autotuner):
            return [{k: encode(v) for k, v in c.all_kwargs().items()} for c in obj.configs]
        obj = getattr(obj, "fn", None)
    return None


def run_case(case: Case, recorder: Recorder, bench: fakedriver.FakeBenchmarker) -> dict[str, object]:
    out: dict[str, object] = {"id": case["id"]}
    try:
        source = case["source"]
        launchable = worker.load_launchable(source, case.get("sys_path") or [])
        worker.jit_function_of(launchable, source)
        out["autotune_configs"] = _autotune_configs(launchable)
        out["heuristics"] = sorted(worker.heuristics_of(launchable))
        kwargs = {name: decode(value, name) for name, value in case["args"]}
        bench.pick = int(case.get("autotune_pick", 0))
        bench.reset()
        grid = tuple(case.get("grid") or (1,))
        launchable[grid](**kwargs, **(case.get("options") or {}))
    except worker.WorkerError as exc:
        out["error"] = f"{exc.kind}: {exc}"
    except Exception as exc:  # one case's failure is its result; the others go on
        out["error"] = f"{type(exc).__name__}: {exc}"
        out["traceback"] = traceback.format_exc()[-3000:]
    out["launches"], out["compiles"] = recorder.take()
    return out


def main(argv: list[str]) -> int:
    with open(argv[0]) as fh:
        request = json.load(fh)
    os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="ktriage-jitrun-"))
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"
    real_stdout = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    bench = fakedriver.FakeBenchmarker()
    fakedriver.install(int(request.get("target_cc", 90)), bench)
    ptxas_capture.install()
    if request.get("prime"):
        worker.prime()  # the JIT's steady state: a kernel compiled before, as in any real program
    recorder = Recorder(request["out_dir"])
    recorder.install()
    results = []
    for case in request["cases"]:
        case_dir = os.path.join(request["out_dir"], case["id"].replace("/", "_"))
        os.makedirs(case_dir, exist_ok=True)
        recorder.out_dir = case_dir
        results.append(run_case(case, recorder, bench))
        # partial results are kept if a later case kills the process (never half a file: atomic)
        worker.write_atomic(
            argv[1],
            json.dumps({"format_version": FORMAT_VERSION, "triton_version": _triton_version(), "cases": results}),
        )
    real_stdout.write(json.dumps({"cases": len(results)}) + "\n")
    real_stdout.flush()
    return 0


def _triton_version() -> str:
    import triton

    return str(triton.__version__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
