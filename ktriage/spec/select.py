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


def load_selected_specs(target: str, inputs: Sequence[str] | None = None) -> list[KernelSpec]:
    """The kernels of the spec file ``target`` (a path as typed), only those matching one of
    ``inputs`` when given (none matching is an error)."""
    path = Path(target)
    if not path.exists():
        raise SpecError(f"spec file {target} does not exist", "check the path, or name a catalog op (ktriage catalog list)")
    specs = load_spec_file(path)
    if inputs:
        specs = [s for s in specs if any(matches_selector(s, sel) for sel in inputs)]
        if not specs:
            raise SpecError(f"no kernel in {target} matches --input {list(inputs)}", "drop --input or fix the selector")
    return specs


def matches_selector(spec: KernelSpec, selector: str) -> bool:
    """An input selector names a spec by its input label, a part of its name or its input id."""
    label = str(spec.meta.get("input_label", spec.name))
    return selector == label or selector in spec.name or selector == str(spec.meta.get("input_id"))
