"""An entry point's arguments checked as the command checks its flags, in one place.

Why: typer gives the command's verbs what they expect (a repeated ``--input`` is a list, ``-j 0`` is
refused, ``--input-id abc`` is no int), while a Python caller's values reach the lower layers as
they are: ``inputs="12"`` was iterated as the inputs ``1`` and ``2``, ``toolchains="triton==3.4.0"``
as the toolchain ``t``, ``cache_gc(older_than_days=-1)`` listed the whole cache for removal and
``threshold="0.05"`` ended in a bare ``ValueError``. Every entry point of ``ktriage.api`` passes its
arguments through these helpers before it starts, and the command (which calls the entry points)
gets the same checks.

- :func:`texts` / :func:`paths`: a sequence of strings or paths; a lone ``str`` (or ``Path``) is ONE
  item (``inputs="7"`` is ``["7"]``), as ``bisect(inputs=...)`` always read it;
- :func:`text` / :func:`path_or_name`: one required string (a ``Path`` too where a path or a name is
  taken);
- :class:`Whole` / :class:`Real`: a number and its range; each range is one constant here
  (:data:`JOBS`, :data:`INPUT_ID`...), the command's typer ``min=``/``max=`` mirror them
  (tests/api/test_arguments.py keeps them in step);
- :func:`optional_text`: a string that may be left out (None); :func:`optional_path`: a file that
  may be (a Path); :func:`switch`: True or False only (``fix="no"``
  was read for its truth);
- :func:`model`: the cost model's file, read (refused) before any compile;
- :func:`arch`: a GPU target in any spelling ``--arch`` takes (``9.0``, ``90``, ``cuda:90``);
- :func:`entry_point`: the call itself (a keyword the verb does not take, a positional argument, a
  required keyword left out), refused as a :class:`~ktriage.errors.CallError` naming the keyword meant.

The messages name the keyword and the flag (``num_inputs (--num-inputs) 0 ...``): the same error
reaches a Python caller and a command-line user. :func:`ktriage.errors.option` spells them (every
message of the api and of the layers below it that names an option: ``limit=20 (--limit 20)``). Numbers are not converted from strings: a ``"7"``
is refused with the fix, as a caller passing text where a number goes has usually mixed up
arguments.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ParamSpec, TypeVar

from ktriage.errors import CallError, KtriageError, joined, option, spelled, worded
from ktriage.wording import agree

_F = TypeVar("_F")
_P = ParamSpec("_P")
_R = TypeVar("_R")

__all__ = [
    "BUDGET",
    "BUILD_TIMEOUT",
    "COMPILE_TIMEOUT",
    "CONFIDENCE",
    "FAIL_ON_RECENT",
    "INPUT_ID",
    "JOBS",
    "LEVEL",
    "LIMIT",
    "MAX_PVALUE",
    "MAX_SAMPLES",
    "MAX_SPILL_BYTES",
    "MAX_TIME",
    "MIN_SAMPLES",
    "MIN_SEGMENT",
    "MIN_STEP",
    "NUM_INPUTS",
    "OLDER_THAN_DAYS",
    "SM_COUNT",
    "THRESHOLD",
    "TIMEOUT",
    "TOP_K",
    "TRIAGE_LIMIT",
    "WARMUP",
    "WORKERS",
    "Real",
    "Whole",
    "arch",
    "callback",
    "entry_point",
    "option",
    "optional_path",
    "optional_text",
    "path_or_name",
    "paths",
    "switch",
    "text",
    "texts",
    "wholes",
]


def _kind(value: object) -> str:
    """``None``, ``a str``, ``an int``: what was given instead."""
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[:1] in 'aeiou' else 'a'} {name}"


def _many(value: object, name: str, flag: str | None, what: str) -> Iterable[object]:
    """``value`` as the items it holds: a sequence, set or generator is many; a mapping or bytes is no
    sequence of items a verb reads (its keys would be iterated)."""
    if isinstance(value, bytes | bytearray | Mapping) or not isinstance(value, Iterable):
        raise KtriageError(
            worded(lambda o: f"{o(name, flag)} is {_kind(value)}, not a list of {what}"),
            f"pass a list ({name}=[...]), or one {what[:-1]} as a str",
        )
    return value


def texts(value: object, name: str, flag: str | None = None, *, numbers: bool = False) -> tuple[str, ...]:
    """A sequence of strings (``toolchains``, ``inputs``, ``kernels``...): None is none, a lone ``str``
    is one item (never its characters). ``numbers``: an int is the text of it (``inputs=[7]``, an
    input id; ``inputs=7``)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if numbers and isinstance(value, int) and not isinstance(value, bool):
        return (str(value),)
    out: list[str] = []
    for item in _many(value, name, flag, "strings"):
        if isinstance(item, str):
            out.append(item)
        elif numbers and isinstance(item, int) and not isinstance(item, bool):
            out.append(str(item))
        else:
            raise KtriageError(
                joined(option(name, flag), f": the item {item!r} is {_kind(item)}, not a str"),
                f"pass {name} as a list of strings" + (" (input ids may be ints)" if numbers else ""),
            )
    return tuple(out)


