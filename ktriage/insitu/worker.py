"""The compile worker: runs INSIDE a toolchain's virtualenv and compiles one kernel spec as the JIT does.

Why a separate process: each toolchain has its own Triton, which cannot share an interpreter with
another Triton or with the host. This file is therefore self-contained (stdlib + the toolchain's
``triton`` + its sibling modules in this folder); it must never import ``ktriage``. The host starts it
as ``python worker.py`` and talks JSON lines over stdin/stdout (one request, one reply).
``compile_in_process`` is the same compile for the *current* interpreter's Triton, used on GPU hosts
and by the JIT-equivalence harness.

The whole of Triton's pipeline runs here, cubin included: the cubin is Triton's own (its ptxas choice
for the arch, its options, its PTX ``.version``), and the ptxas command line and ``-v`` log of that run
are recorded (ptxas_capture), so that the host can re-assemble the PTX with another ptxas exactly as
this Triton would have called it.

Request: {"id": str, "spec": <KernelSpec.to_json()>, "sys_path": [str], "out_dir": str}
Reply:   {"id": str, "ok": true, "files": {"ptx": path, "triton_cubin": path, ...}, "metadata": {...},
          "triton_version": str, "placeholder_imports": [str], "ptxas_runs": [{argv, log, returncode}],
          "ast_source": {...}}  or  {"id": str, "ok": false, "kind": str, "error": str}

Environment: ``KTRIAGE_PRIME_COMPILE=1`` makes the worker compile a tiny kernel before its first
request, for Triton versions whose output depends on whether a kernel is the process's first
(``nvptx-short-ptr`` in 3.2 and 3.3, see docs/toolchains.md); ``KTRIAGE_TARGET_CC`` sets the fake
driver's arch (default 90).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
import tempfile
import traceback
from typing import Any

if __package__:  # imported as ktriage.insitu.worker (GPU host, tests, the harness)
    from ktriage.insitu import fakedriver, placeholders, ptxas_capture
else:  # started as a script inside a toolchain's virtualenv: this folder is sys.path[0]
    import fakedriver  # type: ignore[import-not-found,no-redef]
    import placeholders  # type: ignore[import-not-found,no-redef]
    import ptxas_capture  # type: ignore[import-not-found,no-redef]

PROTOCOL_VERSION = 2
PRIMING_KERNEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "priming_kernel.py")

class WorkerError(Exception):
    """A failure with a kind the host can report (import, signature, compile)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def load_kernel(source: str, sys_path: list[str]) -> Any:
    """Import ``path/to/file.py:fn`` or ``package.module:fn`` and return the JIT function (unwrapped
    from ``@triton.heuristics``/``@triton.autotune``, which compile the same function)."""
    return jit_function_of(load_launchable(source, sys_path), source)


def load_launchable(source: str, sys_path: list[str]) -> Any:
    """Import ``source`` and return the module attribute as the library launches it (decorators kept)."""
    for entry in sys_path:
        if entry not in sys.path:
            sys.path.insert(0, entry)
    placeholders.install()
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
    return fn


def jit_function_of(obj: Any, source: str) -> Any:
    """The ``JITFunction`` inside ``@triton.heuristics``/``@triton.autotune`` wrappers (each has ``.fn``)."""
    from triton.runtime.jit import JITFunction

    seen = 0
    while not isinstance(obj, JITFunction):
        inner = getattr(obj, "fn", None)
        if inner is None or seen > 8:
            raise WorkerError("import", f"{source} is not a @triton.jit function (found {type(obj).__name__})")
        obj, seen = inner, seen + 1
    return obj


def heuristics_of(obj: Any) -> dict[str, Any]:
    """The ``@triton.heuristics`` rules of a launchable, by parameter name (outermost first)."""
    from triton.runtime.autotuner import Heuristics
    from triton.runtime.jit import JITFunction

    found: dict[str, Any] = {}
    while obj is not None and not isinstance(obj, JITFunction):
        values = getattr(obj, "values", None)
        if isinstance(obj, Heuristics) and isinstance(values, dict):
            for name, rule in values.items():
                found.setdefault(name, rule)
        obj = getattr(obj, "fn", None)
    return found


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


