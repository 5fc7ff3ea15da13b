"""`ktriage fidelity`: check, on this CPU machine, that ktriage's cubins are the ones Triton's JIT builds."""

from __future__ import annotations

import datetime
import platform
import shlex
from pathlib import Path
from typing import Annotated

import typer

from ktriage.cli import exit_codes
from ktriage.cli.console import make_console
from ktriage.errors import KtriageError


def fidelity(
    toolchains: Annotated[list[str] | None, typer.Option("--toolchain", "-t", help="Toolchain specs (default: every supported Triton release, docs/toolchains.md).")] = None,
    case: Annotated[list[str] | None, typer.Option("--case", "-k", help="Only cases whose name contains this (repeatable).")] = None,
    arch: Annotated[str, typer.Option("--arch", help="GPU target the fake driver reports, e.g. sm_90.")] = "sm_90",
    output: Annotated[list[Path] | None, typer.Option("--output", "-o", help="Write the table: .md or .json (repeatable).")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Parallel compiles on the ktriage side.")] = 2,
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

    console = make_console()
    target = parse_arch(arch).name
    specs = toolchains or [f"triton=={v}" for v in SUPPORTED_TRITON]
    selected = [c for c in all_cases(target) if not case or any(k in c.name for k in case)]
    if not selected:
        raise KtriageError(f"no fidelity case matches {case}", "see the case names in the table of benchmarks/fidelity/README.md")
    for path in output or []:
        if path.suffix not in (".md", ".json"):
            raise KtriageError(f"--output {path}: unknown format {path.suffix!r}", "use a .md or .json file name")
    built = [ensure_toolchain(s, progress=lambda m: console.print(f"[dim]{m}[/]")) for s in specs]
    with Compiler(jobs=jobs) as compiler:
        rows = check(built, selected, target=target, compiler=compiler,
                     on_row=lambda r: console.print(f"{r.triton_version:7} {r.status:9} {r.case}"
                                                    + (f"  [yellow]{r.detail[:160]}[/]" if r.detail else "")))
    words = ["ktriage", "fidelity"]  # the command as given (rebuilt: main(argv) may run in-process)
    words += [w for t in toolchains or [] for w in ("-t", t)] + [w for k in case or [] for w in ("-k", k)]
    words += (["--arch", arch] if arch != "sm_90" else []) + [w for o in output or [] for w in ("-o", str(o))]
    command = shlex.join(words)
    machine = f"{platform.machine()} {platform.node()}, Python {platform.python_version()}"
    date = datetime.date.today().isoformat()
    for path in output or []:
        text = to_markdown(rows, command=command, machine=machine, date=date) if path.suffix == ".md" \
            else to_json(rows, command=command, machine=machine, date=date, target=target)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    counts = summary(rows)
    console.print(", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    if counts.get("differs"):
        raise typer.Exit(exit_codes.FINDING)
    if counts.get("error"):
        raise typer.Exit(exit_codes.INCOMPLETE)