def paths(value: object, name: str, flag: str | None = None) -> tuple[Path, ...]:
    """A sequence of files (``traces``, ``from_cells``, ``results``...): None is none, a lone ``str`` or
    ``Path`` is one file."""
    if value is None:
        return ()
    if isinstance(value, str | os.PathLike):
        return (Path(value),)
    out: list[Path] = []
    for item in _many(value, name, flag, "paths"):
        if not isinstance(item, str | os.PathLike):
            raise KtriageError(
                joined(option(name, flag), f": the item {item!r} is {_kind(item)}, not a path"),
                f"pass {name} as a list of paths (str or pathlib.Path)",
            )
        out.append(Path(item))
    return tuple(out)


def text(value: object, name: str, flag: str | None = None, *, example: str = "") -> str:
    """One required string (an op, a run id, a toolchain spec): None or another type is refused,
    naming the argument."""
    if isinstance(value, str):
        return value
    hint = f", e.g. {name}={example!r}" if example else ""
    raise KtriageError(
        worded(lambda o: f"{o(name, flag)} is {_kind(value)}, not a str"), f"pass {name} as one string{hint}"
    )


def optional_text(value: object, name: str, flag: str | None = None, *, example: str = "") -> str | None:
    """One string that may be left out (``op``, ``mode``, ``reference``...): None is not given; another
    type is refused naming the argument (``op=["layer_norm"]`` was ``unhashable type: 'list'``)."""
    return None if value is None else text(value, name, flag, example=example)


def db(value: object) -> str | None:
    """The ``db`` keyword of a verb: None (``$KTRIAGE_DB``, else the home's store) or a URL string; a
    ``pathlib.Path`` or another type is refused by the store's own check, whose fix names the file's URL
    (``db='sqlite:////abs/team.db'``), more than "pass one string" would."""
    from ktriage.store.engine import check_db

    if isinstance(value, os.PathLike):
        return check_db(value)
    return optional_text(value, "db", "--db", example="sqlite:///ktriage.db")


def switch(value: object, name: str, flag: str | None = None) -> bool:
    """A switch (``toolchains`` in compare, ``fix``, ``dry_run``): True or False only. Why: any other value
    was read for its truth, so ``cache_verify(fix="no")`` fixed the cache and ``compare(toolchains=[...])``
    compared every toolchain of the run against its first, whichever were named."""
    if isinstance(value, bool):
        return value
    raise KtriageError(
        worded(lambda o: f"{o(name, flag)} is {_kind(value)} ({value!r}), not True or False"),
        f"pass {name}=True or {name}=False",
    )


