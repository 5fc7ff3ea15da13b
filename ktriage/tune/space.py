"""The config space of one kernel launch: which knobs ``ktriage tune`` may turn, and their limits.

Why a module of its own: a tuner that changes a block size the kernel relies on produces a fast,
wrong kernel. Liger's layer_norm loads a whole row with ``tl.arange(0, BLOCK_SIZE)`` masked by
``n_cols``, so ``BLOCK_SIZE < next_power_of_2(n_cols)`` silently drops columns; an inductor-style
reduction loops over ``rnumel`` in ``RBLOCK`` steps, so any power of two is correct. Each knob
therefore carries the sentence that justifies its values, and the grid axis it tiles (a smaller
``XBLOCK`` means more CTAs: ``grid = cdiv(numel, XBLOCK)``).

Where knobs come from, first match wins per constexpr:
1. ``spec.meta["tune"]`` -- ``{"BLOCK": [256, 512]}`` or ``{"BLOCK": {"values": [...],
   "grid_axis": 0, "numel": 4096, "why": "..."}}``; a TOML spec writes it as ``[kernel.meta.tune]``;
2. the operator of the kernel (``Kernels.knobs`` in ktriage/ops/<op>.py: Liger layer_norm, Liger embedding);
3. inductor-style names (``XBLOCK``, ``YBLOCK``, ``RBLOCK``, ``R0_BLOCK``, ``R1_BLOCK``): powers
   of two around the spec's value.
num_warps (powers of two up to the arch's 1024 threads per CTA) and num_stages (1..4) are always
tunable: they never change what the kernel computes.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from ktriage.arch import parse_arch
from ktriage.errors import SpecError, worded
from ktriage.ops import registry
from ktriage.ops.operator import Knob as Knob  # declared by operators; tune's name for it
from ktriage.schema.jsontypes import JSONObject
from ktriage.spec.model import KernelSpec
from ktriage.spec.values import autotune_config_index
from ktriage.wording import plural

WARP_CHOICES = (1, 2, 4, 8, 16, 32)
STAGE_CHOICES = (1, 2, 3, 4)
# Inductor's block constexpr names: X/Y/Z tile the grid, R*_BLOCK loop over the reduction.
_GRID_BLOCK = {"XBLOCK": 0, "YBLOCK": 1, "ZBLOCK": 2}
_REDUCTION_BLOCK = re.compile(r"^R\d?_?BLOCK$")
# How far from the spec's own value an inductor-style block is varied (factor 2**k, |k| <= span).
INDUCTOR_SPAN = 2
INDUCTOR_MAX = {"X": 2048, "Y": 1024, "Z": 1024, "R": 4096 * 16}  # inductor's TRITON_MAX_BLOCK


def next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


@dataclass(frozen=True)
class TuneConfig:
    """One point of the space: what a ``triton.Config`` would hold."""

    num_warps: int
    num_stages: int
    constexprs: tuple[tuple[str, int], ...] = ()

    @classmethod
    def of(cls, num_warps: int, num_stages: int, constexprs: Mapping[str, int] | None = None) -> TuneConfig:
        return cls(num_warps, num_stages, tuple(sorted((constexprs or {}).items())))

    @property
    def blocks(self) -> dict[str, int]:
        return dict(self.constexprs)

    def label(self) -> str:
        parts = [f"{k}={v}" for k, v in self.constexprs] + [f"warps={self.num_warps}", f"stages={self.num_stages}"]
        return ",".join(parts)

    def to_json(self) -> JSONObject:
        return {"num_warps": self.num_warps, "num_stages": self.num_stages, "constexprs": self.blocks}

    @classmethod
    def from_json(cls, data: object) -> TuneConfig | None:
        """The config :meth:`to_json` wrote (a bundle's variant record, a bench results file's copy of
        it); None for anything else, so that a reader falls back on what it knows instead of guessing."""
        if not isinstance(data, Mapping):
            return None
        warps, stages, constexprs = data.get("num_warps"), data.get("num_stages"), data.get("constexprs", {})
        if not (_whole(warps) and _whole(stages) and isinstance(constexprs, Mapping)):
            return None
        if not all(isinstance(k, str) and _whole(v) for k, v in constexprs.items()):
            return None
        return cls.of(warps, stages, constexprs)

    @classmethod
    def from_label(cls, label: object) -> TuneConfig | None:
        """The config a :meth:`label` spells out (``BLOCK_SIZE=8192,warps=8,stages=3``): every bench of a
        tune bundle so far recorded its variants by this label alone. None when it is not one."""
        if not isinstance(label, str):
            return None
        values: dict[str, int] = {}
        for part in label.split(","):
            name, eq, value = part.partition("=")
            if not eq or not name or name in values or not value.lstrip("-").isdigit():
                return None
            values[name] = int(value)
        warps, stages = values.pop("warps", None), values.pop("stages", None)
        if warps is None or stages is None:
            return None
        return cls.of(warps, stages, values)


def _whole(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class ConfigSpace:
    """All knobs of one spec, with the spec's own (the library's default) config."""

    spec: KernelSpec
    knobs: tuple[Knob, ...]
    warps: tuple[int, ...]
    stages: tuple[int, ...]
    default: TuneConfig
    notes: tuple[str, ...] = field(default=())  # one naming options is a Worded: the command prints its flags
    # The launch's grid as a function of the constexprs (e.g. a matmul's cdiv(M,BLOCK_M)*cdiv(N,BLOCK_N));
    # None: the knobs' grid axes rescale the spec's grid.
    grid_fn: Callable[[Mapping[str, Any]], tuple[int, ...]] | None = field(default=None, compare=False)
    # The kernel's own @triton.autotune list (recorded, or a spec file's): searched as it is instead of the knobs' product.
    listed: tuple[TuneConfig, ...] = ()

    def configs(self) -> list[TuneConfig]:
        """Every combination, the default first (it is the baseline every report compares with)."""
        names = [k.name for k in self.knobs]
        out = [self.default]
        if self.listed:
            return out + [c for c in dict.fromkeys(self.listed) if c != self.default]
        for warps, stages, *blocks in itertools.product(self.warps, self.stages, *[k.values for k in self.knobs]):
            cfg = TuneConfig.of(warps, stages, dict(zip(names, blocks)))
            if cfg != self.default:
                out.append(cfg)
        return out

    def knob(self, name: str) -> Knob | None:
        return next((k for k in self.knobs if k.name == name), None)

    def apply(self, config: TuneConfig) -> KernelSpec:
        """The spec launched with ``config``: options, constexprs and the grid it implies."""
        return apply_config(self.spec, config, self.knobs, self.grid_fn)

    def to_json(self) -> JSONObject:
        return {
            "knobs": [k.to_json() for k in self.knobs],
            "num_warps": list(self.warps),
            "num_stages": list(self.stages),
            "default": self.default.to_json(),
            "notes": list(self.notes),
        }


def apply_config(
    spec: KernelSpec,
    config: TuneConfig,
    knobs: Sequence[Knob] = (),
    grid_fn: Callable[[Mapping[str, Any]], tuple[int, ...]] | None = None,
) -> KernelSpec:
    """``spec`` with ``config``'s num_warps/num_stages/constexprs, and its grid recomputed for the
    blocks that tile it (``grid_fn`` of the new constexprs when the launch has one). Unknown
    constexpr names are an error (a typo would compile the default)."""
    consts = dict(spec.constexprs)
    for name, value in config.constexprs:
        if name not in spec.signature or spec.signature[name] != "constexpr":
            raise SpecError(
                f"config sets {name}={value}, but {spec.name} has no constexpr {name!r}",
                f"tune only its constexprs: {[n for n, t in spec.signature.items() if t == 'constexpr']}",
            )
        consts[name] = value
    grid = list(spec.grid) if spec.grid is not None else None
    by_name = {k.name: k for k in knobs}
    if grid is not None and grid_fn is not None:
        grid = list(grid_fn(consts))
    elif grid is not None:
        for name, value in config.constexprs:
            knob = by_name.get(name)
            if knob is None or knob.grid_axis is None or knob.grid_axis >= len(grid):
                continue
            old = spec.constexprs.get(name)
            if knob.numel is not None:
                grid[knob.grid_axis] = max(1, math.ceil(knob.numel / value))
            elif isinstance(old, int) and old > 0:
                grid[knob.grid_axis] = max(1, math.ceil(grid[knob.grid_axis] * old / value))
    meta = dict(spec.meta)
    meta["tune_config"] = config.label()
    index = autotune_config_index(spec, config.num_warps, config.num_stages, consts)
    if index is not None and spec.launch is not None and not spec.launch.get("overrides"):
        # one of the kernel's own @triton.autotune configs, in a spec by values: chosen as the autotuner
        # would choose it, so its heuristics see its tiles (spec/values.autotune_config_index)
        return dataclasses.replace(
            spec,
            num_warps=config.num_warps,
            num_stages=config.num_stages,
            constexprs=consts,
            grid=tuple(grid) if grid is not None else None,
            meta=meta,
            launch={**spec.launch, "autotune_config": index},
        )
    return spec.replace(
        num_warps=config.num_warps,
        num_stages=config.num_stages,
        constexprs=consts,
        grid=tuple(grid) if grid is not None else None,
        meta=meta,
    )


# ----------------------------------------------------------------------------------- knob sources
def _from_meta(spec: KernelSpec) -> dict[str, Knob]:
    raw = spec.meta.get("tune") or spec.meta.get("tunable") or {}
    if not isinstance(raw, Mapping):
        raise SpecError(
            f"{spec.name}: meta.tune must be a table of constexpr -> values",
            "write e.g. [kernel.meta.tune] BLOCK = [256, 512, 1024]",
        )
    knobs: dict[str, Knob] = {}
    for name, entry in raw.items():
        if isinstance(entry, Mapping):
            values, axis, numel = entry.get("values"), entry.get("grid_axis"), entry.get("numel")
            why = str(entry.get("why") or "values declared by the spec (meta.tune)")
        else:
            values, axis, numel, why = entry, None, None, "values declared by the spec (meta.tune)"
        if (
            not isinstance(values, (list, tuple))
            or not values
            or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values)
        ):
            raise SpecError(
                f"{spec.name}: meta.tune.{name} = {values!r} is not a list of positive integers",
                f"write e.g. {name} = [256, 512, 1024]",
            )
        if spec.signature.get(name) != "constexpr":
            raise SpecError(
                f"{spec.name}: meta.tune names {name!r}, which is not a constexpr parameter",
                "tune only constexpr block sizes",
            )
        knobs[name] = Knob(name, tuple(sorted(set(values))), why, axis, numel, bool(_REDUCTION_BLOCK.match(name)))
    return knobs


def _matmul_grid(spec: KernelSpec) -> Callable[[Mapping[str, Any]], tuple[int, ...]]:
    m, n = int(spec.meta["shape"]["M"]), int(spec.meta["shape"]["N"])
    return lambda consts: (math.ceil(m / int(consts["BLOCK_M"])) * math.ceil(n / int(consts["BLOCK_N"])),)


def recipe_grid(
    spec: KernelSpec, blocks: Collection[str] = ()
) -> Callable[[Mapping[str, Any]], tuple[int, ...]] | None:
    """The launch's grid function of a catalog recipe whose blocks tile one axis together (the matmul),
    of a recorded launch whose 1-D grid is exactly ``cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)``, or of a
    recorded launch with an axis that is ``cdiv(S, B)`` for one of ``blocks`` (:func:`_recorded_axes`)."""
    if spec.source_function() == "matmul_kernel" and {"BLOCK_M", "BLOCK_N"} <= set(recipe_knobs(spec)):
        return _matmul_grid(spec)
    shape = spec.meta.get("shape") or {}
    # a recorded launch, or a spec file's launch by values (spec/values.decided_spec gives its shape)
    by_values = bool(spec.meta.get("recorded")) or spec.launch is not None
    if (
        by_values
        and spec.grid is not None
        and len(spec.grid) == 1
        and {"BLOCK_M", "BLOCK_N"} <= set(spec.constexprs)
        and {"M", "N"} <= set(shape)
    ):
        grid = _matmul_grid(spec)
        if grid(spec.constexprs) == tuple(spec.grid):
            return grid
    return _recorded_axes(spec, blocks) if by_values and blocks else None


def _recorded_axes(spec: KernelSpec, blocks: Collection[str]) -> Callable[[Mapping[str, Any]], tuple[int, ...]] | None:
    """The grid of a recorded launch whose axes are ``cdiv(S, B)`` of a block ``B`` among ``blocks``
    and a size ``S`` of the launch (``meta.shape``, an int constexpr), the others fixed: Liger's dyt
    bwd launches ``(cdiv(N, BLOCK_N), NUM_SMS)``, recorded as (4, 132) at BLOCK_N=1024. Why: kept
    as recorded, BLOCK_N=2048 was estimated on 4 column blocks of 2048 (twice the work of the
    launch it stands for) and ranked below 1024 for it. An axis of 1, or one that two blocks or two
    sizes explain differently, stays as recorded: a coincidence must not move the grid."""
    if spec.grid is None:
        return None
    current = {b: spec.constexprs[b] for b in blocks if _is_int(spec.constexprs.get(b))}
    shape = spec.meta.get("shape") or {}
    sizes = {k: v for k, v in {**spec.constexprs, **shape}.items() if k not in current and _is_int(v) and v > 1}
    rules: list[tuple[str, int] | None] = []
    for n in spec.grid:
        fits = {(b, s) for b, bv in current.items() for s in sizes.values() if n > 1 and math.ceil(s / bv) == n}
        rules.append(fits.pop() if len(fits) == 1 else None)
    if not any(rules):
        return None
    fixed = tuple(spec.grid)
    return lambda consts: tuple(
        n if r is None else max(1, math.ceil(r[1] / int(consts[r[0]]))) for n, r in zip(fixed, rules, strict=True)
    )


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _listed(spec: KernelSpec) -> tuple[dict[str, Knob], tuple[TuneConfig, ...]]:
    """A recorded kernel's @triton.autotune configs: the library's own list of correct configs, as the
    space (and the constexprs it varies as its knobs, for the report)."""
    raw = spec.meta.get("autotune_configs")
    if not isinstance(raw, list) or not raw:
        return {}, ()
    configs: list[TuneConfig] = []
    values: dict[str, set[int]] = {}
    for entry in raw:
        kwargs = dict(entry.get("kwargs") or {}) if isinstance(entry, Mapping) else {}
        blocks = {
            k: v for k, v in kwargs.items() if k in spec.constexprs and isinstance(v, int) and not isinstance(v, bool)
        }
        if len(blocks) != len(kwargs):
            return {}, ()  # a config that sets something the spec has no constexpr for: not this kernel's list
        configs.append(
            TuneConfig.of(
                int(entry.get("num_warps") or spec.num_warps), int(entry.get("num_stages") or spec.num_stages), blocks
            )
        )
        for k, v in blocks.items():
            values.setdefault(k, set()).add(v)
    why = "the values of the kernel's own @triton.autotune configs (recorded): its list is searched as it is"
    knobs = {k: Knob(k, tuple(sorted(v)), why, None, None, False) for k, v in values.items() if len(v) > 1}
    return knobs, tuple(configs)


def _inductor_style(spec: KernelSpec) -> dict[str, Knob]:
    knobs: dict[str, Knob] = {}
    for name, ty in spec.signature.items():
        cur = spec.constexprs.get(name)
        if ty != "constexpr" or not isinstance(cur, int) or isinstance(cur, bool) or not _is_pow2(cur):
            continue
        if name in _GRID_BLOCK:
            cap, axis, red = INDUCTOR_MAX[name[0]], _GRID_BLOCK[name], False
            why = f"{name} tiles grid axis {axis} with masked loads (inductor style): any power of two is correct"
        elif _REDUCTION_BLOCK.match(name):
            cap, axis, red = INDUCTOR_MAX["R"], None, True
            why = f"{name} steps a loop over the reduction with masked loads (inductor style): any power of two is correct"
        else:
            continue
        values = tuple(
            sorted(
                {
                    cur << k if k >= 0 else cur >> -k
                    for k in range(-INDUCTOR_SPAN, INDUCTOR_SPAN + 1)
                    if (cur << k if k >= 0 else cur >> -k) >= 1
                }
                & set(_pow2_upto(cap))
            )
        )
        knobs[name] = Knob(name, values, why, axis, None, red)
    return knobs


def _pow2_upto(cap: int) -> list[int]:
    return [1 << i for i in range(cap.bit_length()) if 1 << i <= cap]


def recipe_knobs(spec: KernelSpec) -> dict[str, Knob]:
    """The block knobs the operator of ``spec``'s kernel declares (ktriage/ops/<op>.py; empty if none)."""
    return registry.knobs_for(spec)


