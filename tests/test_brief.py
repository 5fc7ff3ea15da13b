"""ktriage.brief: the short repr a notebook shows of a report (an ExplainReport's generated repr was 3.8 MB).
Pure logic on small dataclasses made here; tests/api/test_reprs.py checks the real reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from ktriage.brief import NESTED, WIDTH, brief, brief_value


@dataclass(frozen=True)
class Inner:
    __repr__ = brief

    name: str
    sizes: list[int]


@dataclass(frozen=True)
class Outer:
    __repr__ = brief
    BRIEF_FACTS: ClassVar[tuple[str, ...]] = ("count",)

    title: str
    inner: Inner
    items: list[Inner]
    where: Path
    table: dict[str, int] = field(default_factory=dict)
    hidden: str = field(default="secret", repr=False)

    @property
    def count(self) -> int:
        return len(self.items)


def test_short_values_are_shown_whole_and_facts_follow_the_fields() -> None:
    outer = Outer("t", Inner("a", [1, 2]), [], Path("x.json"), {"k": 1})
    assert repr(outer) == (
        "Outer(title='t', inner=Inner(name='a', sizes=[1, 2]), items=[], where=PosixPath('x.json'), "
        "table={'k': 1}, count=0)"
    )
    assert "secret" not in repr(outer), "a field with repr=False stays out, as in the generated repr"


def test_long_values_are_their_size_or_their_type() -> None:
    many = [Inner(str(i), list(range(50))) for i in range(100)]
    outer = Outer("x" * 500, Inner("big", list(range(500))), many, Path("x"), {str(i): i for i in range(100)})
    shown = repr(outer)
    assert len(shown) < 400, shown
    assert "items=[100 Inner]" in shown and "table={100 items}" in shown and "count=100" in shown
    assert "(500 chars)" in shown
    assert "inner=Inner(name='big', sizes=[500 int])" in shown, "a nested dataclass is its own brief"


@dataclass(frozen=True)
class Wide:
    first: str
    second: str
    third: str
    fourth: str


def test_a_nested_brief_too_long_is_its_type_and_mixed_items_are_items() -> None:
    wide = Wide(*["w" * (WIDTH - 1)] * 4)
    assert len(brief(wide)) > NESTED
    assert brief_value(wide) == "<Wide>", "a nested dataclass whose brief is long is its type"
    assert brief_value(Outer("t", Inner("a", []), [], Path("x")), nested=False) == "<Outer>"
    assert brief_value([1, "a"] * WIDTH) == f"[{2 * WIDTH} items]"
    assert brief_value(tuple(range(WIDTH))) == f"({WIDTH} int)"
