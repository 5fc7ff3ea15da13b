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


def check_format_version(data: object, supported: int, *, what: str, fix: str, legacy_keys: tuple[str, ...] = (),
                         missing_means: int | None = None) -> int:
    """The ``format_version`` of a file that crosses machines (results, bundles, recordings, bisect state),
    refused with a KtriageError naming the file and the fix when this ktriage cannot read it.

    ``legacy_keys``: older spellings of the key (``format``, ``version``); ``missing_means``: the version a
    file without any key has (files written before the key existed), or None to refuse such files.
    """
    if not isinstance(data, dict):
        raise KtriageError(f"{what} is not a JSON object", fix)
    for key in ("format_version", *legacy_keys):
        if key in data:
            version = data[key]
            break
    else:
        if missing_means is None:
            raise KtriageError(f"{what} has no format_version", fix)
        version = missing_means
    if version != supported or isinstance(version, bool):
        raise KtriageError(f"{what} has format_version {version!r}; this ktriage reads {supported}", fix)
    return supported