def callback(value: _F, name: str = "say") -> _F:
    """A function the verb calls with its progress (``say``: each message; ``on_row``: each row), or None.
    Why: ``say=True`` (meant as "verbose") ran the whole verb and then failed with ``'bool' object is not
    callable`` at its first message."""
    if value is None or callable(value):
        return value
    raise KtriageError(
        f"{name} is {_kind(value)} ({value!r}), not a function: the verb calls it with each message",
        f"pass {name}=print (or any function of one str), or leave {name} out for none",
    )


def path_or_name(value: object, name: str, flag: str | None = None, *, example: str = "") -> str:
    """A target taken as a path or a name (``liger.layer_norm``, ``spec.toml``, ``W.json``): a ``Path``
    is its text; None or another type is refused, naming the argument."""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, str):
        return value
    hint = f", e.g. {name}={example!r}" if example else ""
    raise KtriageError(
        worded(lambda o: f"{o(name, flag)} is {_kind(value)}, not a str or a path"),
        f"pass {name} as a str or a pathlib.Path{hint}",
    )


def optional_path(value: object, name: str, flag: str | None = None) -> Path | None:
    """A file or folder that may be left out (``state``, ``bundle``, ``results_path``...), as a Path:
    None is not given; another type than str or Path is refused naming the argument
    (``state=["s.json"]`` was ``TypeError: expected str, bytes or os.PathLike object`` from pathlib)."""
    return None if value is None else Path(path_or_name(value, name, flag))


def model(value: object) -> str | None:
    """The cost model's file (``model=``, ``--model``) of explain, triage and tune, read now: a file that is no
    model is refused before any toolchain is built (not after minutes of compiles); None: ``$KTRIAGE_MODEL``,
    else the shipped fit (``ktriage.predict.model.model_path``), read now too, for the same reason."""
    from ktriage.predict.model import load_params

    path = None if value is None else path_or_name(value, "model", "--model", example="model.json")
    load_params(path)
    return path


def arch(value: object, name: str = "arch", flag: str | None = "--arch") -> str:
    """A GPU target in any spelling ``--arch`` takes, as its name (``9.0`` -> ``sm_90``; ``sm_90a``
    keeps its ``a``): the lower layers (the catalog, a spec's ``target``) read only names."""
    from ktriage.api._checks import normalize_arch

    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    return normalize_arch(text(value, name, flag, example="sm_90"))


def _number(value: object, name: str, flag: str | None, whole: bool, wanted: str) -> float:
    """``value`` if it is a finite number (an int where ``whole``); bool, str and nan are refused.
    ``wanted``: the range, for the fix."""
    kind = "an int" if whole else "a number"
    if isinstance(value, bool) or not isinstance(value, int | float) or (whole and not isinstance(value, int)):
        spelled = f" ({name}={value.strip()})" if isinstance(value, str) and value.strip() else ""
        raise KtriageError(
            worded(lambda o: f"{o(name, flag)} {value!r} is {_kind(value)}, not {kind}"),
            f"pass {wanted}, not its text{spelled}",
        )
    if not math.isfinite(value):
        raise KtriageError(worded(lambda o: f"{o(name, flag)} {value!r} is not a finite number"), f"give {wanted}")
    return value


@dataclass(frozen=True)
class Whole:
    """An int argument and its range (``low``/``high`` included; None: unbounded)."""

    name: str
    flag: str | None
    low: int | None = None
    high: int | None = None
    example: int | None = None
    below: str = "is out of range"  # what a value below ``low`` does ("lists no run")

    def range_text(self) -> str:
        if self.low is not None and self.high is not None:
            return f"an int from {self.low} to {self.high}"
        if self.low is not None:
            return f"an int >= {self.low}"
        return f"an int <= {self.high}" if self.high is not None else "an int"

    def __call__(self, value: object) -> int:
        number = int(_number(value, self.name, self.flag, True, self.range_text()))
        below = self.low is not None and number < self.low
        if below or (self.high is not None and number > self.high):
            example = (
                worded(lambda o: f", e.g. {o(self.name, self.flag, self.example)}") if self.example is not None else ""
            )
            raise KtriageError(
                worded(lambda o: f"{o(self.name, self.flag)} {number} {self.below if below else 'is out of range'}"),
                worded(lambda o: f"give {self.range_text()}{spelled(example, o)}"),
            )
        return number

    def optional(self, value: object) -> int | None:
        """None (not given) or a checked value."""
        return None if value is None else self(value)


