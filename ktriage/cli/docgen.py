"""Generate docs/cli.md, the table of every verb's options, from the click commands of the lazy verb
registry (``ktriage.cli.app.VERBS``)::

    python -m ktriage.cli.docgen > docs/cli.md

tests/cli/test_docgen.py regenerates it and compares with the committed file, so the table cannot
drift from the parsers."""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Iterator
from enum import Enum
from pathlib import Path
from typing import Any

from typer import _click
from typer.core import TyperArgument, TyperGroup

from ktriage.cli.app import VERBS, load_verb
from ktriage.cli.options import output_grammar
from ktriage.mdsafe import trusted_markdown

HEADER = """# Command-line reference

Generated from the parsers by `python -m ktriage.cli.docgen > docs/cli.md`; do not edit by hand
(tests/cli/test_docgen.py fails when this file and the commands disagree).

The shared options have one definition each (`ktriage/cli/options.py`) and one meaning in every verb:

| option | meaning |
|---|---|
| `--toolchain/-t` | a toolchain spec ([toolchains.md](toolchains.md)), repeatable; where a verb holds one toolchain fixed (bisect, bisect-step) it is given once |
| `--arch` | a GPU target in any spelling `parse_arch` reads: sm_90, sm_90a, 90, 9.0, cuda:90 |
| `--input/-i` | an input selector, repeatable: of a catalog op, a TritonBench input id (7) or shape facts (N=4608), alone or inside its kernel's name (liger.layer_norm.bwd[N=4608]; the name alone: all its inputs); of a workload ([record.md](record.md)), a kernel as the reports print it (K7, K7:fn, fn.K7, fn: all its inputs), an input id (0: that input of each kernel) or an input's label or some of its arguments (K7[X_ptr=4096x4608]); of a spec file, a kernel's name or input label ([specs.md](specs.md)); of any, a range as explain prints it (N=4608..8192, K7[X_ptr=4096x{4608..6144}]). `--input-id K` / `--num-inputs N` are TritonBench's spellings (ids K..K+N-1); `catalog show` and `history` read a catalog op's inputs only |
| `--precision` (`--dtype`) | the element type of an op's tensors; default: the op's |
| `--mode` (`--fwd`, `--bwd`, `--fwd-bwd`) | the pass; default: the op's own (`ktriage catalog list` marks it; bench: TritonBench's fwd) |
| `--db` / `KTRIAGE_DB` | the results store URL |
| `--format/-f` | what is printed on stdout: table, markdown, json, csv (csv only where the result is one table of rows; `catalog show` also toml, the spec file) |
| `--output/-o PATH` | repeatable; the file's suffix picks the writer: .md, .json, .html, .csv (.toml: catalog show). Nothing is written unless asked |

`-w` is occupancy's `--warps` and nothing else.

A format or suffix a verb has no writer for is refused before any work, with the ones it has
(`error: --format csv is not available here` / `fix: use --format table | markdown | json`).
`--format json` prints the same document as `-o PATH.json` writes (for bench: the results file
`ktriage compare` reads).

`-o` replaces an existing file, as `cp` does, and says so (`overwrote PATH`, not `wrote PATH`), with
two exceptions, refused before any work (exit 2, the file left as it was, `fix:` names another file): a file the command reads (`explain W.json -o W.json`), and ktriage data of another kind than the output,
which only a GPU host, a recorded program or hours of bisecting make again: a results file, a
workload, a bisect state or a model file (`runs list -o run.json` over an exported run; `runs export
-o run.json` over an earlier export is replaced).

`-o` writes only the files named; an existing file is replaced only where it was named. The one
option that writes a file beside the one named, explain's older `--report r.md` (also `r.json`),
replaces an `r.json` there only when it is an earlier explain report: any other is refused before any
work (exit 2, the file left as it was), naming it, with the fix: add `-o r.json` to replace it, or
give `--report` another path (or `-o` for only the files you name).
"""


def _commands() -> Iterator[tuple[str, Any]]:
    for verb in VERBS:
        command: Any = load_verb(verb)
        if isinstance(command, TyperGroup):
            ctx = _click.Context(command, info_name=verb.name)
            for sub in command.list_commands(ctx):
                child = command.get_command(ctx, sub)
                if child is not None:
                    yield f"{verb.name} {sub}", child
        else:
            yield verb.name, command


