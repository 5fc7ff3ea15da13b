"""docs/resources.md describes the Resources that ktriage computes: every field has a row in its table and
the schema number it quotes is the one `to_json()` writes (the page said schema 2 while ktriage wrote 7, and
two fields added since had no row)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from ktriage.analyze.resources import SCHEMA_VERSION, Resources

DOC = next(p for p in Path(__file__).resolve().parents if (p / "docs" / "index.md").exists()) / "docs" / "resources.md"


def test_every_field_has_a_row() -> None:
    first_cells = re.findall(r"^\| ([^|]+) \|", DOC.read_text(), re.M)
    rows = {name for cell in first_cells for name in re.findall(r"`(\w+)`", cell)}
    missing = [f.name for f in dataclasses.fields(Resources) if f.name != "kernel_name" and f.name not in rows]
    assert not missing, f"docs/resources.md: add a row for {missing}"


def test_schema_number_is_current() -> None:
    quoted = re.findall(r'"schema": (\d+)', DOC.read_text())
    assert quoted and all(int(q) == SCHEMA_VERSION for q in quoted), (quoted, SCHEMA_VERSION)
