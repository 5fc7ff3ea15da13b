"""Shared fixtures. Toolchains are real Triton wheels in real virtualenvs, built once per test home."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# A persistent home so that toolchain virtualenvs and artifacts survive between test runs (CI builds
# them once per run). Override with KTRIAGE_TEST_HOME.
TEST_HOME = Path(os.environ.get("KTRIAGE_TEST_HOME", REPO / ".ktriage-home"))
os.environ["KTRIAGE_HOME"] = str(TEST_HOME)


@pytest.fixture(scope="session")
def ktriage_home() -> Path:
    TEST_HOME.mkdir(parents=True, exist_ok=True)
    return TEST_HOME
