"""Inputs of an operator's sweep, numbered like TritonBench's ``--input-id``, and ``--input`` selectors.

Each operator module defines its own sweep (``ktriage/ops/<op>.py``); this module holds what every
sweep shares: the case type and the selector grammar ("7", "N=4608", "D=4096,V=1024", and the ranges explain
prints, "N=4608..8192": ``ktriage.spec.ranges.range_ends``; each of them also inside the op's kernel name as
the reports print a spec, "liger.layer_norm.bwd[N=4608]", or that name alone for every input).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ktriage.errors import KtriageError, worded
from ktriage.spec.ranges import INPUTS, id_runs, range_ends, range_hint, select_range

MODES = ("fwd", "bwd", "fwd_bwd")  # TritonBench's modes (--fwd, --bwd, --fwd-bwd); a catalog kernel's name ends in one


def kernel_name(op: str, mode: str, label: str = "") -> str:
    """A catalog kernel's name as the recipes give it and the reports print it: ``liger.layer_norm.bwd``, with
    its input inside (``liger.layer_norm.bwd[N=4608]``); one home, since ``select_inputs`` reads it back."""
    return f"{op}.{mode}[{label}]" if label else f"{op}.{mode}"


@dataclass(frozen=True)
class InputCase:
    """One input of a sweep: its id and the shape facts a recipe needs (and ``--input K=V`` matches)."""

    id: int
    facts: dict[str, int] = field(default_factory=dict)

    def label(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.facts.items())


_FACT = re.compile(r"^\s*([A-Za-z_]\w*)\s*=\s*(-?\d+)\s*$")


def select_inputs(
    op: str, cases: list[InputCase], selectors: Sequence[str] | None, *, mode: str | None = None, flag: str = INPUTS
) -> list[InputCase]:
    """Cases matching any selector: an input id ("7"), shape facts ("N=4608", "D=4096,V=1024") or a range
    as explain prints it ("N=4608..8192"); each of these also inside the op's kernel name, as explain's
    JSON, its fixes, ``catalog show`` and bisect name a spec and as a report of several kernels names a
    range ("liger.layer_norm.bwd[N=4608..8192]"), and that kernel name alone for every input: what the
    reports print must select back, as a workload's ``K7[...]`` does. ``mode``: the pass whose kernel
    the caller compiles; a kernel name of another pass is refused (it names other launches), where None
    any pass of ``op`` is taken (the input ids are the same in every pass). ``flag``: the option the
    selectors came from, as a refusal names it (``inputs (--input)``; profile's ``input (--input)``)."""
    if not selectors:
        return list(cases)
    chosen: dict[int, InputCase] = {}
    ordered = sorted(cases, key=lambda c: c.id)
    position = {c.id: n for n, c in enumerate(ordered)}
    for typed in selectors:
        typed = str(typed).strip()
        sel = _unwrap_kernel(op, typed, mode)
        if sel is None:  # the kernel's name alone: every input
            match = list(cases)
        elif (ends := range_ends(sel) if not _is_facts(sel) else None) is not None:
            # a range as explain prints it (N=4608..8192): the inputs from its first to its last
            picked = select_range(
                typed,
                ends,
                lambda end: [position[c.id] for c in _match(op, cases, end)],
                flag=flag,
                where=op,
            )
            match = [ordered[n] for n in picked]
        else:
            match = _match(op, cases, sel)
        for c in match:
            chosen[c.id] = c
    return [chosen[i] for i in sorted(chosen)]


def _unwrap_kernel(op: str, sel: str, mode: str | None) -> str | None:
    """``sel`` without the op's kernel name around it (``liger.layer_norm.bwd[N=4608]``: ``N=4608``); None
    for the kernel name alone; ``sel`` itself where it names no kernel. A ``name[...]`` whose name is not
    this op's kernel, or is the kernel of another pass than ``mode``, is refused: it names other launches."""
    bracket = sel.endswith("]") and "[" in sel
    head, inner = sel[:-1].split("[", 1) if bracket else (sel, "")
    prefix, dot, kernel_pass = head.rpartition(".")
    expected = kernel_name(op, mode or "<" + "|".join(MODES) + ">")
    if not (dot and prefix == op and kernel_pass in MODES):
        if bracket:
            raise KtriageError(
                f"input selector {sel!r} names the kernel {head!r}, which is not {op}'s ({expected})",
                f"give the input alone ({inner}) or inside {op}'s kernel name as the reports print it ({expected}[{inner}])",
            )
        return sel
    if mode is not None and kernel_pass != mode:
        alone = (
            f"the input alone ({inner}) or inside this pass's kernel name ({expected}[{inner}])"
            if inner
            else f"this pass's kernel name ({expected})"
        )
        raise KtriageError(
            f"input selector {sel!r} names {op}'s {kernel_pass} kernel, and the {mode} kernel's inputs are being selected",
            worded(
                lambda o: (
                    f"select the {kernel_pass} kernel's inputs with {o('mode', '--mode', kernel_pass)}, or give {alone}"
                )
            ),
        )
    return inner if bracket else None


def _is_facts(sel: str) -> bool:
    return all(_FACT.match(part) for part in sel.split(","))


def _match(op: str, cases: list[InputCase], sel: str) -> list[InputCase]:
    """The cases one selector (an id or facts, not a range) names; none is an error listing them."""
    if sel.isdigit():
        match = [c for c in cases if c.id == int(sel)]
    else:
        facts = {}
        for part in sel.split(","):
            m = _FACT.match(part)
            if not m:
                raise KtriageError(
                    f"input selector {sel!r} of {op} is neither an id nor K=V facts",
                    f"write an input id ({id_runs(c.id for c in cases)}) or facts like {cases[0].label()}{_range_hint(cases)}",
                )
            facts[m.group(1)] = int(m.group(2))
        unknown = sorted(set(facts) - set(cases[0].facts))
        if unknown:
            raise KtriageError(
                f"{op} inputs have no fact {unknown}", f"facts of {op} inputs: {', '.join(cases[0].facts)}"
            )
        match = [c for c in cases if all(c.facts.get(k) == v for k, v in facts.items())]
    if not match:
        raise KtriageError(f"no input of {op} matches {sel!r}", f"valid inputs: {_describe(cases)}")
    return match


def _range_hint(cases: Sequence[InputCase]) -> str:
    """``; or a range ... (e.g. N=1024..8192)``, the example a run of this op's own inputs (from its
    first to its middle one), each end as short as still names one input (the one fact that varies
    over the sweep, else every fact) so that it reads like the op's printed ranges; "" for a sweep of
    one input, where a range has nothing to span."""
    ordered = sorted(cases, key=lambda c: c.id)
    if len(ordered) < 2:
        return ""
    first, last = ordered[0], ordered[len(ordered) // 2]
    varying = [k for k in first.facts if len({c.facts.get(k) for c in ordered}) > 1]
    if len(varying) == 1 and len({c.facts.get(varying[0]) for c in ordered}) == len(ordered):
        key = varying[0]
        return "; " + range_hint(f"{key}={first.facts[key]}", f"{key}={last.facts[key]}")
    return "; " + range_hint(first.label(), last.label())


def _describe(cases: list[InputCase]) -> str:
    parts = [f"ids {id_runs(c.id for c in cases)}"]
    for key in cases[0].facts:
        values = sorted({c.facts[key] for c in cases})
        shown = ", ".join(map(str, values[:12])) + (", ..." if len(values) > 12 else "")
        parts.append(f"{key} in {{{shown}}}")
    return "; ".join(parts)
