"""``ktriage --help``: the verb listing, drawn with rich's table and panel alone.

Why not Typer's renderer: ``typer.rich_utils`` imports rich's markdown (markdown-it) and traceback
(pygments) modules at import time, which made up about a third of the listing's CPU time, for a
page with no markdown and no traceback (benchmarks/cli/README.md measures it). The listing looks
as Typer draws it (usage, help, an Options and a Commands panel); a verb's own ``--help`` is still
Typer's.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from typer import _click
from typer.core import TyperGroup, TyperOption


def print_listing(group: TyperGroup, ctx: _click.Context, verbs: Sequence[tuple[str, str]]) -> None:
    """Print the usage line, the group's help, its options and ``verbs`` (name, one-line help)."""
    from rich import box
    from rich.padding import Padding
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    from ktriage.cli.console import PipeAwareConsole, help_width

    width = help_width()  # KTRIAGE_COLUMNS in a pipe; else Typer's TERMINAL_WIDTH, else rich's own
    if width is None:
        terminal_width = os.environ.get("TERMINAL_WIDTH")
        width = int(terminal_width) if terminal_width and terminal_width.isdigit() else None
    console = PipeAwareConsole(width=width)
    console.print(Padding(Text(group.get_usage(ctx), style="bold"), 1))
    if group.help:
        console.print(Padding(Text(group.help.strip()), (0, 1, 1, 1)))
    options = Table.grid(padding=(0, 2), pad_edge=False)
    options.add_column(style="bold cyan", no_wrap=True)
    options.add_column()
    for param in group.get_params(ctx):
        if not isinstance(param, TyperOption) or param.hidden:
            continue
        text = Text(param.help or "")
        envvar = param.envvar if isinstance(param.envvar, str) else None
        if envvar and param.show_envvar:
            text.append(f"\n[env var: {envvar}]", style="dim yellow")
        options.add_row(", ".join(param.opts), text)
    commands = Table.grid(padding=(0, 2), pad_edge=False)
    commands.add_column(style="bold cyan", no_wrap=True)
    commands.add_column()
    for name, help_ in verbs:
        commands.add_row(name, Text(help_))
    for title, table in (("Options", options), ("Commands", commands)):
        console.print(Panel(table, title=title, title_align="left", border_style="dim", box=box.ROUNDED))
