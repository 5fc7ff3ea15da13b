"""Which proposed fixes triage's GPU step times in the ``+fix`` variant (``fixes_to_time``): the verified
recommended ones; one the cost model predicts slower only when no recommended fix was verified, and then
said. Pure logic: the fixes are named fakes carrying what the choice reads (verified, recommended,
description); ``_fix_variant``'s real bundle is tests/triage/test_triage_measure.py's."""

from __future__ import annotations

from dataclasses import dataclass

from ktriage.triage.measure_plan import SLOWER_TIMED, fixes_to_time


@dataclass(frozen=True)
class FakeFix:
    description: str
    verified: bool
    recommended: bool


SPILL_FREE = FakeFix("num_warps 8", verified=True, recommended=True)
MAXNREG = FakeFix("launch with maxnreg=168", verified=True, recommended=False)  # predicted +111 %


def test_a_fix_predicted_slower_is_not_timed_beside_a_recommended_one() -> None:
    assert fixes_to_time([MAXNREG, SPILL_FREE]) == ([SPILL_FREE], None)


def test_the_fix_predicted_slower_is_timed_when_no_recommended_one_was_verified_and_said() -> None:
    unverified = FakeFix("ptxas --register-usage-level 5", verified=False, recommended=True)
    timed, said = fixes_to_time([unverified, MAXNREG])
    assert timed == [MAXNREG]
    assert said == f"{SLOWER_TIMED} (launch with maxnreg=168)"
    assert said.startswith("timing the fix predicted slower, since no recommended fix was verified")


def test_nothing_verified_times_nothing_and_says_nothing() -> None:
    assert fixes_to_time([FakeFix("x", verified=False, recommended=False)]) == ([], None)
    assert fixes_to_time([]) == ([], None)
