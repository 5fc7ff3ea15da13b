"""``ktriage.api.fidelity(...) -> FidelityReport``: check, on this CPU machine, that ktriage's cubins
are the ones Triton's JIT builds (docs/fidelity in benchmarks/fidelity/README.md).

Why an entry point: the case selection, the toolchains' builds and the two compile loops (the
built-in cases, or a spec file's kernels written by values) were the CLI's, each with its own
``Compiler``; the report's rendering and its counts come with the report now.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from ktriage.api import _args as args
from ktriage.brief import brief
from ktriage.errors import KtriageError, SpecError, option, worded
from ktriage.fidelity.harness import Row
from ktriage.mdsafe import markdown_writer
from ktriage.spec.model import KernelSpec
from ktriage.spec.toml_file import UnloadedKernel, grouped_errors

Say = Callable[[str], None]
FidelityRow = Row  # one (case, Triton version) outcome


@dataclass(frozen=True)
class FidelityReport:
    """One row per (case, Triton version): ``identical``, ``differs`` (its detail says what),
    ``error`` or ``skipped``; ``target`` the arch the fake driver reported."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    rows: list[Row]
    target: str

    @property
    def counts(self) -> dict[str, int]:
        from ktriage.report.fidelity import summary

        return summary(self.rows)

    @markdown_writer
    def to_markdown(self, *, command: str = "", machine: str = "", date: str = "") -> str:
        from ktriage.report.fidelity import to_markdown

        return to_markdown(self.rows, command=command, machine=machine, date=date)

    def json_text(self, *, command: str = "", machine: str = "", date: str = "") -> str:
        from ktriage.report.fidelity import to_json

        return to_json(self.rows, command=command, machine=machine, date=date, target=self.target)


@args.entry_point
def fidelity(
    *,
    toolchains: Sequence[str] = (),
    cases: Sequence[str] = (),
    arch: str = "sm_90",
    jobs: int = 2,
    spec: str | Path | None = None,
    on_row: Callable[[Row], None] | None = None,
    say: Say | None = None,
) -> FidelityReport:
    """Replay each case's launch through Triton's real launch path with only the GPU driver faked,
    compile the spec derived from it through ktriage and compare compile inputs and cubin bytes.
    ``toolchains``: default every supported Triton release; ``cases``: substrings of the case names
    (or, with ``spec``, selectors of the spec file's kernels; one written by types, or that does not
    load, is an error row for each release). ``on_row``: each row as
    it is checked; ``say``: the toolchain builds' messages. A lone str where a list goes is one item
    (``cases="vector_add"``)."""
    from ktriage.arch import parse_arch
    from ktriage.compile.compiler import Compiler
    from ktriage.toolchain.manager import ensure_toolchains
    from ktriage.toolchain.supported import SUPPORTED_TRITON

    say = args.callback(say, "say")
    on_row = args.callback(on_row, "on_row")

    toolchains = args.texts(toolchains, "toolchains", "-t/--toolchain")
    cases = args.texts(cases, "cases", "--case")
    jobs = args.JOBS(jobs)
    target = parse_arch(args.arch(arch)).name
    spec = args.optional_path(spec, "spec", "--spec")  # spec=[...] was a TypeError from pathlib
    specs = list(toolchains) or [f"triton=={v}" for v in SUPPORTED_TRITON]
    show = on_row or (lambda _r: None)
    if spec is not None:
        kernels = _by_value_kernels(spec, cases, target)
        built = ensure_toolchains(specs, progress=_messages(say))
        from ktriage.fidelity.by_value import check_spec

        rows: list[Row] = []
        with Compiler(jobs=jobs) as compiler, tempfile.TemporaryDirectory(prefix="ktriage-fidelity-") as tmp:
            for tc in built:
                for i, kernel in enumerate(kernels):
                    if isinstance(kernel, Unchecked):  # an error row, as explain's failed kernel
                        rows.append(Row(kernel.name, tc.triton_version, "error", kernel.detail))
                    else:
                        rows.append(check_spec(kernel, tc, compiler, Path(tmp) / tc.id / str(i)))
                    show(rows[-1])
        return FidelityReport(rows, target)
    from ktriage.fidelity.cases import all_cases
    from ktriage.fidelity.harness import check

    known = all_cases(target)
    selected = [c for c in known if not cases or any(k in c.name for k in cases)]
    if not selected:
        # the names themselves, not a pointer to the repository's benchmarks/fidelity table, which an
        # installed ktriage does not have; each case's family (its name without the [input] part)
        families = sorted({c.name.split("[", 1)[0] for c in known})
        raise KtriageError(
            f"no fidelity case name contains {' or '.join(repr(k) for k in cases)}",
            worded(
                lambda o: (
                    f"{o('cases', '-k/--case')} takes a part of a case name; the cases are (each over one or more "
                    f"inputs): {', '.join(families)}"
                )
            ),
        )
    built = ensure_toolchains(specs, progress=_messages(say))
    with Compiler(jobs=jobs) as compiler:
        return FidelityReport(check(built, selected, target=target, compiler=compiler, on_row=show), target)


