"""The checks a front end runs on values the library reads, before any verb starts:
``normalize_arch(value)`` (a GPU target in any spelling ``ktriage.arch.parse_arch`` reads),
``check_percent_gate(percent)`` (triage's ``--threshold``, in percent) and ``check_environment()``
(the library's ``KTRIAGE_*`` variables).

Why here: ``ktriage.cli`` checks ``--arch`` while parsing and refuses a bad ``KTRIAGE_*`` value up
front (a raw ``float('abc')`` traceback deep in a compile used to end a run), but it calls nothing
below ``ktriage.api``; each value keeps its one reader (``ktriage.arch``, ``ktriage.schema.core``,
``ktriage.compile.pool``), and this module only asks it.
"""

from __future__ import annotations

import os

__all__ = ["check_environment", "check_percent_gate", "normalize_arch"]


def check_percent_gate(percent: float) -> float:
    """A gate written in percent (``ktriage triage --threshold 10``) as the fraction the library takes,
    refused with the spelling the user probably meant: under 1 (0.05 meant as 5 %) or 100 and more. Why
    here: the library's ``triage(threshold=)`` is a fraction like every other verb's, so only the command
    line, which spells it in percent, can word the refusal in percent."""
    from ktriage.errors import KtriageError, joined, option
    from ktriage.stats.gate import check_gate

    if isinstance(percent, bool) or not isinstance(percent, int | float):  # "10" was a TypeError below
        # (not ktriage.api._args, which reads normalize_arch from here: the api's modules import one way)
        raise KtriageError(
            joined(option("percent", "--threshold"), f" {percent!r} is a {type(percent).__name__}, not a number"),
            "pass the gate in percent as a number, e.g. check_percent_gate(10) for a 10% gate",
        )
    check_gate(percent / 100.0, percent=True)
    return percent / 100.0


def normalize_arch(value: str | int) -> str:
    """A GPU target written as ``sm_90``, ``sm_90a``, ``90``, ``9.0`` or ``cuda:90`` (or the int 90), as
    its name (``sm_90``; an arch-specific ``sm_90a`` / ``sm_100a`` keeps its ``a``: a different compile
    target). An unknown or unsupported target (``sm_80a`` too: no arch-specific target there) raises a
    KtriageError naming the supported ones, the same list a kernel spec's ``target`` is checked against."""
    from ktriage.arch import SPEC_TARGETS, parse_arch

    name = parse_arch(value).name  # an int CC is read as one; any other type is refused there
    text = str(value).strip().lower()
    if not (text.endswith("a") and text.startswith(("sm_", "compute_"))):
        return name
    if f"{name}a" not in SPEC_TARGETS:
        from ktriage.errors import SpecError

        raise SpecError(
            f"unknown or unsupported GPU target {value!r}: {name} has no arch-specific ('a') target",
            f"write {name}, or one of the supported targets: {', '.join(SPEC_TARGETS)}",
        )
    return f"{name}a"


def _check_max_input() -> None:
    from ktriage.schema.core import size_limit

    size_limit(1)


def _check_import_timeout() -> None:
    from ktriage.compile.pool import import_timeout_s

    import_timeout_s()


# variable -> its reader's check. ``ktriage.cli.console.LIBRARY_ENVIRONMENT`` names the same variables
# so that ``ktriage --help`` imports no entry point (tests/cli/test_app.py keeps the two in step)
_CHECKS = {"KTRIAGE_MAX_INPUT_MB": _check_max_input, "KTRIAGE_IMPORT_TIMEOUT_S": _check_import_timeout}
CHECKED_VARIABLES = tuple(_CHECKS)


def check_environment() -> None:
    """Refuse a library ``KTRIAGE_*`` value that is no value of its (each checked only when set, by
    the module that reads it): ``KTRIAGE_MAX_INPUT_MB``, ``KTRIAGE_IMPORT_TIMEOUT_S``."""
    for name, check in _CHECKS.items():
        if os.environ.get(name, "").strip():
            check()
