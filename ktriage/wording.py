"""The one home of how ktriage words a count: ``plural(1, "operator")`` is "1 operator", ``plural(8, "cell")``
"8 cells".

Why a module: messages that counted with an f-string said "8 cells of 1 operators" (calibrate's
``fitted_on``) or hedged with "toolchain(s)"; one helper, low in the layers (every package may word a
count), says it right once. ``nouns``: the plural where adding an "s" is wrong ("results files or runs").
"""

from __future__ import annotations


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """``n`` and the noun, singular for exactly one: "1 cell", "0 cells", "2 cells"."""
    return f"{n} {noun if n == 1 else (nouns or noun + 's')}"
