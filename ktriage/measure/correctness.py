"""Check a variant's outputs against a reference BEFORE it is timed.

Why: a kernel launched through a hand-written ABI with a wrong argument order, or a compiler
version that miscompiles, can be fast and wrong; a timing table must never show it as a result.
The rules (see docs/measure.md):

- outputs are *poisoned* (floats with NaN, ints with a sentinel) before the checked run, so an
  element the kernel did not write cannot match by accident (zeros would);
- inputs are fresh random values per check (the caller draws them; ``random_like`` helps);
- the error is measured in float64 as ``||out - ref|| / ||ref||`` (the norm-relative error that
  stays meaningful for reductions, where elementwise rtol fails on near-zero sums), plus the
  largest elementwise error relative to the reference's peak magnitude;
- tolerances by dtype; NaN or Inf where the reference is finite never passes.

A failed check gives the Cell status "wrong" with the numbers in ``Cell.accuracy``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ktriage.errors import MeasureError
from ktriage.schema.jsontypes import JSONObject

#: Integer outputs are poisoned with this value (a float NaN has no integer counterpart).
INT_POISON = -0x5A5A5A5A


@dataclass(frozen=True)
class Tolerance:
    """``rel``: bound on ||out-ref||/||ref||; ``peak``: bound on max|out-ref| / max|ref|."""

    rel: float
    peak: float


#: fp32 kernels vs a float32 torch reference differ only by summation order: ~1e-6 in practice,
#: so 1e-4 leaves room for reductions over thousands of rows (layer_norm dW) and catches real bugs.
TOLERANCES: dict[str, Tolerance] = {
    "fp64": Tolerance(1e-10, 1e-8),
    "fp32": Tolerance(1e-4, 1e-3),
    "tf32": Tolerance(2e-3, 1e-2),
    "fp16": Tolerance(3e-3, 2e-2),
    "bf16": Tolerance(1.6e-2, 5e-2),
    "int": Tolerance(0.0, 0.0),
}


def dtype_key(dtype: Any) -> str:
    """'fp32' / 'bf16' / 'fp16' / 'fp64' / 'int' for a torch dtype (or such a string)."""
    if isinstance(dtype, str):
        return dtype
    name = str(dtype).replace("torch.", "")
    return {
        "float32": "fp32",
        "float": "fp32",
        "float16": "fp16",
        "half": "fp16",
        "bfloat16": "bf16",
        "float64": "fp64",
        "double": "fp64",
    }.get(name, "int")


def tolerance_for(dtype: Any) -> Tolerance:
    return TOLERANCES[dtype_key(dtype)]


@dataclass(frozen=True)
class OutputCheck:
    """One output compared with its reference."""

    name: str
    dtype: str
    passed: bool
    rel_err: float  # ||out-ref|| / ||ref|| in float64 (inf if out has NaN/Inf)
    max_abs_err: float
    peak_ref: float
    nonfinite: int  # elements NaN/Inf in out where ref is finite (unwritten poison shows here)
    rel_tol: float
    peak_tol: float
    reason: str | None = None


@dataclass(frozen=True)
class Accuracy:
    """All outputs of one checked run; ``to_cell()`` is what goes into ``Cell.accuracy``."""

    outputs: tuple[OutputCheck, ...]

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outputs)

    @property
    def status(self) -> str:
        """The Cell status this check implies before timing: "ok" or "wrong"."""
        return "ok" if self.passed else "wrong"

    @property
    def reason(self) -> str | None:
        bad = [o for o in self.outputs if not o.passed]
        return "; ".join(f"{o.name}: {o.reason}" for o in bad) if bad else None

    def to_cell(self) -> JSONObject:
        worst = max(self.outputs, key=lambda o: o.rel_err, default=None)
        return {
            "passed": self.passed,
            "rel_err": None if worst is None else worst.rel_err,
            "max_abs_err": max((o.max_abs_err for o in self.outputs), default=0.0),
            "rtol": None if worst is None else worst.rel_tol,
            "atol": None if worst is None else worst.peak_tol * worst.peak_ref,
            "outputs": [asdict(o) for o in self.outputs],
            "reason": self.reason,
        }


def poison_(tensors: Sequence[Any]) -> None:
    """Fill outputs with NaN (floating) or ``INT_POISON`` (integer) in place."""
    for t in tensors:
        if t.dtype.is_floating_point:
            t.fill_(float("nan"))
        else:
            t.fill_(INT_POISON)


def compare(out: Any, ref: Any, *, name: str = "out", tolerance: Tolerance | None = None) -> OutputCheck:
    """Compare one output tensor with its reference (both torch tensors, any device)."""
    import torch

    key = dtype_key(out.dtype)
    tol = tolerance or TOLERANCES[key]
    if tuple(out.shape) != tuple(ref.shape):
        return OutputCheck(
            name,
            key,
            False,
            math.inf,
            math.inf,
            0.0,
            0,
            tol.rel,
            tol.peak,
            f"shape {tuple(out.shape)} != reference {tuple(ref.shape)}",
        )
    o = out.detach().to(torch.float64)
    r = ref.detach().to(torch.float64)
    ref_finite = torch.isfinite(r)
    if not bool(ref_finite.all()):
        raise MeasureError(
            f"the reference for {name} contains NaN/Inf",
            "fix the reference or its inputs",
        )
    nonfinite = int((~torch.isfinite(o)).sum())
    peak = float(r.abs().max()) if r.numel() else 0.0
    if nonfinite:
        return OutputCheck(
            name,
            key,
            False,
            math.inf,
            math.inf,
            peak,
            nonfinite,
            tol.rel,
            tol.peak,
            f"{nonfinite} of {o.numel()} elements are NaN/Inf (unwritten or overflowed)",
        )
    diff = o - r
    max_abs = float(diff.abs().max()) if diff.numel() else 0.0
    ref_norm = float(torch.linalg.vector_norm(r))
    diff_norm = float(torch.linalg.vector_norm(diff))
    rel = diff_norm / ref_norm if ref_norm > 0 else (0.0 if diff_norm == 0 else math.inf)
    peak_ok = max_abs <= tol.peak * peak if peak > 0 else max_abs == 0
    passed = rel <= tol.rel and peak_ok
    reason = None
    if not passed:
        reason = f"rel_err {rel:.3g} (tol {tol.rel:g}), max_abs_err {max_abs:.3g} vs peak {peak:.3g} (tol {tol.peak:g})"
    return OutputCheck(name, key, passed, rel, max_abs, peak, 0, tol.rel, tol.peak, reason)


def check_run(
    run: Callable[[], Any],
    outputs: Mapping[str, Any],
    reference: Mapping[str, Any] | Callable[[], Mapping[str, Any]],
    *,
    tolerances: Mapping[str, Tolerance] | None = None,
    synchronize: Callable[[], None] | None = None,
    views: Callable[[], Mapping[str, Any]] | None = None,
) -> Accuracy:
    """Poison ``outputs``, call ``run()`` once, then compare each output with ``reference[name]``.

    ``outputs`` are the tensors ``run`` writes (already bound into it); ``reference`` maps names to
    expected tensors (or is a callable computing them after the run). ``views``, if given, computes
    what is compared from the raw outputs (e.g. ``{"dw": dw_partial.sum(0)}``); NaN poison
    propagates through such reductions, so an unwritten partial still fails.
    """
    poison_(list(outputs.values()))
    run()
    if synchronize is not None:
        synchronize()
    else:
        import torch

        if torch.cuda.is_available():
            torch.cuda.synchronize()
    refs = reference() if callable(reference) else reference
    checked = dict(views()) if views is not None else dict(outputs)
    missing = set(checked) - set(refs)
    if missing:
        raise MeasureError(
            f"no reference for outputs {sorted(missing)}",
            "give a reference tensor per checked output",
        )
    tol = dict(tolerances or {})
    return Accuracy(tuple(compare(checked[n], refs[n], name=n, tolerance=tol.get(n)) for n in checked))


def random_like(t: Any, *, generator: Any = None, scale: float = 1.0) -> Any:
    """Fresh standard-normal values shaped like ``t`` (ints: uniform in [0, 100))."""
    import torch

    if t.dtype.is_floating_point:
        return torch.randn(t.shape, dtype=t.dtype, device=t.device, generator=generator) * scale
    return torch.randint(0, 100, t.shape, dtype=t.dtype, device=t.device, generator=generator)
