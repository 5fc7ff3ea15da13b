"""`ktriage fidelity`: check, on this CPU machine, that ktriage's cubins are the ones Triton's JIT builds."""

from __future__ import annotations

import datetime
import platform
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ktriage.cli import exit_codes
from ktriage.cli.console import make_console
from ktriage.cli.options import (
    Format,
    arch_option,
    check_format,
    check_outputs,
    format_option,
    output_option,
    toolchain_option,
    write_outputs,
)
from ktriage.errors import KtriageError, SpecError

if TYPE_CHECKING:
    from rich.console import Console

    from ktriage.fidelity.harness import Row


FORMATS = ("table", "markdown", "json")
WRITERS = (".md", ".json")


def fidelity(
    toolchains: Annotated[list[str] | None, toolchain_option("Default: every supported Triton release.")] = None,
    case: Annotated[
        list[str] | None, typer.Option("--case", "-k", help="Only cases whose name contains this (repeatable).")
    ] = None,
    arch: Annotated[str, arch_option("The target the fake driver reports.")] = "sm_90",
    fmt: Annotated[Format, format_option(FORMATS)] = Format.table,
    output: Annotated[list[Path] | None, output_option(WRITERS, "The table of every case.")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Parallel compiles on the ktriage side.")] = 2,
    spec: Annotated[
        Path | None,
        typer.Option(
            "--spec",
            help="Check this spec file's kernels written by values "
            "([kernel.args], docs/specs.md) instead of the built-in cases.",
        ),
    ] = None,
) -> None:
    """Replay each case's launch through Triton's real launch path (decorators, binder, compile) with
    only the GPU driver faked, derive ktriage's spec from what the JIT was launched with, compile it
    through ktriage, and compare compile inputs and cubin bytes. Exit 0: all identical; 1: some
    differ; 4: some could not be checked."""
    from ktriage.arch import parse_arch
    from ktriage.compile.compiler import Compiler
    from ktriage.fidelity.cases import all_cases
    from ktriage.fidelity.harness import check
    from ktriage.report.fidelity import summary, to_json, to_markdown
    from ktriage.toolchain.manager import ensure_toolchain
    from ktriage.toolchain.supported import SUPPORTED_TRITON

    check_format(fmt, FORMATS)
    check_outputs(output or [], WRITERS)
    console = make_console(stderr=fmt != Format.table)
    target = parse_arch(arch).name
    specs = toolchains or [f"triton=={v}" for v in SUPPORTED_TRITON]

    def show(r: Row) -> None:
        console.print(
            f"{r.triton_version:7} {r.status:9} {r.case}" + (f"  [yellow]{r.detail[:160]}[/]" if r.detail else "")
        )

    if spec is not None:
        rows = _check_spec_file(spec, specs, case, target, jobs, console, show)
    else:
        selected = [c for c in all_cases(target) if not case or any(k in c.name for k in case)]
        if not selected:
            raise KtriageError(
                f"no fidelity case matches {case}", "see the case names in the table of benchmarks/fidelity/README.md"
            )
        built = [ensure_toolchain(s, progress=lambda m: console.print(f"[dim]{m}[/]")) for s in specs]
        with Compiler(jobs=jobs) as compiler:
            rows = check(built, selected, target=target, compiler=compiler, on_row=show)
    words = ["ktriage", "fidelity"]  # the command as given (rebuilt: main(argv) may run in-process)
    words += [w for t in toolchains or [] for w in ("-t", t)] + [w for k in case or [] for w in ("-k", k)]
    words += (
        (["--spec", str(spec)] if spec is not None else [])
        + (["--arch", arch] if arch != "sm_90" else [])
        + [w for o in output or [] for w in ("-o", str(o))]
    )
    command = shlex.join(words)
    machine = f"{platform.machine()} {platform.node()}, Python {platform.python_version()}"
    date = datetime.date.today().isoformat()
    writers = {
        ".md": lambda: to_markdown(rows, command=command, machine=machine, date=date),
        ".json": lambda: to_json(rows, command=command, machine=machine, date=date, target=target),
    }
    if fmt != Format.table:
        typer.echo(writers[".md" if fmt == Format.markdown else ".json"](), nl=False)
    write_outputs(output or [], writers)
    counts = summary(rows)
    console.print(", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    if counts.get("differs"):
        raise typer.Exit(exit_codes.FINDING)
    if counts.get("error"):
        raise typer.Exit(exit_codes.INCOMPLETE)


def _check_spec_file(
    path: Path,
    toolchains: Sequence[str],
    case: list[str] | None,
    arch: str,
    jobs: int,
    console: Console,
    show: Callable[[Row], None],
) -> list[Row]:
    """``--spec``: each kernel of the file written by values, with each toolchain (fidelity/by_value.py)."""
    import tempfile

    from ktriage.compile.compiler import Compiler
    from ktriage.fidelity.by_value import check_spec
    from ktriage.spec.select import load_selected_specs
    from ktriage.toolchain.manager import ensure_toolchain

    kernels = load_selected_specs(str(path), case)
    typed = [k.name for k in kernels if k.launch is None]
    if typed:
        raise SpecError(
            f"{path}: {', '.join(typed[:4])} written by types: the check compares a launch's values",
            "write the kernel by values under [kernel.args] (docs/specs.md)",
        )
    if arch != "sm_90":
        kernels = [k.replace(target=arch) for k in kernels]
    built = [ensure_toolchain(s, progress=lambda m: console.print(f"[dim]{m}[/]")) for s in toolchains]
    rows: list[Row] = []
    with Compiler(jobs=jobs) as compiler, tempfile.TemporaryDirectory(prefix="ktriage-fidelity-") as tmp:
        for tc in built:
            for i, kernel in enumerate(kernels):
                row = check_spec(kernel, tc, compiler, Path(tmp) / tc.id / str(i))
                rows.append(row)
                show(row)
    return rows
