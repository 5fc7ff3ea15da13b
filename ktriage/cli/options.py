"""The options several verbs share, each defined once with one meaning (issue 10, point 2).

A verb declares a shared option by its alias here (``toolchains: Toolchains``) or, where the help
must say what the option means *for that verb*, through the factory with one extra sentence
(``toolchain_option("The first is the reference.")``). Names, short flags, environment variables,
parsing and the base help are fixed here, so ``-t`` is a toolchain spec in every verb, ``--arch``
accepts every spelling :func:`ktriage.api.normalize_arch` reads, and ``-o`` writes a file whose suffix
picks the writer.

| option | meaning |
|---|---|
| ``--toolchain/-t`` | a toolchain spec (docs/toolchains.md), repeatable |
| ``--arch`` | a GPU target, read by ``parse_arch`` (sm_90, sm_90a, 90, 9.0, cuda:90) |
| ``--input/-i`` | an input selector: a TritonBench id (7) or shape facts (N=4608), repeatable; ``--input-id K`` / ``--num-inputs N`` select ids K..K+N-1 as TritonBench does |
| ``--precision`` (``--dtype``) | the element type of an op's tensors (fp32, bf16, fp16); default: the op's |
| ``--mode`` (``--fwd``/``--bwd``/``--fwd-bwd``) | the pass; default: the op's own (catalog) |
| ``--db`` / ``KTRIAGE_DB`` | the results store URL |
| ``--cluster`` / ``KTRIAGE_CLUSTER`` | where compile/build jobs run: local, auto, HOST:PORT, ray://HOST:PORT |
| ``--format/-f`` | what goes to stdout: table, markdown, json, csv (csv only where the result is a table; toml: catalog show's spec file) |
| ``--output/-o PATH`` | repeatable; the suffix picks the writer: .md, .json, .html, .csv (.toml: catalog show); checked while parsing |
| ``--allow-failures`` | explain, triage, compare: exit 0/1 (the status of the work done) instead of 4 when some of the work failed |

``-w`` is ``--warps`` (occupancy) and nothing else.

This module is on the path of every verb's ``--help``: it imports typer and the standard library only.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ktriage.api.paths import RESULTS_FILE as RESULTS_FILE
from ktriage.api.paths import WORKLOAD as WORKLOAD
from ktriage.api.paths import check_not_data, data_kind, file_head, is_char_device
from ktriage.api.paths import check_replaceable as check_replaceable
from ktriage.api.paths import check_writable as check_writable
from ktriage.atomic import write_atomic
from ktriage.cli.console import OutputClosed, make_console
from ktriage.errors import KtriageError
from ktriage.wording import agree

if TYPE_CHECKING:
    from rich.console import Console


# ------------------------------------------------------------------------------------------ toolchain
TOOLCHAIN_HELP = (
    "A toolchain spec (docs/toolchains.md), e.g. triton==3.4.0 or triton==3.4.0,ptxas==12.4.131; repeatable."
)


def toolchain_option(role: str = "") -> Any:
    """``--toolchain/-t``: a toolchain spec, repeatable. ``role`` says what the verb does with them."""
    return typer.Option("--toolchain", "-t", help=f"{TOOLCHAIN_HELP} {role}".strip())


# ------------------------------------------------------------------------------------------ arch
def _parse_arch(value: str | None) -> str | None:
    """The ``--arch`` callback: every spelling parse_arch reads, normalized to its name (sm_90);
    an unknown target is a user error with the fix (the supported spellings and targets)."""
    if value is None:
        return None
    from ktriage.api import normalize_arch  # sm_90a / sm_100a keep their "a": a different compile target

    return normalize_arch(value)


ARCH_HELP = "GPU target: sm_90, sm_90a, 90, 9.0 or cuda:90 (an unsupported one is refused with the list)."


def arch_option(role: str = "", *older: str) -> Any:
    """``--arch`` (plus a verb's older spellings of it, e.g. catalog show's ``--target``)."""
    return typer.Option("--arch", *older, callback=_parse_arch, help=f"{ARCH_HELP} {role}".strip())


Arch = Annotated[str, arch_option()]
# Verbs that take a spec file: no --arch keeps each kernel's own target (sm_90 for a catalog op).
SpecArch = Annotated[
    str | None,
    arch_option("Default: a spec file's own target, sm_90 for a catalog op; given, it replaces a spec file's target."),
]

# ------------------------------------------------------------------------------------------ inputs
# One home for what -i/--input takes, so that no verb's help drifts from the selectors
# (ktriage.ops.inputs for a catalog op, ktriage.spec.select for a spec file or workload: docs/specs.md,
# docs/record.md). The verbs that read a workload too say its forms, which otherwise went unmentioned;
# catalog show and history read only a catalog op, so they say only its forms.
_CATALOG_INPUTS = (
    "a catalog op's TritonBench input id (7) or shape facts (N=4608), alone or inside its kernel's name as the"
    " reports print it (liger.layer_norm.bwd[N=4608]; that name alone: all its inputs)"
)
_WORKLOAD_INPUTS = (
    "a workload's kernel as the reports print it, for all its inputs (K7, K7:fn, fn.K7, fn), an input id"
    " (0: that input of each kernel), or an input's label or some of its arguments, alone or inside its"
    " kernel's name (K7[X_ptr=4096x4608])"
)
_SPEC_INPUTS = (
    "a spec file's kernel by its name or input label (the name before its [...] alone, osm of osm[N=8192]:"
    " all its inputs)"
)
INPUT_HELP = (
    f"Only these inputs: {_CATALOG_INPUTS}; {_WORKLOAD_INPUTS}; {_SPEC_INPUTS}; or a range as explain prints"
    " it (N=4608..8192, K7[X_ptr=4096x{4608..6144}]). Repeatable."
)
CATALOG_INPUT_HELP = (
    "Only these inputs: the op's TritonBench input id (7), shape facts (N=4608) or a range as explain prints"
    " it (N=4608..8192), alone or inside the op's kernel name as the reports print it"
    " (liger.layer_norm.bwd[N=4608..8192]; that name alone: all its inputs). Repeatable."
)


def input_option(role: str = "", *, catalog_only: bool = False) -> Any:
    """``-i/--input``; ``catalog_only``: the verb reads only a catalog op (catalog show, history)."""
    text = CATALOG_INPUT_HELP if catalog_only else INPUT_HELP
    return typer.Option("--input", "-i", help=f"{text} {role}".strip())


Inputs = Annotated[list[str] | None, input_option()]
CatalogInputs = Annotated[list[str] | None, input_option(catalog_only=True)]
InputId = Annotated[
    int | None,
    typer.Option(
        "--input-id", min=0, help="TritonBench's spelling: the first input id (with --num-inputs: ids K..K+N-1)."
    ),
]
NumInputs = Annotated[
    int | None,
    typer.Option(
        "--num-inputs", min=1, help="TritonBench's spelling: how many inputs from --input-id (default: all the rest)."
    ),
]


# ------------------------------------------------------------------------------------------ precision
PRECISION_HELP = "Element type of the op's tensors: fp32, bf16, fp16 (--dtype is an alias)."


def precision_option(role: str = "Default: the op's (ktriage catalog list).") -> Any:
    return typer.Option("--precision", "--dtype", help=f"{PRECISION_HELP} {role}".strip())


Precision = Annotated[str | None, precision_option()]
# compare and triage: two runs of different precisions are refused (ktriage.compare.sides.check_precision),
# this lets a user who compares the dtypes on purpose through, the report warning of it
AllowPrecisionMismatch = Annotated[
    bool,
    typer.Option(
        "--allow-precision-mismatch",
        help="Compare two runs of different precisions (bf16 against fp16) on purpose; refused without it. The report then warns that cells of different dtypes are compared.",
    ),
]

# explain, triage and compare: a partial result exits 4 (ktriage.exit_status INCOMPLETE, which wins over
# a finding) so that a failed compile or a cell nobody compared never passes CI as "no change"; this lets
# a job that accepts a partial answer gate on the part that was done. One definition: three help texts
# had drifted apart (one said "exit 0" where the verb also exits 1).
ALLOW_FAILURES_HELP = (
    "Exit 0, or 1 on a finding (a regression; explain: --fail-on), instead of 4 ('incomplete') when some of"
    " the work failed: cells that did not compile, assemble or analyze, steps that failed, cells not compared."
    " The failures are still reported."
)
AllowFailures = Annotated[bool, typer.Option("--allow-failures", help=ALLOW_FAILURES_HELP)]


def arguments(local_names: Mapping[str, Any]) -> dict[str, Any]:
    """A command's arguments as typer converted them, from its ``locals()`` taken first thing (the context
    left out). Why not ``ctx.params``: typer 0.27-0.28 leave click's raw values there (``"bwd"`` for
    ``Mode.bwd``, ``str`` for a ``Path``) and convert only what it passes to the function."""
    return {name: value for name, value in local_names.items() if not isinstance(value, typer.Context)}


def refuse_inapplicable(given: Mapping[str, Any], where: str, fix: str) -> None:
    """Options that mean nothing ``where`` (a recorded workload's bench, ``triage --run``) are refused,
    never ignored. ``given``: flag -> its parsed value, or whether it is off its default; each one set
    (not None, False, 0, [] or "") is named, in the map's order. One rule and one wording for every
    command that routes to a mode taking fewer options."""
    used = [flag for flag, value in given.items() if value not in (None, False, [], "")]
    if used:
        raise KtriageError(f"{', '.join(used)} {agree(len(used), 'does', 'do')} not apply to {where}", fix)


# ------------------------------------------------------------------------------------------ mode
class Mode(str, Enum):
    fwd = "fwd"
    bwd = "bwd"
    fwd_bwd = "fwd_bwd"


MODE_HELP = "The pass: fwd, bwd or fwd_bwd (also --fwd, --bwd, --fwd-bwd)."


def mode_option(role: str = "Default: the op's own pass (ktriage catalog list marks it).") -> Any:
    return typer.Option("--mode", help=f"{MODE_HELP} {role}".strip())


ModeOpt = Annotated[Mode | None, mode_option()]
Fwd = Annotated[bool, typer.Option("--fwd", help="Short for --mode fwd.")]
Bwd = Annotated[bool, typer.Option("--bwd", help="Short for --mode bwd.")]
FwdBwd = Annotated[bool, typer.Option("--fwd-bwd", help="Short for --mode fwd_bwd.")]


def pick_mode(mode: Mode | None, *, fwd: bool = False, bwd: bool = False, fwd_bwd: bool = False) -> str | None:
    """The one pass the user asked for, or None (the op's default). Two different ones are an error."""
    asked = {m for m, on in (("fwd", fwd), ("bwd", bwd), ("fwd_bwd", fwd_bwd)) if on}
    if mode is not None:
        asked.add(mode.value)
    if len(asked) > 1:
        raise KtriageError(
            f"more than one pass was given ({', '.join(sorted(asked))})", "choose one with --mode fwd|bwd|fwd_bwd"
        )
    return asked.pop() if asked else None


PASS_FLAGS = {"--fwd": "fwd", "--bwd": "bwd", "--fwd-bwd": "fwd_bwd"}
"""The short pass flags that :data:`MODE_HELP` documents on every ``--mode``."""


def accept_pass_flags(command: Any) -> None:
    """Make every (sub)command whose ``--mode`` help documents ``--fwd``/``--bwd``/``--fwd-bwd`` accept
    them: the flags a command does not declare itself are read as ``--mode <pass>`` before it parses
    (``cli/app.load_verb`` calls this once per verb; duck-typed, as typer may bring its own click). Why here and not a parameter on every verb: the
    help of ``--mode`` promises them wherever it appears, so the promise is kept where it is made."""
    for sub in (getattr(command, "commands", None) or {}).values():  # a group's subcommands (catalog show)
        accept_pass_flags(sub)
    declared = {opt for p in command.params for opt in getattr(p, "opts", ())}
    mode = next((p for p in command.params if "--mode" in getattr(p, "opts", ())), None)
    if mode is None or MODE_HELP not in (getattr(mode, "help", None) or ""):
        return
    flags = {flag: value for flag, value in PASS_FLAGS.items() if flag not in declared}
    if not flags:
        return
    parse_args = command.parse_args

    def parse_with_pass_flags(ctx: Any, args: list[str]) -> list[str]:
        return parse_args(ctx, pass_flags_as_mode(args, flags))  # type: ignore[no-any-return]

    command.parse_args = parse_with_pass_flags


def pass_flags_as_mode(args: Sequence[str], flags: Mapping[str, str]) -> list[str]:
    """``args`` with each of ``flags`` (e.g. ``--bwd``) written as ``--mode bwd``, up to a ``--`` (what
    follows it is another program's command line). Two different passes, given either way, are the
    error :func:`pick_mode` gives, not a silent last-one-wins."""
    out: list[str] = []
    asked: set[str] = set()
    rewritten = False
    for i, arg in enumerate(args):
        if arg == "--":
            out += args[i:]
            break
        if arg in flags:
            out += ["--mode", flags[arg]]
            asked.add(flags[arg])
            rewritten = True
            continue
        if arg.startswith("--mode="):
            asked.add(arg.split("=", 1)[1])
        elif arg == "--mode" and i + 1 < len(args):
            asked.add(args[i + 1])
        out.append(arg)
    if rewritten and len(asked) > 1:
        raise KtriageError(
            f"more than one pass was given ({', '.join(sorted(asked))})", "choose one with --mode fwd|bwd|fwd_bwd"
        )
    return out


# ------------------------------------------------------------------------------------------ compiling
def jobs_option(help: str) -> Any:
    """``--jobs/-j``: parallel compiles, 1 to 1024 (``-j 0`` or ``-j -1`` is refused while parsing)."""
    return typer.Option("--jobs", "-j", min=1, max=1024, help=help)


COMPILE_TIMEOUT_HELP = (
    "Seconds one compile may take, importing the kernel's module included: a module that hangs "
    "at import fails its cells after this instead of blocking."
)
CompileTimeout = Annotated[
    float,
    typer.Option(
        "--compile-timeout",
        envvar="KTRIAGE_COMPILE_TIMEOUT",
        show_envvar=True,
        min=1.0,
        max=86400.0,
        help=COMPILE_TIMEOUT_HELP,
    ),
]
# its default is ktriage.api.DEFAULT_COMPILE_TIMEOUT_S (defined once, in ktriage.explain.session)

# ------------------------------------------------------------------------------------------ store
DB_HELP = (
    "Results store: any SQLAlchemy URL, e.g. postgresql+psycopg://user:pw@host:5432/db or "
    "sqlite:////path/k.db (missing folders of a SQLite path are created). Default: the SQLite file under the ktriage home."
)
Db = Annotated[str | None, typer.Option("--db", envvar="KTRIAGE_DB", show_envvar=True, help=DB_HELP)]

# ------------------------------------------------------------------------------------------ cluster
CLUSTER_HELP = (
    "Where compile and build jobs run (docs/cluster.md): local (this machine's process pool, the "
    "default), auto (the Ray cluster this machine joined), HOST:PORT (a Ray head's GCS port) or "
    "ray://HOST:PORT (Ray Client). Needs pip install 'ktriage\\[cluster]'."
)  # \[ because --help reads the text as rich markup, where [cluster] is a style tag and vanished
Cluster = Annotated[
    str | None, typer.Option("--cluster", envvar="KTRIAGE_CLUSTER", show_envvar=True, help=CLUSTER_HELP)
]


# ------------------------------------------------------------------------------------------ cost model
Model = Annotated[
    Path | None,
    typer.Option(
        "--model",
        help="Cost-model parameters written by `ktriage calibrate -o FILE` (default: $KTRIAGE_MODEL, else the fit shipped with ktriage; docs/model.md).",
    ),
]
"""explain's, triage's and tune's --model: one option, so that the verbs price predictions (and tune its
config estimates and ties) from the same file the same way."""


# ------------------------------------------------------------------------------------------ output
class Format(str, Enum):
    """What a verb prints on stdout; each verb says which it supports (:func:`check_format`)."""

    table = "table"
    markdown = "markdown"
    json = "json"
    csv = "csv"
    toml = "toml"  # catalog show only: the spec file the op expands to

    def __str__(self) -> str:
        """The value, as ``StrEnum`` has it (3.11+; ktriage runs on 3.10). Why: typer 0.27-0.28 pass an enum
        option's callback result through their converter again, which looks up ``str(value)``; the mixin's
        default ``Format.json`` found nothing and --format became None (a table printed, ``workload show -f
        json`` crashed on the H200 image's typer 0.27.2)."""
        return str(self.value)


# the file suffix whose writer renders a stdout format: one renderer for both (``writers[SUFFIX[fmt]]``)
SUFFIX = {Format.markdown: ".md", Format.json: ".json", Format.csv: ".csv", Format.toml: ".toml"}

_FORMATS_ATTR = "ktriage_formats"
_SUFFIXES_ATTR = "ktriage_suffixes"


def _formats_callback(formats: tuple[str, ...]) -> Callable[[Format | None], Format | None]:
    """The ``--format`` callback: refuses a format the verb has no renderer for (while parsing, so
    before any work) and carries the verb's formats for the generated support matrix (docgen)."""

    def callback(value: Format | None) -> Format | None:
        if value is not None:
            check_format(value, formats)
        return value

    setattr(callback, _FORMATS_ATTR, formats)
    return callback


def _suffixes_callback(
    suffixes: tuple[str, ...], writes: tuple[str, ...] = ()
) -> Callable[[list[Path] | None], list[Path] | None]:
    """The ``--output`` callback: refuses a suffix without a writer and a ktriage data file the verb
    does not write (while parsing) and carries the verb's suffixes for the generated support matrix
    (docgen)."""

    def callback(value: list[Path] | None) -> list[Path] | None:
        check_outputs(value or [], suffixes, writes=writes)
        return value

    setattr(callback, _SUFFIXES_ATTR, suffixes)
    return callback


def format_option(supported: Iterable[str] = ("table", "markdown", "json"), role: str = "") -> Any:
    choices = tuple(supported)
    return typer.Option(
        "--format",
        "-f",
        metavar="|".join(choices),
        callback=_formats_callback(choices),
        help=f"Output on stdout: {', '.join(choices)}. {role}".strip(),
    )


def check_format(fmt: Format, supported: Iterable[str]) -> None:
    allowed = tuple(supported)
    if fmt.value not in allowed:
        raise KtriageError(f"--format {fmt.value} is not available here", f"use --format {' | '.join(allowed)}")


def output_option(suffixes: Iterable[str] = (".md", ".json"), role: str = "", *, writes: Iterable[str] = ()) -> Any:
    """``-o``; ``writes``: the ktriage data kinds (``ktriage.api.paths.data_kind``) its writers make,
    which it may replace (``runs export -o run.json`` over an earlier export)."""
    known = tuple(suffixes)
    return typer.Option(
        "--output",
        "-o",
        callback=_suffixes_callback(known, tuple(writes)),
        help=(
            f"Write the result to this file; the suffix picks the writer ({', '.join(known)}). Repeatable. {role}"
        ).strip(),
    )


def output_grammar(command: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A click command's ``--format`` choices and ``-o`` suffixes (empty: the verb has none), read
    from the callbacks :func:`format_option` and :func:`output_option` put on its parameters."""
    formats: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = ()
    for param in getattr(command, "params", []):
        callback = getattr(param, "callback", None)
        # typer wraps the callback (functools.wraps): the attribute is reachable through __wrapped__
        while callback is not None and not hasattr(callback, _FORMATS_ATTR) and not hasattr(callback, _SUFFIXES_ATTR):
            callback = getattr(callback, "__wrapped__", None)
        formats = getattr(callback, _FORMATS_ATTR, formats)
        suffixes = getattr(callback, _SUFFIXES_ATTR, suffixes)
    return formats, suffixes


Writer = Callable[[], str]


class _FormatPath(type(Path())):  # type: ignore[misc]  # PosixPath here; a plain Path subclass needs 3.12
    """A path whose option named its format (``--json PATH``): written with that format's writer
    whatever its own suffix says (:func:`output_suffix`)."""

    writer_suffix: str


def as_format(path: Path, suffix: str) -> Path:
    """``path`` to be written as ``suffix`` (".json", ".md", ".html") whatever its own suffix: what an
    option named after its format (``--json``, ``--markdown``, ``--html``, ``--output-json``) writes."""
    if path.suffix.lower() == suffix:
        return path
    named = _FormatPath(path)
    named.writer_suffix = suffix
    return named


class _BesidePath(type(Path())):  # type: ignore[misc]  # as _FormatPath
    """A path ktriage names after one the user gave (``--report r.md`` also writes ``r.json``), which the
    user did not name: an existing file there is replaced only when it is an earlier copy of what is
    written there (``marker`` in its first 4 KB); any other is refused before any work
    (:func:`check_outputs`). Why: ``explain --report r.md`` replaced an unrelated ``r.json`` beside it
    without a word (``overwrote r.json``, a file the user never typed)."""

    given: str  # the option that made it, as the user spelt it: "--report r.md"
    marker: bytes
    what: str


def beside(given: str, path: Path, suffix: str, *, marker: bytes, what: str) -> Path:
    """The file next to ``path`` with ``suffix`` in place of its own, written because the option
    ``given`` (``--report r.md``) writes it too; ``marker`` tells an earlier copy of it (``what``: how the
    refusal names one), which it may replace. A path named with ``-o`` as well wins (:func:`merge_outputs`)."""
    out = _BesidePath(path.with_suffix(suffix))
    out.given, out.marker, out.what = given, marker, what
    return out


def _check_beside(path: _BesidePath) -> None:
    """Refuse to replace a file the user did not name (:class:`_BesidePath`) that is not an earlier copy
    of what is written there, naming it and the ways on: name it with ``-o`` to replace it, or give
    another path."""
    head = file_head(path)
    if head is None or path.marker in head:
        return
    raise KtriageError(
        f"{path.given} also writes {path}, which exists and is not {path.what}: it would be replaced,"
        " and it was not named",
        f"add -o {path} to replace it, or give {path.given.split(' ', 1)[0]} another path"
        " (or -o for only the files you name)",
    )


def output_suffix(path: Path) -> str:
    """The writer a path is written with: the format its option named (:func:`as_format`), else its suffix."""
    return getattr(path, "writer_suffix", None) or path.suffix.lower()


def _writer_of(path: Path, known: Sequence[str]) -> str | None:
    """The writer (a suffix of ``known``) ``path`` is written with: its format or suffix
    (:func:`output_suffix`), else, for a character device such as ``/dev/null`` (a name without a
    suffix, written to discard or show the output), the verb's first writer; None: no writer."""
    suffix = output_suffix(path)
    if suffix in known:
        return suffix
    return known[0] if known and is_char_device(path) else None


def _is_folder(path: Path) -> bool:
    """Whether ``path`` is a folder; False where the system cannot say (a name too long: check_writable says so)."""
    try:
        return path.is_dir()
    except OSError:
        return False


def check_outputs(
    paths: Sequence[Path],
    writers: Iterable[str],
    *,
    inputs: Iterable[str | Path | None] = (),
    writes: Collection[str] | None = (),
) -> None:
    """Refuse, before any work is done, an output whose suffix has no writer, one that is a file
    the command reads (``inputs``): ``explain W.json -o W.json`` replaced the recording (which only a
    GPU host can make again) with the report, ``compare run.json --toolchains -o run.json`` the results,
    and an existing ktriage data file (a results file, a workload, a bisect state, a model file) of a
    kind not in ``writes`` (None: not checked here; :func:`write_outputs` checks the rendered text)."""
    known = tuple(writers)
    read = {Path(i).resolve() for i in inputs if i is not None and Path(i).is_file()}
    for path in paths:
        if not path.suffix and _is_folder(path):  # -o reports/: a folder, not "a name without a suffix"
            check_writable(path, example=f"report{known[0]}" if known else "report.md")
        if _writer_of(path, known) is None:
            raise KtriageError(
                f"--output {path}: no writer for {path.suffix or 'a name without a suffix'!r}",
                f"name the file with one of: {', '.join(known)}",
            )
        if path.resolve() in read:
            raise KtriageError(
                f"--output {path} is a file this command reads: the report would replace it",
                f"write the report to another file, e.g. -o {path.with_name(path.stem + '-report' + path.suffix)}",
            )
        check_writable(path)
        if isinstance(path, _BesidePath):
            _check_beside(path)
        if writes is not None:
            check_not_data(path, "--output", allowed=writes)


def write_outputs(
    paths: Sequence[Path],
    writers: Mapping[str, Writer],
    console: Console | None = None,
    *,
    existed: Collection[Path] | None = None,
) -> None:
    """Write each path with the writer of its suffix (a character device such as /dev/null: the first
    writer), each rendered once, creating parent folders.
    An existing ktriage data file is replaced only by a document of its kind (checked for every path
    before any is written); replacing any other file says ``overwrote PATH``, not ``wrote PATH``.
    ``existed``: the paths that were files before the command ran (bench rewrites its results file
    while measuring; a verb that works for minutes passes them too); None: those that are files now.
    ``console``: where each path is said (None: stderr). Why never silent: docs/cli.md promises that
    ``-o`` says which file it replaced, and verbs that passed no console (explain, bisect, fidelity)
    replaced a file without a word."""
    check_outputs(paths, writers, writes=None)  # so every path has a writer
    known = tuple(writers)
    chosen = [(path, _writer_of(path, known) or "") for path in paths]
    rendered: dict[str, str] = {}
    for path, suffix in chosen:
        if suffix not in rendered:
            rendered[suffix] = writers[suffix]()
        check_not_data(path, "--output", allowed=(data_kind(rendered[suffix][:4096].encode()),))
    said = console if console is not None else make_console(stderr=True)
    for path, suffix in chosen:
        verb = "overwrote" if (path in existed if existed is not None else path.is_file()) else "wrote"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, rendered[suffix])
        except OSError as exc:
            raise KtriageError(
                f"cannot write {path}: {exc.strerror or exc}", "choose a writable --output path"
            ) from exc
        from rich.markup import escape

        said.print(f"{verb} {escape(str(path))}")


def emit(
    fmt: Format,
    writers: Mapping[str, Writer],
    table: Callable[[], None],
    outputs: Sequence[Path] | None,
    console: Console | None = None,
    *,
    existed: Collection[Path] | None = None,
) -> None:
    """The output grammar in one call: stdout in ``--format`` (json, markdown or csv from the same
    writer as ``-o`` of that suffix; ``table`` prints the table), then every ``-o`` file by suffix
    (``existed`` and ``console``: as for :func:`write_outputs`)."""
    suffix = {Format.json: ".json", Format.markdown: ".md", Format.csv: ".csv"}.get(fmt)
    if suffix is None:
        table()
    else:
        text = writers[suffix]()
        try:
            # sys.stdout, not click.echo: click rewraps an ASCII stdout as UTF-8, so a C-locale terminal got
            # the bytes of "±" where the table (degrade_encoding) gets "+/-"; a file's text ends on a newline.
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
            sys.stdout.flush()
        except BrokenPipeError as exc:  # click would exit 1, "regressions found"
            raise OutputClosed from exc
    write_outputs(list(outputs or []), writers, console, existed=existed)


def step_summary() -> str | None:
    """``$GITHUB_STEP_SUMMARY`` if set, checked before the work: the verbs that gate a pipeline (compare,
    triage, triage --run) append their markdown to it last, and a place that cannot be appended to
    found then turns the verb's exit status into 2 after its report was printed (a compare that found
    regressions, exit 1 for CI, exited 2), and a triage's minutes of compiling and bisecting are lost.
    Pass what it returns to ``append_step_summary``."""
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        check_writable(Path(summary), "$GITHUB_STEP_SUMMARY")
        if not Path(summary).parent.is_dir():  # appended to, never created with its folders
            raise KtriageError(
                f"$GITHUB_STEP_SUMMARY {summary}: the folder {Path(summary).parent} does not exist",
                "point GITHUB_STEP_SUMMARY at a file in an existing folder, or unset it",
            )
    return summary


def append_step_summary(summary: str | None, markdown: str) -> None:
    """Append a report's markdown to ``$GITHUB_STEP_SUMMARY`` (the path ``step_summary`` checked), if
    any: the CI summary the verbs that gate a pipeline (compare, triage, triage --run) write besides
    their own outputs."""
    if not summary:
        return
    try:
        with open(summary, "a", encoding="utf-8") as fh:
            fh.write(markdown + "\n")
    except OSError as exc:
        raise KtriageError(
            f"cannot append to $GITHUB_STEP_SUMMARY {summary}: {exc.strerror or exc}",
            "point GITHUB_STEP_SUMMARY at a writable file, or unset it",
        ) from exc


def merge_outputs(
    outputs: Sequence[Path] | None,
    *aliases: Path | Sequence[Path] | None,
    md: Path | None = None,
    json: Path | None = None,
    html: Path | None = None,
) -> list[Path]:
    """``-o`` paths plus the verb's older spellings of it (``--report``...), in order, without duplicates.
    ``md``/``json``/``html``: an option named after its format (``--markdown``, ``--json``,
    ``--output-json``, ``--html``) writes that format whatever the path's suffix (:func:`as_format`).
    A path the user named wins over the same path written beside another (:func:`beside`): named, it
    is replaced as ``-o`` replaces."""
    out: list[Path] = list(outputs or [])
    named = [as_format(p, s) for p, s in ((md, ".md"), (json, ".json"), (html, ".html")) if p is not None]
    for alias in [*aliases, *named]:
        if alias is None:
            continue
        for path in [alias] if isinstance(alias, Path) else alias:
            if path not in out:
                out.append(path)
            elif not isinstance(path, _BesidePath):
                at = out.index(path)
                if isinstance(out[at], _BesidePath):
                    out[at] = path
    return out


def one_toolchain(toolchains: Sequence[str] | None, verb: str) -> str | None:
    """For verbs that hold one toolchain fixed: the single ``-t``, None when none was given."""
    if not toolchains:
        return None
    if len(toolchains) > 1:
        raise KtriageError(f"{verb} holds one toolchain fixed, but {len(toolchains)} -t were given", "pass one -t")
    return toolchains[0]
