"""The bisect state file (``ktriage.bisect.search.StateFile``, ``--state``/``--resume``).

Validated on resume before the search reads it, so a state edited or cut short by hand is refused
with the field that is wrong, not a KeyError mid-bisect. The reader keeps the document as it was
(newer fields are carried along), so these Structs check types and ignore unknown keys.
"""

from __future__ import annotations

from typing import Any

import msgspec


class CandidateRef(msgspec.Struct):
    id: str


class StageSchema(msgspec.Struct):
    name: str
    candidates: list[CandidateRef]
    rounds: list[Any] = []
    preflight: Any = None
    result: Any = None


class BisectStateSchema(msgspec.Struct):
    fingerprint: dict[str, object]
    stages: list[StageSchema] = []
    result: Any = None
    format_version: Any = msgspec.UNSET
    version: Any = msgspec.UNSET  # the older spelling


FIX = "delete it and start again without --resume"
