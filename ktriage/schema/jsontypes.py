"""The one type of free-form JSON: what a ``to_json()`` returns and what a file's open sections hold.

Most payloads have fixed keys and get their own ``TypedDict`` or Struct next to the code that writes
them; these aliases are for the rest, the parts whose keys are data (a GPU's counters, a run's
settings as written by any ktriage version). The containers are the read-only ``Sequence`` and
``Mapping`` so that a ``list[float]`` or ``dict[str, int]`` is a ``JSONValue`` without a copy or a
cast; a reader narrows with ``isinstance`` (a ``dict`` or a ``list``) before it indexes.

msgspec cannot decode a recursive alias, so the schemas' Structs spell the same thing
``dict[str, object]`` (msgspec reads ``object`` as any JSON value).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias, cast

JSONScalar: TypeAlias = str | int | float | bool | None
JSONValue: TypeAlias = JSONScalar | Sequence["JSONValue"] | Mapping[str, "JSONValue"]
JSONObject: TypeAlias = dict[str, JSONValue]
"""A JSON object as written: ``json.dumps`` of it is the file's text."""


def as_json_object(value: dict[str, object]) -> JSONObject:
    """A ``dict[str, object]`` that msgspec decoded from JSON text (a Struct's open section): it holds
    only JSON values, which the type system cannot see through ``object``. The one place that says
    so; the dict itself is returned, not a copy."""
    return cast(JSONObject, value)


def report_text(doc: JSONObject) -> str:
    """A report's JSON text as the verbs print it and ``-o X.json`` writes it: one space of indent,
    UTF-8 (``≤`` stays ``≤``). Encoded and indented by msgspec in C: the standard library indents in
    pure Python, 46 ms for explain's 2.5 MB sweep report against 7 ms here (benchmarks/calibration/
    explain_timing.md), where warm explain has a 0.5 s budget. A value JSON cannot hold (NaN, inf) is
    written as ``null``; the reports carry none (they say ``null`` themselves)."""
    import msgspec

    return msgspec.json.format(msgspec.json.encode(doc), indent=1).decode()
