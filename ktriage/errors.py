"""Errors the user can fix, so the CLI can print them without a traceback.

Every error ktriage raises on purpose is a :class:`KtriageError`: a ``problem`` (one line, what went
wrong), a ``fix`` (what to do about it, or None) and optional ``details`` (longer text: a compiler's
log, a driver message). The CLI prints ``error: <problem>``, ``fix: <fix>`` and the details (dim,
indented) and exits 2; the library never prints or exits.

The families follow the pipeline (docs/errors.md has one entry per family)::

    KtriageError                 root: catch this to handle any of them
    ├── SpecError                a kernel spec, spec file, catalog op, selector or input (spec/, catalog/)
    ├── ToolchainError           installing or identifying a toolchain: venvs, wheels, ptxas (toolchain/)
    ├── CompileError             compiling a spec in a toolchain, the launch ABI (compile/)
    ├── DeviceError              the GPU, its driver or CUDA: no device, a failed launch (measure/)
    ├── MeasureError             timing and checking on the GPU host: parameters, correctness (measure/)
    ├── StoreError               the results store: database URLs, runs, schema (store/)
    └── FormatError              a file that crosses machines or is parsed: unknown format_version,
                                 malformed JSON/TOML (check_format_version, bundles, results files)

All families are plain subclasses, so ``except KtriageError`` still catches every one.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable
from typing import Protocol


class KtriageError(Exception):
    """A problem with the user's input or environment, with a hint that says how to fix it."""

    def __init__(self, problem: str, fix: str | None = None, details: str | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.fix = fix
        self.details = details

    def __str__(self) -> str:
        text = self.problem if not self.fix else f"{self.problem}\n  fix: {self.fix}"
        return text if not self.details else f"{text}\n  details: {self.details}"

    def __reduce__(
        self,
    ) -> tuple[Callable[..., KtriageError], tuple[type[KtriageError], tuple[object, ...], dict[str, object]]]:
        """Pickled as its class, ``args`` and every attribute, rebuilt without calling ``__init__``. Why: errors
        cross processes (a Ray task's exception comes back pickled), and Python's own reduction calls
        ``cls(*args)``, which fails for a subclass whose ``__init__`` takes other arguments than the problem
        (``CudaError(call, name, code)``, ``NothingLoads(unloaded, ...)``): Ray then gave no error but "failed to
        deserialize", read as a lost node. Here every subclass comes back whole: the problem and fix with both
        spellings (:class:`Worded`), the details, and its own attributes."""
        return _rebuilt, (type(self), self.args, dict(self.__dict__))


def _rebuilt(cls: type[KtriageError], args: tuple[object, ...], state: dict[str, object]) -> KtriageError:
    """A pickled :class:`KtriageError` back (:meth:`KtriageError.__reduce__`)."""
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


def option(name: str, flag: str | None = None, value: object = None) -> Worded:
    """How a message names an option: the library's keyword and the command's flag, both
    (``limit (--limit)``; with a value, ``limit=20 (--limit 20)``, ``precision='bf16' (--precision bf16)``;
    a switch, ``measure=True (--measure)``; a list, its flag once per item,
    ``toolchains=['triton==3.3.1', 'triton==3.4.0'] (-t triton==3.3.1 -t triton==3.4.0)``; no flag, the
    keyword alone). The flag's value is quoted as a shell needs it (``--input 'M=4096, N=512'``,
    ``-t 'triton==3.4.0,ptxas-options=-O3 -v'``), so the command shown runs when pasted; the keyword's
    value is Python's ``repr``.

    Why: the same :class:`KtriageError` reaches a Python caller of ``ktriage.api`` and a command-line
    user, and a message naming only ``--limit`` tells the caller of ``kt.triage(...)`` of an option it
    cannot pass. Why here and not in ``ktriage.api``: the layers below the api (compare, triage) word
    messages that reach ``kt.*`` callers too, and may not import the api. Why the quoting here: one
    home for spelling an option (a message that quoted its own flags drifted from the others).

    A :class:`Worded`, whose ``flags`` is :func:`flag`'s spelling: the command prints that (``--limit 20``,
    never ``limit=20 (--limit 20)``). Why by construction: a message that called ``option`` outside
    :func:`worded` printed the Python spelling on the command line. An f-string flattens it to the text,
    so a sentence around it is :func:`worded` (``worded(lambda o: f"... {o('limit', '--limit')}")``) or
    :func:`joined` (``joined(option('limit', '--limit'), " is not a count")``); tests/errors/test_spellings.py
    refuses ``option(...)`` inside an f-string."""
    return Worded(_keyword_text(name, flag, value), _flag_spelling(name, flag, value))


def _keyword_text(name: str, flag: str | None, value: object) -> str:
    said = f" ({_flag_text(flag, value)})" if flag else ""
    if value is None or isinstance(value, bool):  # a switch: its flag says the value (--measure, --no-l2-flush)
        return (name if value is None else f"{name}={value}") + said
    if isinstance(value, list | tuple):  # a flag given once per item (-t A -t B, --input 7 --input 8)
        return f"{name}={[str(v) for v in value]!r}" + said
    return f"{name}={repr(value) if isinstance(value, str) else _value_text(value)}" + said


def flag(name: str, flag: str | None = None, value: object = None) -> str:
    """How the command line's own words name an option: the flag alone (``--limit``, ``--limit 20``,
    ``--measure``, ``-t triton==3.3.1 -t triton==3.4.0``), quoted as :func:`option` quotes it; an option
    with no flag, the keyword as :func:`option` words it. Takes :func:`option`'s arguments, so one sentence
    is written once and spelled for either reader (:func:`worded`)."""
    return _flag_spelling(name, flag, value)


def _flag_spelling(name: str, flag: str | None = None, value: object = None) -> str:
    """:func:`flag`'s text (a function apart: :func:`option`'s argument ``flag`` hides :func:`flag`)."""
    return _flag_text(flag, value) if flag else _keyword_text(name, None, value)


def run_as(api: str, cli: str) -> Worded:
    """Another step a message sends its reader to, as each runs it: the ``ktriage.api`` call and, after it,
    the command (``kt.runs_list() (`ktriage runs list`)``) for a Python caller; the command alone
    (```ktriage runs list```) on the command line. Why: a fix written ``kt.runs_list(), or `ktriage runs
    list``` showed a command-line user a Python call they cannot make. In a sentence, as :func:`option`:
    :func:`joined`, or ``spelled(run_as(...), o)`` in :func:`worded`."""
    return Worded(f"{api} (`{cli}`)", f"`{cli}`")


def command(verb: str, spelling: Spelling, *options: tuple[str, str | None, object]) -> str:
    """How a sentence names a ktriage command with its options, as ``spelling`` names options: :func:`flag`,
    the command line (``ktriage bisect --metric latency``); :func:`option`, the ``ktriage.api`` function
    (``kt.bisect with metric='latency' (--metric latency)``). Each option is :func:`option`'s arguments.
    Why: a note that sends the reader to another verb ("bisect by timing") reaches a Python caller too,
    who was told to run a command line (``ktriage bisect --metric latency``) from a ``kt.triage(...)``
    report; written once in a :func:`worded` sentence, each reader gets their own."""
    named = " ".join(spelling(*o) for o in options)
    if spelling is flag:
        return f"ktriage {verb} {named}".strip()
    api = f"kt.{verb.replace('-', '_')}"
    return f"{api} with {named}" if named else api


def _flag_text(flag: str, value: object) -> str:
    """The flag with its value as a shell takes it: once per item of a list, none for a switch."""
    if value is None or isinstance(value, bool):
        return flag
    if isinstance(value, list | tuple):
        return " ".join(f"{flag} {shlex.quote(str(v))}" for v in value)
    return f"{flag} {shlex.quote(_value_text(value))}"


def _value_text(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


class Spelling(Protocol):
    """:func:`option` or :func:`flag`: how a sentence names its options."""

    def __call__(self, name: str, flag: str | None = None, value: object = None) -> str: ...


class Worded(str):
    """A sentence that names options, spelled for both of its readers: the text itself names each one as
    :func:`option` does (``drop compile_only=True (--compile-only)``), for a Python caller and the JSON;
    ``flags`` names them as :func:`flag` does (``drop --compile-only``), for what a person reads from the
    command line (the terminal, the markdown report). Made by :func:`worded`; read with :func:`in_flags`.

    Why both are kept: a note is made once, deep in the library (tune's config space, its timing step),
    and reaches the Python caller (``report.notes``) and the command's user, who was told to pass
    ``compile_only=True`` to a command that takes ``--compile-only``. Why a ``str``: every list of notes
    (``ScreenResult.notes``, the JSON) keeps taking it as the text it was."""

    flags: str

    def __new__(cls, text: str, flags: str | None = None) -> Worded:
        self = super().__new__(cls, text)
        self.flags = in_flags(text) if flags is None else flags  # Worded(a Worded) keeps its flags
        return self

    def __getnewargs__(self) -> tuple[str, str]:  # type: ignore[override]  # a copy or a pickle keeps both
        return str(self), self.flags

    def __add__(self, other: str) -> Worded:  # ``worded + " more"`` keeps both
        return Worded(str(self) + str(other), self.flags + in_flags(other))

    def __radd__(self, other: str) -> Worded:  # ``"text " + worded``: Python asks the str subclass first
        return Worded(str(other) + str(self), in_flags(other) + self.flags)


def worded(sentence: Callable[[Spelling], str]) -> Worded:
    """The sentence spelled both ways: ``worded(lambda o: f"drop {o('compile_only', '--compile-only', True)}")``."""
    return Worded(sentence(option), sentence(flag))


def in_flags(text: str) -> str:
    """The text as the command line's user reads it: a :class:`Worded` sentence's flags, any other as it is."""
    return text.flags if isinstance(text, Worded) else text


def spelled(text: str, spelling: Spelling) -> str:
    """``text`` as ``spelling`` names options: a :class:`Worded` sentence's flags for :func:`flag`, its text
    for :func:`option`; any other text as it is. Why: a sentence made of sentences (``not re-measured:
    {why}``, a fix that names an option made elsewhere) is :func:`worded` once, and each part keeps its
    reader's spelling: ``worded(lambda o: f"not re-measured: {spelled(why, o)}")``."""
    return text.flags if spelling is flag and isinstance(text, Worded) else str(text)


def joined(*parts: str) -> str:
    """The texts one after the other, each part keeping its two spellings: a :class:`Worded` when any part is
    one (``joined(MEASURED, f" {path}: no such file or folder")``), else the plain text. Why: a sentence
    built in a loop around a worded option needs no ``worded(lambda o: ...)`` that closes over the loop."""
    if not any(isinstance(p, Worded) for p in parts):
        return "".join(parts)
    return Worded("".join(map(str, parts)), "".join(map(in_flags, parts)))


def separated(separator: str, parts: Iterable[str]) -> str:
    """``separator.join(parts)``, each part keeping its two spellings (:func:`joined`): ``str.join`` made the
    text of a list of :func:`option` values (``', '.join(...)``) one spelling."""
    items = list(parts)
    return joined(*(piece for i, part in enumerate(items) for piece in ((separator, part) if i else (part,))))


def failure_line(error: KtriageError, what: str = "") -> str:
    """An error as one entry of a report's failures (``what: problem (fix: fix)``), each part keeping its two
    spellings (:func:`joined`). Why: a step that fails without failing the run (triage's explain, bench or
    bisect of one group of cells) lists the error among the report's failures, and an f-string of
    ``exc.problem`` kept the keyword spelling only (the command printed ``old_toolchain='...' (--old-toolchain
    ...)`` where it takes ``--old-toolchain``) and dropped the fix."""
    fix: tuple[str, ...] = (" (fix: ", error.fix, ")") if error.fix else ()
    return joined(f"{what}: " if what else "", error.problem, *fix)


class SpecError(KtriageError):
    """A kernel spec, spec file, catalog op, input selector or input value that cannot be used."""


class ToolchainError(KtriageError):
    """A toolchain that cannot be parsed, installed or identified (Triton wheels, venvs, ptxas)."""


class CompileError(KtriageError):
    """A spec that does not compile in a toolchain, or whose launch ABI cannot be read."""


class DeviceError(KtriageError):
    """The GPU side: no CUDA device, the driver or torch's CUDA missing, a failed load or launch."""


class MeasureError(KtriageError):
    """Measuring on the GPU host: launch parameters, timing options, correctness checks, isolation."""


class StoreError(KtriageError):
    """The results store: a database URL, a run id, a schema this ktriage cannot use."""


class CallError(KtriageError, TypeError):
    """A ``ktriage.api`` function called with a keyword it does not take, a positional argument or a
    required keyword missing. Also a ``TypeError``, the class Python raises for such a call, so code
    catching that keeps working; a ``KtriageError`` so that it names the fix (``did you mean
    toolchains=?``) where Python's own message names only the mistake."""


class FormatError(KtriageError):
    """A file this ktriage cannot read: unknown ``format_version``, malformed JSON or TOML, missing keys."""


def check_format_version(
    data: object,
    supported: int,
    *,
    what: str,
    fix: str,
    legacy_keys: tuple[str, ...] = (),
    missing_means: int | None = None,
) -> int:
    """The ``format_version`` of a file that crosses machines (results, bundles, recordings, bisect state),
    refused with a FormatError naming the file and the fix when this ktriage cannot read it.

    ``legacy_keys``: older spellings of the key (``format``, ``version``); ``missing_means``: the version a
    file without any key has (files written before the key existed), or None to refuse such files.
    """
    if not isinstance(data, dict):
        raise FormatError(f"{what} is not a JSON object", fix)
    for key in ("format_version", *legacy_keys):
        if key in data:
            version = data[key]
            break
    else:
        if missing_means is None:
            raise FormatError(f"{what} has no format_version", fix)
        version = missing_means
    if isinstance(version, int) and not isinstance(version, bool) and version > supported:
        # written by a newer ktriage: upgrading is the fix that reads it (the caller's fix still applies)
        raise FormatError(
            f"{what} has format_version {version}, newer than this ktriage reads (up to {supported})",
            f"upgrade ktriage (pip install -U ktriage), or {fix}",
        )
    if version != supported or isinstance(version, bool):
        raise FormatError(f"{what} has format_version {version!r}; this ktriage reads {supported}", fix)
    return supported
