"""The ``ktriage`` command: a lazy registry of verbs and ``main(argv) -> int`` with the exit codes of
:mod:`ktriage.cli.exit_codes`.

Why lazy: each verb's module imports the library it drives (``compare`` pulls in scipy, ``runs``
SQLAlchemy, ``explain`` the compiler and analyzers). Importing them all to print ``ktriage --help``
took about 2 s. :data:`VERBS` names each verb's module, the attribute in it and the one-line help of
the listing, so ``ktriage --help`` imports no verb module and ``ktriage VERB ...`` imports only that
verb's (tests/cli/test_app.py checks the listing against the real commands so the table cannot drift).

Why ``main`` returns a code instead of letting click exit: CI reads the exit code, and an uncaught
exception used to exit 1, which is also "regressions found". ``main`` maps every way out to one code
(see :func:`main`); the console script and ``python -m ktriage`` exit with it.
"""

from __future__ import annotations

import gc
import importlib
import inspect
import os
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any

import typer
from typer import _click
from typer.core import TyperCommand, TyperGroup

from ktriage.cli import exit_codes
from ktriage.cli.console import (
    OutputClosed,
    check_environment,
    degrade_encoding,
    install_warning_lines,
    print_error,
    print_internal_error,
    silence_stdout,
    typer_help_width,
)
from ktriage.errors import KtriageError


@dataclass(frozen=True)
class Verb:
    """One top-level verb: where its command lives and what the listing says about it.

    ``attribute`` names a function (a single command, registered like ``app.command(name)``) or a
    ``typer.Typer`` (a group with subcommands, registered like ``app.add_typer(..., name=name)``).
    ``help`` is the first paragraph of that command's help, on one line."""

    name: str
    module: str
    attribute: str
    help: str