def _messages(say: Say | None) -> Callable[[str], AbstractContextManager[Say]]:
    """``say`` as each toolchain build's message hook, for ``ensure_toolchains``: the one build that
    also refuses a toolchain given twice (each was checked twice, and counted twice in the summary)."""

    @contextmanager
    def build(_text: str) -> Iterator[Say]:
        yield say or (lambda _m: None)

    return build


@dataclass(frozen=True)
class Unchecked:
    """A selected kernel of the spec file that the check cannot take: it does not load, or it is written
    by types (no launch's values to replay). ``detail``: its error row's, the same for every release,
    since the reason is the file's, not a toolchain's."""

    name: str
    detail: str


TYPED = "written by types: the check compares a launch's values"
TYPED_FIX = "write it by values under [kernel.args] (docs/specs.md)"


def _by_value_kernels(path: Path, cases: Sequence[str], target: str) -> list[KernelSpec | Unchecked]:
    """``spec``: the file's kernels (narrowed by ``cases``), in the file's order, each written by values
    (fidelity/by_value.py) or :class:`Unchecked`: one that does not load, or one written by types, stays
    in its place as an error row for each toolchain, with its error and fix, and the others are checked:
    one such kernel must not lose the other kernels' rows. Refused only when no selected kernel can be
    checked: none loads (every kernel's error, ``NothingLoads``), or every one that loads is written by types."""
    from ktriage.spec.select import select_spec_file

    kernels = select_spec_file(str(path), list(cases) or None, flag=option("cases", "-k/--case")).kernels
    out: list[KernelSpec | Unchecked] = []
    for k in kernels:
        if isinstance(k, UnloadedKernel):
            out.append(Unchecked(k.spec.name, k.line()))
        elif k.launch is None:
            out.append(Unchecked(k.name, f"{TYPED} — fix: {TYPED_FIX}"))
        else:
            out.append(k.replace(target=target) if target != "sm_90" else k)
    if not any(isinstance(k, KernelSpec) for k in out):
        typed = [k.name for k in kernels if isinstance(k, KernelSpec)]
        unloaded = [k for k in kernels if isinstance(k, UnloadedKernel)]
        details = None
        if unloaded:  # worded as NothingLoads words them: the file once, the same errors on one line
            errors = grouped_errors(unloaded, str(path))
            shared = f" (fix: {errors.shared_fix})" if errors.shared_fix else ""
            details = "\n".join([f"no selected kernel can be checked: the others do not load{shared}:", *errors.lines])
        raise SpecError(
            f"{path}: {', '.join(typed[:4])}{', ...' if len(typed) > 4 else ''} {TYPED}", TYPED_FIX, details
        )
    return out
