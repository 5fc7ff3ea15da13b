"""Did the culprit change the kernel's own source? The explain of a bisect over the user's commits.

The explain engine's frontend-vs-ptxas attribution compares two toolchains: "frontend" means that the
PTX changed. Between two commits of the user's kernel repository, compiled by the same toolchain, the PTX
changes because the kernel changed, and a report that said "frontend" sent the user looking for a
Triton or LLVM change that is not there: a commit raising RBLOCK in the spec file read
``attribution: frontend`` and "triton==3.4.0's PTX gives 255 even with ptxas 12.8.93". Here the kernel's
files are compared between the predecessor's and the culprit's checkouts (the spec file read at each
commit, the kernel's source file, the project modules it imports), or a kernel package's two releases,
and the lines that changed are named (``spec.toml:17: RBLOCK = 64 -> RBLOCK = 256``).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ktriage.errors import KtriageError
from ktriage.schema.jsontypes import JSONObject
from ktriage.wording import clipped

KERNEL_SOURCE = "kernel_source"
"""The attribution of a change that the kernel's own source made, the toolchain being the same on both sides."""

MAX_HUNKS = 6  # the lines of a change shown in the report; the JSON's ``hunks`` hold all of them


@dataclass(frozen=True)
class Hunk:
    """One changed place of a kernel file: ``file:line`` (the culprit's numbering) and its lines."""

    file: str
    line: int  # the first changed line at the culprit (at the predecessor for a removal)
    old: tuple[str, ...]
    new: tuple[str, ...]

    def text(self) -> str:
        """``spec.toml:17: RBLOCK = 64 -> RBLOCK = 256``: one line each side cut around where they differ (a
        long signature whose default changed at its end showed only its unchanged start), else the first
        line each side with how many more."""
        if len(self.old) == 1 and len(self.new) == 1:
            a, b = _around_difference(self.old[0].strip(), self.new[0].strip())
            return f"{self.file}:{self.line}: {a} -> {b}"

        def side(lines: tuple[str, ...]) -> str:
            if not lines:
                return "(nothing)"
            more = f" (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
            return clipped(lines[0].strip(), 80) + more

        return f"{self.file}:{self.line}: {side(self.old)} -> {side(self.new)}"

    def to_json(self) -> JSONObject:
        return {"file": self.file, "line": self.line, "old": list(self.old), "new": list(self.new)}


def _around_difference(a: str, b: str, width: int = 60, lead: int = 16) -> tuple[str, str]:
    """Two versions of a line, each cut to the part where they differ: from the argument (after ``, `` or
    ``(``) it starts in, else ``lead`` characters before it."""
    if len(a) <= width and len(b) <= width:
        return a, b
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    cut = max(a.rfind(", ", 0, start) + 2, a.rfind("(", 0, start) + 1)  # from the argument that differs
    if cut <= 1 or start - cut > width // 2:
        cut = max(0, start - lead)
    prefix = "..." if cut else ""
    return clipped(prefix + a[cut:], width), clipped(prefix + b[cut:], width)


