"""Summaries of raw latency samples, stored beside them so SQL and tables need not unpack arrays."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SampleSummary:
    """TritonBench reports latency as p50 with p20/p80 and min; the same here, plus the count."""

    n: int
    median_ms: float | None
    min_ms: float | None
    p20_ms: float | None
    p80_ms: float | None


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default method), on pre-sorted values."""
    if not sorted_values:
        raise ValueError("quantile of no samples")
    pos = (len(sorted_values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def summarize(samples_ms: Sequence[float]) -> SampleSummary:
    """Count, median, min, p20, p80 (None for a cell without samples: wrong, error, skipped)."""
    values = sorted(float(v) for v in samples_ms)
    if not values:
        return SampleSummary(0, None, None, None, None)
    return SampleSummary(len(values), quantile(values, 0.5), values[0], quantile(values, 0.2), quantile(values, 0.8))


def format_ms(value: float | None) -> str:
    """Four significant digits in fixed point: GPU latencies span 0.002 ms to seconds."""
    if value is None:
        return "-"
    if value <= 0 or not math.isfinite(value):
        return repr(value)
    decimals = max(0, 3 - math.floor(math.log10(value)))
    return f"{value:.{decimals}f}"
