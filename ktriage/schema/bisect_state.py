"""The bisect state file (``ktriage.bisect.search.StateFile``, ``--state``/``--resume``).

Validated on resume before the search reads it, so a state edited or cut short by hand is refused
with the field that is wrong, not a KeyError mid-bisect. The reader keeps the document as it was
(newer fields are carried along), so these Structs check types and ignore unknown keys.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ktriage.errors import worded


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


# ------------------------------------------------------------------------------------------ bisect-step baselines
class BaselineConfigSchema(msgspec.Struct):
    """``StepConfig.to_json``: what a step measures (``ktriage.bisect.step``)."""

    metric: str
    toolchain: str
    spec: str | None = None
    op: str | None = None
    mode: str = "bwd"
    inputs: list[str] = []
    arch: str = "sm_90"


class BaselineSideSchema(msgspec.Struct):
    values: dict[str, float]
    commit: str = ""
    left_out: dict[str, str] = {}  # kernels with no value at that commit, and why (step.record_baseline)


class BaselineSchema(msgspec.Struct):
    """``bisect-step --record-baseline FILE``. Checked before a step reads it, so a results file or a
    hand-edited baseline given as ``--baseline`` is refused with its field, not a KeyError (internal
    error, and ``git bisect run`` would have aborted on exit 3 without saying why)."""

    config: BaselineConfigSchema
    good: BaselineSideSchema | None = None
    bad: BaselineSideSchema | None = None


BASELINE_FIX = worded(lambda o: f"record one with {o('record_baseline', '--record-baseline', 'FILE')} at a good commit")