@dataclass(frozen=True)
class SourceChange:
    """What the kernel's own inputs changed from the predecessor to the culprit.

    ``same_toolchain``: both sides compiled by one toolchain, so nothing in the compiler changed and the
    change is the kernel's (attribution :data:`KERNEL_SOURCE`) even where no compared file differs (a
    build step, a file the kernel reads that is not one of its modules: ``files`` says what was compared).
    ``release``: a kernel package's releases (``liger-kernel==0.5.9 -> liger-kernel==0.5.10``)."""

    same_toolchain: bool
    files: tuple[str, ...]
    hunks: tuple[Hunk, ...] = ()
    release: str | None = None
    unreadable: tuple[str, ...] = field(default=())  # why a file could not be compared

    @property
    def changed(self) -> bool:
        return bool(self.hunks) or self.release is not None

    def sentence(self) -> str:
        """The line the report gives in place of (or next to) the toolchain attribution."""
        where = "; ".join(h.text() for h in self.hunks[:MAX_HUNKS])
        if len(self.hunks) > MAX_HUNKS:
            where += f"; +{len(self.hunks) - MAX_HUNKS} more changed places (the JSON's source_change)"
        if self.release and not where:
            what = f"your kernel's source changed: {self.release}"
        elif where:
            what = f"your kernel's source changed: {where}"
        else:
            compared = ", ".join(self.files) or "its files"
            what = (
                f"no line of the kernel's files changed ({compared}), yet its PTX did: the change comes from "
                "something else the commit changed (a build step, a generated or data file)"
            )
        if self.same_toolchain:
            return f"{what} (the same toolchain compiled both sides, so the compiler did not change)"
        return (
            f"{what}; the toolchain changed too, so the frontend/ptxas attribution cannot tell its share from the "
            "source's: explain the predecessor's kernel with both toolchains to separate them"
        )

    def to_json(self) -> JSONObject:
        return {
            "same_toolchain": self.same_toolchain,
            "files": list(self.files),
            "hunks": [h.to_json() for h in self.hunks],
            "release": self.release,
            "unreadable": list(self.unreadable),
            "sentence": self.sentence(),
        }


def kernel_files(source_file: Path, spec_file: Path | None) -> list[Path]:
    """The files a kernel is made of: its spec file (when read per commit), its source file and the
    project modules that file imports (a ``@triton.jit`` helper beside it is compiled into the kernel)."""
    from ktriage.spec.source import local_module_files

    files = [spec_file] if spec_file is not None else []
    files.append(source_file)
    try:
        files += local_module_files(source_file)
    except (OSError, SyntaxError, ValueError):
        pass  # a file that does not parse still has its own lines compared
    return list(dict.fromkeys(files))


def _name(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            pass
    return str(path)


def _read(path: Path) -> list[str] | None:
    try:
        return path.read_text(errors="replace").splitlines()
    except OSError:
        return None


def diff_hunks(name: str, old: Sequence[str], new: Sequence[str]) -> list[Hunk]:
    """The changed places between two versions of one file (no context lines)."""
    hunks = []
    matcher = difflib.SequenceMatcher(None, list(old), list(new), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if tag == "replace" and i2 - i1 == j2 - j1:  # line for line: each at its own number
            hunks += [Hunk(name, j1 + k + 1, (old[i1 + k],), (new[j1 + k],)) for k in range(i2 - i1)]
            continue
        line = j1 + 1 if j2 > j1 else i1 + 1
        hunks.append(Hunk(name, line, tuple(old[i1:i2]), tuple(new[j1:j2])))
    return hunks


def compare_kernel_files(
    before: Sequence[Path], after: Sequence[Path], before_root: Path | None, after_root: Path | None
) -> tuple[list[str], list[Hunk], list[str]]:
    """Compare the kernel's files of two sides by their names under each side's root (its checkout, or
    its package's folder): (the names compared, the changed places, files that could not be read)."""
    old = {_name(p, before_root): p for p in before}
    new = {_name(p, after_root): p for p in after}
    names = list(dict.fromkeys([*new, *old]))
    hunks: list[Hunk] = []
    unreadable: list[str] = []
    for name in names:
        a = _read(old[name]) if name in old else []
        b = _read(new[name]) if name in new else []
        if a is None or b is None:
            unreadable.append(name)
            continue
        if name not in old:
            hunks.append(Hunk(name, 1, ("(no such file)",), (f"new file, {len(b)} lines",)))
        elif name not in new:
            hunks.append(Hunk(name, 1, (f"{len(a)} lines",), ("(file no longer read)",)))
        else:
            hunks += diff_hunks(name, a, b)
    return names, hunks, unreadable


def source_file_of(source: str, package: str | None) -> Path | None:
    """The kernel's source file (``path.py:fn``, or a module of ``package``); None where it cannot be
    found here (then only the spec file is compared)."""
    from ktriage.spec.source import resolve_source_file

    try:
        return resolve_source_file(source, package)
    except (KtriageError, OSError):
        return None
