"""The GPU side of a time bisect: a :data:`~ktriage.bisect.decide.MeasureFn` that times each candidate's
kernels from a compile-here bundle, interleaved in this process (``measure_interleaved``).

GPU host only, except :class:`BundleMeasure` with a fake ``prepare`` and ``sampler_factory`` (the CPU
tests). The predicate that calls it is ``ktriage.bisect.time_predicate.TimePredicate``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ktriage.bisect.candidate import Candidate
from ktriage.bisect.decide import Variant, variant_key
from ktriage.errors import FormatError, KtriageError, MeasureError

if TYPE_CHECKING:
    from torch import Tensor

    from ktriage.measure.timing import SamplerFactory, TimingOptions
    from ktriage.workload.bundles.format import Bundle


PrepareFn = Callable[[Variant], Callable[[], None]]


@dataclass
class BundleMeasure:
    """A :data:`MeasureFn` over prepared variants, timed by ``measure_interleaved`` in this process.

    ``prepare(variant)`` returns the timed callable of a variant (built once, on first use, and kept:
    later rounds reuse it). A variant whose preparation or timing raises is left out of the result
    and its error kept in ``errors`` (the predicate turns it into a ``skip``). GPU host only, except
    with a fake ``prepare`` and ``sampler_factory`` (the CPU tests).
    """

    prepare: PrepareFn
    options: TimingOptions | None = None
    sampler_factory: SamplerFactory | None = None
    seed: int = 0
    max_time_s: float = 120.0
    errors: dict[str, str] = field(default_factory=dict)
    calls: int = 0
    _ready: dict[str, Callable[[], None]] = field(default_factory=dict)

    def __call__(self, variants: list[Variant], n: int) -> dict[str, list[float]]:
        from ktriage.measure.timing import TimingOptions, measure_interleaved

        calls: dict[str, Callable[[], None]] = {}
        for v in variants:
            key = variant_key(v)
            if key in self.errors:
                continue
            if key not in self._ready:
                try:
                    self._ready[key] = self.prepare(v)
                except Exception as exc:
                    if getattr(exc, "sticky", False):
                        raise
                    self.errors[key] = exc.problem if isinstance(exc, KtriageError) else f"{type(exc).__name__}: {exc}"
                    continue
            calls[key] = self._ready[key]
        if not calls:
            return {}
        options = self.options or TimingOptions()
        rounds = max(1, math.ceil(n / options.calls_per_round))
        self.calls += 1
        res = measure_interleaved(
            calls,
            rounds=rounds,
            min_samples=n,
            max_time_s=self.max_time_s,
            stop=lambda s: True,
            seed=self.seed + self.calls,
            options=options,
            sampler_factory=self.sampler_factory,
        )
        for key, err in res.errors.items():
            self.errors[key] = err
        return {k: v for k, v in res.samples.items() if k not in res.errors and v}


def bench_measure(
    bundle: Bundle | str,
    *,
    backend: str,
    input_id: int,
    mode: str | None = None,
    toolchain_of: Callable[[Candidate], str] | None = None,
    options: TimingOptions | None = None,
    artifact_timing: str = "tritonbench",
    check_outputs: bool = True,
    seed: int = 0,
) -> BundleMeasure:
    """The GPU measurement of a time bisect: each candidate is ``backend``'s artifact replay with the
    candidate's toolchain from a compile-here ``bundle`` (ktriage.workload.bundles.format), on input
    ``input_id``, all timed interleaved in THIS process. ``toolchain_of(candidate)`` gives the
    bundle's toolchain id (default: ``candidate.meta["toolchain_id"]``, else ``candidate.id``).
    With ``check_outputs`` every variant's results are checked against the first prepared one
    (the good endpoint, which the predicate measures first); a wrong one is never timed.

    GPU host only (torch + cuda.bindings); not run in this session (no device time for issue 4):
    its logic is the BundleMeasure above, tested on CPU with fakes.
    """
    from ktriage.measure.loader import runner_loader
    from ktriage.workload.bundles.format import load_bundle
    from ktriage.workload.bundles.launch import make_launcher
    from ktriage.workload.ops.backends import check_outputs as _check
    from ktriage.workload.ops.backends import make_input
    from ktriage.workload.ops.replay import artifact_backend

    bun = load_bundle(bundle) if isinstance(bundle, str) else bundle
    run_mode = mode or bun.mode
    case = next((c for c in bun.input_cases() if c.id == input_id), None)
    if case is None:
        raise FormatError(
            f"bundle {bun.path} has no input {input_id}", f"inputs in the bundle: {[c.id for c in bun.input_cases()]}"
        )
    inp = make_input(bun.op, case, precision=bun.precision)
    pick = toolchain_of or (lambda c: str(c.meta.get("toolchain_id", c.id)))
    loader = runner_loader()
    reference: dict[str, Tensor | None] = {}  # the first toolchain's outputs: the others are checked against them

    def prepare(v: Variant) -> Callable[[], None]:
        import torch

        tc = pick(v) if isinstance(v, Candidate) else v
        if tc not in bun.toolchains:
            raise FormatError(
                f"toolchain {tc} is not in bundle {bun.path}", f"bundle toolchains: {', '.join(bun.toolchains)}"
            )
        replay = artifact_backend(
            backend,
            launch=make_launcher(bun, tc, loader),
            specs=bun.spec_source(),
            timing=artifact_timing,
            sm_count=bun.sm_count,
        )
        call = replay.prepare(inp, run_mode)
        if check_outputs:
            outputs = replay.outputs()
            torch.cuda.synchronize()
            if not reference:
                reference.update(outputs)
            else:
                acc = _check(reference, outputs, precision=inp.precision)
                if not acc.passed:
                    raise MeasureError(
                        f"{tc}: wrong results ({acc.reason})", "a wrong kernel is not timed; the candidate is skipped"
                    )

        def timed() -> None:
            call()

        grads = replay.grad_to_none

        def before() -> None:  # outside the timed region, as TritonBench resets grads
            for t in grads():
                t.grad = None

        timed.before = before  # type: ignore[attr-defined]
        return timed

    return BundleMeasure(prepare, options=options, seed=seed)
