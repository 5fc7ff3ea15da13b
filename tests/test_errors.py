"""ktriage.errors' spellings of an option: :func:`option` (the keyword and the flag, for a message that reaches
a Python caller and a command-line user alike), :func:`flag` (the flag alone, for what the command prints) and
:class:`Worded` (one sentence spelled both ways: tune's notes said ``drop compile_only=True (--compile-only)``
to a user of ``ktriage tune``, who types ``--compile-only``)."""

from __future__ import annotations

import copy
import json
import pickle

import pytest

from ktriage.errors import Worded, flag, in_flags, joined, option, spelled, worded


@pytest.mark.parametrize(
    ("args", "both", "alone"),
    [
        (("limit", "--limit"), "limit (--limit)", "--limit"),
        (("limit", "--limit", 20), "limit=20 (--limit 20)", "--limit 20"),
        (("threshold", "--threshold", 0.025), "threshold=0.025 (--threshold 0.025)", "--threshold 0.025"),
        (("compile_only", "--compile-only", True), "compile_only=True (--compile-only)", "--compile-only"),
        (("toolchains", "-t", ["a b", "c"]), "toolchains=['a b', 'c'] (-t 'a b' -t c)", "-t 'a b' -t c"),
        (
            ("results_file", "--results", "/tmp/r.json"),
            "results_file='/tmp/r.json' (--results /tmp/r.json)",
            "--results /tmp/r.json",
        ),
        (("op",), "op", "op"),  # no flag: the keyword, both ways
        (("top", None, 3), "top=3", "top=3"),
    ],
)
def test_flag_is_the_flag_side_of_option(args: tuple[object, ...], both: str, alone: str) -> None:
    assert option(*args) == both  # type: ignore[arg-type]
    assert flag(*args) == alone  # type: ignore[arg-type]


def test_a_worded_sentence_is_the_librarys_text_and_carries_the_commands() -> None:
    note = worded(lambda o: f"drop {o('compile_only', '--compile-only', True)} to time them")
    assert note == "drop compile_only=True (--compile-only) to time them"  # what report.notes and the JSON hold
    assert in_flags(note) == "drop --compile-only to time them"  # what ktriage tune prints
    assert in_flags("plain words") == "plain words"
    assert json.dumps([note]) == '["drop compile_only=True (--compile-only) to time them"]'
    for kept in (copy.deepcopy(note), pickle.loads(pickle.dumps(note))):
        assert isinstance(kept, Worded) and kept == note and in_flags(kept) == "drop --compile-only to time them"


def test_a_sentence_made_of_worded_parts_keeps_both_spellings() -> None:
    """triage's notes are built from worded parts (``not re-measured: {why}``, ``{MEASURED} PATH: ...``): an
    f-string around a Worded kept its text only, and the command printed ``--limit``'s keyword."""
    why = worded(lambda o: f"left out by {o('limit', '--limit', 3)}")
    assert f"not re-measured: {why}" == "not re-measured: left out by limit=3 (--limit 3)"  # the trap: plain str
    note = joined("not re-measured: ", why)
    assert note == "not re-measured: left out by limit=3 (--limit 3)" and in_flags(note) == (
        "not re-measured: left out by --limit 3"
    )
    assert worded(lambda o: f"({spelled(why, o)})").flags == "(left out by --limit 3)"
    assert spelled("plain", flag) == "plain" and spelled(why, option) == str(why)
    plain = joined("a", "b")
    assert plain == "ab" and not isinstance(plain, Worded)  # no worded part: the plain text


def test_a_command_is_the_command_line_for_the_flags_and_the_api_function_for_the_keywords() -> None:
    from ktriage.errors import command

    assert command("bisect", flag, ("metric", "--metric", "latency")) == "ktriage bisect --metric latency"
    assert command("bisect", option, ("metric", "--metric", "latency")) == (
        "kt.bisect with metric='latency' (--metric latency)"
    )
    assert command("profile", flag) == "ktriage profile" and command("bisect-step", option) == "kt.bisect_step"


def test_a_failure_line_keeps_the_errors_fix_and_both_spellings() -> None:
    """A report's failure was ``f"{what}: {exc.problem}"``: the fix gone, a worded problem in the keyword spelling."""
    from ktriage.errors import KtriageError, failure_line

    exc = KtriageError(
        worded(lambda o: f"no {o('limit', '--limit', 0)}"), worded(lambda o: f"pass {o('limit', '--limit', 5)}")
    )
    line = failure_line(exc, "bench B")
    assert line == "bench B: no limit=0 (--limit 0) (fix: pass limit=5 (--limit 5))"
    assert in_flags(line) == "bench B: no --limit 0 (fix: pass --limit 5)"
    assert failure_line(KtriageError("plain")) == "plain" and not isinstance(failure_line(KtriageError("p")), Worded)
