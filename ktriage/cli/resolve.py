"""Turn what the user typed (an op name or spec file; toolchain strings) into specs and toolchains.

Shared by every command that compiles (explain today; bench, bisect and tune later), so that the
same words mean the same thing everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.progress import Progress

from ktriage.errors import KtriageError
from ktriage.spec.model import KernelSpec
from ktriage.toolchain.manager import Toolchain, ensure_toolchain


def resolve_specs(
    target: str,
    *,
    mode: str = "bwd",
    inputs: Sequence[str] | None = None,
    target_arch: str = "sm_90",
    dtype: str = "fp32",
    sm_count: int | None = None,
) -> list[KernelSpec]:
    """A spec file (``.toml``) or a catalog op expanded over its inputs."""
    if target.endswith(".toml"):
        from ktriage.spec.toml_file import load_spec_file

        path = Path(target)
        if not path.exists():
            raise KtriageError(f"spec file {target} does not exist", "check the path, or name a catalog op (ktriage catalog list)")
        specs = load_spec_file(path)
        if inputs:
            specs = [s for s in specs if any(_matches(s, sel) for sel in inputs)]
            if not specs:
                raise KtriageError(f"no kernel in {target} matches --input {list(inputs)}", "drop --input or fix the selector")
        return specs
    from ktriage.catalog import expand_op

    return expand_op(target, mode=mode, target=target_arch, dtype=dtype, inputs=list(inputs) if inputs else None,
                     sm_count=sm_count)


def _matches(spec: KernelSpec, selector: str) -> bool:
    label = str(spec.meta.get("input_label", spec.name))
    return selector == label or selector in spec.name or selector == str(spec.meta.get("input_id"))


def resolve_toolchains(texts: Sequence[str], progress: Progress | None = None) -> list[Toolchain]:
    """Build (or reuse) every toolchain, one progress line each; duplicates are an error."""
    toolchains: list[Toolchain] = []
    for text in texts:
        task = progress.add_task(f"toolchain {text}", total=None) if progress is not None else None

        def hook(message: str, _task=task) -> None:
            if progress is not None and _task is not None:
                progress.update(_task, description=f"toolchain {text}: {message}")

        toolchain = ensure_toolchain(text, progress=hook)
        if progress is not None and task is not None:
            progress.remove_task(task)
        if any(t.id == toolchain.id for t in toolchains):
            raise KtriageError(f"toolchain {text} is given twice", "give each toolchain once")
        toolchains.append(toolchain)
    return toolchains
