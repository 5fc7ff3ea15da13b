"""Failed cells, said in one line: the error a person needs, and the fix where ktriage knows one.

Why a module of its own: compile workers reply with whatever the failing layer printed (a Triton
``CompilationError`` with five lines of kernel source, a ptxas log with a ``fix:`` line, a worker's
traceback). A table cell, a finding and a CI log line need the one line that says what went wrong.
The compile stage is left as it is (its messages keep every detail for the JSON ``results``); the
shortening happens here, on the reporting side, so it also applies to messages of workers written
later. The engine uses it to say why the reference fell back, the report for cells and findings.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ktriage.compile.compiler import CompileFailure
from ktriage.toolchain.manager import Toolchain

# Long enough for "AttributeError: module 'triton.language' has no attribute 'make_tensor_descriptor'"
# and a path, short enough for a table cell.
MAX_LINE = 200

_LOCATION = re.compile(r"^(?:[\w.]+\.)?(CompilationError|CompileTimeAssertionFailure|UnsupportedLanguageConstruct)"
                       r": at (\d+:\d+):\s*$")
_REPR_EXC = re.compile(r"^(\w+(?:Error|Exception|Failure))\((['\"])(.*)\2\)$")
_EXC_LINE = re.compile(r"^(?:[\w.]+\.)?\w+(?:Error|Exception|Failure|Exit|Interrupt)\b.*")
_NO_MODULE = re.compile(r"No module named '([^']+)'")
_IMPORTING = re.compile(r"importing (\S+) failed: (.*)")
_DIED = "compile worker died:"
# The compile worker's last line for a wrapped error: the innermost exception (insitu/worker.root_cause).
ROOT_CAUSE = "root cause:"
_NOT_CAUSES = ("fix:", "the kernel reads ")  # ktriage.compile.pool's crash reply, followed by the worker's stderr tail


def _squash(text: str) -> str:
    """One line, single spaces, cut at MAX_LINE."""
    text = " ".join(text.split())
    return text if len(text) <= MAX_LINE else text[:MAX_LINE - 1].rstrip() + "…"


def _exception_text(line: str) -> str:
    """``AttributeError("no x")`` (how Triton appends the cause) reads as ``AttributeError: no x``."""
    m = _REPR_EXC.match(line.strip())
    return f"{m.group(1)}: {m.group(3)}" if m else line.strip()


def _compilation_error(lines: list[str], location: str) -> str:
    """Triton's CompilationError: ``at L:C:``, the kernel source, a caret line, then (sometimes) the cause.

    The cause is the meaningful line; without one, the source line the caret points at is."""
    caret = next((i for i in range(len(lines) - 1, 0, -1) if lines[i].strip() == "^"), None)
    if caret is None:
        rest = [ln for ln in lines[1:] if ln.strip()]
        return f"CompilationError at {location}" + (f": {_exception_text(rest[-1])}" if rest else "")
    rooted = [ln.strip()[len(ROOT_CAUSE):].strip() for ln in lines[caret + 1:] if ln.strip().startswith(ROOT_CAUSE)]
    cause = rooted or [ln for ln in lines[caret + 1:] if ln.strip() and not ln.strip().startswith(_NOT_CAUSES)]
    source = lines[caret - 1].strip()
    if cause:
        return f"CompilationError at {location} (`{source}`): {_exception_text(cause[-1])}"
    return f"CompilationError at {location}: `{source}`"


def one_line(message: str, fallback: str = "failed") -> str:
    """The first meaningful line of a failure message, as one line of at most MAX_LINE characters.

    Rules, in order: a message that opens with a Python traceback gives its last exception line (after
    the opening words, e.g. "compile worker died:"); a dead worker's stderr tail gives its last line
    (where the signal or assertion is); a Triton CompilationError gives its location, the offending
    source line and the cause; anything else its first non-empty line that is not a ``fix:`` hint
    (the fix is reported apart, see :func:`fix_for`)."""
    lines = [ln.rstrip() for ln in message.strip().splitlines()]
    if not lines:
        return fallback
    head, sep, _ = lines[0].partition("Traceback (most recent call last)")
    if sep:
        exc = [ln for ln in lines[1:] if _EXC_LINE.match(ln.strip())]
        return _squash(f"{head.strip()} {exc[-1] if exc else lines[-1]}".strip())
    if lines[0].startswith(_DIED) and len(lines) > 1:
        return _squash(f"{_DIED} {lines[-1]}")
    m = _LOCATION.match(lines[0].strip())
    if m:
        return _squash(_compilation_error(lines, m.group(2)))
    first = next((ln for ln in lines if ln.strip() and not ln.strip().startswith("fix:")), lines[0])
    root = next((ln.strip()[len(ROOT_CAUSE):].strip() for ln in lines if ln.strip().startswith(ROOT_CAUSE)), None)
    if root and root not in first:
        # the root cause first: a cut line must still say what went wrong
        return _squash(f"{root} (in {first.strip()})")
    return _squash(first)


def fix_for(failure: CompileFailure) -> str | None:
    """How to get past this failure, or None where ktriage knows nothing better than the message.

    A ``fix:`` line in the message (KtriageError's convention) wins. Import failures get ours: a kernel
    library is installed without its dependencies and its module is imported in a compile worker with
    no GPU and a torch stand-in, so module-level code that needs anything else fails there."""
    for line in failure.message.splitlines():
        if line.strip().startswith("fix:"):
            return _squash(line.strip()[len("fix:"):].strip())
    if failure.kind != "import":
        return None
    imported = _IMPORTING.search(failure.message)
    module = imported.group(1) if imported else "the kernel's module"
    missing = _NO_MODULE.search(failure.message)
    if missing:
        dep = missing.group(1).split(".")[0]
        return (f"{module} needs '{dep}' at import time, and ktriage installs kernel packages without their "
                f"dependencies (only torch gets a stand-in); point the spec's `source` at a .py file that "
                f"defines the @triton.jit function without importing '{dep}' (a copy of the kernel)")
    if imported:
        return (f"{module} runs code at import time that fails in a compile worker (no GPU, torch is a "
                f"stand-in); point the spec's `source` at a .py file with only the @triton.jit function")
    return None


def describe(failure: CompileFailure, *, fix: bool = True) -> str:
    """``stage: one-line error`` plus `` — fix: ...`` where one is known: how a failed cell is listed."""
    text = f"{failure.stage}: {one_line(failure.message, failure.kind)}"
    hint = fix_for(failure) if fix else None
    return f"{text} — fix: {hint}" if hint else text


def fallback_reason(failed: Sequence[CompileFailure], reference: Toolchain | None) -> str:
    """Why the comparison of one kernel is not against the first toolchain: each toolchain before the
    one that served as reference, with its one-line error, then which one was used instead."""
    parts = [f"{f.toolchain.spec} could not compile this kernel: {describe(f, fix=False)}" for f in failed]
    tail = (f"compared against {reference.spec} instead" if reference is not None
            else "no toolchain compiled it, nothing is compared")
    return "; ".join(parts + [tail])
