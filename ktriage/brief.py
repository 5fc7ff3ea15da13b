"""The short ``repr`` of a report: what a notebook cell or the REPL shows when a report is the last
expression (``report = kt.explain(...)``, then ``report``).

Why: the reports are dataclasses, and the repr dataclasses generate spells every nested field out:
an ``ExplainReport`` of liger.layer_norm's 30 inputs was a 3.8 MB string (every toolchain, spec,
artifact and finding), a ``WorkloadShow`` 1 MB, a ``ModelScoreReport`` 0.8 MB, so a notebook that
showed one froze on megabytes of text. :func:`brief` names every field, as the generated repr does,
so the attributes a caller reads are listed, but a long value is its size (``findings=[12 Finding]``)
or its type (``result=<ExplainResult>``); a class adds what it computes (``complete=True``) with
``BRIEF_FACTS``. The renderers (``to_markdown()``, ``json_text()``...) are where the whole report is.

Low in the layers so that every package's report uses it (``kt.CompareReport`` lives in
``ktriage.compare``): a class opts in with ``__repr__ = brief``.
"""

from __future__ import annotations

import dataclasses
import enum
import os

__all__ = ["WIDTH", "brief", "brief_value"]

WIDTH = 80  # the longest value shown whole; longer ones are their size or their type
NESTED = 240  # the longest brief of a nested dataclass shown (CacheInfoReport's info), else its type


def brief(obj: object) -> str:
    """``Type(field=value, ...)`` with each value as :func:`brief_value` shows it: the dataclass fields
    (those with ``repr=True``, in order), then the names in the class's ``BRIEF_FACTS`` (properties
    worth seeing: ``complete``, ``regressions``)."""
    return _brief(obj, nested=True)


def _brief(obj: object, *, nested: bool) -> str:
    names: list[str] = []
    if dataclasses.is_dataclass(obj):
        names = [f.name for f in dataclasses.fields(obj) if f.repr]
    names += [n for n in getattr(type(obj), "BRIEF_FACTS", ()) if n not in names]
    parts = [f"{name}={brief_value(getattr(obj, name), nested=nested)}" for name in names]
    return f"{type(obj).__name__}({', '.join(parts)})"


def brief_value(value: object, *, nested: bool = True) -> str:
    """``value``'s repr when it is short; else a container as its length and item type (``[30
    KernelSpec]``, ``{4 items}``), a string cut (``'## ktriage...' (5127 chars)``), a dataclass its own
    brief when that is short and ``nested`` (one level: ``info=CacheInfo(root=..., size_bytes=...)``),
    anything else its type (``<ExplainResult>``)."""
    if value is None or isinstance(value, bool | int | float | enum.Enum | os.PathLike):
        return repr(value)
    if isinstance(value, str):
        return repr(value) if len(value) <= WIDTH else f"{value[: WIDTH - 20]!r}... ({len(value)} chars)"
    if isinstance(value, list | tuple | set | frozenset | dict):
        shown = repr(value)
        if len(shown) <= WIDTH:
            return shown
        if isinstance(value, dict):
            return f"{{{len(value)} items}}"
        kinds = sorted({type(item).__name__ for item in value})
        open_, close = (
            ("(", ")") if isinstance(value, tuple) else ("{", "}") if isinstance(value, set | frozenset) else ("[", "]")
        )
        return f"{open_}{len(value)} {kinds[0] if len(kinds) == 1 else 'items'}{close}"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if nested and len(shown := _brief(value, nested=False)) <= NESTED:
            return shown
        return f"<{type(value).__name__}>"
    shown = repr(value)
    return shown if len(shown) <= WIDTH else f"<{type(value).__name__}>"
