"""JSON for the store's columns that survives NaN and infinities on every database.

A wrong kernel can produce NaN outputs, so accuracy fields (max_abs_err...) may be NaN or inf.
Python writes those as bare ``NaN``/``Infinity`` tokens, which are not JSON: PostgreSQL rejects the
row, and a rejected row is a lost cell. Non-finite floats are therefore written as tagged strings and
turned back into floats on read, so every value round-trips exactly and stays valid JSON for SQL.
"""

from __future__ import annotations

import json
import math
from typing import Any

_TAG = "__ktriage_float__:"


def _encode(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return _TAG + repr(value)  # 'nan', 'inf', '-inf'
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(_TAG):
        return float(value[len(_TAG) :])
    if isinstance(value, dict):
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def dumps(value: Any) -> str:
    """Serialize for a JSON column (strict JSON: non-finite floats are tagged)."""
    return json.dumps(_encode(value), allow_nan=False)


def loads(text: str | bytes) -> Any:
    """Inverse of ``dumps``. A value that is not JSON (an edited or damaged store) is a StoreError
    naming what it starts with, never a JSONDecodeError from inside SQLAlchemy's row processing."""
    from ktriage.errors import StoreError
    from ktriage.store.fixes import DAMAGED_FIX

    try:
        return _decode(json.loads(text))
    except RecursionError:
        problem = "a JSON column nests lists/objects too deep"
    except ValueError as exc:
        problem = f"a JSON column holds {str(text)[:40]!r}, which is not JSON ({exc})"
    raise StoreError(f"the store is damaged: {problem}", DAMAGED_FIX)
