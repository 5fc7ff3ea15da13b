"""ktriage.exit_status: the one meaning of an exit code, which reports carry and the CLI exits with."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ktriage.cli import exit_codes
from ktriage.exit_status import ExitStatus, outcome

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("finding", "complete", "allow", "expected"),
    [
        (False, True, False, ExitStatus.OK),
        (True, True, False, ExitStatus.FINDING),
        (False, False, False, ExitStatus.INCOMPLETE),
        (True, False, False, ExitStatus.INCOMPLETE),  # a partial answer never passes as a finding or as none
        (True, False, True, ExitStatus.FINDING),
        (False, False, True, ExitStatus.OK),
    ],
)
def test_outcome(finding: bool, complete: bool, allow: bool, expected: ExitStatus) -> None:
    assert outcome(finding=finding, complete=complete, allow_failures=allow) is expected


def test_the_cli_names_are_the_statuses() -> None:
    for status in ExitStatus:
        assert getattr(exit_codes, status.name) is status


def test_the_documented_table_is_the_enum() -> None:
    """The module's table (what docs/explain.md repeats) lists exactly the enum's codes and names."""
    import ktriage.exit_status as module

    rows = re.findall(r"^\| (\d+) \| (\w+) \|", module.__doc__ or "", flags=re.M)
    assert {(int(code), name) for code, name in rows} == {(s.value, s.name) for s in ExitStatus}
    explain_doc = (REPO / "docs" / "explain.md").read_text()
    documented = {int(c) for c in re.findall(r"^\| (\d+) \| ", explain_doc.split("## Exit codes")[1], flags=re.M)}
    assert documented <= {s.value for s in ExitStatus}
