"""Rendering of ``ktriage catalog list|show``: the ops as rows, an op's expanded specs as rows (or as
their spec file and JSON). The catalog computes; here the rows are only laid out (records.py)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ktriage.mdsafe import markdown_writer
from ktriage.report import records
from ktriage.report.rich_table import add_column
from ktriage.schema.jsontypes import JSONObject
from ktriage.wording import plural

if TYPE_CHECKING:
    from rich.console import Console

    from ktriage.catalog import OpInfo
    from ktriage.spec.model import KernelSpec

LIST_COLUMNS = ("op", "aliases", "modes", "dtypes", "inputs", "package", "description")
LIST_NOTE = "* = default. Show the specs of one op: ktriage catalog show OP [--mode bwd] [--input 7]"
SHOW_COLUMNS = ("input", "name", "grid", "warps", "stages", "constexprs", "equal_to_1", "not divisible by 16")


def list_rows(ops: Sequence[OpInfo]) -> list[JSONObject]:
    return [
        {
            "op": op.name,
            "aliases": ", ".join(op.aliases),
            "modes": ", ".join(m + ("*" if m == op.default_mode else "") for m in op.modes),
            "dtypes": ", ".join(d + ("*" if d == op.default_dtype else "") for d in op.dtypes),
            "inputs": op.num_inputs,
            "package": op.package or "(ktriage)",
            "description": op.description,
        }
        for op in ops
    ]


def list_json(ops: Sequence[OpInfo]) -> str:
    return records.to_json(
        [
            {
                "op": op.name,
                "aliases": list(op.aliases),
                "modes": list(op.modes),
                "default_mode": op.default_mode,
                "dtypes": list(op.dtypes),
                "default_dtype": op.default_dtype,
                "inputs": op.num_inputs,
                "package": op.package,
                "description": op.description,
            }
            for op in ops
        ]
    )


@markdown_writer
def list_markdown(ops: Sequence[OpInfo]) -> str:
    return records.to_markdown("ktriage catalog", LIST_COLUMNS, list_rows(ops), notes=[LIST_NOTE])


def list_csv(ops: Sequence[OpInfo]) -> str:
    return records.to_csv(LIST_COLUMNS, list_rows(ops))


#: The description's least width beside the other columns; below it the description goes under the names.
DESCRIPTION_MIN_WIDTH = 30


def print_list(ops: Sequence[OpInfo], console: Console) -> None:
    """The terminal's table, laid out for 80 to 120 columns. Why not the rows of the other formats: its
    seven columns left the description about ten columns at 120 (a line per word) and broke names where
    they cannot break (``liger.layer_norm@0`` / ``.8.5``). Here each op is one block of lines: the name
    over its aliases, modes over dtypes, so those columns are as narrow as their longest token and
    never wrap (the package stays one pip spec); the description, without the package it repeats,
    takes the rest and wraps at words, or, where fewer than :data:`DESCRIPTION_MIN_WIDTH` columns would
    be left (100, 80), goes under the op's names. Markdown, CSV and JSON keep every field in its own column."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    cells = [
        (
            "\n".join((op.name, *op.aliases)),
            f"{row['modes']}\n{row['dtypes']}",
            str(op.num_inputs),
            op.package or "(ktriage)",
            op.description.removesuffix(f", {op.package.replace('==', ' ')}" if op.package else ""),
        )
        for op, row in zip(ops, list_rows(ops), strict=True)
    ]
    headers = ("op / aliases", "modes / dtypes", "inputs", "package")
    widths = [
        max(len(line) for text in (h, *(c[i] for c in cells)) for line in text.split("\n"))
        for i, h in enumerate(headers)
    ]
    beside = console.width >= sum(widths) + 2 * len(widths) + DESCRIPTION_MIN_WIDTH  # 2: a gap per column
    table = Table(title="ktriage catalog", box=box.SIMPLE_HEAD, pad_edge=False, show_lines=True, collapse_padding=True)
    if beside:
        add_column(table, headers[0], no_wrap=True)
    else:
        add_column(table, "op / aliases / description", ratio=1, overflow="fold")
    add_column(table, headers[1], no_wrap=True)
    add_column(table, headers[2], no_wrap=True, justify="right")
    add_column(table, headers[3], no_wrap=True)
    if beside:
        add_column(table, "description", ratio=1, overflow="fold")
    for names, modes, inputs, package, description in cells:
        if beside:
            table.add_row(escape(names), escape(modes), inputs, escape(package), escape(description))
        else:
            table.add_row(f"{escape(names)}\n[dim]{escape(description)}[/dim]", escape(modes), inputs, escape(package))
    console.print(table)
    console.print(LIST_NOTE)


def show_rows(specs: Sequence[KernelSpec]) -> list[JSONObject]:
    rows: list[JSONObject] = []
    for s in specs:
        not_div = [
            n
            for n, t in s.signature.items()
            if t != "constexpr" and (t.startswith("*") or t[0] in "iu") and n not in s.divisible_by_16
        ]
        rows.append(
            {
                "input": str(s.meta.get("input_id", "")),
                "name": s.name,
                "grid": str(s.grid),
                "warps": s.num_warps,
                "stages": s.num_stages,
                "constexprs": ", ".join(f"{k}={v}" for k, v in s.constexprs.items() if k not in s.equal_to_1),
                "equal_to_1": ", ".join(s.equal_to_1) or "-",
                "not divisible by 16": ", ".join(not_div) or "-",
            }
        )
    return rows


def _show_title(op: str, target: str, specs: Sequence[KernelSpec]) -> str:
    return f"{op}: {plural(len(specs), 'spec')} for {target}"


def _source(specs: Sequence[KernelSpec]) -> str:
    return (
        f"source: {specs[0].source}" + (f"  (package {specs[0].package})" if specs[0].package else "") if specs else ""
    )


def show_json(specs: Sequence[KernelSpec]) -> str:
    return json.dumps([s.to_json() for s in specs], indent=2) + "\n"


def show_toml(specs: Sequence[KernelSpec]) -> str:
    """The spec file of the specs, portable: a kernel of ktriage's own catalog is named by its module
    (``ktriage.catalog.kernels.matmul:matmul_kernel``), not by this installation's absolute path;
    loading the file turns the module back into the kernel file of the ktriage that reads it
    (``ktriage.spec.toml_file``), which is what a toolchain's compile worker can import."""
    from ktriage.spec.toml_file import dump_specs_toml

    return dump_specs_toml([_portable_source(s) for s in specs])


def _portable_source(spec: KernelSpec) -> KernelSpec:
    import ktriage
    from ktriage.spec.source import split_source

    where, function = split_source(spec.source)
    if spec.package or not where.endswith(".py"):
        return spec
    root = Path(ktriage.__file__).resolve().parent
    path = Path(where).resolve()
    if not path.is_relative_to(root):
        return spec
    module = ".".join(path.relative_to(root.parent).with_suffix("").parts)
    return spec.replace(source=f"{module}:{function}")


@markdown_writer
def show_markdown(op: str, target: str, specs: Sequence[KernelSpec]) -> str:
    return records.to_markdown(_show_title(op, target, specs), SHOW_COLUMNS, show_rows(specs), notes=[_source(specs)])


def print_show(op: str, target: str, specs: Sequence[KernelSpec], console: Console) -> None:
    records.print_rows(console, _show_title(op, target, specs), SHOW_COLUMNS, show_rows(specs))
    console.print(_source(specs))
