"""The catalog: named ops, their input sweeps, and recipes that expand them into KernelSpecs.

Op names: ``liger.layer_norm`` / ``liger.rms_norm`` / ``liger.embedding`` are liger-kernel 0.5.10
(the TritonBench report's version); ``@<version>`` picks another supported release (``@0.8.5``) and
``@latest`` the newest one this catalog has a recipe for. ``tutorial.*`` are this project's own kernels.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ktriage.catalog import inputs as sweeps
from ktriage.catalog import liger, tutorial
from ktriage.catalog.inputs import InputCase
from ktriage.catalog.targets import default_sm_count
from ktriage.errors import KtriageError
from ktriage.spec.launch import Launch
from ktriage.spec.model import KNOWN_TARGETS, KernelSpec

Recipe = Callable[..., Launch]


@dataclass(frozen=True)
class OpInfo:
    """What ``ktriage catalog list`` shows about one op."""

    name: str
    description: str
    modes: tuple[str, ...]
    default_mode: str
    dtypes: tuple[str, ...]
    default_dtype: str
    package: str | None
    kernels: dict[str, str]  # mode -> source
    num_inputs: int
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Entry:
    info: OpInfo
    inputs: Callable[[], list[InputCase]]
    recipe: Recipe
    version: str | None


def _liger_entries() -> list[_Entry]:
    out = []
    for version in liger.VERSIONS:
        suffix = "" if version == liger.DEFAULT_VERSION else f"@{version}"
        aliases: tuple[str, ...] = (f"@{version}",) if not suffix else ()
        if version == liger.LATEST_VERSION:
            aliases += ("@latest",)
        for short, recipe, inp, module, fns, desc in (
            ("layer_norm", liger.layer_norm, sweeps.layer_norm_inputs, liger.LAYER_NORM_MODULE,
             ("_layer_norm_forward_kernel", "_layer_norm_backward_kernel"),
             "Liger LayerNorm (TritonBench layer_norm: M=4096, N=512*i, i=2..31)"),
            ("rms_norm", liger.rms_norm, sweeps.rms_norm_inputs, liger.RMS_NORM_MODULE,
             ("_rms_norm_forward_kernel", "_rms_norm_backward_kernel"),
             "Liger RMSNorm (TritonBench rms_norm: M=2048, N=2^10..2^15, fp32 weight)"),
            ("embedding", liger.embedding, sweeps.embedding_inputs, liger.EMBEDDING_MODULE,
             ("embedding_forward_kernel", "embedding_backward_kernel"),
             "Liger experimental Embedding (TritonBench embedding: (B,T,D) x V=2^10..2^17)"),
        ):  # fmt: skip
            name = f"liger.{short}{suffix}"
            info = OpInfo(
                name=name,
                description=f"{desc}, liger-kernel {version}",
                modes=("bwd", "fwd"),
                default_mode="bwd",
                dtypes=("fp32", "bf16", "fp16"),
                default_dtype="fp32",
                package=liger.requirement(version),
                kernels={"fwd": f"{module}:{fns[0]}", "bwd": f"{module}:{fns[1]}"},
                num_inputs=len(inp()),
                aliases=tuple(f"liger.{short}{a}" for a in aliases),
            )
            out.append(_Entry(info, inp, recipe, version))
    return out


def _tutorial_entries() -> list[_Entry]:
    rows = (
        ("tutorial.vector_add", tutorial.vector_add, sweeps.vector_add_inputs, "vector_add.py:add_kernel",
         "x + y, memory-bound", ("fp32", "fp16", "bf16"), "fp32"),
        ("tutorial.softmax", tutorial.softmax, sweeps.softmax_inputs, "softmax.py:softmax_kernel",
         "fused row softmax, memory-bound", ("fp32", "fp16", "bf16"), "fp32"),
        ("tutorial.layer_norm", tutorial.layer_norm, sweeps.tutorial_layer_norm_inputs, "layer_norm.py:layer_norm_fwd_kernel",
         "chunked layer norm forward, memory-bound", ("fp32", "fp16", "bf16"), "fp32"),
        ("tutorial.matmul", tutorial.matmul, sweeps.matmul_inputs, "matmul.py:matmul_kernel",
         "tiled tl.dot matmul, compute-bound", ("fp16", "bf16"), "fp16"),
    )  # fmt: skip
    out = []
    for name, recipe, inp, src, desc, dtypes, default in rows:
        from ktriage.catalog.kernels import KERNELS_DIR

        info = OpInfo(
            name=name,
            description=f"ktriage tutorial kernel: {desc}",
            modes=("fwd",),
            default_mode="fwd",
            dtypes=dtypes,
            default_dtype=default,
            package=None,
            kernels={"fwd": str(KERNELS_DIR / src)},
            num_inputs=len(inp()),
        )
        out.append(_Entry(info, inp, recipe, None))
    return out


_ENTRIES: dict[str, _Entry] = {e.info.name: e for e in _liger_entries() + _tutorial_entries()}
_ALIASES: dict[str, str] = {a: e.info.name for e in _ENTRIES.values() for a in e.info.aliases}


def list_ops() -> list[OpInfo]:
    """Every op of the catalog (canonical names; aliases are in ``OpInfo.aliases``)."""
    return [e.info for e in _ENTRIES.values()]


def _resolve(name: str) -> _Entry:
    canonical = _ALIASES.get(name, name)
    if canonical in _ENTRIES:
        return _ENTRIES[canonical]
    base, at, version = name.partition("@")
    known = list(_ENTRIES) + list(_ALIASES)
    if at and (base in _ENTRIES or base in {n.split("@")[0] for n in _ENTRIES}):
        versions = sorted({a.split("@")[1] for a in known if a.startswith(base + "@")})
        raise KtriageError(
            f"no recipe for {base} at version {version!r}",
            f"use one of: {', '.join(f'{base}@{v}' for v in versions)} (plain {base} is liger-kernel {liger.DEFAULT_VERSION})",
        )
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    raise KtriageError(f"unknown catalog op {name!r}", f"{hint}valid ops: {', '.join(_ENTRIES)} (see `ktriage catalog list`)")


def get_op(name: str) -> OpInfo:
    """The OpInfo for ``name`` (aliases accepted); KtriageError naming the valid ops otherwise."""
    return _resolve(name).info


def op_inputs(name: str) -> list[InputCase]:
    """The op's full input sweep."""
    return _resolve(name).inputs()


