"""The kernels of a spec file, narrowed by the input selectors a user typed (``--input``).

The spec half of turning what a user typed into specs; the other half, a catalog op expanded over
its inputs, is ``ktriage.catalog.resolve``, one layer up (the catalog builds its specs with this
package, so this package cannot import the catalog: docs/architecture.md).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ktriage.errors import SpecError, joined, option, separated, spelled, worded
from ktriage.spec.model import KernelSpec, input_label
from ktriage.spec.ranges import INPUTS, id_runs, range_ends, range_hint, select_range
from ktriage.spec.toml_file import Loaded, SpecFile, named_spec, read_spec_file, require_loaded

# How a refusal names the recorded kernels: ``kernels=`` (bench_recorded) and ``--kernel``; the inputs'
# name (INPUTS) lives with the range reader, which the autotune hook's imports reach without msgspec.
KERNELS = option("kernels", "--kernel")


def did_you_mean(selector: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'X'?)`` for a selector that names nothing but is a near miss of what there is
    (a kernel's function, its id with its function, an input's label or one of its arguments), else
    "". Why: ``--kernel _rms_norm_fwd_kernal`` or ``--input X=4096x4069`` listed every kernel and input
    of a workload of dozens and left the user to find the one letter; the close ones are named first."""
    scored = []
    for c in dict.fromkeys(c for c in candidates if c and c != selector):
        matcher = difflib.SequenceMatcher(None, selector, c)
        if matcher.real_quick_ratio() >= 0.8 and matcher.quick_ratio() >= 0.8 and (r := matcher.ratio()) >= 0.8:
            scored.append((r, c))
    best = max((r for r, _ in scored), default=0.0)
    close = [c for r, c in sorted(scored, key=lambda rc: -rc[0]) if r >= best - 0.02][:3]  # the nearest only
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


def recorded_candidates(inputs: Iterable[RecordedInput]) -> list[str]:
    """What a recorded ``--input`` may be near: each kernel as the reports print it, each input's
    full label and short label, and each of its ``name=value`` arguments (a short label's parts)."""
    out: list[str] = []
    for i in inputs:
        out += [i.function, f"{i.kernel}:{i.function}", f"{i.function}.{i.kernel}", i.label, i.shapes]
        out += [part for part in i.label.split(",") if "=" in part]
    return out


def load_selected_specs(target: str, inputs: Sequence[str] | None = None, *, flag: str = INPUTS) -> list[KernelSpec]:
    """The kernels of the spec file ``target`` (a path as typed), only those matching one of
    ``inputs`` when given (none matching is an error). ``flag``: the option the selectors came from,
    as errors name it (``fidelity --spec`` takes them as ``-k/--case``, and has no ``--input``). A
    selected kernel that does not load refuses them (:func:`select_spec_file` keeps the others)."""
    return select_spec_file(target, inputs, flag=flag).strict()


def select_spec_file(target: str, inputs: Sequence[str] | None = None, *, flag: str = INPUTS) -> SpecFile:
    """:func:`load_selected_specs`, each selected kernel loaded or not (``UnloadedKernel``: explain
    reports it as that kernel's failure and compiles the others). Selectors match a kernel that does
    not load by its name as written, so that selecting only good kernels never meets a bad one; a
    selection none of which loads is refused with every kernel's error (:class:`~ktriage.spec.toml_file.NothingLoads`)."""
    path = Path(target)
    if not path.exists():
        raise SpecError(
            f"spec file {target} does not exist", "check the path, or name a catalog op (ktriage catalog list)"
        )
    kernels = read_spec_file(path).kernels
    if inputs:
        kernels = select_kernels(kernels, inputs, target, flag=flag)
        require_loaded(kernels, target, selected=True)
    return SpecFile(kernels)


