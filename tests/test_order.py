"""ktriage.order.natural_key: the digits in a name sort as a number (pure logic, no fakes needed)."""

from __future__ import annotations

from ktriage.order import natural_key


def test_recorded_kernels_sort_by_their_number() -> None:
    names = [f"K{n}:kernel_{n % 3}" for n in (10, 2, 0, 11, 1, 9)]
    assert sorted(names, key=natural_key) == [f"K{n}:kernel_{n % 3}" for n in (0, 1, 2, 9, 10, 11)]


def test_tuples_none_and_versions() -> None:
    keys = [("op", "recorded", "K10", None), ("op", "recorded", "K2", "triton-3.10.0"), ("op", "recorded", "K2", None)]
    assert sorted(keys, key=lambda k: natural_key(*k)) == [keys[2], keys[1], keys[0]]
    assert sorted(["triton-3.10.0", "triton-3.4.0"], key=natural_key) == ["triton-3.4.0", "triton-3.10.0"]
    assert sorted(["b", "a1", "a"], key=natural_key) == ["a", "a1", "b"]
