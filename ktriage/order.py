"""The one home of the order ktriage lists names in: ``natural_key`` sorts the digits inside a name as a
number, so recorded kernels read K0, K1, ..., K9, K10 (a text sort put K10 between K1 and K2, and
every list of a recorded workload's kernels, compare's rows, its chart legends and triage's, read
K0, K1, K10, K11, K2, ...). Toolchains too: triton-3.4.0 before triton-3.10.0.

Why a module low in the layers: compare pairs, the reports and triage each sort the same names; one
key, usable from any layer, orders them the same everywhere.
"""

from __future__ import annotations

import re

_DIGITS = re.compile(r"(\d+)")


def natural_key(*parts: object) -> tuple[tuple[tuple[int, int | str], ...], ...]:
    """A sort key for ``parts`` (each taken as ``str``, ``None`` as "None", as a text sort took them)
    in which each run of digits compares as a number: ``sorted(names, key=natural_key)``;
    ``natural_key(op, mode, backend)`` for a tuple. Text runs sort after numbers at the same place."""
    return tuple(
        tuple((0, int(run)) if run.isdigit() else (1, run) for run in _DIGITS.split(str(part)) if run) for part in parts
    )
