"""A compile failure's message as one line: the error a person needs (table cells, findings, a GPU
host's error cells).

Why in ``compile``: compile workers reply with whatever the failing layer printed (a Triton
``CompilationError`` with five lines of kernel source, a ptxas log with a ``fix:`` line, a worker's
traceback). Every reader of a failure needs the one line, from explain's table (``explain.failures``)
to the error cell a bench bundle's failed artifact becomes on the GPU host (``workload.bundles.launch``),
so it lives with the failures themselves. The compile stage keeps every detail in the message; the
shortening happens when it is shown.
"""

from __future__ import annotations

import re

# Long enough for "AttributeError: module 'triton.language' has no attribute 'make_tensor_descriptor'"
# and a path, short enough for a table cell.
MAX_LINE = 200

_LOCATION = re.compile(
    r"^(?:[\w.]+\.)?(CompilationError|CompileTimeAssertionFailure|UnsupportedLanguageConstruct)"
    r": at (\d+:\d+):\s*$"
)
_REPR_EXC = re.compile(r"^(\w+(?:Error|Exception|Failure))\((['\"])(.*)\2\)$")
_EXC_LINE = re.compile(r"^(?:[\w.]+\.)?\w+(?:Error|Exception|Failure|Exit|Interrupt)\b.*")
_DIED = "compile worker died:"  # ktriage.compile.pool's crash reply, followed by the worker's stderr tail
# The compile worker's line for a wrapped error: the innermost exception (insitu/worker.root_cause).
ROOT_CAUSE = "root cause:"
_NOT_CAUSES = ("fix:", "the kernel reads ")  # the worker's hint lines after a CompilationError: no cause


def squash(text: str) -> str:
    """One line, single spaces, cut at MAX_LINE."""
    text = " ".join(text.split())
    return text if len(text) <= MAX_LINE else text[: MAX_LINE - 1].rstrip() + "…"


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
    rooted = [ln.strip()[len(ROOT_CAUSE) :].strip() for ln in lines[caret + 1 :] if ln.strip().startswith(ROOT_CAUSE)]
    cause = rooted or [ln for ln in lines[caret + 1 :] if ln.strip() and not ln.strip().startswith(_NOT_CAUSES)]
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
        return squash(f"{head.strip()} {exc[-1] if exc else lines[-1]}".strip())
    if lines[0].startswith(_DIED) and len(lines) > 1:
        return squash(f"{_DIED} {lines[-1]}")
    m = _LOCATION.match(lines[0].strip())
    if m:
        return squash(_compilation_error(lines, m.group(2)))
    first = next((ln for ln in lines if ln.strip() and not ln.strip().startswith("fix:")), lines[0])
    root = next((ln.strip()[len(ROOT_CAUSE) :].strip() for ln in lines if ln.strip().startswith(ROOT_CAUSE)), None)
    if root and root not in first:
        # the root cause first: a cut line must still say what went wrong
        return squash(f"{root} (in {first.strip()})")
    return squash(first)
