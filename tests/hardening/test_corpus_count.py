"""The hardening corpus stays at least as large as issue 27 asks (600 cases through ``main(argv)``),
counted from the case tables themselves (tests/hardening/README.md has the totals per file)."""

from __future__ import annotations

import importlib

# the case tables of the corpus (issue 11's first corpus and issue 27's surfaces)
TABLES = (
    "test_bad_inputs",
    "test_workload_cases",
    "test_store_cases",
    "test_cache_cases",
    "test_env_cases",
    "test_profile_cases",
    "test_record_cases",
)


def test_the_corpus_has_at_least_600_cases() -> None:
    sizes = {name: len(importlib.import_module(name).CASES) for name in TABLES}
    assert sum(sizes.values()) >= 600, sizes
    assert all(n > 0 for n in sizes.values()), sizes
