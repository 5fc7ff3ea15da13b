"""What this toolchain's JIT compiles for a launch given by VALUES: asked of the JIT itself, not restated.

Why here: which ints become the constant 1, which pointers and ints are marked divisible by 16, what
an annotated parameter (``n: tl.int32``) or ``do_not_specialize`` changes, and where those rules live
(``specialize_impl`` in Python, then C++) changed between Triton releases. Each release's compile of a
spec file written by values (docs/specs.md) therefore takes that release's decisions: the worker of
the toolchain drives the kernel through Triton's real launch path, with the fake driver
(fakedriver.py) and stand-in tensors: ``@triton.autotune`` (the fake benchmarker picks
``autotune_config``), ``@triton.heuristics``, the binder and its specialization all run as on a GPU.
The compile the JIT then starts is stopped before it begins (:class:`_Captured`), and what it was
given (the ASTSource: signature, constants, attributes; the options) is restated as a spec's fields.
Restating is only format, checked: the worker rebuilds the ASTSource from those fields the way every
compile does (worker.build_source) and refuses if it is not the JIT's.

Request: {"resolve": {"source": str, "args": [[name, encoded]], "options": {...}, "grid": [int],
          "autotune_config": int | null}, "sys_path": [str], "target": "sm_90"}
Encoded values: as jitrun.py, tensors also with "strides"; a host-side tensor descriptor as
{"descriptor": dtype, "shape", "strides", "block_shape"} (Triton 3.4+; refused before).
Reply: {"ok": true, "fields": {"signature", "constexprs", "divisible_by_16", "equal_to_1", "num_warps",
        "num_stages", "num_ctas", "maxnreg"}, "jit_args": [[name, encoded]] (the launch after the
        decorators), "heuristics": [str], "autotune_configs": [...] | null, "ast_source": {...},
        "triton_version": str}  or  {"ok": false, "kind": str, "error": str}

Runs inside a toolchain's interpreter: stdlib + that Triton only, never ``ktriage``.
"""

from __future__ import annotations

import traceback
from typing import Any, TypedDict

if __package__:
    from ktriage.insitu import fakedriver, jitrun, launch_hook
    from ktriage.insitu import worker as _worker
else:
    import fakedriver  # type: ignore[import-not-found,no-redef]
    import jitrun  # type: ignore[import-not-found,no-redef]
    import launch_hook  # type: ignore[import-not-found,no-redef]
    import worker as _worker  # type: ignore[import-not-found,no-redef]


class ResolveRequest(TypedDict):
    """A launch by values (the host's ``ktriage.spec.values.resolve_request``)."""

    source: str
    args: list[list[Any]]  # [name, encoded value] pairs (jitrun's encoding)
    options: dict[str, object]
    grid: list[int]
    autotune_config: int | None


class ResolveMessage(TypedDict, total=False):
    """The request line of a ``resolve`` (server.py's ``CompileRequest`` with ``resolve`` set)."""

    resolve: ResolveRequest
    target: str
    sys_path: list[str]


class _Captured(BaseException):
    """Raised from inside the JIT's call of ``compile``: the launch is decided, nothing is compiled.
    A BaseException, so that no ``except Exception`` of a library or of the autotuner swallows it."""

    def __init__(self, src: Any, options: dict[str, object], bound: dict[str, object]) -> None:
        super().__init__("captured")
        self.src, self.options, self.bound = src, options, bound