@dataclass(frozen=True)
class Real:
    """A float argument (an int is one too) and its range; ``open_low``/``open_high``: that end is
    excluded. nan and the infinities are refused whatever the range."""

    name: str
    flag: str | None
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    example: float | None = None

    def range_text(self) -> str:
        lo = None if self.low is None else f"{'>' if self.open_low else '>='} {self.low:g}"
        hi = None if self.high is None else f"{'<' if self.open_high else '<='} {self.high:g}"
        if lo and hi:
            left, right = "(" if self.open_low else "[", ")" if self.open_high else "]"
            return f"a number in {left}{self.low:g}, {self.high:g}{right}"
        return f"a number {lo or hi}" if (lo or hi) else "a finite number"

    def __call__(self, value: object) -> float:
        number = _number(value, self.name, self.flag, False, self.range_text())
        below = self.low is not None and (number <= self.low if self.open_low else number < self.low)
        above = self.high is not None and (number >= self.high if self.open_high else number > self.high)
        if below or above:
            example = (
                worded(lambda o: f", e.g. {o(self.name, self.flag, self.example)}") if self.example is not None else ""
            )
            raise KtriageError(
                worded(lambda o: f"{o(self.name, self.flag)} {number:g} is out of range"),
                worded(lambda o: f"give {self.range_text()}{spelled(example, o)}"),
            )
        return float(number)

    def optional(self, value: object) -> float | None:
        """None (not given) or a checked value."""
        return None if value is None else self(value)


