"""The one home of how ktriage words a count: ``plural(1, "operator")`` is "1 operator", ``plural(8, "cell")``
"8 cells"; and of the words that agree with one: ``agree(n, "it does", "they do")``.

Why a module: messages that counted with an f-string said "8 cells of 1 operators" (calibrate's
``fitted_on``) or hedged with "toolchain(s)"; one helper, low in the layers (every package may word a
count), says it right once. ``nouns``: the plural where adding an "s" is wrong ("results files or runs").
Why ``agree`` here too: the pronouns and verbs after a count or a list ("it"/"them", "is"/"are",
"does"/"do") were chosen by hand in each message, each with its own test of the count (``== 1`` in
some, ``> 1`` in others, which differ at zero); one rule, the same as ``plural``'s, words them all.
And a new/old ratio said as a change (``fmt_pct``, ``fmt_interval``): low here so that compare's tables and
triage's own text (its notes and measured column, written in the triage package, below the reports) say
one measurement one way.
"""

from __future__ import annotations

import math


def agree(n: int, one: str, many: str) -> str:
    """The words that agree with ``n`` things named just before: ``one`` for exactly one, ``many`` for
    any other count (zero too, as "0 cells"): ``agree(2, "it does", "they do")`` is "they do"."""
    return one if n == 1 else many


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """``n`` and the noun, singular for exactly one: "1 cell", "0 cells", "2 cells"."""
    return f"{n} {agree(n, noun, nouns or noun + 's')}"


def plus_minus(size: str) -> str:
    """``plus_minus("5%")`` is "±5%": a symmetric band (the gate, a model's interval, a tie tolerance).

    Why one home: the same gate read "+-10% gate" in explain's and bisect's notes and "±10%" in triage's
    setup line, side by side in one triage report; a reader wonders whether they are two gates. One
    spelling, the sign a reader knows; the JSON keeps its numbers (``threshold``), never this text."""
    return f"±{size}"


def clipped(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, ending in "..." when cut: a long line or label in a one-line
    report cell (a changed source line, a recorded input). Why one home: two modules wrote it alike."""
    return text if len(text) <= width else text[: width - 3] + "..."


def fmt_pct(r: float) -> str:
    """A new/old ratio as a change, ``+53.2%`` (one decimal); "-" where it is not a number. The one way a
    report writes a measured change: compare's change column, triage's change column, its notes and its
    measured column (triage's notes wrote "measured +53%" next to a "+53.2%" column, its measured column
    "1.013x" where compare wrote "+1.3%" for the same samples)."""
    return "-" if not math.isfinite(r) else f"{(r - 1) * 100:+.1f}%"


def fmt_interval(low: float, high: float) -> str:
    """A ratio's confidence interval as changes, ``[-1.8%, +3.1%]`` (``fmt_pct`` of each bound); "unbounded"
    where the upper bound is infinite or the lower one not above zero (no ratio bounds the change)."""
    if not (math.isfinite(high) and low > 0):
        return "unbounded"
    return f"[{fmt_pct(low)}, {fmt_pct(high)}]"