def select_kernels(
    kernels: Sequence[Loaded], inputs: Sequence[str], target: str, *, flag: str = INPUTS
) -> list[Loaded]:
    """The ``kernels`` of a spec file (each loaded or not) that any of ``inputs`` names, each selector
    by :func:`select_specs` (which refuses one that names nothing or is a part of several names), in
    the file's order. ``target``: the file as errors name it. The one home of ``--input`` on a spec
    file's kernels: explain, fidelity (``-k``) and bisect's file read from each checkout."""
    named = [named_spec(k) for k in kernels]
    chosen: set[int] = set()
    for sel in inputs:
        chosen |= set(_positions(named, select_specs(named, sel, target, flag=flag)))
    return [k for i, k in enumerate(kernels) if i in chosen]


def _names(spec: KernelSpec) -> set[str]:
    """What a selector may equal to name ``spec``: its input label, its input id, its whole name and
    the ``[...]`` part of its name."""
    names = {str(spec.meta.get("input_label", spec.name)), spec.name}
    if spec.meta.get("input_id") is not None:
        names.add(str(spec.meta["input_id"]))
    if spec.name.endswith("]") and "[" in spec.name:
        names.add(spec.name[spec.name.index("[") + 1 : -1])
    return names


def _whole_kernels(specs: Sequence[KernelSpec], selector: str, target: str, flag: str) -> list[KernelSpec]:
    """Every input of the recorded kernels ``selector`` names as the reports print a kernel
    (:func:`kernel_forms`: ``K7``, ``K7:_layer_norm_backward_kernel``, ...); none for another selector."""
    of = [(str(s.meta.get("workload_kernel")), str(s.meta.get("function"))) for s in specs]
    recorded = [n for n, s in enumerate(specs) if s.meta.get("workload_kernel") and s.meta.get("function")]
    kernels = list(dict.fromkeys(of[n] for n in recorded))
    named = {kernels[n] for n in recorded_kernel_hits(selector, kernels, target, flag=flag)}
    return [specs[n] for n in recorded if of[n] in named]


def _kernel_inputs(specs: Sequence[KernelSpec], selector: str) -> list[KernelSpec]:
    """Every input of the kernel ``selector`` names by the part of their names before ``[`` (``osm``
    of a spec file's ``osm[N=8192]`` and ``osm[N=32768]``), as a catalog op's kernel name and a
    workload's ``K7`` select all their inputs; it was refused as 'part of 2 kernel names', as if it
    were a piece of a name. Only the whole kernel name: ``os`` stays a part of several names."""
    return [s for s in specs if s.name.endswith("]") and s.name.partition("[")[0] == selector]


def _positions(specs: Sequence[KernelSpec], chosen: Sequence[KernelSpec]) -> list[int]:
    """Where each of ``chosen`` is in ``specs`` (by identity: two inputs may have equal specs)."""
    return [n for n, s in enumerate(specs) if any(s is c for c in chosen)]


def matches_selector(spec: KernelSpec, selector: str) -> bool:
    """A selector names a spec exactly: its input label, input id, whole name or ``[...]`` part."""
    return selector in _names(spec)


