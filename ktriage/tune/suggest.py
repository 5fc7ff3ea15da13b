"""``nearest_spill_free``: for a spilling kernel, the spill-free config closest to the library's own.

Why "nearest" and not "best": a fix suggestion in ``explain`` should be the smallest change a
library author can make (one more warp doubling rather than a new tiling), verified compile-side.
``ktriage tune`` is the tool for the best config. Distance counts doublings: num_warps 4 -> 8 is 1,
BLOCK 256 -> 64 is 2, num_stages 3 -> 2 is 1. Candidates are compiled ring by ring (all configs at
distance 1, then 2, ...), so a near fix costs a handful of compiles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ktriage.compile.compiler import Compiler
from ktriage.predict.model import Params
from ktriage.schema.jsontypes import JSONObject
from ktriage.spec.model import KernelSpec
from ktriage.spec.sms import spec_sm_count
from ktriage.toolchain.manager import Toolchain
from ktriage.tune.screen import ScreenedConfig, screen
from ktriage.tune.space import ConfigSpace, TuneConfig, config_space
from ktriage.wording import plural


@dataclass(frozen=True)
class Suggestion:
    """A verified config change: the new spec and the before/after numbers, in one sentence."""

    spec: KernelSpec
    config: TuneConfig
    default: TuneConfig
    registers_before: int
    registers_after: int
    spill_store_bytes_before: int
    spill_store_bytes_after: int
    ctas_per_sm_before: int
    ctas_per_sm_after: int
    distance: int
    sentence: str
    sm_count: int = 0  # the SMs the ranking priced waves for (explain's --sm-count, else the target's usual part)
    # the chosen config's screening estimate (us units, a ranking score) under the model that ranked it (--model)
    estimate_us: float | None = None

    def changes(self) -> dict[str, tuple[Any, Any]]:
        """Each knob that differs from the default: name -> (default, suggested)."""
        out: dict[str, tuple[Any, Any]] = {}
        if self.config.num_warps != self.default.num_warps:
            out["num_warps"] = (self.default.num_warps, self.config.num_warps)
        if self.config.num_stages != self.default.num_stages:
            out["num_stages"] = (self.default.num_stages, self.config.num_stages)
        d = self.default.blocks
        for k, v in self.config.constexprs:
            if d.get(k) != v:
                out[k] = (d.get(k), v)
        return out

    def to_json(self) -> JSONObject:
        return {
            "config": self.config.to_json(),
            "default": self.default.to_json(),
            "changes": {k: list(v) for k, v in self.changes().items()},
            "registers": [self.registers_before, self.registers_after],
            "spill_store_bytes": [self.spill_store_bytes_before, self.spill_store_bytes_after],
            "ctas_per_sm": [self.ctas_per_sm_before, self.ctas_per_sm_after],
            "distance": self.distance,
            "sentence": self.sentence,
            "sm_count": self.sm_count,
            "estimate_us": None if self.estimate_us is None else round(self.estimate_us, 4),
        }


def _steps(a: int, b: int) -> int:
    return abs(round(math.log2(max(a, 1)) - math.log2(max(b, 1))))


def distance(a: TuneConfig, b: TuneConfig) -> int:
    """Doublings between two configs (num_stages counts one per stage)."""
    ba, bb = a.blocks, b.blocks
    return (
        _steps(a.num_warps, b.num_warps)
        + abs(a.num_stages - b.num_stages)
        + sum(_steps(ba[k], bb[k]) for k in ba if k in bb)
    )


def nearest_spill_free(
    spec: KernelSpec,
    toolchain: Toolchain,
    compiler: Compiler,
    *,
    space: ConfigSpace | None = None,
    max_distance: int = 4,
    sm_count: int | None = None,
    params: Params | None = None,
) -> Suggestion | None:
    """The spill-free config nearest to ``spec``'s own, compiled and checked with ``toolchain``.

    None when ``spec`` does not spill (no fix needed), or no config within ``max_distance`` doublings
    is spill-free. Among equally near spill-free configs the screening's ranking decides, priced by the
    cost model ``params`` (its estimates and its tie tolerance): explain passes the model of ``--model``,
    so the fix it proposes is chosen by the model that priced the findings (None: ``$KTRIAGE_MODEL``,
    else the shipped fit).
    """
    space = space or config_space(spec)
    sm_count = spec_sm_count(spec, sm_count)
    default = space.default
    base = screen(
        space,
        toolchain,
        compiler,
        configs=[default],
        top_k=1,
        max_spill_bytes=0,
        sm_count=sm_count,
        staged=False,
        params=params,
    ).default
    if base.resources is None or base.occupancy is None or not (base.resources.spill_store_bytes or 0):
        return None
    rings: dict[int, list[TuneConfig]] = {}
    for cfg in space.configs():
        d = distance(cfg, default)
        if 0 < d <= max_distance:
            rings.setdefault(d, []).append(cfg)
    for d in sorted(rings):
        result = screen(
            space,
            toolchain,
            compiler,
            configs=rings[d],
            top_k=1,
            max_spill_bytes=0,
            sm_count=sm_count,
            staged=False,
            params=params,
        )
        best: ScreenedConfig | None = next((c for c in result.kept if not c.is_default), None)
        if best is None or best.resources is None or best.occupancy is None:
            continue
        before, after = base.resources, best.resources
        changed = ", ".join(f"{k} {a} -> {b}" for k, (a, b) in _changes(default, best.config).items())
        sentence = (
            f"{changed} removes the spills: {before.spill_store_bytes} B -> 0 B spill stores per thread, "
            f"{before.registers} -> {after.registers} registers, {base.occupancy.ctas_per_sm} -> "
            f"{plural(best.occupancy.ctas_per_sm, 'CTA')}/SM (compiled with {toolchain.spec})."
        )
        return Suggestion(
            best.spec,
            best.config,
            default,
            before.registers,
            after.registers,
            int(before.spill_store_bytes or 0),
            int(after.spill_store_bytes or 0),
            base.occupancy.ctas_per_sm,
            best.occupancy.ctas_per_sm,
            d,
            sentence,
            sm_count or 0,
            None if best.estimate is None else best.estimate.estimate_us,
        )
    return None


def _changes(default: TuneConfig, cfg: TuneConfig) -> dict[str, tuple[Any, Any]]:
    probe = Suggestion(KernelSpec("x", "x:x", {"x": "i32"}), cfg, default, 0, 0, 0, 0, 0, 0, 0, "")
    return probe.changes()