# The order is that of the listing (the order Typer listed them in when they were registered eagerly).
VERBS: tuple[Verb, ...] = (
    Verb(
        "explain",
        "ktriage.cli.explain_cmd",
        "explain",
        "Compile a kernel with several toolchains and explain what changed: registers, spills, stack, occupancy "
        "and SASS opcodes, each change attributed to the frontend (PTX) or to ptxas.",
    ),
    Verb(
        "bench",
        "ktriage.cli.bench_cmd",
        "bench",
        "Benchmark an operator like TritonBench, with every toolchain's kernels timed side by side in one GPU process.",
    ),
    Verb(
        "compare",
        "ktriage.cli.compare_cmd",
        "compare",
        "Compare two runs (or the toolchains of one): per input and backend a ratio with a confidence interval "
        "and a verdict (regression, improvement, same, unsure), the baseline check, cliffs along input sweeps. "
        "Exit 1 when regressions are found (for CI), 4 when some cells were not compared (before 1; "
        "--allow-failures gives 0/1 then), 2 for bad input.",
    ),
    Verb(
        "bisect",
        "ktriage.cli.bisect_cmd",
        "bisect",
        "Find the first bad candidate (release, ptxas, commit) by comparison with the measured endpoints, then "
        "explain it against its predecessor.",
    ),
    Verb(
        "bisect-step",
        "ktriage.cli.bisect_cmd",
        "bisect_step",
        "One `git bisect run` step: compile the checked-out kernels and compare a metric with a stored baseline. "
        "Errors exit 128 so that git aborts instead of marking the commit bad.",
    ),
    Verb(
        "triage",
        "ktriage.cli.triage_cmd",
        "triage",
        "Triage a regression report: rank every cell past the gate, explain each flagged kernel compile-side with "
        "both toolchains, note a moved baseline, bisect compile-only, propose fixes, re-measure on a GPU "
        "(--measure, or --bundle then --measured), and write one report. Exit 1: a regression (compile-side or "
        "measured); 0: none; 4: a step failed.",
    ),
    Verb(
        "calibrate",
        "ktriage.cli.calibrate_cmd",
        "calibrate",
        "Fit the cost model that explain's verdicts come from on GPU-measured cells (a dataset, bench results "
        "files or store runs, each with the explain report of its kernels) and score it leave-one-operator-out; "
        "-o writes the parameters for explain --model / KTRIAGE_MODEL.",
    ),
    Verb(
        "tune",
        "ktriage.cli.tune_cmd",
        "tune",
        "Find a config that does not spill and fits the grid: enumerate num_warps, num_stages and the declared "
        "block sizes, compile all on the CPU, screen by spills, occupancy and a roofline estimate, then time the "
        "best few on the GPU against the library's own config.",
    ),
    Verb(
        "fidelity",
        "ktriage.cli.fidelity_cmd",
        "fidelity",
        "Replay each case's launch through Triton's real launch path (decorators, binder, compile) with only the "
        "GPU driver faked, derive ktriage's spec from what the JIT was launched with, compile it through "
        "ktriage, and compare compile inputs and cubin bytes. Exit 0: all identical; 1: some differ; 4: some "
        "could not be checked.",
    ),
    Verb(
        "occupancy",
        "ktriage.cli.occupancy_cmd",
        "occupancy",
        "Resident CTAs and warps per SM for a kernel, the limiting resource, and what would lift it.",
    ),
    Verb(
        "profile",
        "ktriage.cli.profile_cmd",
        "profile",
        "Run Nsight Compute (ncu --clock-control none) on each toolchain's kernels of a bundle input, one call "
        "after warm-up, and diff occupancy, registers, local-memory (spill) traffic, atomics, DRAM/L2 traffic, "
        "warp stalls and instructions per kernel, each tied to the compile-side change in one sentence.",
    ),
    Verb(
        "record",
        "ktriage.cli.record_cmd",
        "record",
        "Run a program with a launch hook injected from outside (a sitecustomize on PYTHONPATH; the code is "
        "unchanged) and write every distinct Triton kernel it launched into a portable workload: each kernel's "
        "spec as the JIT compiled it, autotune configs and choice, heuristics values, a source snapshot, and per "
        "distinct launch the argument descriptions, grid and count.",
    ),
    Verb(
        "workload",
        "ktriage.cli.workload_cmd",
        "app",
        "Recorded workloads (ktriage record): show what one holds, import one from tritonparse traces.",
    ),
    Verb("toolchain", "ktriage.cli.toolchain_cmd", "app", "Manage compiler toolchains (Triton + ptxas)."),
    Verb(
        "catalog",
        "ktriage.cli.catalog_cmd",
        "app",
        "Built-in kernels: Liger-Kernel recipes and ktriage's tutorial kernels.",
    ),
    Verb(
        "runs",
        "ktriage.cli.runs_cmd",
        "app",
        "Stored measurement runs: list, show, export, import, delete (the results store).",
    ),
    Verb(
        "history",
        "ktriage.cli.history_cmd",
        "history",
        "A cell's latency over the stored runs (oldest first) with the change points Apache Otava finds "
        "(E-divisive, t-test significance); each names the runs before and after it, the step and the ktriage "
        "bisect between their toolchains. Exit 1 with --fail-on-recent N when a change point is in the latest N runs.",
    ),
    Verb("cache", "ktriage.cli.cache_cmd", "app", "The artifact cache: its size, a check of every entry, cleanup."),
)

_BY_NAME = {v.name: v for v in VERBS}
_LISTING = "ktriage.listing"  # ctx.meta key: set while the root help renders its command list


def load_verb(verb: Verb) -> _click.Command:
    """Import the verb's module and build its click command, as ``app.command``/``app.add_typer`` would;
    its ``--mode`` accepts the pass flags its help documents (``options.accept_pass_flags``)."""
    from ktriage.cli.options import accept_pass_flags

    command = _build_verb(verb)
    accept_pass_flags(command)
    _reflow_help(command)
    _help_at_ktriage_width(command)
    return command


