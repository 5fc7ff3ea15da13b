"""The SM count a launch is priced for: the one home of ``meta["sm_count"]``.

Why a home: ``explain --sm-count N`` (a MIG slice, an H100 PCIe's 114 SMs) reached the cost model only
through the recipes whose grid is the SM count (Liger's layer_norm / rms_norm backward), which wrote it
into their spec's meta; every other op was priced for the target's usual part whatever the user
passed. Now the verbs stamp the count on every spec they resolve (:func:`price_for`, called by
``catalog.resolve``) and every reader (the cost model's facts, tune's waves, explain's fixes) asks
:func:`priced_sm_count`, so one count answers for the launch everywhere.

A recorded workload's spec carries the recording GPU's count (``record`` reads it from the device);
``--sm-count`` then prices the recorded launch, grid as recorded, on another GPU, and the recording's
count is kept beside it (``meta["recorded_sm_count"]``) for the report to say so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ktriage.arch import parse_arch
from ktriage.errors import SpecError
from ktriage.spec.model import KernelSpec

SM_COUNT = "sm_count"  # the SMs the launch is priced for (catalog: the user's or the part's; recorded: the GPU's)
RECORDED_SM_COUNT = "recorded_sm_count"  # a recorded launch priced for another count: the recording GPU's
FALLBACK_SM_COUNT = 132  # a target ktriage has no part for: priced as sm_90's usual part


def given_sm_count(meta: Mapping[str, Any], key: str = SM_COUNT) -> int | None:
    """``meta[key]`` when it is a positive int (a spec file's meta is the user's: anything else is no count)."""
    value = meta.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _usual_part_sm_count(target: str) -> int:
    """The SMs of ``target``'s usual part (sm_90: 132; ``ktriage.arch``'s table), 132 for a target without one."""
    try:
        return parse_arch(target).default_sm_count or FALLBACK_SM_COUNT
    except SpecError:
        return FALLBACK_SM_COUNT


def priced_sm_count(target: str, meta: Mapping[str, Any], override: int | None = None) -> int:
    """The SMs a launch on ``target`` with ``meta`` is priced for: ``override`` (a verb's ``--sm-count``),
    else the spec's own count, else the target's usual part."""
    return override or given_sm_count(meta) or _usual_part_sm_count(target)


def spec_sm_count(spec: KernelSpec, override: int | None = None) -> int:
    """:func:`priced_sm_count` of a spec."""
    return priced_sm_count(spec.target, spec.meta, override)


def price_for(spec: KernelSpec, sm_count: int | None) -> KernelSpec:
    """``spec`` priced for ``sm_count`` SMs (None: as it is). A recorded launch whose GPU had another
    count keeps that count as ``recorded_sm_count`` (None: the workload does not say it), so that the
    report can say "recorded on M SMs, priced for N". ``meta`` is not part of the spec's key: the
    compiled kernel is the same."""
    if sm_count is None or given_sm_count(spec.meta) == sm_count:
        return spec
    meta = {**spec.meta, SM_COUNT: sm_count}
    if spec.meta.get("recorded") and RECORDED_SM_COUNT not in spec.meta:
        # None: a workload recorded before ``record`` kept the GPU's count
        meta[RECORDED_SM_COUNT] = given_sm_count(spec.meta)
    return spec.replace(meta=meta)


def pricing_text(specs: list[KernelSpec]) -> str:
    """``priced for 114 SMs`` (and `` (recorded on 132)`` where a recording's count was overridden): the
    counts the cost model used, for the report's header."""
    priced = sorted({spec_sm_count(s) for s in specs})
    overridden = [s for s in specs if RECORDED_SM_COUNT in s.meta]
    recorded = sorted({r for s in overridden if (r := given_sm_count(s.meta, RECORDED_SM_COUNT)) is not None})
    text = f"priced for {'/'.join(map(str, priced))} SMs" if priced else ""
    if recorded:
        text += f" (recorded on {'/'.join(map(str, recorded))})"
    elif overridden:
        text += " (recorded on a GPU whose SM count the workload does not keep)"
    return text
