"""The search on synthetic series (pure logic, with a named fake predicate) and the compile-only rule."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ktriage.bisect.candidate import Candidate, Observation, Predicate
from ktriage.bisect.predicates import check_metric, decide_values
from ktriage.bisect.search import StateFile, choose_points, run_search
from ktriage.errors import KtriageError


class FakeStepPredicate:
    """A FAKE predicate for the search logic: bad from ``culprit`` on, with chosen skips/unsures."""

    name = "fake-step"

    def __init__(
        self, culprit: int, skip: Sequence[int] = (), unsure: Sequence[int] = (), good_after: Sequence[int] = ()
    ) -> None:
        self.culprit, self.skip, self.unsure, self.good_after = culprit, set(skip), set(unsure), set(good_after)
        self.tested: list[int] = []
        self.calls: list[int] = []

    def _one(self, c: Candidate) -> Observation:
        self.tested.append(c.index)
        if c.index in self.skip:
            return Observation(c, "skip", "fake build failure")
        if c.index in self.unsure:
            return Observation(c, "unsure", "fake noise")
        bad = c.index >= self.culprit and c.index not in self.good_after
        return Observation(c, "bad" if bad else "good", "fake", confidence=1.0)

    def preflight(self, good: Candidate, bad: Candidate) -> list[Observation]:
        return [self._one(good), self._one(bad)]

    def test(self, candidates: Sequence[Candidate]) -> list[Observation]:
        self.calls.append(len(candidates))
        return [self._one(c) for c in candidates]


def _cands(n: int) -> list[Candidate]:
    return [Candidate(i, f"c{i}", f"c{i}") for i in range(n)]


def test_the_fake_satisfies_the_protocol() -> None:
    assert isinstance(FakeStepPredicate(3), Predicate)


@pytest.mark.parametrize("n", [2, 3, 10, 100, 1000])
def test_binary_search_finds_every_culprit_in_log2_tests(n: int) -> None:
    for culprit in sorted({1, n // 3, n // 2, n - 1} - {0}):
        fake = FakeStepPredicate(culprit)
        result = run_search(_cands(n), fake)
        assert result.status == "culprit" and result.hi == culprit and result.lo == culprit - 1
        assert result.tested <= math.ceil(math.log2(n - 1)) if n > 2 else result.tested == 0


def test_k_ary_rounds_test_k_candidates_and_take_fewer_rounds() -> None:
    one, three = FakeStepPredicate(371), FakeStepPredicate(371)
    r1 = run_search(_cands(1000), one)
    r3 = run_search(_cands(1000), three, workers=3)
    assert r1.hi == r3.hi == 371
    assert max(three.calls) == 3
    assert r3.rounds <= math.ceil(math.log(999, 4)) + 1 < r1.rounds


def test_choose_points_splits_evenly_and_avoids_tested() -> None:
    assert choose_points(0, 100, list(range(1, 100)), 1) == [50]
    assert choose_points(0, 100, list(range(1, 100)), 3) == [25, 50, 75]
    assert choose_points(0, 100, [i for i in range(1, 100) if i != 50], 1) == [49]
    assert choose_points(0, 4, [1, 3], 3) == [1, 3]


def test_skips_away_from_the_culprit_are_routed_around() -> None:
    fake = FakeStepPredicate(30, skip=[50, 49, 51])
    result = run_search(_cands(100), fake)
    assert result.status == "culprit" and result.hi == 30
    assert 50 in fake.tested  # it was hit, and the search went on


def test_skip_next_to_the_culprit_reports_the_exact_range() -> None:
    result = run_search(_cands(64), FakeStepPredicate(20, skip=[19, 20]))
    assert result.status == "ambiguous" and result.culprit is None
    assert [c.index for c in result.range] == [19, 20, 21] and result.lo == 18


def test_unsure_is_never_named_as_culprit() -> None:
    result = run_search(_cands(64), FakeStepPredicate(20, unsure=[20]))
    assert result.status == "ambiguous" and [c.index for c in result.range] == [20, 21]


def test_non_monotonic_goods_are_reported() -> None:
    result = run_search(_cands(16), FakeStepPredicate(3, good_after=[11]), workers=3)  # round 1 tests 4, 7, 11
    assert result.status == "culprit" and result.hi == 3
    assert result.non_monotonic == [11]


def test_state_record_is_replayed_without_retesting(tmp_path: Path) -> None:
    cands = _cands(200)
    state = StateFile(tmp_path / "s.json", {"q": 1})
    record = state.stage(0, "fake", cands)
    first = FakeStepPredicate(77)
    run_search(cands, first, record=record, save=state.save, max_rounds=3)
    resumed = StateFile.resume(tmp_path / "s.json", {"q": 1})
    second = FakeStepPredicate(77)
    result = run_search(cands, second, record=resumed.stage(0, "fake", cands), save=resumed.save)
    assert result.hi == 77
    assert not set(second.tested) & set(first.tested[2:])  # rounds saved by the first run are not tested again
    with pytest.raises(KtriageError, match="another bisect"):
        StateFile.resume(tmp_path / "s.json", {"q": 2})


def test_compile_rule_is_relative_to_the_endpoints() -> None:
    good, bad = {"k": 0.0, "same": 5.0}, {"k": 48.0, "same": 5.0}
    assert decide_values({"k": 0.0, "same": 9.0}, good, bad)[0] == "good"  # kernels equal at both ends carry no signal
    assert decide_values({"k": 48.0, "same": 5.0}, good, bad)[:1] == ("bad",)
    assert decide_values({"k": 40.0}, good, bad)[0] == "bad"
    assert decide_values({"k": 8.0}, good, bad)[0] == "good"
    assert decide_values({"k": 24.0}, good, bad)[0] == "unsure"
    # several kernels: all must agree; two kernels pulling different ways make it unsure (never a guess)
    two_good, two_bad = {"a": 0.0, "b": 0.0}, {"a": 10.0, "b": 64.0}
    assert decide_values({"a": 10.0, "b": 64.0}, two_good, two_bad)[0] == "bad"
    assert decide_values({"a": 0.0, "b": 0.0}, two_good, two_bad)[0] == "good"
    outcome, reason, _ = decide_values({"a": 10.0, "b": 0.0}, two_good, two_bad)
    assert outcome == "unsure" and "disagree" in reason
    # a metric that goes down (occupancy) works the same way
    assert decide_values({"o": 2.0}, {"o": 5.0}, {"o": 2.0})[0] == "bad"


def test_metric_names_are_checked() -> None:
    assert check_metric("sass:ATOMG") == "sass:ATOMG"
    assert check_metric("ctas_per_sm") == "ctas_per_sm"
    with pytest.raises(KtriageError, match="unknown metric"):
        check_metric("spills")
    detailed = "sass:REDG.E.ADD.F32x4.FTZ.RN.STRONG.GPU"  # as explain prints it: modifiers may hold lower case
    assert check_metric(detailed) == detailed
    # SASS opcodes are upper case: sass:atomg counted 0 at every candidate and the bisect stopped at
    # "endpoints do not differ ... =0", which named no typo
    with pytest.raises(KtriageError, match="SASS opcodes are written in upper case") as lower:
        check_metric("sass:atomg")
    assert lower.value.fix == "write metric='sass:ATOMG' (--metric sass:ATOMG)"
    with pytest.raises(KtriageError, match="upper case") as lower:
        check_metric("sass:redg.E.ADD.F32x4")
    assert lower.value.fix == "write metric='sass:REDG.E.ADD.F32x4' (--metric sass:REDG.E.ADD.F32x4)"


def test_the_time_predicate_runs_through_the_protocol_and_resumes(tmp_path: Path) -> None:
    """The search drives ktriage.bisect.time_predicate.TimePredicate through the Predicate protocol only
    (its measurements here: FakeNoisyTimings, synthetic samples with a known culprit)."""
    from ktriage.bisect.time_predicate import TimePredicate
    from ktriage.testing import FakeNoisyTimings, fake_candidates

    cands = fake_candidates(64)
    state = StateFile(tmp_path / "s.json", {"q": "time"})
    first = TimePredicate(FakeNoisyTimings(culprit=23, effect=0.3, cv=0.03, seed=1))
    assert isinstance(first, Predicate)
    run_search(cands, first, workers=3, record=state.stage(0, "t", cands), save=state.save, max_rounds=1)
    fake = FakeNoisyTimings(culprit=23, effect=0.3, cv=0.03, seed=2)
    resumed = StateFile.resume(tmp_path / "s.json", {"q": "time"})
    result = run_search(cands, TimePredicate(fake), workers=3, record=resumed.stage(0, "t", cands), save=resumed.save)
    assert result.status == "culprit" and result.hi == 23
    assert result.rounds >= 2 and result.confidence is not None


def test_the_note_for_kernels_that_failed_reads_right_for_one_and_for_several() -> None:
    """A candidate judged without kernels that failed says why they are not bisected, in words that
    fit their number (before: "a, b did not compile here (not bisected: it does not differ ...)")."""
    good, bad = {"k": 0.0, "a": 1.0, "b": 2.0}, {"k": 32.0, "a": 1.0, "b": 2.0}
    one = decide_values({"k": 32.0, "b": 2.0}, good, bad, {"a": "a: frontend failed: x"})[1]
    assert one.endswith("; a did not compile here (not bisected: it does not differ between the endpoints)"), one
    two = decide_values({"k": 32.0}, good, bad, {"a": "a: frontend failed: x", "b": "b: frontend failed: y"})[1]
    assert two.endswith("; a, b did not compile here (not bisected: they do not differ between the endpoints)"), two
    from ktriage.bisect.step import decide_step

    code, step = decide_step({"k": 0.0}, {"k": 0.0}, None, {"a": "a: frontend failed: x", "b": "b: frontend failed: y"})
    assert (
        step
        == "equal to the good baseline; a, b did not compile here (not judged: the good baseline has no value for them)"
    )


class FakeResult:
    """A FAKE analysis result for the pure split of values (only ``metric`` is read): ``None`` is a
    metric the analysis does not give (spill bytes without ptxas's -v log)."""

    def __init__(self, value: float | None) -> None:
        self.value = value

    def metric(self, name: str) -> float | None:
        return self.value


def test_a_kernel_without_a_value_for_the_metric_is_named_with_the_metric() -> None:
    """A kernel whose analysis gives no value for the metric was dropped from the values without a
    word, so ``bisect-step --record-baseline`` left it out of the baseline silently. Now it is named,
    with the metric, as a kernel that fails is (``failed``, the baseline's ``left_out`` and warning)."""
    from ktriage.bisect.predicates import metric_values

    results: dict[str, Any] = {"red": FakeResult(48.0), "blue": FakeResult(None)}
    values, missing = metric_values(results, "spill_store_bytes")
    assert values == {"red": 48.0}
    assert missing == {"blue": "blue has no spill_store_bytes value: its analysis does not give one"}


def test_a_step_names_a_kernel_without_a_value_by_what_happened() -> None:
    """bisect-step at a commit where a kernel the baseline does not hold compiled but has no value for the
    metric: the verdict's note said "blue did not compile here", the wrong reason (the fix is another
    metric, not the kernel); it now says what the ``left_out`` entry says: no value for the metric."""
    from ktriage.bisect.predicates import metric_values
    from ktriage.bisect.step import EXIT_GOOD, decide_step

    results: dict[str, Any] = {"red": FakeResult(48.0), "blue": FakeResult(None)}
    values, missing = metric_values(results, "spill_store_bytes")
    failed = {**missing, "green": "green: frontend failed: boom"}
    code, reason = decide_step(values, {"red": 48.0}, None, failed)
    assert code == EXIT_GOOD
    assert reason == (
        "equal to the good baseline; green did not compile here and blue has no spill_store_bytes value here "
        "(not judged: the good baseline has no value for them)"
    ), reason


def test_a_kernel_with_no_value_at_an_endpoint_is_not_said_to_be_the_same_at_both() -> None:
    """A kernel that fails here and has no value at an endpoint was never compared: the note gives the
    endpoint's error when one was recorded, else names the endpoint (a kernel a ``bisect-step`` baseline
    does not hold). Before, both said "(not bisected: it does not differ between the endpoints)"."""
    good, bad = {"k": 0.0}, {"k": 32.0, "new": 1.0}
    failed = {"new": "new: frontend failed: boom"}
    reason = decide_values({"k": 32.0}, good, bad, failed, good_failed={"new": "new does not load: typo"})[1]
    assert reason.endswith(
        "; new did not compile here (not bisected: it failed at the good endpoint: new does not load: typo)"
    ), reason
    reason = decide_values({"k": 32.0}, good, {"k": 32.0}, failed)[1]
    assert reason.endswith("; new did not compile here (not bisected: the good endpoint has no value for it)"), reason
    reason = decide_values({"k": 32.0}, {"k": 0.0, "new": 1.0}, {"k": 32.0}, failed, bad_failed={"new": "x"})[1]
    assert reason.endswith("(not bisected: it failed at the bad endpoint: x)"), reason
    no_spill = "new has no spill_store_bytes value: its analysis does not give one"
    reason = decide_values({"k": 32.0}, good, {"k": 32.0}, {"new": no_spill}, good_failed={"new": no_spill})[1]
    assert reason.endswith(
        "; new has no spill_store_bytes value here (not bisected: the good endpoint has no value for it either)"
    ), reason


class FakeCompiler:
    """A FAKE compiler for :class:`FakeMeasurer`: nothing compiles, so the count stays 0."""

    def thread_compiles(self) -> int:
        return 0


class FakeMeasurer:
    """A FAKE ``KernelMeasurer`` for the predicate's bookkeeping: each release's analysis results, given
    (``FakeResult``; ``None`` where the analysis gives no value for the metric); nothing compiles."""

    def __init__(self, table: dict[str, dict[str, float | None]]) -> None:
        self.table = table
        self.compiler = FakeCompiler()

    def measure(self, prepared: Any) -> Any:
        from ktriage.bisect.predicates import Measured

        row = self.table[prepared.candidate.id]
        return Measured({k: FakeResult(v) for k, v in row.items()}, {}, 0)


def test_bisect_keeps_a_kernel_without_a_value_as_left_out_and_warns_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``bisect``'s predicate dropped a kernel whose analysis gives no value for the metric from its values
    without a word, and where that kernel differs between the endpoints the skip said only "kernel blue
    has no value". Now (as bisect-step's measure_here, through the same metric_values) it is kept in the
    observation's ``measurements.failed`` with why, the skip names the kernel and the metric, and one
    warning says so however many candidates lack it."""
    from ktriage.bisect.predicates import MetricPredicate
    from ktriage.bisect.sources import pypi_candidates
    from ktriage.bisect.workspace import Workspace

    table: dict[str, dict[str, float | None]] = {
        "3.3.1": {"red": 0.0, "blue": 8.0},
        "3.4.0": {"red": 48.0, "blue": None},
        "3.5.0": {"red": 48.0, "blue": None},
        "3.5.1": {"red": 48.0, "blue": 16.0},
    }
    candidates = pypi_candidates("triton", "3.3.1", "3.5.1", versions=list(table))
    measurer: Any = FakeMeasurer(table)
    predicate = MetricPredicate("spill_store_bytes", measurer, Workspace(tmp_path / "work"))
    with caplog.at_level("WARNING", logger="ktriage.bisect"):
        result = run_search(candidates, predicate)
    line = "blue has no spill_store_bytes value: its analysis does not give one"
    lacking = [o for o in result.observations if o.candidate.id in ("3.4.0", "3.5.0")]
    assert len(lacking) == 2 and result.status == "ambiguous", result
    for obs in lacking:
        assert obs.outcome == "skip" and obs.reason == line, obs
        assert obs.measurements["failed"] == {"blue": line}, obs.measurements
    warnings = [r.getMessage() for r in caplog.records if "blue" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].startswith(line), warnings
    assert warnings[0].endswith("pick another metric (--metric) (e.g. registers)"), warnings


class FakeValuesPredicate:
    """A FAKE compile-only predicate: each candidate's metric value is given (no compile), judged by the
    real compile-only rule (:func:`decide_values`) and saved as ``MetricPredicate`` saves it."""

    name = "fake-values"

    def __init__(self, values: Sequence[float]) -> None:
        self.values = values

    def _measured(self, c: Candidate) -> Observation:
        return Observation(
            c, "unsure", "measured", {"metric": "spill_store_bytes", "values": {"osm": self.values[c.index]}}
        )

    def preflight(self, good: Candidate, bad: Candidate) -> list[Observation]:
        g, b = self._measured(good), self._measured(bad)
        g.outcome, b.outcome, g.confidence, b.confidence = "good", "bad", 1.0, 1.0
        return [g, b]

    def test(self, candidates: Sequence[Candidate]) -> list[Observation]:
        out = []
        for c in candidates:
            obs = self._measured(c)
            good, bad = {"osm": self.values[0]}, {"osm": self.values[-1]}
            obs.outcome, obs.reason, obs.confidence = decide_values({"osm": self.values[c.index]}, good, bad)
            out.append(obs)
        return out


def test_a_value_outside_the_endpoints_range_is_reported_as_not_monotonic() -> None:
    """``bisect --source pypi:triton --metric spill_store_bytes`` from 3.4.0 (2192 B) to 3.6.0 (2140 B)
    saw 3.5.0 at 1436 B, named it the first bad at confidence 0.52 (closer to the bad end: the
    documented rule, kept) and said nothing of its value lying beyond both endpoints, so its explain (a
    predicted speed-up) read as the regression's cause. The decision's reason, and the report's table,
    markdown and JSON, now say the metric is not monotonic there and the first bad is no step between
    good and bad; a value inside the range gets no such note."""
    from rich.console import Console

    from ktriage.bisect.run import BisectOptions, BisectReport
    from ktriage.report.bisect import print_report, to_json, to_markdown

    cands = [Candidate(i, label, label) for i, label in enumerate(["3.4.0", "3.5.0", "3.6.0"])]
    stage = run_search(cands, FakeValuesPredicate([2192.0, 1436.0, 2140.0]))
    assert stage.status == "culprit" and stage.culprit is not None and stage.culprit.label == "3.5.0"
    assert stage.confidence is not None and round(stage.confidence, 2) == 0.52
    culprit = stage.observation(1)
    assert culprit is not None and "outside the endpoints' range: osm 1436 (good 2192, bad 2140)" in culprit.reason
    report = BisectReport(BisectOptions(source="pypi:triton", good="3.4.0", bad="3.6.0"), [stage], ["releases"])
    note = "not monotonic: spill_store_bytes lies outside the endpoints' range (2192 at good, 2140 at bad) at 3.5.0: osm=1436"
    first_bad = "the first bad, 3.5.0, is then no step between good and bad"
    again = "to find where the value reaches the bad one, bisect again with --good 3.5.0"
    doc = to_json(report)
    assert doc["stages"][0]["outside_endpoints"] == [  # type: ignore[index]
        {"candidate": cands[1].to_json(), "values": {"osm": 1436.0}}
    ]
    notes = doc["notes"]
    assert isinstance(notes, list) and len(notes) == 1 and note in str(notes[0]) and first_bad in str(notes[0])
    markdown = to_markdown(report)
    assert f"Note: {note}" in markdown and first_bad in markdown and again in markdown
    console = Console(record=True, width=400)
    print_report(report, console)
    table = console.export_text()
    assert note in table and first_bad in table

    inside = run_search(cands, FakeValuesPredicate([2192.0, 2150.0, 2140.0]))
    assert inside.culprit is not None and inside.culprit.label == "3.5.0" and not inside.outside_endpoints()
    plain = BisectReport(BisectOptions(source="pypi:triton", good="3.4.0", bad="3.6.0"), [inside], ["releases"])
    assert "not monotonic" not in to_markdown(plain) and to_json(plain)["notes"] == []
