"""How explain's reports name an input: its kernel (where the report holds several) and a label short
enough to read in a bullet.

Why: a recorded input's label is its launch's arguments (``X_ptr=4096x4608,W_ptr=4608,Mean_ptr=4096,...``,
``record/workload.launch_label``), every one of them, so a bullet's range ``a .. b`` took three or four
terminal lines and said the same constant arguments twice. Among the inputs of one kernel function, only
what tells them apart is news; the full label stays in the JSON (``kernels[].input``) and in the
markdown and HTML per-input tables.

The rule (:func:`short_labels`), deterministic and never ambiguous:

- Only recorded inputs are shortened (their labels are generated); a catalog op's ``N=4608`` or a spec
  file's labels were written to be read and are shown as they are.
- The recorded inputs of one kernel function (``meta["function"]``, else the kernel's name) whose labels
  name the same arguments in the same order are one group; a group whose labels name different
  arguments, or a label that is not ``name=value,...``, is left whole.
- Within a group, the arguments are walked in their order; one is kept where it tells apart two of the
  group's distinct labels that the arguments kept before it do not. Every two distinct labels differ
  in some argument, so no two inputs get the same short label (``X_ptr=4096x4608``: W_ptr, DX_ptr and
  the strides, which vary with it, are left out).
- A group with one distinct label has nothing to tell apart it from: its full label is kept (it is all
  there is to say which launch it is).
"""

from __future__ import annotations

from collections.abc import Sequence

from ktriage.spec.model import KernelSpec, input_label
from ktriage.spec.ranges import input_place
from ktriage.spec.select import label_parts


def kernel_name(spec: KernelSpec) -> str:
    """The kernel a spec is an input of, as its name says it before the ``[...]`` of the input: a
    recorded workload's ``_layer_norm_backward_kernel.K7``, a catalog op's ``liger.layer_norm.bwd``."""
    return spec.name.split("[", 1)[0] if spec.name.endswith("]") else spec.name


def several_kernels(specs: Sequence[KernelSpec]) -> bool:
    """Whether a report names each input's kernel: its inputs are of more than one kernel."""
    return len({kernel_name(s) for s in specs}) > 1


def input_names(specs: Sequence[KernelSpec]) -> list[tuple[str, str]]:
    """Per spec, in order: (its kernel as the report names it, ``""`` where the report holds one kernel;
    its short label), what :func:`input_place` makes a name of."""
    several = several_kernels(specs)
    return [(kernel_name(s) if several else "", short) for s, short in zip(specs, short_labels(specs), strict=True)]


def input_places(specs: Sequence[KernelSpec]) -> list[str]:
    """Per spec, in order, how a listing of single inputs names it (the per-input tables, the lines of
    toolchains without a finding): as a finding names a range (:func:`input_place`), its short label
    inside its kernel's name where the report holds several."""
    return [input_place(kernel, [short]) for kernel, short in input_names(specs)]


def short_labels(specs: Sequence[KernelSpec]) -> list[str]:
    """Per spec, in order, the label its reports show (the module's rule): only the arguments that tell
    a recorded input apart from the other inputs of its kernel function."""
    labels = [input_label(s.meta, s.name) for s in specs]
    out = list(labels)
    groups: dict[str, list[int]] = {}
    for i, spec in enumerate(specs):
        if spec.meta.get("recorded"):
            groups.setdefault(str(spec.meta.get("function") or kernel_name(spec)), []).append(i)
    for members in groups.values():
        distinct = list(dict.fromkeys(labels[i] for i in members))
        parsed = [label_parts(label) for label in distinct]
        keys = {tuple(name for name, _ in p) if p is not None else None for p in parsed}
        if len(distinct) < 2 or len(keys) != 1 or None in keys:
            continue
        rows = [p for p in parsed if p is not None]
        kept: list[int] = []
        for j in range(len(rows[0])):
            seen = {tuple(r[k][1] for k in kept) for r in rows}
            # kept only where it splits some labels the arguments kept so far leave together
            split = {tuple(r[k][1] for k in [*kept, j]) for r in rows}
            if len(split) > len(seen):
                kept.append(j)
            if len(split) == len(rows):
                break
        short = {label: ",".join(f"{r[k][0]}={r[k][1]}" for k in kept) for label, r in zip(distinct, rows)}
        for i in members:
            out[i] = short[labels[i]]
    return out