class _HelpWidthContext(_click.Context):
    """A verb's context: its help page (``--help``, or a group's when no subcommand is given) is drawn at
    ``KTRIAGE_COLUMNS`` where that is set and stdout is no terminal (``console.help_width``), as the
    verb's output is; Typer's renderer alone reads only ``TERMINAL_WIDTH`` and ``COLUMNS``."""

    def get_help(self) -> str:
        with typer_help_width():
            return super().get_help()


def _help_at_ktriage_width(command: _click.Command) -> None:
    """Give the command, and a group's commands, :class:`_HelpWidthContext`."""
    command.context_class = _HelpWidthContext
    for sub in getattr(command, "commands", {}).values():
        _help_at_ktriage_width(sub)


def _reflow_help(command: _click.Command) -> None:
    """Typer's rich help keeps the docstring's line breaks after the first paragraph, so at 80 columns each
    source line became a line of its own ("... (docs/model.md); a" / "finding is a ..."). Each paragraph
    is made one line, to be wrapped at the terminal's width; a paragraph that starts with click's
    "keep these lines" marker (a backspace) is kept as written. Applied to a group's commands too."""
    if command.help:
        paragraphs = inspect.cleandoc(command.help).split("\n\n")
        command.help = "\n\n".join(p if p.startswith("\b") else " ".join(p.split()) for p in paragraphs)
    for sub in getattr(command, "commands", {}).values():
        _reflow_help(sub)


def _build_verb(verb: Verb) -> _click.Command:
    target = getattr(importlib.import_module(verb.module), verb.attribute)
    if _gc_policy.active:
        gc.freeze()  # the verb's modules live as long as the command: full collections need not scan them
    if isinstance(target, typer.Typer):
        command: _click.Command = typer.main.get_group(target)
        command.name = verb.name
        return command
    from typer.models import CommandInfo

    return typer.main.get_command_from_info(
        CommandInfo(name=verb.name, callback=target),
        pretty_exceptions_short=app.pretty_exceptions_short,
        rich_markup_mode=app.rich_markup_mode,
    )


