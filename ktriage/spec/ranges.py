"""Printed input ranges: explain names a run of consecutive inputs as a range (``N=4608..8192``).

explain's reports name a run of consecutive inputs as a range (:func:`input_range`: ``N=4608..8192``,
``X_ptr=4096x{4608..8192}``, ``a .. b``; inside its kernel's name where the report holds several:
:func:`input_place`). Copied into ``--input`` it selects those inputs: every input from the one its start
names to the one its end names, in the order the inputs are listed (explain's order, so the run it
printed). The printer and the reader live here together, so that what is printed is what is read, and
the hint of a refused selector (:func:`range_hint`) shows a range of the very form the target's reports
print (``N=1024..4608`` for a catalog op, ``K7[X_ptr=4096x{4608..6144}]`` for a workload).

A module of its own, with no import beyond ``ktriage.errors``: the catalog's inputs (``ktriage.ops``) use it,
and they are imported by the autotune hook inside a user's Triton environment, which has no msgspec (what
``ktriage.spec.select`` needs, through the spec file reader).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from ktriage.errors import KtriageError, SpecError, joined, option, spelled, worded

# How a refusal names the selectors: a kernel's inputs are ``inputs=`` in every kt.* verb that selects
# them (explain, tune, bench, bench_recorded, bisect, history) and ``--input`` on the command line; a flag
# alone told a library caller of an option it cannot pass. A verb that takes them by another name passes
# its own (``flag``: fidelity's ``cases (-k/--case)``, profile's ``input (--input)``). Here, not in
# ``spec.select``: the catalog's inputs (``ops.inputs``) name it, and must not import the spec file reader.
INPUTS = option("inputs", "--input")

_BRACED = re.compile(r"([^{}]*)\{([^{}]+?)\.\.([^{}]+)\}([^{}]*)")
_VALUE_RANGE = re.compile(r"([^=,.\s]+)=([^=,]+?)\.\.([^=,]+)")


def input_place(kernel: str, inputs: Sequence[str]) -> str:
    """Where a finding is: its input range, inside its kernel's name (``kernel[range]``, as the fixes
    and bisect name a spec) where the report holds several kernels; else the range alone."""
    return f"{kernel}[{input_range(inputs)}]" if kernel else input_range(inputs)


def input_range(inputs: Sequence[str]) -> str:
    """``N=4608..8192`` for consecutive inputs of one shape key (``X_ptr=4096x{4608..8192}`` where two
    shapes differ in one dimension), ``a .. b`` otherwise (the callers only merge inputs of one sweep,
    see ``explain/findings.sweep_key``)."""
    if len(inputs) == 1:
        return inputs[0]
    first, last = inputs[0], inputs[-1]
    key_a, _, val_a = first.partition("=")
    key_b, _, val_b = last.partition("=")
    if val_a and key_a == key_b and "," not in first and "," not in last:
        return f"{key_a}={_value_range(val_a, val_b)}"
    return f"{first} .. {last}"


def _value_range(a: str, b: str) -> str:
    """``4608..8192``; two shapes of one rank that differ in one dimension: ``4096x{4608..8192}``."""
    dims_a, dims_b = a.split("x"), b.split("x")
    if len(dims_a) > 1 and len(dims_a) == len(dims_b):
        differ = [k for k, (x, y) in enumerate(zip(dims_a, dims_b)) if x != y]
        if len(differ) == 1:
            k = differ[0]
            return "x".join([*dims_a[:k], f"{{{dims_a[k]}..{dims_b[k]}}}", *dims_a[k + 1 :]])
    return f"{a}..{b}"


def id_runs(ids: Iterable[int]) -> str:
    """``0..3, 5, 10..11``: input ids in numeric order, each run of consecutive ones as a range. The one
    way every refusal lists ids (a catalog op's, a spec file's, a workload kernel's): sorted as text
    they read ``0, 1, 10, 11, 2``, and a list of thirty ids hid every other choice."""
    runs: list[list[int]] = []
    for n in sorted(set(ids)):
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}..{r[-1]}" for r in runs)


def range_hint(first: str, last: str, kernel: str = "") -> str:
    """The part of a refused selector's fix that says ranges are taken, its example the range explain
    prints from the input labelled ``first`` to the one labelled ``last`` (labels as the reports print
    them, ``kernel`` as they name the inputs' kernel, ``""`` where they name none): one fixed example
    (``N=4608..8192``) read as a catalog op's range on a workload, whose ranges look like
    ``K7[X_ptr=4096x{4608..6144}]``, and named inputs the target may not have."""
    example = input_place(kernel, [first, last])
    return f"or a range as explain prints it, from its first input to its last (e.g. {example})"


def range_ends(selector: str) -> tuple[str, str] | None:
    """The two selectors naming the first and last input of ``selector``, a range as explain prints it
    (the inverse of :func:`input_place`); None for a selector of another form."""
    kernel, inner = "", selector
    if selector.endswith("]") and "[" in selector:
        kernel, inner = selector[:-1].split("[", 1)
    if " .. " in inner:
        first, last = (part.strip() for part in inner.split(" .. ", 1))
    elif braced := _BRACED.fullmatch(inner):
        before, a, b, after = braced.groups()
        first, last = before + a + after, before + b + after
    elif ranged := _VALUE_RANGE.fullmatch(inner):
        key, a, b = ranged.groups()
        first, last = f"{key}={a}", f"{key}={b}"
    else:
        return None
    if not first or not last:
        return None
    return (f"{kernel}[{first}]", f"{kernel}[{last}]") if kernel else (first, last)


def select_range(
    selector: str,
    ends: tuple[str, str],
    resolve: Callable[[str], Sequence[int]],
    *,
    flag: str,
    where: str,
    group: Callable[[int], object] | None = None,
) -> list[int]:
    """The positions ``first .. last`` (inclusive) of a printed range, ``ends`` its start and end as
    selectors, each resolved to positions by ``resolve`` (which refuses one that names nothing) and
    required to name one input; ``group``: what both ends must share (a workload's kernel), since a
    printed range never crosses from one kernel into another."""
    picked: list[int] = []
    for which, end in zip(("start", "end"), ends, strict=True):
        try:
            hits = sorted(set(resolve(end)))
        except KtriageError as exc:  # the end's own refusal (names nothing, several), said of the range
            raise SpecError(joined(flag, f" {selector!r}, its {which}: ", exc.problem), exc.fix) from None
        if len(hits) != 1:
            raise SpecError(
                joined(
                    flag,
                    f" {selector!r}: its {which} {end!r} names {len(hits)} inputs of ",
                    where,
                    ", and a range runs from one input to one input",
                ),
                "name each end by one input: its full label, or inside its kernel's name (kernel[label])",
            )
        picked.append(hits[0])
    first, last = picked
    if last < first or (group is not None and group(first) != group(last)):
        raise SpecError(
            worded(
                lambda o: (
                    f"{spelled(flag, o)} {selector!r}: {ends[1]!r} is not after {ends[0]!r} in the same "
                    f"kernel's inputs of {spelled(where, o)}"
                )
            ),
            worded(
                lambda o: (
                    "give the range from its first input to its last, as explain prints it, or select each "
                    f"input with {spelled(flag, o)}"
                )
            ),
        )
    return list(range(first, last + 1))
