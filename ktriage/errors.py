"""One error type for problems the user can fix, so the CLI can print them without a traceback."""

from __future__ import annotations


class KtriageError(Exception):
    """A problem with the user's input or environment, with a hint that says how to fix it."""

    def __init__(self, problem: str, fix: str | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.fix = fix

    def __str__(self) -> str:
        return self.problem if not self.fix else f"{self.problem}\n  fix: {self.fix}"
