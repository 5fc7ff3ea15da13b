"""Text from the input (op and input labels, backend, toolchain and spec names, run metadata,
error messages) made inert before it goes into markdown, wherever ktriage writes markdown.

Compare's markdown is appended to ``$GITHUB_STEP_SUMMARY``, which GitHub renders: a results file
or spec file that says ``<img src=x onerror=...>``, ``![](http://tracker/x.png)``,
``[click](javascript:...)`` or ``@everyone`` must show as that text, not as HTML, a remote image,
a link or a mention. :func:`md_text` escapes, for any inline position (table cell, list item,
heading):

- HTML: ``&`` and ``<`` become entities, so no tag, comment or entity of the input survives
  (``>`` stays: without ``<`` it opens nothing, and inline text is never at a line's start, where
  it would quote; ktriage's own ``4 -> 8`` arrows stay readable in the raw file);
- links and images: ``](`` becomes ``]\\(`` and ``![`` becomes ``!\\[``, so ``[x](url)`` and
  ``![x](url)`` are plain text (brackets alone, as in ``tdesc[BN=64]``, stay: reference links
  need a definition at the start of a line, which inline text never is); ``\\`` and a backtick
  are escaped too, so no escape of ours is undone and no code span opens;
- mentions: ``@name`` (not after a letter or digit, as in ``liger@triton-3.4``) becomes
  ``@\\u200bname`` (a zero-width space: shown the same, notifies no one);
- tables: ``|`` is escaped and line breaks become spaces, so a cell stays one cell of one row.

:func:`md_code` puts a plain name (letters, digits, spaces and ``._-+=:/,()[]@``) in a code span as
before and anything else through :func:`md_text`.
"""

from __future__ import annotations

import re
from typing import Any

_PLAIN = re.compile(r"[A-Za-z0-9 ._\-+=:/,()\[\]@]*")  # no markup inside a code span: @ notifies no one there
_MENTION = re.compile(r"(?<![A-Za-z0-9_])@(?=[A-Za-z0-9_])")  # as GitHub: not after a word character
_TABLE = str.maketrans({"\\": "\\\\", "`": "\\`", "|": "\\|", "&": "&amp;", "<": "&lt;", "\n": " ", "\r": " "})


def md_text(value: Any) -> str:
    """``value`` as inert inline markdown text (see the module docstring)."""
    text = str(value).translate(_TABLE).replace("](", "]\\(").replace("![", "!\\[")
    return _MENTION.sub("@\u200b", text)


def md_code(value: Any) -> str:
    """A name in a code span when it is plain, else escaped text (a backtick would end the span)."""
    text = str(value)
    return f"`{text}`" if _PLAIN.fullmatch(text) else md_text(text)