def build_source(fn: Any, spec: dict[str, Any], heuristics: dict[str, Any] | None = None) -> Any:
    """Make the ASTSource the JIT would make for this launch (Triton 3.3+ conventions)."""
    heuristics = heuristics or {}
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
        decided = [n for n in missing if n in heuristics]
        hint = (f"; {decided} are computed by the kernel's @triton.heuristics from the launch's arguments: "
                "record the launch (ktriage's JIT harness or `record`) or give their values") if decided else ""
        raise WorkerError("signature", f"no value given for constexpr parameter(s) {missing}{hint}")
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
    # A None passed to a parameter that is not tl.constexpr stays in 3.2's signature as a null '*i8'
    # pointer (and is a constant None too); specs write it as a constexpr None, like 3.3+ do.
    declared = {p.name for p in fn.params if p.is_constexpr}
    null_ptrs = {n for n, t in signature.items() if t == "constexpr" and constexprs.get(n, 0) is None and n not in declared}
    constexpr_params = {n for n, t in signature.items() if t == "constexpr" and n not in equal_to_1 and n not in null_ptrs}
    sig = {n: ("i32" if n in equal_to_1 else "*i8" if n in null_ptrs else t)
           for n, t in signature.items() if n not in constexpr_params}
    constants = {n: _constexpr_value(v) for n, v in constexprs.items()}
    # 3.2's JIT puts every parameter through AttrsDescriptor's rules, tl.constexpr ones included: an int
    # (a bool too: False % 16 == 0) that is a multiple of 16, or None, is "divisible"; a non-bool int 1
    # is "equal to 1". For constexprs this changes no code, but it is what the JIT passes to compile.
    def divisible_constexpr(value: Any) -> bool:
        return value is None or (isinstance(value, int) and value % 16 == 0)

    def one_constexpr(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value == 1

    attrs = AttrsDescriptor.from_dict({
        "cls": "AttrsDescriptor",
        "arg_properties": {
            "tt.divisibility": [i for i, n in enumerate(names) if n in divisible or n in null_ptrs
                                or (n in constexpr_params and divisible_constexpr(constexprs.get(n)))],
            "tt.equal_to": [i for i, n in enumerate(names) if n in equal_to_1
                            or (n in constexpr_params and one_constexpr(constexprs.get(n)))],
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


def ast_source_view(src: Any) -> dict[str, Any]:
    """What an ASTSource carries into the compile, as comparable JSON (signature, constants, attrs)."""
    def keyed(mapping: Any) -> dict[str, str]:
        return {repr(k): repr(v) for k, v in sorted((mapping or {}).items(), key=lambda kv: repr(kv[0]))}

    attrs: Any = getattr(src, "attrs", None)
    if attrs is not None and hasattr(attrs, "to_dict"):  # Triton 3.2's AttrsDescriptor
        attrs_view: Any = {"AttrsDescriptor": _jsonable(attrs.to_dict())}
    else:
        attrs_view = keyed(attrs)
    return {
        "function": getattr(getattr(src, "fn", None), "__name__", None),
        "signature": {str(k): str(v) for k, v in (getattr(src, "signature", None) or {}).items()},
        "constants": keyed(getattr(src, "constants", None) or getattr(src, "constexprs", None)),
        "attrs": attrs_view,
    }


def compile_options(spec: dict[str, Any]) -> dict[str, Any]:
    """The launch options a spec carries, as the JIT passes them to ``compile``."""
    options: dict[str, Any] = {
        "num_warps": int(spec.get("num_warps", 4)),
        "num_stages": int(spec.get("num_stages", 3)),
        "num_ctas": int(spec.get("num_ctas", 1)),
    }
    if spec.get("maxnreg"):
        options["maxnreg"] = int(spec["maxnreg"])
    return options


def compile_in_process(spec: dict[str, Any], sys_path: list[str] | None = None) -> dict[str, Any]:
    """Compile one spec with this interpreter's Triton, cubin included, as the JIT would.

    Returns the IR texts, Triton's own cubin, its metadata, the ptxas run(s) Triton made (argv and
    ``-v`` log) and the ASTSource view. The fake driver is installed first unless a real one is active
    (a GPU host), so that library modules that touch ``driver.active`` import without a GPU.
    """
    import triton
    from triton.backends.compiler import GPUTarget

    target = spec["target"]
    cc = int(target.replace("sm_", "").rstrip("a"))
    ensure_driver(cc)
    ptxas_capture.install()
    launchable = load_launchable(spec["source"], sys_path or [])
    fn = jit_function_of(launchable, spec["source"])
    src = build_source(fn, spec, heuristics_of(launchable))
    ptxas_capture.take()
    try:
        kernel = triton.compile(src, target=GPUTarget("cuda", cc, 32), options=compile_options(spec))
    except Exception as exc:
        runs = ptxas_capture.take()
        kind = "assemble" if runs and runs[-1].get("returncode") not in (0, None) else "compile"
        raise WorkerError(kind, f"{type(exc).__name__}: {exc}") from exc
    asm = dict(kernel.asm)
    result: dict[str, Any] = {k: asm[k] for k in ("ttir", "ttgir", "llir", "ptx") if k in asm}
    result["cubin"] = asm.get("cubin", b"")
    result["metadata"] = _jsonable(kernel.metadata._asdict())
    result["triton_version"] = triton.__version__
    result["placeholder_imports"] = placeholders.used()
    result["ptxas_runs"] = ptxas_capture.take()
    result["ast_source"] = ast_source_view(src)
    return result


def ensure_driver(cc: int) -> None:
    """Install the fake driver unless a real GPU driver is usable (then the JIT probe runs on it)."""
    if fakedriver.installed() is not None:
        return
    if os.environ.get("KTRIAGE_REAL_DRIVER") == "1":
        return
    fakedriver.install(cc)


def prime() -> None:
    """Compile a tiny kernel once, so that every real compile of this process sees the LLVM options
    a previous compile leaves set (Triton 3.2/3.3 set ``nvptx-short-ptr`` only in their PTX step)."""
    spec = {
        "source": f"{PRIMING_KERNEL}:priming_kernel",
        "signature": {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        "constexprs": {"BLOCK": 128},
        "divisible_by_16": ["x_ptr"],
        "target": "sm_" + os.environ.get("KTRIAGE_TARGET_CC", "90"),
    }
    compile_in_process(spec)


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
        "ptxas_runs": result["ptxas_runs"],
        "ast_source": result["ast_source"],
    }


def serve() -> None:
    """Answer JSON-line requests until stdin closes. Replies go to the real stdout only."""
    reply_stream = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything the compiler prints goes to stderr, never into the protocol
    os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="ktriage-triton-cache-"))
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"  # every request is compiled by this Triton, never read from its cache
    primed: bool | str | None = None
    if os.environ.get("KTRIAGE_PRIME_COMPILE") == "1":
        try:
            prime()
            primed = True
        except Exception as exc:  # the worker still serves; the host sees why in the hello
            primed = f"{type(exc).__name__}: {exc}"
    reply_stream.write(json.dumps({"hello": PROTOCOL_VERSION, "python": sys.version.split()[0], "primed": primed}) + "\n")
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