def wholes(value: object, check: Whole) -> tuple[int, ...] | None:
    """A sequence of ints (``tune(warps=[4, 8])``), each checked by ``check``; a lone int is one item,
    None is none given."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return (check(value),)
    return tuple(check(item) for item in _many(value, check.name, check.flag, "ints"))


# ------------------------------------------------------------------------------------------ the ranges
# One constant per range; ktriage.cli's typer min=/max= say the same (tests/api/test_arguments.py).
INPUT_ID = Whole("input_id", "--input-id", low=0, example=7)
NUM_INPUTS = Whole("num_inputs", "--num-inputs", low=1, example=1, below="selects no input")
JOBS = Whole("jobs", "--jobs", low=1, high=1024, example=8)
COMPILE_TIMEOUT = Real("compile_timeout", "--compile-timeout", low=1.0, high=86400.0, example=300)
# 0 days: every entry not used in the last instant; negative ages would list the whole cache
OLDER_THAN_DAYS = Real("older_than_days", "--older-than", low=0.0, example=30)
MIN_SEGMENT = Whole("min_segment", "--min-segment", low=1, example=2)
FAIL_ON_RECENT = Whole("fail_on_recent", "--fail-on-recent", low=1, example=3)
MAX_PVALUE = Real("max_pvalue", "--max-pvalue", low=0.0, high=1.0, open_low=True, example=0.001)
MIN_STEP = Real("min_step", "--min-step", low=0.0, example=5)
MAX_TIME = Real("max_time", "--max-time", low=0.0, open_low=True, example=10)
MIN_SAMPLES = Whole("min_samples", "--min-samples", low=1, example=10)
# tune: checked in the timing step only, after every candidate had compiled (minutes) for nothing
BUDGET = Real("budget", "--budget", low=0.0, open_low=True, example=10)
# bisect: workers=0 ran one at a time (a silent max(1, ...)) and workers=2.5 reached the thread pool; a bool
# was read as 1 or 0
WORKERS = Whole("workers", "--workers", low=1, example=3)
# bisect: the verdict needs 10 samples per variant (ktriage.stats.verdict.VerdictConfig.min_samples; a test keeps
# them in step); fewer were refused only when the timed predicate was built, 0 or a float not at all
MAX_SAMPLES = Whole("max_samples", "--max-samples", low=10, example=200)
# bisect: a limit of 0 or less killed every build or command at once, each candidate a skip ("timed out after -1 s")
TIMEOUT = Real("timeout", "--timeout", low=0.0, open_low=True, example=300)
BUILD_TIMEOUT = Real("build_timeout", "--build-timeout", low=0.0, open_low=True, example=3600)
# a coverage: 0 would be a zero-width interval, 1 an infinite one, 80 (a percent) a meaningless one
LEVEL = Real("level", "--level", low=0.0, high=1.0, open_low=True, open_high=True, example=0.8)
LIMIT = Whole("limit", "--limit", low=1, example=20, below="lists no run")
WARMUP = Whole("warmup", "--warmup", low=0, high=10_000, example=3)
SM_COUNT = Whole("sm_count", "--sm-count", low=1, example=132)
TOP_K = Whole("top_k", "--top-k", low=1, example=5, below="keeps nothing")
MAX_SPILL_BYTES = Whole("max_spill_bytes", "--max-spill-bytes", low=0, example=0)
# ranges checked by their own module (ktriage.stats.gate, ktriage.compare.run): the type here
THRESHOLD = Real("threshold", "--threshold")
CONFIDENCE = Real("confidence", "--confidence")
TRIAGE_LIMIT = Whole("limit", "--limit")  # triage's: the flagged cells its GPU re-run bundles (ktriage.triage.pipeline)


def entry_point(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """``func`` (a verb of ``ktriage.api``) with its call checked before it runs: an unknown keyword, a
    positional argument or a missing required keyword is a :class:`~ktriage.errors.CallError` naming the
    keyword meant. Why: ``kt.explain(toolchain=[...])`` was Python's ``TypeError: explain() got an
    unexpected keyword argument 'toolchain'``, which names the mistake but not the fix (``toolchains``),
    and the verbs' keywords are many. A call that binds runs ``func`` untouched."""
    signature = inspect.signature(func)

    @functools.wraps(func)
    def checked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise _call_error(func.__name__, signature, len(args), list(kwargs), exc) from None
        return func(*args, **kwargs)

    return checked


def _call_error(
    name: str, signature: inspect.Signature, positional: int, given: list[str], exc: TypeError
) -> CallError:
    """The CallError of a call that does not bind: what is wrong and the keyword meant."""
    params = signature.parameters
    keywords = ", ".join(params) or "none"
    unknown = [k for k in given if k not in params]
    if unknown and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        meant = [(k, difflib.get_close_matches(k, list(params), n=1, cutoff=0.6)) for k in unknown]
        guesses = [f"{m[0]}= for {k}=" for k, m in meant if m]
        listed = ", ".join(repr(k) for k in unknown)
        return CallError(
            f"kt.{name}() takes no keyword {listed}",
            (f"did you mean {'; '.join(guesses)}? " if guesses else "")
            + f"kt.{name} takes: {keywords} (help(kt.{name}), docs/api.md)",
        )
    takes = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params.values())
    if positional > takes:
        example = ", ".join(f"{p}=..." for p in list(params)[:2]) if params else ""
        return CallError(
            f"kt.{name}() takes its arguments by keyword only, and {positional} {agree(positional, 'was', 'were')} "
            "given by position",
            f"name each one: kt.{name}({example})" if example else f"call it with no argument: kt.{name}()",
        )
    missing = [p.name for p in params.values() if p.default is p.empty and p.name not in given][positional:]
    if missing:
        return CallError(
            f"kt.{name}() needs {', '.join(f'{m}=' for m in missing)}: not given",
            f"pass {', '.join(f'{m}=...' for m in missing)} (help(kt.{name}), docs/api.md)",
        )
    return CallError(f"kt.{name}(): {exc}", f"check the call against help(kt.{name}) or docs/api.md")