_FACT = re.compile(r"^\s*([A-Za-z_]\w*)\s*=\s*(-?\d+)\s*$")


def select_inputs(op: str, cases: list[InputCase], selectors: Sequence[str] | None) -> list[InputCase]:
    """Cases matching any selector: an input id ("7") or shape facts ("N=4608", "D=4096,V=1024")."""
    if not selectors:
        return list(cases)
    chosen: dict[int, InputCase] = {}
    for sel in selectors:
        sel = str(sel).strip()
        if sel.isdigit():
            match = [c for c in cases if c.id == int(sel)]
        else:
            facts = {}
            for part in sel.split(","):
                m = _FACT.match(part)
                if not m:
                    raise KtriageError(
                        f"input selector {sel!r} of {op} is neither an id nor K=V facts",
                        f"write an input id (0..{len(cases) - 1}) or facts like {cases[0].label()}",
                    )
                facts[m.group(1)] = int(m.group(2))
            unknown = sorted(set(facts) - set(cases[0].facts))
            if unknown:
                raise KtriageError(f"{op} inputs have no fact {unknown}", f"facts of {op} inputs: {', '.join(cases[0].facts)}")
            match = [c for c in cases if all(c.facts.get(k) == v for k, v in facts.items())]
        if not match:
            raise KtriageError(f"no input of {op} matches {sel!r}", f"valid inputs: {_describe(cases)}")
        for c in match:
            chosen[c.id] = c
    return [chosen[i] for i in sorted(chosen)]


def _describe(cases: list[InputCase]) -> str:
    parts = [f"ids 0..{len(cases) - 1}"]
    for key in cases[0].facts:
        values = sorted({c.facts[key] for c in cases})
        shown = ", ".join(map(str, values[:12])) + (", ..." if len(values) > 12 else "")
        parts.append(f"{key} in {{{shown}}}")
    return "; ".join(parts)


def expand_op(
    name: str,
    *,
    mode: str | None = None,
    target: str = "sm_90",
    dtype: str | None = None,
    inputs: Sequence[str] | None = None,
    sm_count: int | None = None,
) -> list[KernelSpec]:
    """Specs for op ``name`` over its (filtered) input sweep, as the library launches them on ``target``.

    ``mode``/``dtype`` default to the op's (bwd/fp32 for Liger, fwd for tutorials, fp16 for matmul);
    ``sm_count`` defaults to the target's usual part (sm_90: 132).
    """
    launches = expand_launches(name, mode=mode, target=target, dtype=dtype, inputs=inputs, sm_count=sm_count)
    return [launch.to_spec() for launch in launches]


def expand_launches(
    name: str,
    *,
    mode: str | None = None,
    target: str = "sm_90",
    dtype: str | None = None,
    inputs: Sequence[str] | None = None,
    sm_count: int | None = None,
) -> list[Launch]:
    """The launches of op ``name`` over its (filtered) input sweep, as the library makes them (argument
    values: the JIT-equivalence harness replays these through Triton's real launch path)."""
    entry = _resolve(name)
    info = entry.info
    mode = mode or info.default_mode
    if mode not in info.modes:
        raise KtriageError(f"{info.name} has no mode {mode!r}", f"use one of: {', '.join(info.modes)}")
    dtype = dtype or info.default_dtype
    if dtype not in info.dtypes:
        raise KtriageError(f"{info.name} does not support dtype {dtype!r}", f"use one of: {', '.join(info.dtypes)}")
    if target not in KNOWN_TARGETS:
        raise KtriageError(f"unknown target {target!r}", f"use one of: {', '.join(KNOWN_TARGETS)}")
    if sm_count is None:
        sm_count = default_sm_count(target)
    if sm_count < 1:
        raise KtriageError(f"sm_count {sm_count} must be positive", "pass the GPU's multiprocessor count, e.g. 132")
    cases = select_inputs(info.name, entry.inputs(), inputs)
    return [
        entry.recipe(c, op=info.name, mode=mode, dtype=dtype, target=target, sm_count=sm_count, version=entry.version)
        for c in cases
    ]
