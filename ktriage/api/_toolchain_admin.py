"""The toolchains kept under the ktriage home, as a library: ``toolchain_add(spec=...)``,
``toolchain_list()``, ``toolchain_show(id_or_spec=...)``, ``toolchain_remove(id_or_spec=...)``
(docs/toolchains.md).

Why entry points: ``ktriage toolchain`` found, built, measured and removed toolchains itself, so a
CI script that prepares or prunes its toolchains had only the command line; the CLI now parses,
calls one of these and renders the report. (Building the toolchains a verb was given is
``_toolchains.resolve_toolchains``, with progress lines.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ktriage.api import _args as args
from ktriage.brief import brief
from ktriage.errors import KtriageError, run_as
from ktriage.mdsafe import markdown_writer
from ktriage.schema.jsontypes import JSONObject
from ktriage.toolchain.manager import LeftoverEnv, Toolchain

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "Toolchain",
    "ToolchainList",
    "ToolchainShow",
    "toolchain_add",
    "toolchain_list",
    "toolchain_remove",
    "toolchain_show",
]


@dataclass(frozen=True)
class ToolchainList:
    """The built toolchains and their sizes on disk (bytes), in the same order; ``problems``: per
    toolchain None, or why it cannot be used as built (its virtualenv incomplete or damaged);
    ``leftovers``: virtualenvs no toolchain uses (a failed or killed build's), which
    ``toolchain_remove(id_or_spec="envs/<key>")`` removes."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    toolchains: list[Toolchain]
    sizes: list[int]
    problems: list[str | None] = field(default_factory=list)
    leftovers: list[LeftoverEnv] = field(default_factory=list)

    def json_text(self) -> str:
        from ktriage.report.toolchain import list_json

        return list_json(self.toolchains, self.sizes, self.problems)

    @markdown_writer
    def to_markdown(self) -> str:
        from ktriage.report.toolchain import list_markdown

        return list_markdown(self.toolchains, self.sizes, self.problems, self.leftovers)

    def print_table(self, console: Console) -> None:
        from ktriage.report.toolchain import print_list

        print_list(self.toolchains, self.sizes, console, self.problems, self.leftovers)

    def print_leftovers(self, console: Console) -> None:
        """The leftover virtualenvs alone: the CLI's ``--format json`` keeps stdout the list of
        toolchains (its shape is what scripts read) and says these on stderr."""
        from ktriage.report.toolchain import print_leftovers

        print_leftovers(self.leftovers, console)


@dataclass(frozen=True)
class ToolchainShow:
    """Every field of one built toolchain, whether its Triton is order-sensitive, and how it
    assembles for each probed arch (``assemblers``: ``sm_90`` -> the assembler's label, or why not)."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    id: str
    data: JSONObject

    def json_text(self) -> str:
        from ktriage.report.toolchain import show_json

        return show_json(self.data)

    @markdown_writer
    def to_markdown(self) -> str:
        from ktriage.report.toolchain import show_markdown

        return show_markdown(self.id, self.data)

    def print_table(self, console: Console) -> None:
        from ktriage.report.toolchain import print_show

        print_show(self.id, self.data, console)


@args.entry_point
def toolchain_add(*, spec: str, say: Callable[[str], None] | None = None) -> Toolchain:
    """Build the toolchain of ``spec`` (``triton==3.4.0``, ``triton==3.4.0,ptxas==12.8.93``...), or
    reuse it if built; ``say``: the build's steps."""
    from ktriage.toolchain.manager import ensure_toolchain

    say = args.callback(say, "say")

    return ensure_toolchain(args.text(spec, "spec", example="triton==3.4.0"), progress=say)


@args.entry_point
def toolchain_list() -> ToolchainList:
    """The toolchains built under the ktriage home, with their sizes on disk, and the virtualenvs that
    failed or killed builds left (no toolchain uses them)."""
    from ktriage.toolchain.manager import leftover_envs, list_toolchains, toolchain_size

    tcs = list_toolchains()
    return ToolchainList(
        tcs, [toolchain_size(tc) for tc in tcs], [tc.frontend_problem() for tc in tcs], leftover_envs()
    )


@args.entry_point
def toolchain_show(*, id_or_spec: str) -> ToolchainShow:
    """One built toolchain (an id, a unique prefix of one, or a spec), its facts probed."""
    tc = _find(id_or_spec)
    data = tc.to_json()
    facts = tc.facts()
    data["order_sensitive"] = facts.order_sensitive
    data["assemblers"] = {
        f"sm_{cc}": tc.assembler(cc).label() if not isinstance(arch, str) else f"cannot build: {arch}"
        for cc, arch in sorted(facts.archs.items())
    }
    return ToolchainShow(tc.id, data)


@args.entry_point
def toolchain_remove(*, id_or_spec: str) -> str:
    """Remove a built toolchain (its venv and ptxas release too, once nothing else uses them); the id removed.

    Given ``envs/<key>`` (as ``toolchain_list`` names a leftover virtualenv), or a spec that no built
    toolchain has but whose Triton's virtualenv is a leftover (the spec of a build that failed after
    making it), removes that virtualenv and returns its name."""
    from ktriage.toolchain.manager import (
        find_leftover_env,
        find_toolchain,
        remove_leftover_env,
        remove_toolchain,
    )

    text = args.text(id_or_spec, "id_or_spec", example="triton==3.4.0")
    if find_toolchain(text) is None:
        leftover = find_leftover_env(text)
        if leftover is not None:
            remove_leftover_env(leftover)
            return leftover.name
        if text.startswith("envs/"):
            raise KtriageError(
                f"{text} is no leftover virtualenv: a built toolchain uses it, or there is no such folder",
                "remove the toolchains that use it (`ktriage toolchain list`); its virtualenv goes with the last one",
            )
    tc = _find(text)
    remove_toolchain(tc.id)
    return tc.id


def _find(id_or_spec: str) -> Toolchain:
    from ktriage.toolchain.manager import find_toolchain

    id_or_spec = args.text(id_or_spec, "id_or_spec", example="triton==3.4.0")
    tc = find_toolchain(id_or_spec)
    if tc is None:
        raise KtriageError(
            f"no built toolchain matches {id_or_spec!r}",
            "see "
            + run_as("kt.toolchain_list()", "ktriage toolchain list")
            + ", or build it with "
            + run_as("kt.toolchain_add(spec='SPEC')", "ktriage toolchain add SPEC"),
        )
    return tc