class LazyVerbGroup(TyperGroup):
    """The root group: lists verbs from :data:`VERBS` and imports a verb's module only when that verb
    is resolved (invoked, or asked for its own ``--help``).

    Typer renders a group's help by asking ``get_command`` for every listed command; while the root
    help renders (:meth:`format_help` marks ``ctx.meta``) it gets a stub that carries only the name and
    the table's help, so the listing imports nothing."""

    def list_commands(self, ctx: _click.Context) -> list[str]:
        return [v.name for v in VERBS]

    def get_command(self, ctx: _click.Context, cmd_name: str) -> _click.Command | None:
        verb = _BY_NAME.get(cmd_name)
        if verb is None:
            return None
        if ctx.meta.get(_LISTING):
            return TyperCommand(verb.name, help=verb.help)
        if cmd_name not in self.commands:
            self.commands[cmd_name] = load_verb(verb)
        return self.commands[cmd_name]

    def format_help(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        """The listing, drawn by ``cli/listing.py`` (Typer's renderer costs the markdown and
        traceback modules); click's plain text when rich markup is off."""
        if self.rich_markup_mode is not None:
            from ktriage.cli.listing import print_listing

            print_listing(self, ctx, [(v.name, v.help) for v in VERBS])
            return
        ctx.meta[_LISTING] = True
        try:
            super().format_help(ctx, formatter)
        finally:
            ctx.meta.pop(_LISTING, None)

    def resolve_command(
        self, ctx: _click.Context, args: list[str]
    ) -> tuple[str | None, _click.Command | None, list[str]]:
        """As Typer's, with "did you mean" suggestions from the table (Typer draws them from the
        commands loaded so far, which for a lazy group is none)."""
        try:
            return self._click_resolve_command(ctx, args)
        except _click.exceptions.UsageError as exc:
            from difflib import get_close_matches

            matches = get_close_matches(args[0], self.list_commands(ctx)) if args else []
            if matches:
                exc.message = f"{exc.message.rstrip('.')}. Did you mean {', '.join(repr(m) for m in matches)}?"
            raise


@dataclass
class RunState:
    """What one :func:`main` call needs to know after the command has unwound: whether ``--debug``
    was given. Passed to click as the context ``obj``, so concurrent or repeated calls (tests) never
    share it."""

    debug: bool = False


def _debug_given(ctx: typer.Context, value: bool) -> bool:
    """The ``--debug`` option's callback: tell :func:`main` (when it is the caller) to re-raise."""
    if value and isinstance(ctx.obj, RunState):
        ctx.obj.debug = True
    return value


def _version_given(value: bool) -> None:
    """The ``--version`` option's callback: print the version and stop, before any verb loads."""
    if value:
        from ktriage import __version__

        typer.echo(f"ktriage {__version__}")
        raise typer.Exit(exit_codes.OK)


app = typer.Typer(
    name="ktriage",
    help="Find, bisect, explain and fix performance regressions of Triton GPU kernels across compiler versions.",
    cls=LazyVerbGroup,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _root(
    debug: Annotated[
        bool,
        typer.Option(
            "--debug",
            envvar="KTRIAGE_DEBUG",
            show_envvar=True,
            is_eager=True,
            callback=_debug_given,
            help="Re-raise errors with their traceback instead of the one-line message (for bug reports).",
        ),
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, expose_value=False, callback=_version_given, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Global options; the verb does the work."""


def _env_debug() -> bool:
    """KTRIAGE_DEBUG as click reads a boolean (1/true/yes/on), for errors raised before option parsing."""
    return os.environ.get("KTRIAGE_DEBUG", "").strip().lower() in ("1", "true", "t", "yes", "y", "on")


def _typer_too_old() -> str | None:
    """typer's version when it is older than 0.27, else None: ktriage imports the click typer vendors
    (``typer._click``, since 0.26) and is tested with 0.27 and 0.28 (pyproject.toml says why not 0.29)."""
    version = getattr(typer, "__version__", "0")
    try:
        major, minor = (int(part) for part in version.split(".")[:2])
    except ValueError:
        return None
    return version if (major, minor) < (0, 27) else None


@dataclass
class _GcPolicy:
    active: bool = False


_gc_policy = _GcPolicy()
COMMAND_GC_THRESHOLDS = (10_000, 10, 10)
"""The cyclic collector's thresholds while a command runs (Python's default: 700, 10, 10)."""


@contextmanager
def command_gc() -> Iterator[None]:
    """The cyclic garbage collector's settings for one command, restored after it.

    Why: a command is one short process that allocates a few hundred thousand objects that live until
    it ends (imported modules, parsed cache entries, report rows) and makes few reference cycles. At
    Python's default thresholds the collector ran a young collection every 700 allocations and, every
    hundred of those, a full one that walks every tracked object, the modules included: ~80 ms of a warm
    ``explain`` of the main job's sweep (``benchmarks/calibration/explain_timing.md``). Collections
    stay on (a long bench or bisect still frees its cycles), rarer, and the modules imported so far
    are moved out of their reach (``gc.freeze``), again once the verb's are."""
    old = gc.get_threshold()
    gc.set_threshold(*COMMAND_GC_THRESHOLDS)
    gc.freeze()  # the CLI's own modules (typer, rich) too
    _gc_policy.active = True
    try:
        yield
    finally:
        _gc_policy.active = False
        gc.unfreeze()
        gc.set_threshold(*old)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ktriage`` on ``argv`` (default: ``sys.argv[1:]``) and return its exit code.

    - the verb's own code (``typer.Exit``, e.g. 1 for regressions from ``compare``), 0 when it returns;
    - :data:`~exit_codes.USAGE` (2) for a :class:`KtriageError` (one ``error:`` line plus the ``fix:``)
      and for click's usage errors (unknown option, missing argument), printed as click prints them;
    - :data:`~exit_codes.INTERNAL` (3) for any other exception, as one ``internal error: ...`` line,
      so that CI never reads a crash as a finding;
    - :data:`~exit_codes.INTERRUPTED` (130) for Ctrl-C, as shells report SIGINT;
    - :data:`~exit_codes.BROKEN_PIPE` (141) when the reader of stdout went away (``| head``), as shells report
      SIGPIPE.

    With ``--debug`` (or ``KTRIAGE_DEBUG=1``) KtriageError and internal errors are re-raised with
    their traceback instead. ``SystemExit`` raised by a verb passes through untouched."""
    args = list(sys.argv[1:] if argv is None else argv)
    state = RunState(debug=_env_debug())
    degrade_encoding()
    install_warning_lines()
    try:
        check_environment()
    except KtriageError as exc:
        print_error(exc)
        return exit_codes.USAGE
    old_typer = _typer_too_old()
    if old_typer:
        print_error(
            KtriageError(
                f"typer {old_typer} is too old for ktriage, which needs 0.27 or 0.28",
                "install typer 0.28 (pip install 'typer>=0.27,<0.29'; on a host you cannot install into, put its "
                "pure-Python wheel on PYTHONPATH)",
            )
        )
        return exit_codes.USAGE
    command = typer.main.get_command(app)
    try:
        with command_gc():
            code: Any = command.main(args=args, prog_name="ktriage", standalone_mode=False, obj=state)
    except _click.exceptions.ClickException as exc:
        _show_click_error(exc)
        return exit_codes.USAGE
    except typer.Abort:  # end of input at a prompt; Typer turns Ctrl-C into Exit(130) itself
        from typer import rich_utils

        rich_utils.rich_abort_error()
        return exit_codes.INTERRUPTED
    except KtriageError as exc:
        if state.debug:
            raise
        print_error(exc)
        return exit_codes.USAGE
    except (OutputClosed, BrokenPipeError):  # the reader went away (`| head`): not a finding, not a crash
        silence_stdout()
        return exit_codes.BROKEN_PIPE
    except Exception as exc:
        if state.debug:
            raise
        # a dependency's wheel left behind (a GPU host run from PYTHONPATH) is the environment's, not a bug;
        # imported here, so that --help and every command that succeeds load nothing more
        from ktriage.cli.dependencies import missing_dependency

        missing = missing_dependency(exc) if isinstance(exc, ModuleNotFoundError) else None
        if missing is not None:
            print_error(missing)
            return exit_codes.USAGE
        print_internal_error(exc)
        return exit_codes.INTERNAL
    # click returns the Exit code (typer.Exit, --help) or the callback's return value (None)
    return int(code) if isinstance(code, int) else exit_codes.OK  # an ExitStatus is its exit code


def _show_click_error(exc: _click.exceptions.ClickException) -> None:
    """A usage error (unknown option, bad value, missing argument) in the form of every user error:
    one ``error:`` line (click's message: "Invalid value for '--jobs'...", "Did you mean ...") and a
    ``fix:`` line that points at the command's help."""
    ctx = getattr(exc, "ctx", None)
    where = ctx.command_path if ctx is not None else "ktriage"
    if isinstance(exc, _click.exceptions.NoArgsIsHelpError):
        # a group run without its subcommand (`ktriage runs`): Typer has drawn the group's help already, and
        # click's message is that help, which left an empty "error:" line under it
        names = ", ".join(getattr(ctx.command, "commands", {})) if ctx is not None else ""
        print_error(KtriageError(f"{where} needs a subcommand", f"run `{where} COMMAND`, COMMAND one of: {names}"))
        return
    param = getattr(exc, "param", None)
    if ctx is not None and "--format" in getattr(param, "opts", ()):
        from ktriage.cli.options import output_grammar

        formats = output_grammar(ctx.command)[0]
        given = re.search(r"'([^']*)' is not one of", exc.format_message())
        if formats and given:  # click lists every format ktriage knows, not the ones this verb has
            print_error(
                KtriageError(
                    f"--format {given.group(1)} is not a format of {where}", f"use --format {' | '.join(formats)}"
                )
            )
            return
    print_error(
        KtriageError(" ".join(exc.format_message().split()), f"see `{where} --help` for the options and their values")
    )
