"""SM count per target, for recipes whose grid depends on it (Liger's persistent layer_norm backward).

The numbers are ``ktriage.arch``'s (the one table of GPU-target facts): this module only names the
question the catalog asks."""

from __future__ import annotations

from ktriage.arch import parse_arch
from ktriage.errors import SpecError, worded


def default_sm_count(target: str) -> int:
    """SMs of the usual part for ``target`` (sm_90 -> 132, H100/H200 SXM). Pass ``sm_count`` to override."""
    count = parse_arch(target).default_sm_count
    if count > 0:
        return count
    raise SpecError(
        f"no default SM count for target {target!r}", worded(lambda o: f"pass {o('sm_count', '--sm-count')} explicitly")
    )