class _Capture:
    """The wrappers of ``triton.compiler.compile`` and ``JITFunction.run``, installed once per process;
    they act only while :meth:`active` is set, so every other compile of the worker is untouched."""

    installed = False
    active = False
    bound: dict[str, object] = {}

    @classmethod
    def install(cls) -> None:
        if cls.installed:
            return
        import triton.compiler
        import triton.compiler.compiler as compiler_module
        from triton.runtime.jit import JITFunction

        original_compile = compiler_module.compile
        original_run = JITFunction.run

        def compile(src: Any, *args: Any, **kwargs: Any) -> Any:
            if not cls.active:
                return original_compile(src, *args, **kwargs)
            options = kwargs.get("options") or (args[1] if len(args) > 1 else {})
            raise _Captured(src, dict(options or {}), dict(cls.bound))

        def run(jit_self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            if cls.active:
                cls.bound = {
                    **dict(zip(list(jit_self.arg_names), args)),
                    **{k: v for k, v in kwargs.items() if k in jit_self.arg_names},
                }
            return original_run(jit_self, *args, grid=grid, warmup=warmup, **kwargs)

        triton.compiler.compile = compile  # the JIT's binder imports it from here
        compiler_module.compile = compile
        JITFunction.run = run
        cls.installed = True


def _decode(value: Any, name: str = "") -> Any:
    if isinstance(value, dict) and "descriptor" in value:
        return jitrun.descriptor(value, name)
    if isinstance(value, dict) and "tensor" in value:
        strides = value.get("strides")
        return fakedriver.FakeTensor(
            value["tensor"],
            aligned=bool(value.get("aligned", True)),
            shape=tuple(value.get("shape") or (1,)),
            strides=tuple(strides) if strides else None,
        )
    return jitrun.decode(value)


def _plain(value: Any) -> Any:
    """A constant the JIT compiled in, as a spec writes it (Triton dtypes as "tl.float32")."""
    if type(value).__name__ == "constexpr":
        return _plain(getattr(value, "value", None))
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if type(value).__module__.startswith("triton.language") and isinstance(getattr(value, "name", None), str):
        return "tl." + launch_hook.tl_attribute(value)
    raise ValueError(f"a constant ktriage cannot write in a spec: {type(value).__name__} {value!r}")


def spec_fields(fn: Any, src: Any, options: dict[str, object]) -> _worker.SpecFields:
    """The spec fields that say what ``src`` (an ASTSource the JIT built for ``fn``) says.

    Two formats: Triton 3.2's (the signature lists the runtime parameters, ints equal to 1 typed i32;
    constants keyed by name; an AttrsDescriptor with parameter indices) and 3.3's and later (every
    parameter in the signature, "constexpr" for constants keyed by index path; per-index attributes).
    """
    names = list(fn.arg_names)
    declared = {p.name for p in fn.params if p.is_constexpr}
    signature: dict[str, str] = {}
    constexprs: dict[str, object] = {}
    divisible: list[str] = []
    equal_to_1: list[str] = []
    attrs = getattr(src, "attrs", None)
    raw_constants = getattr(src, "constants", None) or getattr(src, "constexprs", None) or {}
    if attrs is not None and hasattr(attrs, "to_dict"):  # Triton 3.2
        props = attrs.to_dict().get("arg_properties", {})
        div_idx = set(props.get("tt.divisibility", []))
        eq_idx = set(props.get("tt.equal_to", []))
        sig = {str(k): str(v) for k, v in dict(src.signature).items()}
        consts = {str(k): v for k, v in dict(raw_constants).items()}
        for i, name in enumerate(names):
            if name in sig and not (name in consts and consts[name] is None and sig[name] == "*i8"):
                if i in eq_idx and name not in declared:
                    signature[name], constexprs[name] = "constexpr", 1
                    equal_to_1.append(name)
                else:
                    signature[name] = sig[name]
                    if i in div_idx:
                        divisible.append(name)
            else:
                signature[name], constexprs[name] = "constexpr", _plain(consts.get(name))
    else:
        sig = {str(k): str(v) for k, v in dict(src.signature).items()}
        consts = {names[k[0]]: v for k, v in dict(raw_constants).items() if isinstance(k, tuple) and len(k) == 1}
        marked = {
            k[0]
            for k, v in dict(attrs or {}).items()
            if isinstance(k, tuple) and len(k) == 1 and any("tt.divisibility" in str(x) for x in v)
        }
        for i, name in enumerate(names):
            ty = sig.get(name, "constexpr")
            if ty == "constexpr":
                value = _plain(consts.get(name))
                signature[name], constexprs[name] = "constexpr", value
                if name not in declared and isinstance(value, int) and not isinstance(value, bool) and value == 1:
                    equal_to_1.append(name)
            else:
                signature[name] = ty
                if i in marked:
                    divisible.append(name)
    maxnreg = options.get("maxnreg")
    fields: _worker.SpecFields = {
        "signature": signature,
        "constexprs": constexprs,
        "divisible_by_16": divisible,
        "equal_to_1": equal_to_1,
        "num_warps": _int(options.get("num_warps"), 4),
        "num_stages": _int(options.get("num_stages"), 3),
        "num_ctas": _int(options.get("num_ctas"), 1),
        "maxnreg": _int(maxnreg, 0) or None,
    }
    if options.get("enable_fp_fusion") is False:  # only when off: a spec's default is on, as Triton's
        fields["enable_fp_fusion"] = False
    return fields


def _int(value: object, default: int) -> int:
    """A launch option as the JIT passed it (an int, or a number as text), ``default`` when unset or 0."""
    return int(value) if isinstance(value, (int, float, str)) and value else default


def _normalized(view: dict[str, object]) -> dict[str, object]:
    attrs = view.get("attrs") or {}
    if isinstance(attrs, dict) and "AttrsDescriptor" not in attrs:
        attrs = {k: v for k, v in attrs.items() if v not in ("[]", "()")}
    return {**view, "attrs": attrs}


def _ensure_fake_driver(cc: int) -> fakedriver.FakeBenchmarker:
    current = fakedriver.installed()
    if current is None or int(current.target.arch) != cc:
        current = fakedriver.install(cc, current.benchmarker if current is not None else None)
    return current.benchmarker


def _forget_tuned(launchable: Any) -> None:
    """Empty the autotuner's memo of the config it chose per key: another ``autotune_config`` for the
    same kernel and key, in this worker, is benched (picked) again, not served the first one's."""
    obj = launchable
    for _ in range(8):
        cache = getattr(obj, "cache", None)
        if isinstance(cache, dict) and hasattr(obj, "configs"):
            cache.clear()
        obj = getattr(obj, "fn", None)
        if obj is None:
            return


def resolve(request: ResolveMessage) -> dict[str, object]:
    """Answer one ``resolve`` request (module docstring); failures are replies, never raised."""
    worker = _worker
    launch = request["resolve"]
    source = str(launch["source"])
    try:
        cc = int(str(request.get("target") or "sm_90").replace("sm_", "").rstrip("a"))
        bench = _ensure_fake_driver(cc)
        _Capture.install()
        launchable = worker.load_launchable(source, list(request.get("sys_path") or []))
        fn = worker.jit_function_of(launchable, source)
        kwargs = {str(name): _decode(value, str(name)) for name, value in launch.get("args") or []}
        bench.pick = int(launch.get("autotune_config") or 0)
        bench.reset()
        _forget_tuned(launchable)
        grid = tuple(launch.get("grid") or (1,))
        _Capture.active, _Capture.bound = True, {}
        try:
            launchable[grid](**kwargs, **dict(launch.get("options") or {}))
        finally:
            _Capture.active = False
    except _Captured as done:
        captured = done
        if bench.pick and bench.pick >= bench.calls:  # the autotuner never reached the config asked for
            configs = jitrun._autotune_configs(launchable) or []
            count = bench.calls or len(configs)
            return {
                "ok": False,
                "kind": "spec",
                # "configs tried: N", no plural to word: this folder may not import ktriage.wording
                "error": f"autotune_config = {bench.pick} is past the @triton.autotune of "
                f"{source.rpartition(':')[2]} (configs tried for this launch: {count})\nfix: autotune_config is "
                f"an index into its configs, from 0 to {max(count - 1, 0)}",
            }
    except Exception as exc:  # the launch itself failed in this Triton: its message is the answer
        kind = getattr(exc, "kind", "launch")
        return {
            "ok": False,
            "kind": str(kind),
            "error": str(exc) if isinstance(exc, worker.WorkerError) else f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc()[-3000:],
        }
    else:
        return {"ok": False, "kind": "launch", "error": "the launch compiled nothing (does the kernel launch at all?)"}
    import triton

    asked = dict(launch.get("options") or {})
    refusal = worker.unknown_options(asked, captured.options, str(triton.__version__))
    if refusal is not None:  # the JIT dropped an option the launch passes: this Triton has none such
        return {"ok": False, "kind": refusal.kind, "error": str(refusal)}
    try:
        fields = spec_fields(fn, captured.src, captured.options)
        rebuilt = worker.build_source(fn, fields, worker.heuristics_of(launchable))
        theirs, ours = _normalized(worker.ast_source_view(captured.src)), _normalized(worker.ast_source_view(rebuilt))
        if theirs != ours:
            diff = {k: (theirs.get(k), ours.get(k)) for k in theirs if theirs.get(k) != ours.get(k)}
            return {
                "ok": False,
                "kind": "resolve",
                "error": f"a spec cannot say what this Triton's JIT compiled for the launch (JIT, spec): {diff}",
            }
        return {
            "ok": True,
            "fields": fields,
            "jit_args": [[n, jitrun.encode(v)] for n, v in captured.bound.items()],
            "heuristics": sorted(worker.heuristics_of(launchable)),
            "autotune_configs": jitrun._autotune_configs(launchable),
            "ast_source": theirs,
            "triton_version": str(triton.__version__),
        }
    except Exception as exc:
        return {
            "ok": False,
            "kind": "resolve",
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc()[-3000:],
        }
