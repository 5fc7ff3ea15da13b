"""``--toolchain`` selectors (runs list, history) name a toolchain's parts, not a substring of its id."""

from __future__ import annotations

import pytest

from ktriage.errors import KtriageError
from ktriage.toolchain.select import check_selector, toolchain_matches

NEW = ("triton-3.4.0.ptxas-12.8.93.da4345e0", "triton==3.4.0")
OLD_PTXAS_13_4 = ("triton-3.3.1.ptxas-13.4.59.0c9a828e", "triton==3.3.1,ptxas==13.4.59")
TRITON_3_40 = ("triton-3.40.0.ptxas-12.8.93.11111111", "triton==3.40.0")
HOST_TRITON = ("triton-3.4.0+git1a2b.ptxas-12.8.93.22222222", "triton=host,ptxas-options=-O3")
NATIVE = ("", "")


@pytest.mark.parametrize(
    ("selector", "names"),
    [
        ("3.4", {NEW, HOST_TRITON}),  # not ptxas 13.4.59, not Triton 3.40.0
        ("3.4.0", {NEW, HOST_TRITON}),
        ("3", {NEW, OLD_PTXAS_13_4, TRITON_3_40, HOST_TRITON}),
        ("3.40", {TRITON_3_40}),
        ("triton==3.4.0", {NEW, HOST_TRITON}),
        ("ptxas==13.4", {OLD_PTXAS_13_4}),
        ("triton==3.3.1,ptxas==13.4.59", {OLD_PTXAS_13_4}),
        ("triton==3.4.0,ptxas==13.4.59", set()),
        ("triton=host", {HOST_TRITON}),
        ("ptxas-options=-O3", {HOST_TRITON}),
        ("triton-3.4.0.ptxas-12.8.93", {NEW}),  # the id without its hash, as compare quotes it
        ("triton-3.4", {NEW, HOST_TRITON}),  # an id cut at a dot
        ("triton-3.4.0.ptxas-12.8.9", set()),  # not cut at a dot
        ("TRITON-3.4.0.PTXAS-12.8.93.DA4345E0", {NEW}),  # the whole id, any case
        ("da4345e0", {NEW}),
        ("host", {NATIVE}),
    ],
)
def test_a_selector_names_the_toolchains_whose_parts_it_names(selector: str, names: set[tuple[str, str]]) -> None:
    every = (NEW, OLD_PTXAS_13_4, TRITON_3_40, HOST_TRITON, NATIVE)
    assert {tc for tc in every if toolchain_matches(check_selector(selector), *tc)} == names


def test_a_selector_that_names_no_part_is_refused_with_the_forms() -> None:
    for selector in ("ptxas", "H200", "triton=="):
        with pytest.raises(KtriageError) as exc:
            check_selector(selector)
        assert exc.value.problem == f"--toolchain {selector!r} names no part of a toolchain"
        assert "triton==3.4.0" in (exc.value.fix or "") and "host" in (exc.value.fix or "")
