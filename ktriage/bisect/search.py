"""The search: preflight, binary or k-ary rounds, skips, and a state file written after every step.

Model: candidates ``0 .. N-1`` with 0 known good and N-1 known bad; the first bad candidate is the
culprit. ``lo`` is the highest tested-good index below ``hi``, the lowest tested-bad index. Each
round tests ``k`` untested candidates of ``(lo, hi)`` nearest to the points that split it into
``k + 1`` equal parts (k = 1: plain bisection). ``skip`` and ``unsure`` candidates are routed
around like ``git bisect skip``. The search ends when nothing untested is left in ``(lo, hi)``:
if ``hi == lo + 1`` the culprit is ``hi`` (its predecessor ``lo``), both decided by data; otherwise
the culprit is one of ``lo+1 .. hi`` and that exact range is reported, never a guess.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypedDict, cast

from ktriage import progress
from ktriage.atomic import write_atomic
from ktriage.bisect.candidate import Candidate, Observation, Predicate
from ktriage.bisect.outside import outside_endpoints, saved_values
from ktriage.errors import (
    FormatError,
    KtriageError,
    Worded,
    check_format_version,
    joined,
    option,
    separated,
    spelled,
    worded,
)
from ktriage.schema.bisect_state import FIX as STATE_FIX
from ktriage.schema.bisect_state import BisectStateSchema
from ktriage.schema.core import check_depth, convert, parse_json, read_text, size_limit
from ktriage.schema.jsontypes import JSONObject
from ktriage.schema.kinds import BISECT_STATE, check_not_data, data_kind, file_head
from ktriage.wording import plural

STATE_VERSION = 1
Status = Literal["culprit", "ambiguous"]


def choose_points(lo: int, hi: int, untested: Sequence[int], k: int) -> list[int]:
    """Up to ``k`` untested indices nearest to ``lo + (hi - lo) * j / (k + 1)``, j = 1..k (ties: lower)."""
    pool = sorted(untested)
    if len(pool) <= k:
        return pool
    picks: list[int] = []
    for j in range(1, k + 1):
        target = lo + (hi - lo) * j / (k + 1)
        best = min((i for i in pool if i not in picks), key=lambda i: (abs(i - target), i))
        picks.append(best)
    return sorted(picks)


def bounds(known: dict[int, Observation], n: int) -> tuple[int, int]:
    """(lo, hi): the lowest bad index and the highest good index below it."""
    bads = [i for i, o in known.items() if o.outcome == "bad"]
    hi = min(bads) if bads else n - 1
    goods = [i for i, o in known.items() if o.outcome == "good" and i < hi]
    lo = max(goods) if goods else 0
    return lo, hi


@dataclass
class StageResult:
    """The outcome of one bisect stage (one candidate list)."""

    status: Status
    lo: int
    hi: int
    candidates: list[Candidate]
    observations: list[Observation]  # preflight first, then round by round
    rounds: int
    tested: int  # candidates tested after the endpoints
    non_monotonic: list[int] = field(default_factory=list)  # "good" candidates above the first bad
    # the observations read back from the state (--resume): their cost was paid by earlier runs
    resumed: list[Observation] = field(default_factory=list)

    @property
    def culprit(self) -> Candidate | None:
        return self.candidates[self.hi] if self.status == "culprit" else None

    @property
    def predecessor(self) -> Candidate | None:
        return self.candidates[self.lo] if self.status == "culprit" else None

    @property
    def range(self) -> list[Candidate]:
        """The candidates that may be the culprit: ``lo+1 .. hi``."""
        return self.candidates[self.lo + 1 : self.hi + 1]

    def observation(self, index: int) -> Observation | None:
        found = [o for o in self.observations if o.candidate.index == index]
        return found[-1] if found else None

    @property
    def confidence(self) -> float | None:
        if self.status != "culprit":
            return None
        confs = [o.confidence for o in (self.observation(self.lo), self.observation(self.hi)) if o is not None]
        return min((c for c in confs if c is not None), default=None)

    def outside_endpoints(self) -> dict[int, dict[str, float]]:
        """The tested candidates (by index) whose metric value lies outside the endpoints' range, with
        those values (:mod:`ktriage.bisect.outside`: the metric is not monotonic there, and a "first
        bad" among them is no step between good and bad). Empty for a predicate that saves no values
        (timing, a command) and before the preflight; a skipped candidate was not judged."""
        if len(self.observations) < 2:
            return {}
        good, bad = (saved_values(o) for o in self.observations[:2])  # the preflight: good, then bad
        out: dict[int, dict[str, float]] = {}
        for o in self.observations[2:]:
            if o.outcome != "skip" and (beyond := outside_endpoints(saved_values(o), good, bad)):
                out[o.candidate.index] = beyond
        return dict(sorted(out.items()))

    def cost(self, *, this_run: bool = False) -> dict[str, float]:
        """What the stage's observations cost, over every run of its state; ``this_run``: only those this
        run measured (a --resume reads the others back: their compiles were run before)."""
        total: dict[str, float] = {}
        earlier = {id(o) for o in self.resumed} if this_run else set()
        for o in self.observations:
            if id(o) in earlier:
                continue
            for k, v in o.cost.items():
                total[k] = total.get(k, 0) + v
        return total

    def to_json(self) -> JSONObject:
        return {
            "status": self.status,
            "culprit": self.culprit.to_json() if self.culprit else None,
            "predecessor": self.predecessor.to_json() if self.predecessor else None,
            "range": [c.to_json() for c in self.range],
            "confidence": self.confidence,
            "rounds": self.rounds,
            "tested": self.tested,
            "candidates": len(self.candidates),
            "non_monotonic": [self.candidates[i].to_json() for i in self.non_monotonic],
            "outside_endpoints": [
                {"candidate": self.candidates[i].to_json(), "values": dict(values)}
                for i, values in self.outside_endpoints().items()
            ],
            "cost": self.cost(),
            "observations": [o.to_json() for o in self.observations],
        }


# --------------------------------------------------------------------------- state file

# The state file's options as its messages name them (ktriage.errors.option): kt.bisect(state=...,
# resume=True) meets these refusals too, and a flag alone names an option a library caller cannot pass.
_STATE, _RESUME = option("state", "--state"), option("resume", "--resume")


def _state(path: Path) -> Worded:
    """``state='PATH' (--state PATH)``: the state file a message is about, as both callers give it."""
    return option("state", "--state", str(path))


MAX_STATE_MB = 256  # KTRIAGE_MAX_INPUT_MB sets it


class SearchRecord(TypedDict, total=False):
    """What :func:`run_search` saves of one search: the endpoints' and each round's observations
    (``Observation.to_json``), then its result (status, lo, hi)."""

    preflight: list[JSONObject] | None
    rounds: list[list[JSONObject]]
    result: JSONObject | None


class StageRecord(SearchRecord):
    """One stage in the state file: its name and candidates (``Candidate.to_json``), and its search."""

    name: str
    candidates: list[JSONObject]


class _StateBase(TypedDict):
    format_version: int
    fingerprint: JSONObject  # the question (run.py's _fingerprint): its keys are the options
    stages: list[StageRecord]
    result: JSONObject | None  # the bisect's outcome (found, stage, culprit), once it ended


class StateData(_StateBase, total=False):
    """The state file's document (its schema, checked on resume: ``ktriage.schema.bisect_state``)."""

    updated: str  # when it was last written (UTC, ISO 8601)


class StateFile:
    """The bisect state as JSON, rewritten atomically after every step (a kill loses one round).

    ``fingerprint`` identifies the question (source, range, predicate, kernels); ``--resume`` refuses
    a state made for another question rather than mixing answers.
    """

    def __init__(self, path: Path, fingerprint: JSONObject) -> None:
        self.path = path
        self.fingerprint = fingerprint
        self.data: StateData = {
            "format_version": STATE_VERSION,
            "fingerprint": fingerprint,
            "stages": [],
            "result": None,
        }

    @classmethod
    def resume(cls, path: Path, fingerprint: JSONObject) -> StateFile:
        state = cls(path, fingerprint)
        if not path.exists():
            raise FormatError(
                f"no bisect state at {path} to resume",
                worded(
                    lambda o: f"run without {spelled(_RESUME, o)} first (or give the same {spelled(_STATE, o)} path)"
                ),
            )
        data = _existing_state(path, resume=True)
        if data is None:
            raise FormatError(
                f"bisect state {path} is empty: there is nothing to resume",
                worded(lambda o: f"run without {spelled(_RESUME, o)} to start over there"),
            )
        if data.get("fingerprint") != fingerprint:
            stored = data.get("fingerprint", {})
            diff = sorted(k for k in set(fingerprint) | set(stored) if fingerprint.get(k) != stored.get(k))
            raise FormatError(
                worded(
                    lambda o: (
                        f"bisect state {path} was made for another bisect: {spelled(_describe_bisect(stored), o)}, "
                        f"{_recorded(data)} (differs in: {', '.join(diff)})"
                    )
                ),
                worded(
                    lambda o: (
                        f"resume it with its own options; to start this bisect, give another {spelled(_STATE, o)} path "
                        f"(or delete {path} to discard that one)"
                    )
                ),
            )
        state.data = data
        return state

    @classmethod
    def start(cls, path: Path, fingerprint: JSONObject) -> StateFile:
        """A new state at ``path`` (a ``--state`` the user named), refused where ``path`` already holds a
        bisect's measurements: starting over there threw away rounds that cost builds, compiles or GPU
        time, of this bisect or of another one, without a word. A missing or empty file, or a state that
        holds no measurement yet, is started over as before; a file that holds anything else, or a state
        that cannot be read, is refused too (:func:`_existing_state`)."""
        data = _existing_state(path, resume=False)
        if data is not None and _tested(data) > 0:
            stored = data.get("fingerprint", {})
            same = stored == fingerprint
            which = "this bisect" if same else "another bisect"
            raise KtriageError(
                worded(
                    lambda o: (
                        f"{spelled(_state(path), o)} already holds {which}: {spelled(_describe_bisect(stored), o)}, {_recorded(data)}; "
                        "starting over would discard them"
                    )
                ),
                (worded(lambda o: f"add {o('resume', '--resume', True)} to continue it; ") if same else "")
                + worded(lambda o: f"to start over, give another {spelled(_STATE, o)} path or delete {path}")
                + (
                    ""
                    if same
                    else worded(lambda o: f" ({spelled(_RESUME, o)} continues that bisect only with its own options)")
                ),
            )
        return cls(path, fingerprint)

    def stage(self, number: int, name: str, candidates: Sequence[Candidate]) -> StageRecord:
        """The saved record of stage ``number``, created (or checked) for these candidates."""
        stages = self.data["stages"]
        ids = [c.id for c in candidates]
        if number < len(stages):
            record = stages[number]
            if [c["id"] for c in record["candidates"]] != ids:
                raise FormatError(
                    f"bisect state {self.path}: stage {name} lists other candidates than now",
                    worded(
                        lambda o: (
                            f"the history or the index changed; start again with another {spelled(_STATE, o)} path (or delete {self.path})"
                        )
                    ),
                )
            return record
        del stages[number:]
        record = {
            "name": name,
            "candidates": [c.to_json() for c in candidates],
            "preflight": None,
            "rounds": [],
            "result": None,
        }
        stages.append(record)
        self.save()
        return record

    def measured(self) -> tuple[int, int]:
        """(candidates measured, endpoints included; rounds) that this state holds, of every stage."""
        return _tested(self.data), sum(len(stage.get("rounds", [])) for stage in self.data["stages"])

    def save(self) -> None:
        self.data["updated"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, json.dumps(self.data, indent=1))


def _existing_state(path: Path, *, resume: bool) -> StateData | None:
    """The bisect state ``--state`` names, None where there is none (no file, an empty one). A file
    that holds something else (a bench results file, a workload, a report: ``schema.kinds``) is
    refused naming what it holds, and a state that cannot be read (cut short, hand-edited, of another
    format) naming why: starting a bisect there replaced either without a word, and ``--resume`` said
    to delete a results file. Checked before anything is built or measured."""
    head = file_head(path)
    if not head:
        return None
    kind = data_kind(head)
    other = worded(
        lambda o: (
            f"give another {spelled(_STATE, o)} path, e.g. {spelled(_state(path.with_name(path.stem + '-bisect.json')), o)}"
        )
    )
    if kind is not None and kind != BISECT_STATE:
        if resume:
            raise FormatError(
                worded(
                    lambda o: f"{spelled(_state(path), o)} is {kind}, not a bisect state: there is nothing to resume"
                ),
                worded(lambda o: f"give the {spelled(_STATE, o)} path the bisect was started with"),
            )
        check_not_data(
            path, _STATE, allowed=(BISECT_STATE, None), written="the bisect state", fix=other, named=_state(path)
        )
    try:
        return _read_state(path)
    except KtriageError as exc:
        if kind == BISECT_STATE or b'"fingerprint"' in head:  # a state, cut short or of another format
            if resume:
                raise
            raise KtriageError(
                joined(
                    _state(path),
                    " holds a bisect state that cannot be read (",
                    exc.problem,
                    "): starting over would replace it",
                ),
                worded(lambda o: f"give another {spelled(_STATE, o)} path, or delete {path} to start over there"),
            ) from None
        first = next((line.strip() for line in head.decode("utf-8", "replace").splitlines() if line.strip()), "")
        what = f"is no bisect state (it begins {first[:60]!r})"
        if resume:
            raise FormatError(
                worded(lambda o: f"{spelled(_state(path), o)} {what}: there is nothing to resume"),
                worded(lambda o: f"give the {spelled(_STATE, o)} path the bisect was started with"),
            ) from None
        raise KtriageError(
            worded(lambda o: f"{spelled(_state(path), o)} exists and {what}: the bisect state would replace it"), other
        ) from None


def _read_state(path: Path) -> StateData:
    """The state document at ``path``, its types and format version checked (FormatError naming the fix)."""
    origin = f"bisect state {path}"
    text = read_text(path, what="bisect state", limit=size_limit(MAX_STATE_MB), fix=STATE_FIX)
    data = parse_json(text, origin=origin, fix=STATE_FIX)
    check_depth(data, origin=origin)
    convert(data, BisectStateSchema, origin=origin, fix=STATE_FIX)  # types checked; the document is kept whole
    check_format_version(
        data,
        STATE_VERSION,
        what=f"bisect state {path}",
        legacy_keys=("version",),
        fix=STATE_FIX,
    )
    return cast(StateData, data)  # its types checked by the schema above


def _tested(data: StateData) -> int:
    """How many candidates a state holds results of (the endpoints' and every round's)."""
    return sum(
        len(stage.get("preflight") or []) + sum(len(r) for r in stage.get("rounds", [])) for stage in data["stages"]
    )


def _recorded(data: StateData) -> str:
    """What a state holds, for a message: its rounds and measured candidates, and whether it ended."""
    rounds = sum(len(stage.get("rounds", [])) for stage in data["stages"])
    tested = _tested(data)
    ended = "finished" if data.get("result") else "not finished"
    return f"{plural(rounds, 'round')} recorded ({plural(tested, 'candidate')} tested, endpoints included; {ended})"


def _describe_bisect(fingerprint: JSONObject) -> Worded:
    """A bisect's question as its options spell it (source, ends, predicate, kernels), from the
    fingerprint a state file keeps: which bisect a state belongs to, in a message. Each option as
    kt.bisect's keyword and the command's flag (``metric='latency' (--metric latency)``): the message
    reaches both, and a flag alone named an option a library caller cannot pass."""

    def get(key: str) -> str:
        value = fingerprint.get(key)
        return "" if value is None or value is False else str(value)

    words: list[str] = [f"{get('source') or '?'} {get('good') or '?'}..{get('bad') or '?'}"]
    for key in ("metric", "command", "op", "mode"):
        if get(key) and (key != "mode" or get("op")):  # the pass of an op's kernels (a spec file names its own)
            words.append(option(key, f"--{key}", get(key)))
    inputs = fingerprint.get("inputs")
    if isinstance(inputs, list) and inputs:
        words.append(option("inputs", "--input", [str(i) for i in inputs]))
    for key in ("spec", "backend", "toolchain"):
        if get(key):
            words.append(option(key, f"--{key}", get(key)))
    return Worded(separated(" ", words))


# --------------------------------------------------------------------------- the search

RoundHook = Callable[[int, list[Observation]], None]


def run_search(
    candidates: Sequence[Candidate],
    predicate: Predicate,
    *,
    workers: int = 1,
    record: SearchRecord | None = None,
    save: Callable[[], None] | None = None,
    on_round: RoundHook | None = None,
    max_rounds: int = 10_000,
) -> StageResult:
    """Bisect ``candidates`` (0 good .. N-1 bad) with ``predicate``; see the module docstring.

    ``record``: the stage's saved state (``StateFile.stage``); observations found there are reused
    and not tested again, new ones are appended and ``save`` is called after every step.
    """
    cands = list(candidates)
    n = len(cands)
    if n < 2:
        raise KtriageError("a bisect needs at least two candidates (the good and the bad endpoint)", "widen the range")
    record = record if record is not None else {"preflight": None, "rounds": []}
    persist = save or (lambda: None)
    k = max(1, workers)

    with progress.task(f"bisect {n} candidates") as step:  # a round compiles (or builds) its candidates: minutes
        resumed: list[Observation] = []
        if saved_preflight := record.get("preflight"):
            pre = [Observation.from_json(o) for o in saved_preflight]
            restore = getattr(predicate, "restore", None)  # optional: re-arm from the saved endpoints
            if callable(restore):
                restore(pre[0], pre[1])
                resumed += pre
            else:  # a predicate that cannot restore its endpoints measures them again
                pre = predicate.preflight(cands[0], cands[-1])
                record["preflight"] = [o.to_json() for o in pre]
                persist()
        else:
            step.say(f"preflight: {cands[0].label} and {cands[-1].label}")
            pre = predicate.preflight(cands[0], cands[-1])
            record["preflight"] = [o.to_json() for o in pre]
            persist()
        if on_round is not None:
            on_round(0, pre)

        known: dict[int, Observation] = {0: pre[0], n - 1: pre[1]}
        observations = list(pre)
        rounds = 0
        for saved in record.get("rounds", []):
            batch = [Observation.from_json(o) for o in saved]
            resumed += batch
            rounds += 1
            for o in batch:
                known[o.candidate.index] = o
            observations += batch
        while rounds < max_rounds:
            lo, hi = bounds(known, n)
            untested = [i for i in range(lo + 1, hi) if i not in known]
            if not untested:
                break
            picks = choose_points(lo, hi, untested, k)
            step.say(f"round {rounds + 1}: {', '.join(cands[i].label for i in picks)} ({len(untested)} untested left)")
            batch = predicate.test([cands[i] for i in picks])
            if len(batch) != len(picks):
                raise RuntimeError(
                    f"predicate {predicate.name} returned {plural(len(batch), 'observation')} for {plural(len(picks), 'candidate')}"
                )
            rounds += 1
            for o in batch:
                known[o.candidate.index] = o
            observations += batch
            record.setdefault("rounds", []).append([o.to_json() for o in batch])
            persist()
            if on_round is not None:
                on_round(rounds, batch)
    lo, hi = bounds(known, n)
    status: Status = "culprit" if hi == lo + 1 else "ambiguous"
    non_mono = sorted(i for i, o in known.items() if o.outcome == "good" and i > hi)
    result = StageResult(status, lo, hi, cands, observations, rounds, len(observations) - len(pre), non_mono, resumed)
    record["result"] = {"status": status, "lo": lo, "hi": hi}
    persist()
    return result
