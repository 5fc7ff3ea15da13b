"""The compile worker: runs INSIDE a toolchain's virtualenv and turns one kernel spec into Triton IRs.

Why a separate process: each toolchain has its own Triton, which cannot share an interpreter with
another Triton or with the host. This file is therefore self-contained (stdlib + the toolchain's
``triton``); it must never import ``ktriage``. The host starts it as ``python worker.py`` and talks
JSON lines over stdin/stdout (one request, one reply). ``compile_in_process`` is the same compile for
the *current* interpreter's Triton, used on GPU hosts to check that ktriage's compile equals the JIT's.

Request: {"id": str, "spec": <KernelSpec.to_json()>, "sys_path": [str], "out_dir": str}
Reply:   {"id": str, "ok": true, "files": {"ptx": path, ...}, "metadata": {...}, "triton_version": str,
          "placeholder_imports": [str]}  or  {"id": str, "ok": false, "kind": str, "error": str}
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import tempfile
import traceback
import types
from typing import Any

PROTOCOL_VERSION = 1

# Modules that kernel *libraries* import at module level for their host-side wrappers (autograd
# functions, device queries) but that no @triton.jit function needs. A toolchain does not install
# them (torch is gigabytes); when they are missing, the worker puts an inert placeholder in their
# place so that the library module imports and its Triton kernels can be compiled. The JIT-equivalence
# check on the GPU host (real torch there) verifies that the compiled PTX is the one the library runs.
PLACEHOLDER_MODULES = ("torch",)

_placeholders_used: list[str] = []


class _Inert:
    """Stands for any attribute, call result or base class of a placeholder module."""

    __version__ = "0.0.0"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> "_Inert":
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Inert()

    def __call__(self, *args: Any, **kwargs: Any) -> "_Inert":
        # Used as a decorator: keep the decorated function.
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return _Inert()

    def __getitem__(self, item: Any) -> "_Inert":
        return _Inert()

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(())

    def __bool__(self) -> bool:
        return False

    def __or__(self, other: Any) -> "_Inert":
        return self

    __ror__ = __or__

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        return (object,)


class _PlaceholderModule(types.ModuleType):
    __version__ = "0.0.0"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Inert()


class _PlaceholderFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Supplies a placeholder for PLACEHOLDER_MODULES (and their submodules) when they are not installed."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        top = fullname.split(".")[0]
        if top not in PLACEHOLDER_MODULES:
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            found = getattr(finder, "find_spec", None)
            if found is not None and found(fullname, path, target) is not None:
                return None  # the real module exists: use it
        if top not in _placeholders_used:
            _placeholders_used.append(top)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _PlaceholderModule(spec.name)
        module.__path__ = []  # type: ignore[attr-defined]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def _install_placeholder_finder() -> None:
    if not any(isinstance(f, _PlaceholderFinder) for f in sys.meta_path):
        sys.meta_path.append(_PlaceholderFinder())


class WorkerError(Exception):
    """A failure with a kind the host can report (import, signature, compile)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def load_kernel(source: str, sys_path: list[str]) -> Any:
    """Import ``path/to/file.py:fn`` or ``package.module:fn`` and return the JIT function."""
    for entry in sys_path:
        if entry not in sys.path:
            sys.path.insert(0, entry)
    _install_placeholder_finder()
    if ":" not in source:
        raise WorkerError("import", f"kernel source {source!r} must look like 'module:function' or 'file.py:function'")
    module_part, _, fn_name = source.rpartition(":")
    try:
        if module_part.endswith(".py"):
            module_name = "ktriage_src_" + str(abs(hash(os.path.abspath(module_part))))
            module = sys.modules.get(module_name)
            if module is None:
                spec = importlib.util.spec_from_file_location(module_name, module_part)
                if spec is None or spec.loader is None:
                    raise WorkerError("import", f"cannot load {module_part}")
                module = importlib.util.module_from_spec(spec)
                sys.modules[module_name] = module
                spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_part)
    except WorkerError:
        raise
    except Exception as exc:  # the user's module failed to import: say which and why
        raise WorkerError("import", f"importing {module_part} failed: {type(exc).__name__}: {exc}") from exc
    fn = getattr(module, fn_name, None)
    if fn is None:
        raise WorkerError("import", f"{module_part} has no attribute {fn_name!r}")
    if not hasattr(fn, "arg_names") or not hasattr(fn, "fn"):
        raise WorkerError("import", f"{source} is not a @triton.jit function")
    return fn


def _triton_version() -> tuple[int, int]:
    import triton

    major, minor = triton.__version__.split(".")[:2]
    return int(major), int(minor)


def _constexpr_value(value: Any) -> Any:
    """Spec files are JSON/TOML: a Triton dtype constexpr is written as the string "tl.float32"."""
    if isinstance(value, str) and value.startswith("tl."):
        import triton.language as tl

        resolved = getattr(tl, value[3:], None)
        if resolved is None:
            raise WorkerError("signature", f"constexpr value {value!r} is not an attribute of triton.language")
        return resolved
    return value


