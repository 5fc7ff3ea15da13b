"""The one home of how ktriage words a count: ``plural(1, "operator")`` is "1 operator", ``plural(8, "cell")``
"8 cells"; and of the words that agree with one: ``agree(n, "it does", "they do")``.

Why a module: messages that counted with an f-string said "8 cells of 1 operators" (calibrate's
``fitted_on``) or hedged with "toolchain(s)"; one helper, low in the layers (every package may word a
count), says it right once. ``nouns``: the plural where adding an "s" is wrong ("results files or runs").
Why ``agree`` here too: the pronouns and verbs after a count or a list ("it"/"them", "is"/"are",
"does"/"do") were chosen by hand in each message, each with its own test of the count (``== 1`` in
some, ``> 1`` in others, which differ at zero); one rule, the same as ``plural``'s, words them all.
"""

from __future__ import annotations


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
