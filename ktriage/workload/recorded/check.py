"""Differential correctness of a recorded kernel: each toolchain's results against the reference's.

Why differential: a recorded kernel has no reference implementation (no torch op to compare
with), but every toolchain compiled the same source for the same inputs. So each toolchain's
kernel runs on identical inputs (fresh copies of the same seeded data) and every tensor argument
after the launch (whatever the kernel may have written) is compared with the reference
toolchain's (the first ``-t``). A toolchain whose results differ beyond the dtype's tolerance is a
finding: a miscompile, or a kernel whose result depends on scheduling.

Two results are compared in two steps:

- **bitwise**: the raw bits of every element (NaNs with the same payload match, ``-0.0`` does not
  match ``0.0``); the reference runs twice, and when its two runs are bitwise equal it is
  *deterministic*, so a bitwise-equal toolchain is reported as such;
- **within tolerance** otherwise (float64 arithmetic): elements finite in one result and not in
  the other are a mismatch; over the finite ones, ``||out - ref|| / ||ref||`` must be at most
  ``rel`` and ``max |out - ref|`` at most ``peak`` times ``max |ref|``. Integers and bools must be
  equal. Bitwise equality is not required across toolchains even for a deterministic kernel:
  another compiler may contract ``a * b + c`` into an FMA or reorder a reduction, which changes
  the last bits legitimately.

The functions take the array module as ``xp`` (``numpy`` in the CPU tests, ``torch`` on the GPU),
so one implementation is both tested and used; only calls both modules share appear here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ktriage.schema.jsontypes import JSONObject
from ktriage.workload.recorded.args import FLOATS, ITEMSIZE


@dataclass(frozen=True)
class Tolerance:
    rel: float  # bound on ||out - ref|| / ||ref||
    peak: float  # bound on max|out - ref| / max|ref|


TOLERANCES = {
    "fp64": Tolerance(1e-12, 1e-10),
    "fp32": Tolerance(1e-5, 1e-4),
    "fp16": Tolerance(1e-2, 2e-2),
    "bf16": Tolerance(1e-2, 2e-2),
    "fp8e4nv": Tolerance(1.25e-1, 2.5e-1),
    "fp8e5": Tolerance(2.5e-1, 5e-1),
}
EXACT = Tolerance(0.0, 0.0)


def tolerance_for(dtype: str) -> Tolerance:
    """By Triton dtype name: fp32 ~1e-5 relative, fp16/bf16 ~1e-2, integers and bools exact."""
    return TOLERANCES.get(dtype, EXACT)


@dataclass(frozen=True)
class ArgDiff:
    """One tensor argument of a toolchain's result against the reference's."""

    name: str
    dtype: str
    bitwise_equal: bool
    mismatched_bits: int  # elements whose bits differ
    nonfinite_mismatch: int  # elements finite in one result and NaN/Inf in the other
    max_abs_err: float  # over the elements finite in both
    peak_ref: float
    rel_err: float
    passed: bool

    def describe(self) -> str:
        if self.bitwise_equal:
            return f"{self.name}: bitwise equal"
        text = f"{self.name}: max abs err {self.max_abs_err:.3g} (peak {self.peak_ref:.3g}), rel err {self.rel_err:.3g}"
        if self.nonfinite_mismatch:
            text += f", {self.nonfinite_mismatch} elements NaN/Inf in only one result"
        return text


def _bits(a: Any, dtype: str, xp: Any) -> Any:
    width = {8: xp.int64, 4: xp.int32, 2: xp.int16, 1: xp.uint8}[ITEMSIZE.get(dtype, 4)]
    return a.view(width)


#: Elements compared at a time: float64 copies of a chunk stay at 512 MB (a recorded cross-entropy
#: gradient is 16384 x 131072 fp32, 8.6 GB: whole float64 copies would need tens of GB).
CHUNK = 1 << 26


def diff_arrays(name: str, dtype: str, ref: Any, out: Any, xp: Any, *, chunk: int = CHUNK) -> ArgDiff:
    """Compare one argument (arrays of the same dtype and size, compared as flat sequences) with the
    rule of the module docstring, ``chunk`` elements at a time."""
    ref = xp.reshape(ref, (-1,))
    out = xp.reshape(out, (-1,))
    tol = tolerance_for(dtype)
    mismatched = nonfinite = 0
    max_abs = peak = sum_d2 = sum_r2 = 0.0
    for start in range(0, int(ref.shape[0]), chunk):
        r_raw, o_raw = ref[start : start + chunk], out[start : start + chunk]
        bad = int((_bits(r_raw, dtype, xp) != _bits(o_raw, dtype, xp)).sum())
        mismatched += bad
        r = xp.asarray(r_raw, dtype=xp.float64)
        fr = xp.isfinite(r)
        rz = xp.where(fr, r, xp.zeros_like(r))
        peak = max(peak, float(xp.abs(rz).max()))
        if not bad:
            sum_r2 += float((rz * rz).sum())
            continue
        o = xp.asarray(o_raw, dtype=xp.float64)
        fo = xp.isfinite(o)
        nonfinite += int((fr != fo).sum())
        both = fr & fo
        d = xp.where(both, o - r, xp.zeros_like(r))
        rz = xp.where(both, r, xp.zeros_like(r))
        max_abs = max(max_abs, float(xp.abs(d).max()))
        sum_d2 += float((d * d).sum())
        sum_r2 += float((rz * rz).sum())
    if mismatched == 0:
        return ArgDiff(name, dtype, True, 0, 0, 0.0, peak, 0.0, True)
    if dtype not in FLOATS:
        return ArgDiff(name, dtype, False, mismatched, 0, max_abs, peak, math.inf, False)
    ref_norm, diff_norm = math.sqrt(sum_r2), math.sqrt(sum_d2)
    rel = diff_norm / ref_norm if ref_norm > 0 else (0.0 if diff_norm == 0 else math.inf)
    peak_ok = max_abs <= tol.peak * peak if peak > 0 else max_abs == 0
    passed = nonfinite == 0 and rel <= tol.rel and peak_ok
    return ArgDiff(name, dtype, False, mismatched, nonfinite, max_abs, peak, rel, passed)


@dataclass(frozen=True)
class ResultCheck:
    """A toolchain's results against the reference: all arguments, and what the cell becomes (the
    differential check of a replay; a timing verdict is ``ktriage.stats.verdict.Verdict``)."""

    diffs: tuple[ArgDiff, ...]
    reference_deterministic: bool
    reference_toolchain: str

    @property
    def passed(self) -> bool:
        return all(d.passed for d in self.diffs)

    @property
    def bitwise_equal(self) -> bool:
        return all(d.bitwise_equal for d in self.diffs)

    @property
    def agreement(self) -> str:
        """ "bitwise equal", "within tolerance" or "differs"."""
        return "bitwise equal" if self.bitwise_equal else "within tolerance" if self.passed else "differs"

    @property
    def worst(self) -> ArgDiff | None:
        failed = [d for d in self.diffs if not d.passed] or [d for d in self.diffs if not d.bitwise_equal]
        return max(failed, key=lambda d: (d.nonfinite_mismatch, d.rel_err, d.max_abs_err), default=None)

    @property
    def reason(self) -> str | None:
        if self.passed:
            return None
        w = self.worst
        assert w is not None
        detail = f"max abs err {w.max_abs_err:.3g}, at arg {w.name}"
        if w.nonfinite_mismatch:
            detail += f"; {w.nonfinite_mismatch} elements NaN/Inf in only one result"
        return (
            f"results differ from the reference ({self.reference_toolchain}): miscompile or non-determinism ({detail})"
        )

    def to_cell(self) -> JSONObject:
        """What goes into ``Cell.accuracy``."""
        w = self.worst
        return {
            "passed": self.passed,
            "agreement": self.agreement,
            "bitwise_equal": self.bitwise_equal,
            "reference_toolchain": self.reference_toolchain,
            "reference_deterministic": self.reference_deterministic,
            "max_abs_err": max((d.max_abs_err for d in self.diffs), default=0.0),
            "rel_err": None if w is None else w.rel_err,
            "worst_arg": None if w is None else w.name,
            "outputs": [asdict(d) for d in self.diffs if not d.bitwise_equal],
            "compared_args": len(self.diffs),
            "reason": self.reason,
        }


def judge(diffs: Sequence[ArgDiff], *, reference_deterministic: bool, reference_toolchain: str) -> ResultCheck:
    return ResultCheck(tuple(diffs), reference_deterministic, reference_toolchain)
