"""Triage: diff two result sets, explain the flagged cells compile-side, bisect, fix, report.

``triage(old, new, options) -> TriageReport`` (``ktriage.triage.pipeline``); the report and its
JSON form are ``ktriage.triage.model``. docs/triage.md describes each step.
"""

from ktriage.triage.model import CellTriage, TriageOptions, TriageReport
from ktriage.triage.pipeline import triage

__all__ = ["CellTriage", "TriageOptions", "TriageReport", "triage"]
