"""The magnitude gate (``--threshold``): one check for every verb that takes one.

explain, compare, bench and calibrate take the gate as a fraction (0.05), triage on the command line
in percent (5, like TritonBench's tables); each refuses the other's spelling instead of reading it.
``--threshold 5`` to explain was a 500 % gate that switched ``--fail-on`` off on a +461 % regression,
and ``triage --threshold 0.05`` a 0.05 % gate, twenty times below the GPU's own run-to-run spread:
both ran and exited 0. No gate a kernel engineer means is 100 % or more, nor below 1 %.

Kept apart from ``verdict`` (numpy, scipy) so that explain's warm start does not import them.
"""

from __future__ import annotations

import math

from ktriage.errors import KtriageError

NOISE_FLOOR = 0.01  # a gate below the GPU's run-to-run spread (about 1 %) only flags noise


def check_gate(threshold: float, *, percent: bool = False, allow_zero: bool = False) -> None:
    """Refuse a gate no one means, naming the spelling that was probably meant.

    ``threshold``: the gate as a fraction (0.05 for 5 %), however the user wrote it. ``percent``: the
    command line spells it in percent (triage), so the messages quote ``--threshold`` in percent.
    ``allow_zero``: 0 is a meaningful gate (explain: flag any predicted change whose interval excludes
    no change)."""
    shown = f"{threshold * 100:g}" if percent else f"{threshold:g}"
    if not math.isfinite(threshold) or threshold < 0 or (threshold == 0 and not allow_zero):
        example = "--threshold 5 for a 5 % gate" if percent else "--threshold 0.05 for a 5 % gate"
        raise KtriageError(f"--threshold {shown} is not a gate", f"give a positive size of change, e.g. {example}")
    if threshold >= 1:
        if percent:
            raise KtriageError(
                f"--threshold {shown} would be a {shown} % gate: no change that small is ever flagged",
                "triage's --threshold is in percent: give e.g. --threshold 10 for a 10 % gate",
            )
        raise KtriageError(
            f"--threshold {shown} is a fraction here: a {threshold:.0%} gate",
            f"for a {shown} % gate pass --threshold {threshold / 100:g}",
        )
    if percent and 0 < threshold < NOISE_FLOOR:
        raise KtriageError(
            f"--threshold {shown} is in percent: a {shown} % gate, below the GPU's own run-to-run spread (about 1 %)",
            f"for a {threshold * 10000:g} % gate pass --threshold {threshold * 10000:g}",
        )
