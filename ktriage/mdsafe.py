"""The one safe-markdown path: every function that writes markdown is a :func:`markdown_writer`,
and its whole output goes through :func:`inert` before anyone reads it.

Why: ktriage's markdown is printed, written to ``-o F.md`` and appended to ``$GITHUB_STEP_SUMMARY``,
which GitHub renders. Text in it comes from outside: results files (op, input and backend labels,
error messages, TritonBench x_vals), commit subjects (bisect's "first bad" line), trace paths
(``workload show``), toolchain ids and ncu output (profile), run metadata. A file that says
``<script>``, ``<img src=x onerror=...>``, ``![](http://tracker/x.png)``, ``[x](javascript:...)`` or
``@everyone`` must show as that text, never as HTML, a remote image, a link or a mention. Escaping
each field where it is written (:func:`md_text`) keeps tables intact; the final pass (:func:`inert`)
makes the document safe even where a writer forgot a field, so one missed call is a cosmetic bug,
not an injection. It lives at the bottom of the layers so that every package that writes
markdown (report, profile, ...) can import it. ``tests/hardening/test_markdown_writers.py`` finds
every markdown writer of the package by scanning it, checks each is registered here, and feeds
hostile text through each.

:func:`md_text` escapes, for any inline position (table cell, list item, heading):

- HTML: ``&`` and ``<`` become entities, so no tag, comment or entity of the input survives
  (``>`` stays: without ``<`` it opens nothing, and inline text is never at a line's start, where
  it would quote; ktriage's own ``4 -> 8`` arrows stay readable in the raw file);
- links and images: ``](`` becomes ``]\\(`` and ``![`` becomes ``!\\[``, so ``[x](url)`` and
  ``![x](url)`` are plain text (brackets alone, as in ``tdesc[BN=64]``, stay); ``\\`` and a
  backtick are escaped too, so no escape of ours is undone and no code span opens;
- mentions: ``@name`` (not after a letter or digit, as in ``liger@triton-3.4``) becomes
  ``@\\u200bname`` (a zero-width space: shown the same, notifies no one);
- tables: ``|`` is escaped and line breaks become spaces, so a cell stays one cell of one row;
- emphasis: a run of ``*``, ``_`` or ``~`` that could close emphasis (or GFM's strikethrough) is
  escaped: with no closer no opener matches, so ``__init__`` (``__init\\_\\_``) or ``*bold*`` in an error
  message shows as written, not as a bold "init"; runs that can only open (``f(*args, **kwargs)``,
  ``K0:_softmax_kernel``) and intraword ones (``liger_layer_norm``) stay as written in the raw file.

:func:`inert` (the whole document, outside code spans and fenced code blocks, whose content GitHub
shows literally): every ``<`` that does not open one of ktriage's own tags (``details``,
``summary``, ``br``) becomes ``&lt;``; ``![`` becomes ``!\\[`` (no image at all: ktriage shows
none); a link whose target is not ``http(s)://``, ``#`` or a relative path loses its link syntax;
a link reference definition (``[x]: javascript:...`` at a line's start) is escaped; mentions get
the zero-width space. It is idempotent, so writers that compose other writers are safe.
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata
from collections.abc import Callable
from typing import Any, ParamSpec

_PLAIN = re.compile(r"[A-Za-z0-9 ._\-+=:/,()\[\]@]*")  # no markup inside a code span: @ notifies no one there
_MENTION = re.compile(r"(?<![A-Za-z0-9_`])@(?=[A-Za-z0-9_])")  # as GitHub: not after a word character
_TABLE = str.maketrans({"\\": "\\\\", "`": "\\`", "|": "\\|", "&": "&amp;", "<": "&lt;", "\n": " ", "\r": " "})
_DELIMS = re.compile(r"\*+|_+|~+")

# ktriage's own tags in its markdown (folded sections, line breaks in a cell); nothing else is HTML
_OWN_TAG = re.compile(r"<(?:/?(?:details|summary)|br ?/?)>", re.I)
_LT = re.compile(r"<")
_LINK = re.compile(r"\]\(\s*<?([^)\s>]*)")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_REF_DEF = re.compile(r"^( {0,3})\[(?=[^\]\n]*\]:)", re.M)
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_RUN = re.compile(r"`+")


def _punct(c: str) -> bool:
    return unicodedata.category(c)[0] in "PS"  # CommonMark's Unicode punctuation


def _closer(m: re.Match[str]) -> str:
    """A delimiter run escaped where CommonMark's flanking rules let it close emphasis (the text's
    ends count as whitespace: a cell or list item is set off by spaces)."""
    text, a, b = m.string, m.start(), m.end()
    prev, nxt = (text[a - 1] if a else " "), (text[b] if b < len(text) else " ")
    right = not prev.isspace() and (not _punct(prev) or nxt.isspace() or _punct(nxt))
    left = not nxt.isspace() and (not _punct(nxt) or prev.isspace() or _punct(prev))
    if right and (m.group(0)[0] != "_" or not left or _punct(nxt)):
        return "".join("\\" + c for c in m.group(0))
    return m.group(0)


def md_text(value: Any) -> str:
    """``value`` as inert inline markdown text (see the module docstring)."""
    text = str(value).translate(_TABLE).replace("](", "]\\(").replace("![", "!\\[")
    return _MENTION.sub("@\u200b", _DELIMS.sub(_closer, text))


def md_code(value: Any) -> str:
    """A name in a code span when it is plain, else escaped text (a backtick would end the span)."""
    text = str(value)
    return f"`{text}`" if _PLAIN.fullmatch(text) else md_text(text)


def md_code_span(value: Any) -> str:
    """``value``, any text, as an inline code span that shows it literally: a source line quoted by a
    report, ``grad_output,``. :func:`md_text` escapes its backticks: the raw file read
    ``(\\`grad_output,\\`)``, backslashes and all, and it rendered as text between backticks, not as code.

    Safe as :func:`md_text` is: CommonMark shows a code span's content literally (no HTML, link, image
    or mention inside one), and :func:`inert` finds the span as CommonMark does and leaves it. The
    fence is one backtick longer than the longest run inside, padded with a space where the content
    starts or ends with a backtick (or a space at both ends, which a span strips one of); line breaks
    become spaces (a span is one line here). Not for a table cell: GFM splits a row at ``|`` even
    inside a span (use :func:`md_text` there). Empty text gives "" (two backticks open no span)."""
    text = re.sub(r"[\r\n]+", " ", str(value))
    if not text:
        return ""
    fence = "`" * (max((len(run) for run in _RUN.findall(text)), default=0) + 1)
    ends = text[0] + text[-1]
    pad = " " if "`" in ends or (ends == "  " and text.strip()) else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _link(m: re.Match[str]) -> str:
    """A link kept when its target is http(s) or has no scheme (an anchor, a relative path);
    any other scheme (javascript:, data:, vbscript:...), or an entity that could spell one, loses
    the link syntax."""
    target = m.group(1)
    if "&" not in target and (target.lower().startswith(("http://", "https://")) or not _SCHEME.match(target)):
        return m.group(0)
    return "]\\(" + m.group(0)[2:]


def _inert_text(text: str) -> str:
    """One stretch outside code: HTML, images, unsafe links, mentions made inert."""
    out = []
    pos = 0
    for tag in _OWN_TAG.finditer(text):
        out.append(_LT.sub("&lt;", text[pos : tag.start()]))
        out.append(tag.group(0))
        pos = tag.end()
    out.append(_LT.sub("&lt;", text[pos:]))
    text = "".join(out).replace("![", "!\\[")
    text = _LINK.sub(_link, text)
    text = _REF_DEF.sub(r"\1\\[", text)
    return _MENTION.sub("@\u200b", text)


def _code_spans(line: str) -> list[tuple[int, int]]:
    """The code spans of one line, as CommonMark finds them: a backtick run opens one that the next
    run of the same length closes; a run with no such closer is text. Linear in the runs (each
    opener finds its closer by bisection in the runs of its length: a regex with a backreference
    took cubic time on a line of runs of growing lengths). A run right after a backslash is taken
    as text (it may be escaped), which can only make more of the line escaped, never less."""
    runs = [(m.start(), m.end()) for m in _RUN.finditer(line)]
    by_length: dict[int, list[int]] = {}
    for k, (a, b) in enumerate(runs):
        by_length.setdefault(b - a, []).append(k)
    spans = []
    k = 0
    while k < len(runs):
        a, b = runs[k]
        same = by_length[b - a]
        j = bisect.bisect_right(same, k)
        if (a > 0 and line[a - 1] == "\\") or j == len(same):
            k += 1
            continue
        close = same[j]
        spans.append((a, runs[close][1]))
        k = close + 1
    return spans


def _inert_line(line: str) -> str:
    """A line outside fenced code: its code spans kept as they are (GitHub shows them literally)."""
    out = []
    pos = 0
    for start, end in _code_spans(line):
        out.append(_inert_text(line[pos:start]))
        out.append(line[start:end])
        pos = end
    out.append(_inert_text(line[pos:]))
    return "".join(out)


def inert(document: str) -> str:
    """The whole markdown document made inert (see the module docstring); fenced code blocks and
    code spans are left as they are: GitHub shows their content literally."""
    out = []
    fence: str | None = None
    for line in document.split("\n"):
        m = _FENCE.match(line)
        if fence is not None:
            out.append(line)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip().strip(fence[0]):
                fence = None
            continue
        if m:
            fence = m.group(1)
            out.append(line)
            continue
        out.append(_inert_line(line))
    return "\n".join(out)


P = ParamSpec("P")
# every markdown writer of the package, by "module.function": filled as the modules load
WRITERS: dict[str, Callable[..., str]] = {}
# writers of markdown from ktriage's own text only (no outside input), with why: left as they are
TRUSTED: dict[str, str] = {}


def trusted_markdown(reason: str) -> Callable[[Callable[P, str]], Callable[P, str]]:
    """Mark a function that writes markdown from ktriage's own text only (e.g. docs/cli.md from the
    command-line help): no outside text reaches it, so it is left as written; ``reason`` says why,
    and the hardening test requires one."""

    def mark(fn: Callable[P, str]) -> Callable[P, str]:
        TRUSTED[f"{fn.__module__}.{fn.__qualname__}"] = reason
        fn.__trusted_markdown__ = reason  # type: ignore[attr-defined,unused-ignore]
        return fn

    return mark


def markdown_writer(fn: Callable[P, str]) -> Callable[P, str]:
    """Mark ``fn`` as a writer of a markdown document: its output goes through :func:`inert`, and it
    is registered in :data:`WRITERS` (the hardening test checks that every writer is)."""

    @functools.wraps(fn)
    def write(*args: P.args, **kwargs: P.kwargs) -> str:
        # through __wrapped__ (functools.wraps sets it to ``fn``): the hardening test swaps in a
        # function that returns hostile text, to check that every registered writer's output is inert
        raw: Callable[P, str] = write.__wrapped__
        return inert(raw(*args, **kwargs))

    write.__markdown_writer__ = True  # type: ignore[attr-defined]
    WRITERS[f"{fn.__module__}.{fn.__qualname__}"] = write
    return write