def select_specs(
    specs: Sequence[KernelSpec], selector: str, target: str = "the spec file", *, flag: str = INPUTS
) -> list[KernelSpec]:
    """The specs ``selector`` names exactly; else every input of the kernel it names whole (a recorded
    kernel as the reports print it, :func:`_whole_kernels`; the part of a name before ``[``,
    :func:`_kernel_inputs`); else, for a range as explain prints it (:func:`range_ends`),
    the specs from its first to its last; else the ONE spec whose name contains it (:func:`part_of_name`:
    never a part that cuts a number, ``0`` of ``N=4097``); else the ONE
    recorded input it is a short label of, as explain prints it (``X_ptr=4096x4608``,
    ``_layer_norm_backward_kernel.K7[X_ptr=4096x4608]``: :func:`names_short_label`). A selector that is
    only part of several names, or the short label of several recorded inputs, is an error that lists
    what it matched (a prefix such as ``N=46`` never silently picks several kernels), and one that
    matches nothing lists the names."""
    exact = [s for s in specs if matches_selector(s, selector)]
    if exact:
        return exact
    if whole := _whole_kernels(specs, selector, target, flag):
        return whole
    if inputs := _kernel_inputs(specs, selector):
        return inputs
    if ends := range_ends(selector):  # a range as explain prints it: the specs from its first to its last
        picked = select_range(
            selector,
            ends,
            lambda end: _positions(specs, select_specs(specs, end, target, flag=flag)),
            flag=flag,
            where=target,
        )
        return [specs[n] for n in picked]
    partial = [s for s in specs if part_of_name(selector, s.name)]
    if len(partial) == 1:
        return partial
    # a recorded input's short label, as explain's reports print it (explain/labels.py)
    short = [
        s
        for s in specs
        if s.meta.get("recorded")
        and names_short_label(selector, recorded_kernel_names(s), str(s.meta.get("input_label", "")))
    ]
    if len(short) == 1:
        return short
    if short:
        raise ambiguous_short_label(selector, flag, target, [(s.name.split("[", 1)[0], s.name) for s in short])
    if partial:
        kernels = list(dict.fromkeys(s.name.partition("[")[0] for s in partial if s.name.endswith("]")))
        raise SpecError(
            joined(flag, f" {selector!r} is part of {len(partial)} kernel names in ", target, ": ")
            + ", ".join(s.name for s in partial[:8])
            + (", ..." if len(partial) > 8 else ""),
            "select one by its exact name or input label"
            + (f", or every input of a kernel by its name ({', '.join(kernels[:4])})" if kernels else ""),
        )
    recorded = [
        RecordedInput(str(s.meta["workload_kernel"]), str(s.meta["function"]), s.meta["input_id"], label, "")
        for s in specs
        if s.meta.get("workload_kernel") and s.meta.get("function") and isinstance(s.meta.get("input_id"), int)
        for label in [str(s.meta.get("input_label", ""))]
    ]
    if recorded:  # a workload's inputs: ids count within each kernel, so listed per kernel
        near = did_you_mean(selector, recorded_candidates(recorded))
        raise SpecError(
            joined("no input of ", target, " matches ", flag, f" {selector!r}{near}"), recorded_choices(recorded)
        )
    raise SpecError(
        joined("no kernel in ", target, " matches ", flag, f" {selector!r}"),
        _spec_choices(specs) + _spec_range_hint(specs),
    )


def part_of_name(selector: str, name: str) -> bool:
    """Whether ``selector`` is part of ``name`` without cutting a number in two: ``-i 0`` selected
    ``rms[N=4097]`` of a spec file (the ``0`` of 4097) and ``-i N=819`` selected ``osm[N=8192]``, a
    kernel the user did not name, without a word. A part that starts or ends inside a number of the
    name is no part of it; a name's word (``osm`` of ``osm[N=8192]``) still is."""
    start = name.find(selector)
    while start != -1:
        end = start + len(selector)
        cuts_before = start > 0 and name[start - 1].isdigit() and selector[0].isdigit()
        cuts_after = end < len(name) and name[end].isdigit() and selector[-1].isdigit()
        if not (cuts_before or cuts_after):
            return True
        start = name.find(selector, start + 1)
    return False


def _spec_choices(specs: Sequence[KernelSpec]) -> str:
    """The fix of a selector that names no kernel of a spec file: its input ids in numeric order, runs
    collapsed (:func:`id_runs`: as text they read ``0, 1, 10, 11, ...`` and took every place in the list),
    then each kernel by its shortest name in the file's order (its input label where it has one)."""
    ids = [int(n) for s in specs for n in _names(s) if n.isdigit()]
    names = list(dict.fromkeys(min((n for n in _names(s) if not n.isdigit()), key=len, default=s.name) for s in specs))
    listed = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
    return f"use an input id ({id_runs(ids)}) or one of: {listed}" if ids else f"use one of: {listed}"