def _cell(text: str) -> str:
    """One table cell of help text: rich's markup escape (``\\[`` keeps ``[cluster]`` from reading as a
    style tag in --help) is undone, as --help shows it."""
    return " ".join(text.split()).replace("\\[", "[").replace("|", "\\|")


def _base(annotation: Any) -> Any:
    """``list[X]``, ``X | None``, ``Optional[X]`` -> X."""
    while True:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        origin = typing.get_origin(annotation)
        if origin in (list, tuple) or (origin in (typing.Union, types.UnionType) and len(args) == 1):
            annotation = args[0]
            continue
        return annotation


# click's type names (typer 0.27-0.28) in the words typer 0.29's annotations gave the committed table
_CLICK_NAMES = {"str": "TEXT", "text": "TEXT", "int": "INTEGER", "integer": "INTEGER", "float": "FLOAT", "boolean": ""}


def _value(param: Any) -> str:
    if getattr(param, "is_flag", False):
        return ""
    if param.metavar:
        return _cell(str(param.metavar))
    descriptor = getattr(param, "type_descriptor", None)  # typer 0.29 keeps the annotation; 0.27-0.28 a click type
    kind = _base(descriptor.annotation) if descriptor is not None else param.type
    if isinstance(kind, type) and issubclass(kind, Enum):
        text = "\\|".join(str(m.value) for m in kind)
    elif isinstance(getattr(kind, "choices", None), (list, tuple)):  # click's Choice: an enum's values
        text = "\\|".join(str(getattr(c, "value", c)) for c in kind.choices)
    elif kind is Path or getattr(kind, "name", None) == "path":
        text = "PATH"
    elif isinstance(kind, type):
        text = {str: "TEXT", int: "INTEGER", float: "FLOAT", bool: ""}.get(kind, kind.__name__.upper())
    else:
        name = str(getattr(kind, "name", kind)).lower().removesuffix(" range")  # click's IntRange is "int range"
        text = _CLICK_NAMES.get(name, name.upper())
    return text + (" ..." if param.multiple else "")


def _default(param: Any) -> str:
    value = param.default
    if callable(value) or value is None or value is False or value == [] or value == ():
        return ""
    if isinstance(value, Enum):
        value = value.value
    return f"`{value}`"


def _names(param: Any) -> str:
    if isinstance(param, TyperArgument):
        return str(param.name or "").upper()
    return ", ".join(f"`{n}`" for n in [*param.opts, *param.secondary_opts])


def support_matrix() -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """Each command's ``--format`` choices and ``-o`` suffixes, read from its parser."""
    return {name: output_grammar(command) for name, command in _commands()}


OWN = trusted_markdown("docs/cli.md from the parsers' own help text: no outside input")


@OWN
def _matrix() -> str:
    matrix = support_matrix()
    out = [
        "## Output formats per verb",
        "",
        "Read from the parsers (`--format` on stdout, `-o` by suffix):",
        "",
        "| command | `--format` (stdout) | `-o PATH` suffixes |",
        "|---|---|---|",
    ]
    out += [
        f"| ktriage {name} | {', '.join(formats) or '-'} | {', '.join(suffixes) or '-'} |"
        for name, (formats, suffixes) in matrix.items()
        if formats or suffixes
    ]
    actions = [f"`{name}`" for name, (formats, suffixes) in matrix.items() if not (formats or suffixes)]
    out += ["", f"No output options (an action or a step, with a one-line result): {', '.join(actions)}.", ""]
    return "\n".join(out)


@OWN
def render() -> str:
    out = [HEADER, _matrix()]
    for name, command in _commands():
        out.append(f"## ktriage {name}\n")
        first = inspect.cleandoc(command.help or "").split("\n\n")[0]
        out.append(_cell(first) + "\n")
        out.append("| option | value | default | env | help |")
        out.append("|---|---|---|---|---|")
        for param in command.params:
            if getattr(param, "hidden", False):
                continue
            env = param.envvar if isinstance(param.envvar, str) else ""
            help_text = getattr(param, "help", None) or ""
            required = " (required)" if param.required else ""
            out.append(
                f"| {_names(param)} | {_value(param)} | {_default(param)} | {f'`{env}`' if env else ''} | "
                f"{_cell(help_text)}{required} |"
            )
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    print(render(), end="")