def config_space(
    spec: KernelSpec,
    *,
    warps: Sequence[int] | None = None,
    stages: Sequence[int] | None = None,
    blocks: Mapping[str, Sequence[int]] | None = None,
) -> ConfigSpace:
    """The space ``ktriage tune`` searches for ``spec``. ``warps``/``stages``/``blocks`` narrow it
    (e.g. the CLI's ``--warps 4,8``); ``blocks`` values must be within the knob's allowed values."""
    arch = parse_arch(spec.target)
    max_warps = arch.max_threads_per_block // arch.warp_size
    found: dict[str, Knob] = {}
    notes: list[str] = []
    listed_knobs, listed = _listed(spec) if not (warps or stages or blocks) else ({}, ())
    for source in (_from_meta(spec), listed_knobs, recipe_knobs(spec), _inductor_style(spec)):
        for name, knob in source.items():
            found.setdefault(name, knob)
    if listed:
        knobs = [found[n] for n in spec.signature if n in listed_knobs]
        notes.append(
            worded(
                lambda o: (
                    f"the space is the kernel's own @triton.autotune list ({plural(len(listed), 'config')}, "
                    f"{'recorded' if spec.meta.get('recorded') else 'as its JIT lists them'}); {o('warps', '--warps')}, {o('stages', '--stages')} or {o('blocks', '--block')} "
                    "search a product instead"
                )
            )
        )
        default = TuneConfig.of(
            spec.num_warps,
            spec.num_stages,
            {k: v for k, v in spec.constexprs.items() if k in listed_knobs and isinstance(v, int)},
        )
        return ConfigSpace(
            spec,
            tuple(knobs),
            tuple(sorted({c.num_warps for c in listed})),
            tuple(sorted({c.num_stages for c in listed})),
            default,
            tuple(notes),
            recipe_grid(spec, tuple(listed_knobs)),
            listed=tuple(
                TuneConfig.of(c.num_warps, c.num_stages, {k: v for k, v in c.constexprs if k in listed_knobs})
                for c in listed
            ),
        )
    knobs = [found[n] for n in spec.signature if n in found]  # source order
    if blocks:
        narrowed = []
        by_name = {k.name: k for k in knobs}
        for name in blocks:
            if name not in by_name:
                raise SpecError(
                    f"{spec.name}: {name} is not a tunable block of this kernel",
                    f"tunable blocks: {sorted(by_name) or 'none (only num_warps/num_stages)'}",
                )
        for k in knobs:
            if k.name in blocks:
                bad = [v for v in blocks[k.name] if v not in k.values]
                if bad:
                    raise SpecError(
                        f"{spec.name}: {k.name}={bad} is outside the allowed values {list(k.values)}", f"why: {k.why}"
                    )
                k = Knob(k.name, tuple(sorted(set(blocks[k.name]))), k.why, k.grid_axis, k.numel, k.reduction)
            narrowed.append(k)
        knobs = narrowed
    w = tuple(sorted(set(warps))) if warps else tuple(x for x in WARP_CHOICES if x <= max_warps)
    bad_w = [x for x in w if x not in WARP_CHOICES or x > max_warps]
    if bad_w:
        raise SpecError(
            f"num_warps {bad_w} cannot launch on {arch.name}",
            f"use powers of two up to {max_warps} ({arch.max_threads_per_block} threads per CTA)",
        )
    s = tuple(sorted(set(stages))) if stages else STAGE_CHOICES
    if any(x < 1 for x in s):
        raise SpecError(
            f"num_stages {list(s)} must be >= 1",
            f"use 1 or more (the default search is {', '.join(map(str, STAGE_CHOICES))})",
        )
    if not knobs:
        notes.append(
            "no block-size constexpr is declared tunable: only num_warps and num_stages are searched "
            "(declare blocks with [kernel.meta.tune])"
        )
    default_blocks: dict[str, int] = {}
    for k in knobs:
        value = spec.constexprs.get(k.name)
        if isinstance(value, int) and not isinstance(value, bool):
            default_blocks[k.name] = value
    default = TuneConfig.of(spec.num_warps, spec.num_stages, default_blocks)
    return ConfigSpace(spec, tuple(knobs), w, s, default, tuple(notes), recipe_grid(spec))