def build_source(fn: Any, spec: dict[str, Any]) -> Any:
    """Make the ASTSource the JIT would make for this launch (Triton 3.3+ conventions)."""
    from triton.compiler import ASTSource

    signature: dict[str, str] = dict(spec["signature"])
    names = list(fn.arg_names)
    if list(signature) != names:
        raise WorkerError(
            "signature",
            f"the spec's signature lists {list(signature)} but {fn.__name__} takes {names}",
        )
    constexprs: dict[str, Any] = dict(spec.get("constexprs") or {})
    for name in spec.get("equal_to_1") or ():
        signature[name] = "constexpr"
        constexprs[name] = 1
    missing = [n for n, t in signature.items() if t == "constexpr" and n not in constexprs]
    if missing:
        raise WorkerError("signature", f"no value given for constexpr parameter(s) {missing}")
    divisible = set(spec.get("divisible_by_16") or ())
    if _triton_version() < (3, 2):
        raise WorkerError("version", "ktriage compiles with Triton 3.2 and newer")
    if _triton_version() < (3, 3):
        return _build_source_3_2(fn, spec, signature, constexprs, divisible)
    consts = {(names.index(k),): _constexpr_value(v) for k, v in constexprs.items()}
    attrs = {
        (i,): ([["tt.divisibility", 16]] if name in divisible else [])
        for i, name in enumerate(names)
        if signature[name] != "constexpr"
    }
    return ASTSource(fn, signature, consts, attrs)


def _build_source_3_2(fn: Any, spec: dict[str, Any], signature: dict[str, str], constexprs: dict[str, Any],
                      divisible: set[str]) -> Any:
    """Triton 3.2's JIT: the signature lists the non-constexpr parameters (ints equal to 1 included,
    typed i32), constants are keyed by name, and an AttrsDescriptor carries the divisibility and
    equal-to-1 parameter indices."""
    from triton.backends.compiler import AttrsDescriptor
    from triton.compiler import ASTSource

    names = list(fn.arg_names)
    equal_to_1 = set(spec.get("equal_to_1") or ())
    constexpr_params = {n for n, t in signature.items() if t == "constexpr" and n not in equal_to_1}
    sig = {n: ("i32" if n in equal_to_1 else t) for n, t in signature.items() if n not in constexpr_params}
    constants = {n: _constexpr_value(v) for n, v in constexprs.items()}
    attrs = AttrsDescriptor.from_dict({
        "cls": "AttrsDescriptor",
        "arg_properties": {
            "tt.divisibility": [i for i, n in enumerate(names) if n in divisible],
            "tt.equal_to": [i for i, n in enumerate(names) if n in equal_to_1],
        },
    })
    return ASTSource(fn, sig, constants, attrs)


def _jsonable(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if hasattr(value, "_asdict"):
            return _jsonable(value._asdict())
        return [_jsonable(v) for v in value]
    return str(value)


def compile_in_process(spec: dict[str, Any], sys_path: list[str] | None = None) -> dict[str, Any]:
    """Compile one spec with this interpreter's Triton; returns the IR texts, cubin bytes and metadata."""
    import triton
    from triton.backends.compiler import GPUTarget

    fn = load_kernel(spec["source"], sys_path or [])
    src = build_source(fn, spec)
    target = spec["target"]
    cc = int(target.replace("sm_", "").rstrip("a"))
    options: dict[str, Any] = {
        "num_warps": int(spec.get("num_warps", 4)),
        "num_stages": int(spec.get("num_stages", 3)),
        "num_ctas": int(spec.get("num_ctas", 1)),
    }
    if spec.get("maxnreg"):
        options["maxnreg"] = int(spec["maxnreg"])
    try:
        kernel = triton.compile(src, target=GPUTarget("cuda", cc, 32), options=options)
    except Exception as exc:
        raise WorkerError("compile", f"{type(exc).__name__}: {exc}") from exc
    asm = dict(kernel.asm)
    result: dict[str, Any] = {k: asm[k] for k in ("ttir", "ttgir", "llir", "ptx") if k in asm}
    result["cubin"] = asm.get("cubin", b"")
    result["metadata"] = _jsonable(kernel.metadata._asdict())
    result["triton_version"] = triton.__version__
    result["placeholder_imports"] = list(_placeholders_used)
    return result


def handle(request: dict[str, Any]) -> dict[str, Any]:
    """Compile one request and write its files into request['out_dir']."""
    out_dir = request["out_dir"]
    os.makedirs(out_dir, exist_ok=True)
    result = compile_in_process(request["spec"], request.get("sys_path") or [])
    files: dict[str, str] = {}
    for key in ("ttir", "ttgir", "llir", "ptx"):
        if key in result:
            path = os.path.join(out_dir, f"kernel.{key}")
            with open(path, "w") as fh:
                fh.write(result[key])
            files[key] = path
    cubin_path = os.path.join(out_dir, "kernel.triton.cubin")
    with open(cubin_path, "wb") as fh:
        fh.write(result["cubin"])
    files["triton_cubin"] = cubin_path
    return {
        "ok": True,
        "files": files,
        "metadata": result["metadata"],
        "triton_version": result["triton_version"],
        "placeholder_imports": result["placeholder_imports"],
    }


def serve() -> None:
    """Answer JSON-line requests until stdin closes. Replies go to the real stdout only."""
    reply_stream = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything the compiler prints goes to stderr, never into the protocol
    os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="ktriage-triton-cache-"))
    reply_stream.write(json.dumps({"hello": PROTOCOL_VERSION, "python": sys.version.split()[0]}) + "\n")
    reply_stream.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except json.JSONDecodeError as exc:
            reply_stream.write(json.dumps({"ok": False, "kind": "protocol", "error": f"bad request: {exc}"}) + "\n")
            reply_stream.flush()
            continue
        try:
            reply = handle(request)
        except WorkerError as exc:
            reply = {"ok": False, "kind": exc.kind, "error": str(exc)}
        except Exception as exc:  # never let one kernel kill the worker
            reply = {"ok": False, "kind": "internal", "error": f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"}
        reply["id"] = request.get("id")
        reply_stream.write(json.dumps(reply) + "\n")
        reply_stream.flush()


if __name__ == "__main__":
    serve()
