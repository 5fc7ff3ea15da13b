"""The built-in ops as a library: ``catalog_list()`` and ``catalog_show(op=..., ...)``, the exact
kernel specs an op expands to (docs/catalog.md).

Why entry points: ``ktriage catalog`` listed and expanded the ops itself, so a script that wants
the specs of ``liger.layer_norm`` as the library launches them (to write a spec file, to pick
inputs) had only the command line. Each returns a typed report with the renderers ``ktriage
catalog`` writes with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ktriage.api._args import entry_point
from ktriage.brief import brief
from ktriage.mdsafe import markdown_writer

if TYPE_CHECKING:
    from rich.console import Console

    from ktriage.catalog import OpInfo
    from ktriage.spec.model import KernelSpec

__all__ = ["CatalogList", "CatalogShow", "catalog_list", "catalog_show"]


@dataclass(frozen=True)
class CatalogList:
    """Every op of the catalog: its modes, number of inputs and the package of its kernel."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    ops: Sequence[OpInfo]

    def json_text(self) -> str:
        from ktriage.report.catalog import list_json

        return list_json(self.ops)

    @markdown_writer
    def to_markdown(self) -> str:
        from ktriage.report.catalog import list_markdown

        return list_markdown(self.ops)

    def to_csv(self) -> str:
        from ktriage.report.catalog import list_csv

        return list_csv(self.ops)

    def print_table(self, console: Console) -> None:
        from ktriage.report.catalog import print_list

        print_list(self.ops, console)


@dataclass(frozen=True)
class CatalogShow:
    """The kernel specs op ``op`` expands to on ``target``, one per input (launch parameters and
    specialization as the library launches them)."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    op: str
    target: str
    specs: Sequence[KernelSpec]

    def json_text(self) -> str:
        from ktriage.report.catalog import show_json

        return show_json(self.specs)

    @markdown_writer
    def to_markdown(self) -> str:
        from ktriage.report.catalog import show_markdown

        return show_markdown(self.op, self.target, self.specs)

    def to_toml(self) -> str:
        """The spec file of the specs (``ktriage explain SPEC.toml`` reads it)."""
        from ktriage.report.catalog import show_toml

        return show_toml(self.specs)

    def print_table(self, console: Console) -> None:
        from ktriage.report.catalog import print_show

        print_show(self.op, self.target, self.specs, console)


@entry_point
def catalog_list() -> CatalogList:
    """Every op of the catalog (canonical names; aliases in each ``OpInfo.aliases``)."""
    from ktriage.catalog import list_ops

    return CatalogList(list_ops())


@entry_point
def catalog_show(
    *,
    op: str,
    mode: str | None = None,
    target: str = "sm_90",
    dtype: str | None = None,
    inputs: int | Sequence[str | int] | None = None,
    sm_count: int | None = None,
) -> CatalogShow:
    """Expand ``op`` (``liger.layer_norm``, ``liger.layer_norm@latest``...) into kernel specs for
    ``target``; ``mode``/``dtype`` default to the op's, ``inputs`` selects inputs (ids or shape facts),
    ``sm_count`` defaults to the target's usual part. An unknown op is a KtriageError with the fix.
    ``target`` takes every spelling ``--arch`` does (``9.0``, ``90``); a lone str is one input."""
    from ktriage.api import _args as args
    from ktriage.catalog import expand_op

    op, target = args.text(op, "op", example="liger.layer_norm"), args.arch(target, "target", "--arch/--target")
    chosen = args.texts(inputs, "inputs", "--input", numbers=True)
    mode = args.optional_text(mode, "mode", "--mode", example="bwd")
    dtype = args.optional_text(dtype, "dtype", "--precision/--dtype", example="bf16")
    sm_count = args.SM_COUNT.optional(sm_count)
    specs = expand_op(op, mode=mode, target=target, dtype=dtype, inputs=list(chosen) or None, sm_count=sm_count)
    return CatalogShow(op, target, specs)