def _spec_range_hint(specs: Sequence[KernelSpec]) -> str:
    """``; or a range ...`` for a spec file, its example a run of its first kernel that has several
    inputs (``k[a .. b]``, ``N=1024..4608`` where the file holds one kernel), as explain prints it;
    "" where every kernel has one input, since explain prints no range of such a file."""
    kernels: dict[str, list[KernelSpec]] = {}
    for s in specs:
        kernels.setdefault(s.name.split("[", 1)[0] if s.name.endswith("]") else s.name, []).append(s)
    for kernel, mine in kernels.items():
        if len(mine) > 1:
            first, last = (input_label(s.meta, s.name) for s in (mine[0], mine[len(mine) // 2]))
            return "; " + range_hint(first, last, kernel if len(kernels) > 1 else "")
    return ""


# ------------------------------------------------------------------------------------------ short labels
# explain's reports name a recorded input by the arguments that tell it apart from its kernel's other
# inputs (``X_ptr=4096x4608``; ``_layer_norm_backward_kernel.K7[X_ptr=4096x4608]`` where the report holds
# several kernels: ``ktriage.explain.labels``), and its full label (every argument) is what the
# selectors above match. A short label selects the one recorded input whose label has each of its
# arguments; one that several inputs have (of one kernel or of several) is refused, never one picked.


def label_parts(label: str) -> list[tuple[str, str]] | None:
    """``[(name, value), ...]`` of a ``name=value,...`` label; None for a label of another form."""
    out: list[tuple[str, str]] = []
    for part in label.split(","):
        name, eq, value = part.partition("=")
        if not eq or not name:
            return None
        out.append((name, value))
    return out


def recorded_kernel_names(spec: KernelSpec) -> set[str]:
    """What may stand before a short label's ``[...]`` to name a recorded input's kernel: its name as
    the reports print it (``_layer_norm_backward_kernel.K7``), its workload kernel id (``K7``) and its
    function (``_layer_norm_backward_kernel``)."""
    names = {spec.name.split("[", 1)[0]}
    kernel, function = spec.meta.get("workload_kernel"), spec.meta.get("function")
    if kernel and function:
        names |= kernel_forms(str(kernel), str(function))
    names |= {str(v) for v in (kernel, function) if v}
    return names


def kernel_forms(kernel: str, function: str) -> set[str]:
    """Every way the reports print a recorded kernel, so that any of them copied into a selector names
    it: its id (``K7``), its function (``_layer_norm_backward_kernel``), explain's name for it
    (``_layer_norm_backward_kernel.K7``) and bench's, compare's and triage's kernel column
    (``K7:_layer_norm_backward_kernel``). One home: ``--kernel``, ``--input`` and the kernel before a
    short label's ``[...]`` all take these."""
    return {kernel, function, f"{function}.{kernel}", f"{kernel}:{function}"}


def recorded_kernel_hits(
    selector: str, kernels: Sequence[tuple[str, str]], where: str, *, flag: str = KERNELS
) -> list[int]:
    """The positions of the recorded ``kernels`` (``(id, function)``) that ``selector`` names as a whole
    kernel, in one of :func:`kernel_forms` (a function: every kernel of it); none when it names none.
    ``K3:fn`` whose id is a kernel of another function is refused naming both, never read as either half,
    alone or before a short label's ``[...]`` (``K3:fn[X_ptr=4096]``: one error for both forms; ``flag``:
    the option it came from, as the error names it)."""
    found = [n for n, (k, f) in enumerate(kernels) if selector in kernel_forms(k, f)]
    # the kernel before a short label's [...] (K7:fn[X_ptr=4096x4608]) is checked the same way: a
    # mismatch there matched no input and was refused as naming nothing, not naming both halves
    head, label = selector, ""
    if selector.endswith("]") and "[" in selector:
        head, bracket, rest = selector.partition("[")
        label = bracket + rest
    kernel, colon, function = head.partition(":")  # a function name (a Python identifier) has no ':'
    if colon and function.isidentifier() and not any(head in kernel_forms(k, f) for k, f in kernels):
        actual = next((f for k, f in kernels if k == kernel), None)
        if actual is not None:
            raise SpecError(
                worded(
                    lambda o: (
                        f"{spelled(flag, o)} {selector!r}: {kernel} in {spelled(where, o)} is the function "
                        f"{actual}, not {function}"
                    )
                ),
                worded(
                    lambda o: (
                        f"give {spelled(flag, o)} the kernel as the report prints it, {kernel}:{actual}{label} "
                        f"(or {kernel}{label} alone)"
                    )
                ),
            )
    return found


def names_short_label(selector: str, kernel_names: set[str], label: str) -> bool:
    """Whether ``selector`` is a short label of the recorded input of full ``label`` (of the kernel that
    ``kernel_names`` name): each of its ``name=value`` arguments is one of the label's, and a kernel
    before its ``[...]`` (``K7[X_ptr=4096x4608]``) is the input's."""
    short = selector
    if selector.endswith("]") and "[" in selector:
        kernel, short = selector[:-1].split("[", 1)
        if kernel not in kernel_names:
            return False
    want, have = label_parts(short), label_parts(label)
    return bool(want) and have is not None and set(want or ()) <= set(have)


def select_recorded_kernels(selectors: Sequence[str], kernels: Sequence[tuple[str, str]], where: str) -> list[int]:
    """The positions of the recorded ``kernels`` (``(id, function)``, each once) any of ``selectors``
    names: ``--kernel`` of ``bench W.json`` and ``bench --bundle``, one rule for both. A selector is a
    kernel's id (``K3``), its function (every kernel of that function), or both as the kernel column
    of bench's and compare's reports prints them (``K3:_rms_norm_forward_kernel``, ``Entry.backend``),
    which a user copies from the report: that form was 'no kernel'. Its id must be the kernel's and its
    function that kernel's; a mismatch is refused naming both, never read as either half. A selector
    that names nothing is refused with the kernels and the forms they may be given in."""
    picked: set[int] = set()
    for sel in selectors:
        found = recorded_kernel_hits(sel, kernels, where)
        if not found:
            choices = ", ".join(f"{k} ({f})" for k, f in kernels) or "none: it has no kernels"
            forms = ""
            if kernels:
                k, f = kernels[0]
                forms = f"; give each as its id ({k}), its function ({f}) or both as the reports print them ({k}:{f})"
            near = did_you_mean(sel, [form for k, f in kernels for form in (f, f"{k}:{f}")])
            raise SpecError(
                joined(where, f" has no kernel {sel!r}{near}"),
                joined("choose ", KERNELS, f" from: {choices}{forms}"),
            )
        picked.update(found)
    return sorted(picked)


@dataclass(frozen=True)
class RecordedInput:
    """One recorded input as ``--input`` may name it (a workload's input, a recorded bundle's entry):
    its kernel's id and function, its id within the kernel, its full label (every argument) and
    ``shapes``, the short label bench's and compare's reports print for it (its bundle entry's label,
    ``args.short_label``; ``SHAPES #ID`` where two inputs of one kernel share it)."""

    kernel: str
    function: str
    input: int
    label: str
    shapes: str

    def names(self, selector: str) -> bool:
        """Whether ``selector`` names this input exactly: its id, its full label, or its report label
        (with or without the ``#ID`` that tells it from an input of the same shapes)."""
        return selector in (str(self.input), self.label, self.shapes, f"{self.shapes} #{self.input}")


def select_recorded(
    selectors: Sequence[str], inputs: Sequence[RecordedInput], where: str, *, bundle: bool = False
) -> list[int]:
    """The positions of the recorded ``inputs`` any of ``selectors`` names (``bench W.json -i`` and
    ``bench --bundle -i`` select this way). Per selector: the inputs it names exactly
    (:meth:`RecordedInput.names`), else the one it is a short label of as explain prints it
    (:func:`recorded_short_label_match`), else the run a printed range names (:func:`range_ends`).
    A selector that names nothing is refused by name with the inputs' labels: with several selectors, a
    typo in one dropped that input without a word (``bundle``: the inputs are a bundle's, whose GPU host
    may not have the workload file that ``workload show`` reads, so its fix does not send there)."""
    chosen: set[int] = set()
    for sel in selectors:
        hits = _recorded_hits(sel, inputs, where)
        if not hits:
            raise SpecError(
                joined(
                    "no input of ",
                    where,
                    " matches ",
                    INPUTS,
                    f" {sel!r}{did_you_mean(sel, recorded_candidates(inputs))}",
                ),
                recorded_choices(inputs, report_labels=True, bundle=bundle),
            )
        chosen |= set(hits)
    return sorted(chosen)


def recorded_choices(inputs: Sequence[RecordedInput], *, report_labels: bool = False, bundle: bool = False) -> str:
    """The fix of a selector that names no recorded input: what ``--input`` takes, with what the
    workload has. An input id counts within its kernel (every kernel's first input is 0) and selects
    that input of every kernel that has it (``bench W.json --input 0 --input 3``: the first and fourth
    input of each), so the ids are listed per kernel, never as one flat list in which ``0`` reads as one
    input. ``report_labels``: list the labels bench's and compare's reports print too (bench takes them);
    ``bundle``: the inputs are a bundle's (see :func:`select_recorded`)."""
    if not inputs:
        return "the workload has no recorded input: record the program again (docs/record.md)"
    ids: dict[str, list[int]] = {}
    for i in inputs:
        ids.setdefault(i.kernel, []).append(i.input)
    shown = list(ids.items())[:12]
    listed = ", ".join(f"{k}: {id_runs(v)}" for k, v in shown) + (", ..." if len(ids) > 12 else "")
    first = inputs[0]
    parts = [
        f"an input id of {first.kernel} ({id_runs(ids[first.kernel])})"
        if len(ids) == 1
        else f"an input id, which selects that input of every kernel that has it ({listed})",
        f"an input's label as {'recorded' if bundle else '`workload show` prints it'}, or some of its arguments, "
        f"alone or inside its kernel's name (e.g. {first.kernel}[{_telling_part(first, inputs)}])",
    ]
    if report_labels:
        parts.append(
            "its label as bench's and compare's reports print it ("
            + "; ".join(f"{i.kernel} input {i.input}: {i.shapes}" for i in inputs[:6])
            + ("; ..." if len(inputs) > 6 else "")
            + ")"
        )
    parts.append(
        f"a kernel as the reports print it, for all its inputs ({first.kernel}, {first.kernel}:{first.function})"
    )
    return "give " + "; ".join(parts) + _recorded_range_hint(inputs)


def _recorded_range_hint(inputs: Sequence[RecordedInput]) -> str:
    """``; or a range ...`` for a workload, its example a run of its first kernel that has several
    inputs as explain prints one (``K7[X_ptr=4096x{4608..6144}]``: each end by one argument that tells
    it apart within its kernel, else by its full label); "" where every kernel has one input."""
    kernels: dict[str, list[RecordedInput]] = {}
    for i in inputs:
        kernels.setdefault(i.kernel, []).append(i)
    for kernel, mine in kernels.items():
        if len(mine) > 1:
            first, last = mine[0], mine[len(mine) // 2]
            parts = [set(label_parts(i.label) or ()) for i in mine]
            for name, value in label_parts(first.label) or ():
                other = dict(label_parts(last.label) or ()).get(name)
                if other is not None and all(sum(p in ps for ps in parts) == 1 for p in ((name, value), (name, other))):
                    return "; " + range_hint(f"{name}={value}", f"{name}={other}", kernel)
            return "; " + range_hint(first.label, last.label, kernel)
    return ""


def _telling_part(one: RecordedInput, inputs: Sequence[RecordedInput]) -> str:
    """An argument of ``one``'s label that no other input of its kernel has (so ``K7[X_ptr=4096x4608]``,
    the example a fix gives, selects it), else its whole label."""
    others = [set(label_parts(i.label) or ()) for i in inputs if i.kernel == one.kernel and i is not one]
    for part in label_parts(one.label) or ():
        if not any(part in o for o in others):
            return "=".join(part)
    return one.label


def _recorded_hits(sel: str, inputs: Sequence[RecordedInput], where: str) -> list[int]:
    exact = [n for n, i in enumerate(inputs) if i.names(sel)]
    if exact:
        return exact
    kernels = list(dict.fromkeys((i.kernel, i.function) for i in inputs))
    if named := {kernels[n] for n in recorded_kernel_hits(sel, kernels, where, flag=INPUTS)}:
        return [n for n, i in enumerate(inputs) if (i.kernel, i.function) in named]
    hits = recorded_short_label_match(sel, inputs, where)
    if hits or not (ends := range_ends(sel)):
        return hits

    return select_range(
        sel,
        ends,
        lambda end: _recorded_hits(end, inputs, where),
        flag=INPUTS,
        where=where,
        group=lambda n: inputs[n].kernel,
    )


def recorded_short_label_match(selector: str, inputs: Sequence[RecordedInput], where: str) -> list[int]:
    """Which of a workload's recorded inputs ``selector`` is the short label of, as explain prints it
    (``K7[X_ptr=4096x4608]``, ``_layer_norm_backward_kernel.K7[...]`` or the bare label): no index, or
    the one; a short label several inputs have is refused, the fix naming ``--kernel``."""
    hits = [n for n, i in enumerate(inputs) if names_short_label(selector, kernel_forms(i.kernel, i.function), i.label)]
    if len(hits) > 1:
        named = [(f"{inputs[n].function}.{inputs[n].kernel}", inputs[n].label) for n in hits]
        raise ambiguous_short_label(
            selector,
            INPUTS,
            where,
            [(kernel, f"{kernel}[{label}]") for kernel, label in named],
            kernel_option=separated(
                " or ", (option("kernels", "--kernel", [k]) for k in dict.fromkeys(inputs[n].kernel for n in hits))
            ),
        )
    return hits


def ambiguous_short_label(
    selector: str, flag: str, where: str, matches: Sequence[tuple[str, str]], *, kernel_option: str = ""
) -> SpecError:
    """The refusal of a short label that several recorded inputs have; ``matches``: (each one's kernel
    as the reports name it, its full name ``kernel[full label]``). The fix names each with its kernel
    where that tells them apart, else lists their full labels; ``kernel_option``: the verb's option
    that narrows to one kernel (bench's ``--kernel``), named too."""
    short = selector[:-1].split("[", 1)[1] if selector.endswith("]") and "[" in selector else selector
    kernels = list(dict.fromkeys(k for k, _ in matches))
    listed = ", ".join(name for _, name in matches[:6]) + (", ..." if len(matches) > 6 else "")
    if len(kernels) == len(matches):
        fix = "name its kernel with it: " + " or ".join(f"{k}[{short}]" for k in kernels[:6])
        fix += ", ..." if len(kernels) > 6 else ""
        fix = joined(fix, " (or narrow with ", kernel_option, ")") if kernel_option else fix
    else:
        fix = f"give one's full label: {listed}"
    return SpecError(
        worded(
            lambda o: (
                f"{spelled(flag, o)} {selector!r} is the short label of {len(matches)} recorded inputs in "
                f"{spelled(where, o)}, not of one"
            )
        ),
        fix,
    )
