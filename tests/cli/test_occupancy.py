"""`ktriage occupancy` through the real ``main(argv)``: JSON, the table with the default arch, and
bad input as a user error."""

from __future__ import annotations

import json

import pytest

from ktriage.cli import exit_codes
from tests.conftest import RunCli


def test_cli_json(run_cli: RunCli) -> None:
    result = run_cli(
        ["occupancy", "--arch", "sm_90", "--registers", "255", "--warps", "4", "--shared", "1024", "--format", "json"]
    )
    assert result.exit_code == exit_codes.OK, result.output
    data = json.loads(result.stdout)
    assert (data["ctas_per_sm"], data["warps_per_sm"], data["limiter"]) == (2, 8, "registers")
    assert data["occupancy"] == 0.125
    assert data["limits"]["shared_memory"] == 233472 // 2048
    assert "168 registers" in data["lift"]


def test_cli_table_and_default_arch(run_cli: RunCli) -> None:
    result = run_cli(
        ["occupancy", "--registers", "128", "--warps", "8"], env={"COLUMNS": "200", "KTRIAGE_COLUMNS": "200"}
    )
    assert result.exit_code == exit_codes.OK, result.output
    assert "sm_90" in result.stdout
    assert "2 CTAs/SM" in result.stdout and "limited by registers" in result.stdout
    assert "≤ 80 registers per thread" in result.stdout


@pytest.mark.parametrize(
    "argv",
    [
        ["--registers", "256", "--warps", "4"],
        ["--registers", "64", "--warps", "0"],
        ["--registers", "64", "--warps", "33"],
        ["--arch", "sm_95", "--registers", "64", "--warps", "4"],
    ],
)
def test_cli_bad_input_is_a_ktriage_error(argv: list[str], run_cli: RunCli) -> None:
    result = run_cli(["occupancy", *argv])
    # a KtriageError (not click's usage error): printed as print_error's error/fix lines, exit 2
    assert result.exit_code == exit_codes.USAGE, result.output
    assert result.problem and "Traceback" not in result.stderr


def test_one_cta_is_singular(run_cli: RunCli) -> None:
    """The verdict read "1 CTAs/SM"; the lift line already said "1 CTA/SM"."""
    for fmt in ("table", "markdown"):
        result = run_cli(["occupancy", "--arch", "sm_90", "--registers", "255", "--warps", "8", "--format", fmt])
        assert result.exit_code == exit_codes.OK and "1 CTA/SM, 8/64 warps" in result.stdout, result.output
