"""The kernels of a spec file, narrowed by the input selectors a user typed (``--input``).

The spec half of turning what a user typed into specs; the other half, a catalog op expanded over
its inputs, is ``ktriage.catalog.resolve``, one layer up (the catalog builds its specs with this
package, so this package cannot import the catalog: docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ktriage.errors import SpecError
from ktriage.spec.model import KernelSpec
from ktriage.spec.toml_file import load_spec_file


def load_selected_specs(target: str, inputs: Sequence[str] | None = None, *, flag: str = "--input") -> list[KernelSpec]:
    """The kernels of the spec file ``target`` (a path as typed), only those matching one of
    ``inputs`` when given (none matching is an error). ``flag``: the option the selectors came from,
    as errors name it (``fidelity --spec`` takes them as ``-k/--case``, and has no ``--input``)."""
    path = Path(target)
    if not path.exists():
        raise SpecError(
            f"spec file {target} does not exist", "check the path, or name a catalog op (ktriage catalog list)"
        )
    specs = load_spec_file(path)
    if inputs:
        chosen: set[int] = set()
        for sel in inputs:
            chosen |= {i for i, s in enumerate(specs) if s in select_specs(specs, sel, target, flag=flag)}
        specs = [s for i, s in enumerate(specs) if i in chosen]
    return specs


def _names(spec: KernelSpec) -> set[str]:
    """What a selector may equal to name ``spec``: its input label, its input id, its whole name and
    the ``[...]`` part of its name."""
    names = {str(spec.meta.get("input_label", spec.name)), spec.name}
    if spec.meta.get("input_id") is not None:
        names.add(str(spec.meta["input_id"]))
    if spec.name.endswith("]") and "[" in spec.name:
        names.add(spec.name[spec.name.index("[") + 1 : -1])
    return names


def matches_selector(spec: KernelSpec, selector: str) -> bool:
    """A selector names a spec exactly: its input label, input id, whole name or ``[...]`` part."""
    return selector in _names(spec)


def select_specs(
    specs: Sequence[KernelSpec], selector: str, target: str = "the spec file", *, flag: str = "--input"
) -> list[KernelSpec]:
    """The specs ``selector`` names exactly; else the ONE spec whose name contains it. A selector
    that is only part of several names is an error that lists what it matched (a prefix such as
    ``N=46`` never silently picks several kernels), and one that matches nothing lists the names."""
    exact = [s for s in specs if matches_selector(s, selector)]
    if exact:
        return exact
    partial = [s for s in specs if selector in s.name]
    if len(partial) == 1:
        return partial
    if partial:
        raise SpecError(
            f"{flag} {selector!r} is part of {len(partial)} kernel names in {target}: "
            + ", ".join(s.name for s in partial[:8])
            + (", ..." if len(partial) > 8 else ""),
            "select one by its exact name or input label",
        )
    known = sorted({n for s in specs for n in _names(s)})
    raise SpecError(
        f"no kernel in {target} matches {flag} {selector!r}",
        "use one of: " + ", ".join(known[:12]) + (", ..." if len(known) > 12 else ""),
    )
