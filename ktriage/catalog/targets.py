"""SM count per target, for recipes whose grid depends on it (Liger's persistent layer_norm backward)."""

from __future__ import annotations

from ktriage.errors import KtriageError

# Used only if ktriage.arch cannot answer (it owns the table; this keeps the catalog importable alone).
_FALLBACK_SM_COUNT = {"sm_80": 108, "sm_86": 84, "sm_89": 142, "sm_90": 132, "sm_100": 148}


def default_sm_count(target: str) -> int:
    """SMs of the usual part for ``target`` (sm_90 -> 132, H100/H200 SXM). Pass ``sm_count`` to override."""
    try:
        from ktriage.arch import parse_arch

        count = int(parse_arch(target).default_sm_count)
        if count > 0:
            return count
    except (ImportError, AttributeError):
        pass
    base = target.rstrip("a")
    if base in _FALLBACK_SM_COUNT:
        return _FALLBACK_SM_COUNT[base]
    raise KtriageError(f"no default SM count for target {target!r}", "pass sm_count= (--sm-count) explicitly")
