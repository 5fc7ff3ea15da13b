"""Store test fixtures shared by tests/store/ and tests/cli/test_runs.py: one store URL per backend.

Every test gets an empty store: a fresh SQLite file, or a fresh PostgreSQL schema on the server that
KTRIAGE_TEST_PG_URL points at (scripts/ci_postgres.sh starts one; CI always sets it). The schema
rides in the URL (libpq ``options=-csearch_path=...``), so subprocesses given the URL see it too.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

PG_ENV = "KTRIAGE_TEST_PG_URL"
PG_SKIP = f'{PG_ENV} is not set: start a server with `eval "$(bash scripts/ci_postgres.sh)"` (CI always sets it)'
BACKENDS = ["sqlite", "postgresql"]


def _pg_store_url(base: str) -> Iterator[str]:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    schema = f"kt_{uuid.uuid4().hex[:10]}"
    admin = create_engine(base)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    url = make_url(base).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty store's URL, on SQLite and on PostgreSQL (skipped only when no server is configured)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store' / 'ktriage.db'}"
        return
    base = os.environ.get(PG_ENV)
    if not base:
        pytest.skip(PG_SKIP)
    yield from _pg_store_url(base)
