"""The results store: every run and cell, committed as measured, in SQLite or any SQLAlchemy database."""

from __future__ import annotations

from ktriage.store.export import export_csv, export_json, read_json_export
from ktriage.store.store import Recording, RunFilters, RunSummary, Store, open_store

__all__ = [
    "Recording",
    "RunFilters",
    "RunSummary",
    "Store",
    "export_csv",
    "export_json",
    "open_store",
    "read_json_export",
]
