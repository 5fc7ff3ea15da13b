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

from ktriage.errors import KtriageError, Worded, joined, option, spelled, worded
from ktriage.wording import plus_minus

NOISE_FLOOR = 0.01  # a gate below the GPU's run-to-run spread (about 1 %) only flags noise


def gate_percent(threshold: float) -> str:
    """The gate as the user gave it, in percent: "5%" for 0.05, "2.5%" for 0.025, "12.5%" for 0.125.

    Why one function: every report that names the gate (explain's gate line and bullets, triage's notes
    and header, compare's verdict note, bisect's) wrote it with ``:.0%``, so ``--threshold 0.025`` read
    "+-2%" and 0.125 "+-12%", a gate the user did not give. Rounded to 1e-4 % first: 0.07 * 100 is
    7.000000000000001 in floating point, and is "7%"."""
    return f"{round(threshold * 100, 4):g}%"


def gate_band(threshold: float) -> str:
    """The gate as a band around no change, "±5%" for 0.05: how every report names it ("the ±5% gate",
    "Gate: ±5%"); :func:`ktriage.wording.plus_minus` says why one spelling."""
    return plus_minus(gate_percent(threshold))


def check_gate(
    threshold: float, *, percent: bool = False, allow_zero: bool = False, flag_percent: bool = False
) -> None:
    """Refuse a gate no one means, naming the spelling that was probably meant.

    ``threshold``: the gate as a fraction (0.05 for 5 %), however the user wrote it. ``percent``: the
    command line spells it in percent (triage), so the messages quote ``--threshold`` in percent.
    ``allow_zero``: 0 is a meaningful gate (explain: flag any predicted change whose interval excludes
    no change). ``flag_percent``: ``threshold`` is the library's fraction (``kt.triage(threshold=0.1)``)
    while the command's flag is in percent (``--threshold 10``).

    Why the messages name the keyword and the flag (``threshold=5 (--threshold 5)``): the same error
    reaches a Python caller and a command-line user, and ``--threshold 10 is a fraction here`` told a
    caller of ``kt.triage(threshold=10)`` to pass ``--threshold 0.1``, which the command reads as 0.1 %."""
    shown = f"{threshold * 100:g}" if percent else f"{threshold:g}"
    if percent:
        given, example = f"--threshold {shown}", "--threshold 5 for a 5% gate"
    elif flag_percent:
        given = Worded(f"threshold={shown} (--threshold {threshold * 100:g})", f"--threshold {threshold * 100:g}")
        example = _triage(0.1) + " for a 10% gate"
    else:
        given, example = (
            option("threshold", "--threshold", threshold),
            worded(lambda o: f"{spelled(_gate(0.05), o)} for a 5% gate"),
        )
    if not math.isfinite(threshold) or threshold < 0 or (threshold == 0 and not allow_zero):
        raise KtriageError(
            worded(lambda o: f"{spelled(given, o)} is not a gate"),
            worded(lambda o: f"give a positive size of change, e.g. {spelled(example, o)}"),
        )
    if threshold >= 1:
        if percent:
            raise KtriageError(
                f"--threshold {shown} would be a {shown}% gate: no change that small is ever flagged",
                "triage's --threshold is in percent: give e.g. --threshold 10 for a 10% gate",
            )
        meant = _triage(threshold / 100) if flag_percent else _gate(threshold / 100)
        named = f"threshold={shown}" if flag_percent else given  # flag_percent: only a library caller gives >= 1
        raise KtriageError(
            joined(named, f" is a fraction here: a {gate_percent(threshold)} gate"),
            worded(lambda o: f"for a {shown}% gate pass {spelled(meant, o)}"),
        )
    if percent and 0 < threshold < NOISE_FLOOR:
        raise KtriageError(
            f"--threshold {shown} is in percent: a {shown}% gate, below the GPU's own run-to-run spread (about 1%)",
            f"for a {threshold * 10000:g}% gate pass --threshold {threshold * 10000:g}",
        )


def _gate(fraction: float) -> Worded:
    """A gate as the library and the command both take it (the same fraction)."""
    return option("threshold", "--threshold", fraction)


def _triage(fraction: float) -> Worded:
    """triage's gate: the library's fraction, the command's percent (a :class:`Worded`: the command line
    reads the flag alone)."""
    return Worded(f"threshold={fraction:g} (--threshold {fraction * 100:g})", f"--threshold {fraction * 100:g}")
