"""The JIT-equivalence check of a spec written by values (docs/specs.md, spec/values.py).

Why its own entry: a by-value spec is compiled as each toolchain's own JIT specializes it (the
compile worker asks that Triton: insitu/launch_spec.py). This check runs the same launch through
Triton's real launch path with only the driver faked (insitu/jitrun.py, as every fidelity case) and
compares what the JIT compiled with ktriage's artifact of the spec: the compile inputs (signature,
constants, divisibility and equal-to-1 attributes) and the cubin, byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ktriage.compile.compiler import CompileFailure, Compiler
from ktriage.errors import SpecError
from ktriage.fidelity.harness import Row, RowCommon, compare_artifact, first_line, run_jit
from ktriage.fidelity.model import FidelityCase
from ktriage.schema.jsontypes import JSONValue
from ktriage.spec.launch import SPEC_OPTIONS, TRITON_DEFAULT_STAGES, TRITON_DEFAULT_WARPS, Launch, decode_value
from ktriage.spec.model import KernelSpec
from ktriage.spec.values import resolve_request
from ktriage.toolchain.manager import Toolchain


def _option(options: Mapping[str, JSONValue], key: str, default: int) -> int:
    """A launch option (an int) of a by-value spec's launch, ``default`` where it is not given."""
    value = options.get(key, default)
    return int(value) if isinstance(value, (int, float, str)) else default


def case_of(spec: KernelSpec) -> FidelityCase:
    """The fidelity case of a by-value spec: the same launch values, options and autotune pick."""
    if spec.launch is None:
        raise SpecError(f"spec {spec.name!r} is written by types", "the by-value check needs a [kernel.args] spec")
    request = resolve_request(spec)  # the launch's values, with the constexprs tune or a fix changed
    overrides = dict(spec.launch.get("overrides") or {})
    options = {**dict(request["options"]), **{k: overrides[k] for k in SPEC_OPTIONS if k in overrides}}
    args = tuple((str(n), _value(v)) for n, v in request["args"])
    launch = Launch(
        name=spec.name,
        source=spec.source,
        package=spec.package,
        args=args,
        target=spec.target,
        grid=tuple(spec.launch.get("grid") or (1,)),
        num_warps=_option(options, "num_warps", TRITON_DEFAULT_WARPS),
        num_stages=_option(options, "num_stages", TRITON_DEFAULT_STAGES),
        num_ctas=_option(options, "num_ctas", 1),
        maxnreg=maxnreg if isinstance(maxnreg := options.get("maxnreg"), int) else None,
        enable_fp_fusion=options.get("enable_fp_fusion", True) is not False,
    )
    return FidelityCase(
        name=spec.name,
        launch=launch,
        autotune_pick=int(spec.launch.get("autotune_config") or 0),
        pass_options=bool(options),
    )


def _value(encoded: object) -> object:
    """A launch value for jitrun: tensors keep their shape (heuristics may read it)."""
    return decode_value(encoded)


def check_spec(spec: KernelSpec, toolchain: Toolchain, compiler: Compiler, work: Path) -> Row:
    """One Row: ktriage's artifact of the by-value ``spec`` against the JIT's compile of its launch."""
    case = case_of(spec)
    version = toolchain.triton_version
    jit = run_jit(toolchain, [case], spec.target, work)[case.name]
    if jit.get("error"):
        return Row(case.name, version, "error", f"JIT: {first_line(jit['error'])}")
    launch = next((launch for launch in jit.get("launches", []) if launch.get("compiles")), None)
    compiles = jit.get("compiles") or []
    if launch is None or not compiles:
        return Row(case.name, version, "error", "the JIT compiled nothing for this launch")
    record = compiles[launch["compiles"][-1]]
    outcome = compiler.compile(spec, toolchain)
    if isinstance(outcome, CompileFailure):
        return Row(case.name, version, "error", f"ktriage compile ({outcome.stage}): {first_line(outcome.message)}")
    common: RowCommon = {
        "kernel": str(record.get("name", "")),
        "heuristics": tuple(jit.get("heuristics") or ()),
        "autotuned": jit.get("autotune_configs") is not None,
    }
    return compare_artifact(case.name, outcome, record, common)
