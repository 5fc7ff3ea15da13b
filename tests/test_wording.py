"""ktriage.wording: the one home of a counted noun (calibrate said "8 cells of 1 operators") and of the
words that agree with a count (``agree``: "it"/"them", "is"/"are", once chosen by hand in each message)."""

from __future__ import annotations

from ktriage.wording import agree, plural


def test_a_count_of_one_is_singular_and_any_other_plural() -> None:
    assert [plural(n, "operator") for n in (0, 1, 2)] == ["0 operators", "1 operator", "2 operators"]
    assert plural(1, "results file or run", "results files or runs") == "1 results file or run"
    assert plural(3, "results file or run", "results files or runs") == "3 results files or runs"


def test_agreement_is_singular_for_exactly_one_as_plural_is() -> None:
    """``agree`` follows ``plural``'s rule: one for exactly one, the other form for any other count, zero
    included (some hand-made choices tested ``> 1`` and said "it" for zero kernels)."""
    assert [agree(n, "it does", "they do") for n in (0, 1, 2, 5)] == ["they do", "it does", "they do", "they do"]
    assert [agree(n, "is", "are") for n in (0, 1, 2)] == ["are", "is", "are"]
    assert agree(1, "was", "were") == "was" and agree(3, "was", "were") == "were"


def test_cache_gc_summary_counts_one_item_in_the_singular() -> None:
    """``ktriage cache gc``'s summary said "1 item(s) removed"."""
    from pathlib import Path

    from ktriage.compile.cache import GcItem
    from ktriage.report.cache import gc_summary

    one = [GcItem(Path("a"), "temp", 10)]
    assert gc_summary(one, 10, dry_run=False).startswith("1 item removed; freed ")
    assert gc_summary(one * 2, 20, dry_run=True).startswith("2 items to remove; would free ")
