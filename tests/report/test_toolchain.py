"""`ktriage toolchain list`'s rows (ktriage/report/toolchain.py): a Triton that is not the PyPI release of its
version is marked, so that two rows of one version tell which is which."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ktriage.report.toolchain import list_rows
from ktriage.toolchain.spec import parse_toolchain

pytestmark = pytest.mark.slow  # a real toolchain of the test home


def test_a_wheel_and_the_host_triton_are_marked_the_release_is_not(toolchain, tmp_path: Path) -> None:
    """A toolchain built from a local wheel (here the real 3.4.0 toolchain's record, its spec a wheel's) was
    listed as plain ``3.4.0``, beside the release's row with only the id's hash to tell them apart."""
    release = toolchain("triton==3.4.0")
    wheel = dataclasses.replace(
        release,
        spec=parse_toolchain(f"triton={tmp_path / 'triton-3.4.0-cp311-cp311-linux_x86_64.whl'}", check_files=False),
    )
    host = dataclasses.replace(release, spec=parse_toolchain("triton=host", check_files=False))
    rows = list_rows([release, wheel, host], [1, 1, 1])
    assert [r["triton"] for r in rows] == ["3.4.0", "3.4.0 (wheel)", "3.4.0 (host)"]
