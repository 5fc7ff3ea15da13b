"""The catalog: named ops expanded into KernelSpecs over their input sweeps.

The facts (sweeps, recipes per release, descriptions) are the operators' (``ktriage/ops/<op>.py``,
resolved by ``ktriage.ops.registry``); this module is the catalog's view of them: OpInfo rows,
the checks of mode/dtype/target, and the expansion into launches and specs.

Op names: ``liger.layer_norm`` / ``liger.rms_norm`` / ``liger.embedding`` are liger-kernel 0.5.10
(the TritonBench report's version); ``@<version>`` picks another supported release (``@0.8.5``) and
``@latest`` the newest one this catalog has a recipe for. ``tutorial.*`` are this project's own kernels.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from ktriage.catalog.targets import default_sm_count
from ktriage.errors import KtriageError
from ktriage.ops.inputs import InputCase, select_inputs
from ktriage.ops.registry import CATALOG, CatalogEntry, catalog_entry, catalog_names
from ktriage.spec.launch import Launch
from ktriage.spec.model import KNOWN_TARGETS, KernelSpec

__all__ = ["OpInfo", "expand_launches", "expand_op", "catalog_op", "list_ops", "op_inputs", "select_inputs"]


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


def _info(e: CatalogEntry) -> OpInfo:
    k = e.kernels
    return OpInfo(
        name=e.name,
        description=e.description,
        modes=k.modes,
        default_mode=k.default_mode,
        dtypes=k.dtypes,
        default_dtype=k.default_dtype,
        package=k.package(e.version),
        kernels=dict(k.kernels),
        num_inputs=len(e.inputs()),
        aliases=e.aliases,
    )


def list_ops() -> list[OpInfo]:
    """Every op of the catalog (canonical names; aliases are in ``OpInfo.aliases``)."""
    return [_info(e) for e in CATALOG.values()]


def _resolve(name: str) -> CatalogEntry:
    entry = catalog_entry(name)
    if entry is not None:
        return entry
    base, at, version = name.partition("@")
    known = catalog_names()
    if at and (base in CATALOG or base in {n.split("@")[0] for n in CATALOG}):
        versions = sorted({a.split("@")[1] for a in known if a.startswith(base + "@")})
        plain = CATALOG.get(base)
        pkg = plain.kernels.package(plain.version) if plain is not None else None
        default = pkg.replace("==", " ") if pkg else "this project's own kernel"
        raise KtriageError(
            f"no recipe for {base} at version {version!r}",
            f"use one of: {', '.join(f'{base}@{v}' for v in versions)} (plain {base} is {default})",
        )
    # A prefix ("liger", "tutorial.") means one of the ops it starts, all of them listed (difflib's
    # close matches would pick some by spelling); anything else gets the close spellings.
    prefixed = [n for n in CATALOG if n.startswith(name) and "@" not in n] if name else []
    close = prefixed or difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    raise KtriageError(
        f"unknown catalog op {name!r}", f"{hint}valid ops: {', '.join(CATALOG)} (see `ktriage catalog list`)"
    )


def catalog_op(name: str) -> OpInfo:
    """The catalog's view of an op: its kernels per library release (``liger.layer_norm@0.8.5``, aliases
    accepted), for explain, tune and bisect; KtriageError naming the valid ops otherwise. (The bench's
    view, by TritonBench's name, is ``ktriage.workload.ops.opdef.bench_op``.)"""
    return _info(_resolve(name))


def op_inputs(name: str) -> list[InputCase]:
    """The op's full input sweep."""
    return _resolve(name).inputs()


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
    info = _info(entry)
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
    cases = select_inputs(info.name, entry.inputs(), inputs, mode=mode)
    return [
        entry.kernels.recipe(
            c, op=info.name, mode=mode, dtype=dtype, target=target, sm_count=sm_count, version=entry.version
        )
        for c in cases
    ]
