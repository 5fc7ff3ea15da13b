"""`ktriage catalog list|show`: browse the built-in ops and the exact specs they expand to."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from ktriage.catalog import expand_op, list_ops
from ktriage.cli.console import make_console
from ktriage.cli.options import Inputs, ModeOpt, Precision, arch_option
from ktriage.spec.toml_file import dump_specs_toml

app = typer.Typer(help="Built-in kernels: Liger-Kernel recipes and ktriage's tutorial kernels.", no_args_is_help=True)
console = make_console()


@app.command("list")
def list_cmd() -> None:
    """List catalog ops with their modes, number of inputs and the package that provides the kernel."""
    table = Table(title="ktriage catalog")
    for col in ("op", "aliases", "modes", "dtypes", "inputs", "package", "description"):
        table.add_column(col)
    for op in list_ops():
        modes = ", ".join(m + ("*" if m == op.default_mode else "") for m in op.modes)
        dtypes = ", ".join(d + ("*" if d == op.default_dtype else "") for d in op.dtypes)
        table.add_row(op.name, ", ".join(op.aliases), modes, dtypes, str(op.num_inputs), op.package or "(ktriage)", op.description)
    console.print(table)
    console.print("* = default. Show the specs of one op: ktriage catalog show OP [--mode bwd] [--input 7]")


@app.command("show")
def show_cmd(
    op: str = typer.Argument(..., help="Op name, e.g. liger.layer_norm or liger.layer_norm@latest."),
    mode: ModeOpt = None,
    inputs: Inputs = None,
    target: Annotated[str, arch_option("--target is an older spelling.", "--target")] = "sm_90",
    dtype: Precision = None,
    sm_count: int | None = typer.Option(None, "--sm-count", help="SMs of the GPU (default: the target's usual part)."),
    fmt: str = typer.Option("table", "--format", help="table, json or toml."),
) -> None:
    """Expand an op into kernel specs: launch parameters and specialization as the library launches them."""
    specs = expand_op(op, mode=mode.value if mode else None, target=target, dtype=dtype, inputs=inputs, sm_count=sm_count)
    if fmt == "json":
        typer.echo(json.dumps([s.to_json() for s in specs], indent=2))
        return
    if fmt == "toml":
        typer.echo(dump_specs_toml(specs), nl=False)
        return
    if fmt != "table":
        from ktriage.errors import KtriageError

        raise KtriageError(f"unknown format {fmt!r}", "use --format table, json or toml")
    table = Table(title=f"{op}: {len(specs)} spec(s) for {target}")
    for col in ("input", "name", "grid", "warps", "stages", "constexprs", "equal_to_1", "not divisible by 16"):
        table.add_column(col)
    for s in specs:
        not_div = [n for n, t in s.signature.items() if t != "constexpr" and (t.startswith("*") or t[0] in "iu") and n not in s.divisible_by_16]
        consts = ", ".join(f"{k}={v}" for k, v in s.constexprs.items() if k not in s.equal_to_1)
        table.add_row(
            str(s.meta.get("input_id", "")), s.name, str(s.grid), str(s.num_warps), str(s.num_stages),
            consts, ", ".join(s.equal_to_1) or "-", ", ".join(not_div) or "-",
        )  # fmt: skip
    console.print(table)
    console.print(f"source: {specs[0].source}" + (f"  (package {specs[0].package})" if specs[0].package else ""))
