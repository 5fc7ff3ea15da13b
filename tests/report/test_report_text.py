"""``schema.jsontypes.report_text``: the JSON text explain prints and writes (msgspec's C encoder, for
the warm-explain budget) is the same JSON value as the standard library's, one space of indent, UTF-8."""

from __future__ import annotations

import json

from ktriage.schema.jsontypes import JSONObject, report_text


def test_same_value_as_json_dumps_indented_and_utf8() -> None:
    doc: JSONObject = {
        "lift": "≤ 48 registers per thread would allow 10 CTAs/SM",
        "ratio": 5.6789,
        "tiny": 1e-05,
        "big": 123456789012,
        "none": None,
        "flags": [True, False],
        "nested": {"empty": [], "also": {}},
    }
    text = report_text(doc)
    assert json.loads(text) == doc
    assert "≤ 48" in text and "\\u2264" not in text
    assert text.splitlines()[1].startswith(' "lift": ')  # one space per level, as json.dumps(indent=1)
