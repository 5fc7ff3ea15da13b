"""From bytes on disk to a typed, validated object, with every failure a KtriageError.

The steps, each with its own clear error (the file, the field path, what was wrong, the fix):

1. **size**: a file over the format's limit is refused before it is read (``KTRIAGE_MAX_INPUT_MB``
   sets every limit; a results file of 20,000 cells x 200 samples is about 50 MB);
2. **encoding**: the bytes must be UTF-8; the error gives the byte offset of the first bad byte;
3. **syntax**: JSON or TOML, with the parser's line and column; nesting deeper than
   :data:`MAX_DEPTH` is refused (Python's parsers would otherwise hit their recursion limit);
4. **schema**: msgspec converts the parsed value into the format's Structs, strictly (no bool read
   as a number, no string read as an int, unknown keys refused where the Struct forbids them).
"""

from __future__ import annotations

import json
import os
import re
import sys
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from ktriage.errors import FormatError, KtriageError, joined

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

T = TypeVar("T")
ErrorType = type[KtriageError]

MIB = 1 << 20
MAX_DEPTH = 64  # lists/tables inside each other; ktriage's own files nest at most 6 deep
MAX_INPUT_ENV = "KTRIAGE_MAX_INPUT_MB"


def size_limit(default_mb: int) -> int:
    """The byte limit of a format: ``default_mb``, or ``KTRIAGE_MAX_INPUT_MB`` for every format when set."""
    raw = os.environ.get(MAX_INPUT_ENV, "").strip()
    if not raw:
        return default_mb * MIB
    try:
        value = float(raw)
    except ValueError:
        raise KtriageError(
            f"{MAX_INPUT_ENV}={raw!r} is not a number of megabytes", f"e.g. {MAX_INPUT_ENV}=2048"
        ) from None
    if not 0 < value < 1 << 40:  # also refuses nan and inf
        raise KtriageError(
            f"{MAX_INPUT_ENV}={raw!r} must be a positive, finite number of megabytes", f"e.g. {MAX_INPUT_ENV}=2048"
        )
    return int(value * MIB)


CHECK_PATH = "check the path"  # the readers' default fix: for a file that is missing or cannot be read


def read_bytes(
    path: str | Path, *, what: str, limit: int, error: ErrorType = FormatError, fix: str = CHECK_PATH
) -> bytes:
    """The file's bytes; a missing, unreadable, non-regular or too large file is ``error``."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if path.is_dir():  # the caller's fix ("record it again", "check the path") cannot help here
            raise error(f"{what} {path} is a folder, not a file", "give the path of the file itself")
        if not path.is_file():
            raise error(f"{what} {path} is not a file", fix)
        if size > limit:
            raise error(
                f"{what} {path} is {size / MIB:.1f} MB, over the limit of {limit / MIB:.0f} MB",
                f"check that it is the right file, or raise the limit with {MAX_INPUT_ENV}=<MB>",
            )
        with path.open("rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}", fix) from exc
    if len(data) > limit:  # grew while read, or a pipe
        raise error(
            f"{what} {path} is over the limit of {limit / MIB:.0f} MB", f"raise the limit with {MAX_INPUT_ENV}=<MB>"
        )
    return data


GZIP_MAGIC = b"\x1f\x8b"


def decode_utf8(data: bytes, *, origin: str, error: ErrorType = FormatError) -> str:
    """The text of ``data``; not UTF-8 is ``error`` with the offset of the first bad byte. Gzip data
    is named as such: "save it as UTF-8" cannot help a ``.gz`` given to a reader of plain text (a bundle
    manifest, a spec, calibration cells), nor a recorded ``W.json.gz`` given in its place."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if data.startswith(GZIP_MAGIC):
            raise error(
                f"{origin} is gzip-compressed, and this file is read as plain text",
                "decompress it first (gunzip -k FILE.gz), or check that it is the right file",
            ) from None
        raise error(
            f"{origin} is not UTF-8 text (byte {exc.start}: {data[exc.start : exc.start + 1]!r})",
            "save it as UTF-8 (a binary file or another encoding cannot be read)",
        ) from None


def read_text(path: str | Path, *, what: str, limit: int, error: ErrorType = FormatError, fix: str = CHECK_PATH) -> str:
    """A UTF-8 text file under ``limit`` bytes (source files, spec files)."""
    return decode_utf8(
        read_bytes(path, what=what, limit=limit, error=error, fix=fix), origin=f"{what} {path}", error=error
    )


def gunzip(data: bytes, limit: int) -> bytes | None:
    """Concatenated gzip members decompressed, or None past ``limit`` bytes (a gzip bomb stops there).

    A cut stream raises EOFError, a corrupt one zlib.error: the caller names its file (:func:`gzip_damage`)."""
    out = bytearray()
    while data:
        member = zlib.decompressobj(wbits=31)
        out += member.decompress(data, max(1, limit + 1 - len(out)))
        if len(out) > limit:
            return None
        if not member.eof:
            raise EOFError("the gzip data ends before its end-of-stream marker")
        data = member.unused_data.lstrip(b"\x00")
    return bytes(out)


def gzip_damage(origin: str, exc: BaseException, fix: str, error: ErrorType = FormatError) -> KtriageError:
    """The error of gzip data that :func:`gunzip` could not read, naming how it is damaged. Why: a cut
    ``W.json.gz`` or ``R.json.gz`` (a copy or download that did not finish) was "cut or corrupt (the
    gzip data ends before its end-of-stream marker)" with the fix "check the path", which is right and
    cannot help: the file is cut short (or its bytes changed), and only another copy of it, or a new
    recording, reads. ``fix``: the caller's own way to get the file again ("record it again"), added
    after the copy unless it is the default :data:`CHECK_PATH`."""
    if isinstance(exc, EOFError):
        how = "cut short (it ends before gzip's end-of-stream marker), as a copy or download that did not finish leaves it"
    else:
        how = f"corrupt: its bytes changed after it was written ({exc})"
    again = "copy it again from the machine that wrote it (the original is larger: compare the two sizes)"
    if not isinstance(exc, EOFError):
        again = "copy it again from the machine that wrote it (compare the two files' sha256sum)"
    return error(
        f"{origin} is damaged: its gzip data is {how}", again if fix == CHECK_PATH else joined(again, ", or ", fix)
    )


def read_text_gz(
    path: str | Path, *, what: str, limit: int, error: ErrorType = FormatError, fix: str = CHECK_PATH
) -> str:
    """A UTF-8 text file, plain or gzip-compressed (told by its first bytes, not its name), under
    ``limit`` bytes once decompressed. Why: recorded workloads and results files are committed gzipped
    (``W.json.gz``, ``R.json.gz``: 10-20x smaller) and read the same as the plain file."""
    data = read_bytes(path, what=what, limit=limit, error=error, fix=fix)
    if data.startswith(GZIP_MAGIC):
        try:
            unpacked = gunzip(data, limit)
        except (OSError, EOFError, zlib.error) as exc:
            raise gzip_damage(f"{what} {path}", exc, fix, error) from exc
        if unpacked is None:
            raise error(
                f"{what} {path} is over the limit of {limit / MIB:.0f} MB once decompressed",
                f"check that it is the right file, or raise the limit with {MAX_INPUT_ENV}=<MB>",
            )
        data = unpacked
    return decode_utf8(data, origin=f"{what} {path}", error=error)


def check_depth(value: object, *, origin: str, error: ErrorType = FormatError, limit: int = MAX_DEPTH) -> None:
    """Refuse lists/objects nested deeper than ``limit`` (iterative: never a RecursionError)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children: Any = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            raise error(
                f"{origin} nests lists/objects deeper than {limit} levels",
                "this is not a file ktriage writes: check that it is the right file",
            )
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))


def _too_deep(origin: str, error: ErrorType) -> KtriageError:
    return error(
        f"{origin} nests lists/objects deeper than {MAX_DEPTH} levels",
        "this is not a file ktriage writes: check that it is the right file",
    )


def parse_json(text: str, *, origin: str, fix: str, error: ErrorType = FormatError) -> Any:
    """JSON text (NaN/Infinity accepted, as Python's json writes them) to plain values."""
    try:
        return json.loads(text)
    except RecursionError:
        raise _too_deep(origin, error) from None
    except ValueError as exc:
        raise error(f"{origin} is not valid JSON: {json_problem(text, exc)}", fix) from None


def json_problem(text: str, exc: ValueError) -> str:
    """What is wrong with JSON text ``json.loads`` refused. Why: an empty file read "Expecting value: line
    1 column 1 (char 0)", and a file cut short (a copy or a write that did not finish) read as a syntax
    error at its last line, as if someone had mistyped it."""
    if not text.strip():
        return "the file is empty"
    if isinstance(exc, json.JSONDecodeError) and (
        exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
    ):
        return f"it ends before its JSON does, so the file was cut short (a copy or a write that did not finish): {exc}"
    return str(exc)


def parse_toml(text: str, *, origin: str, error: ErrorType = FormatError) -> dict[str, object]:
    try:
        doc = tomllib.loads(text)
    except RecursionError:
        raise _too_deep(origin, error) from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{origin}: not valid TOML: {exc}", "fix the TOML syntax at that line") from None
    check_depth(doc, origin=origin, error=error)
    return doc


_AT = re.compile(r"^(?P<msg>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.S)
# a list index (``[3]``) or msgspec's mark for a value of a dict (``[...]``: ``kernel.args[...]``), removed
# so that the field's own fix (``kernel.args``) is found, not its parent's
_INDEX = re.compile(r"\[(?:\d+|\.\.\.)\]")


def field_path(message: str) -> tuple[str, str]:
    """msgspec's "Expected `int`, got `str` - at `$.kernel.options.num_warps`" as
    ("kernel.options.num_warps", "expected int, got str")."""
    m = _AT.match(message)
    assert m is not None  # the pattern matches every string
    msg = m.group("msg").replace("`", "")
    msg = msg[:1].lower() + msg[1:]
    return (m.group("path") or "").lstrip("."), msg


def validation_error(
    exc: msgspec.ValidationError,
    *,
    origin: str,
    fix: str,
    fixes: Mapping[str, str] | None = None,
    error: ErrorType = FormatError,
    label: Callable[[str], str] | None = None,
    headline: str = "",
) -> KtriageError:
    """The KtriageError for a schema failure: ``origin: FIELD: what was wrong`` and the fix.

    ``fixes``: a more precise fix per field path, indices removed (``cells.samples_ms``); the longest
    matching prefix wins; ``PATH.*`` (``*`` at the top) is the fix for an unknown key in PATH. ``label`` may rewrite the path (a spec file says ``[kernel] options.num_warps``);
    ``headline`` follows the origin (" is not a ktriage results file")."""
    path, msg = field_path(str(exc))
    missing = re.match(r"object missing required field (\S+)", msg)
    unknown = re.match(r"object contains unknown field (\S+)", msg)
    key = path
    if missing:
        key = f"{path}.{missing.group(1)}".lstrip(".")
        msg = f"missing key {missing.group(1)!r}"
    if unknown:
        key = f"{path}.{unknown.group(1)}".lstrip(".")
        msg = f"unknown key {unknown.group(1)!r}"
    generic = _INDEX.sub("", key)
    chosen = fix
    if unknown and fixes:  # "PARENT.*": the fix for an unknown key there (the valid keys)
        parent = _INDEX.sub("", path)
        star = (fixes or {}).get(f"{parent}.*" if parent else "*")
        if star:
            return error(f"{origin}{headline}: {label(path) if label else (path or 'top level')}: {msg}", star)
    for prefix, text in sorted((fixes or {}).items(), key=lambda kv: -len(kv[0])):
        if generic == prefix or generic.startswith(prefix + "."):
            chosen = text
            break
    where = label(path) if label else (path or "top level")
    return error(f"{origin}{headline}: {where}: {msg}", chosen)


def convert(
    value: Any,
    type_: type[T],
    *,
    origin: str,
    fix: str,
    fixes: Mapping[str, str] | None = None,
    error: ErrorType = FormatError,
    label: Callable[[str], str] | None = None,
    headline: str = "",
) -> T:
    """Parsed values into the format's Structs, strictly; a mismatch is ``error`` naming the field."""
    try:
        return msgspec.convert(value, type_, strict=True)
    except RecursionError:
        raise _too_deep(origin, error) from None
    except msgspec.ValidationError as exc:
        raise validation_error(
            exc, origin=origin, fix=fix, fixes=fixes, error=error, label=label, headline=headline
        ) from None


def decode_json(
    text: str,
    type_: type[T],
    *,
    origin: str,
    fix: str,
    fixes: Mapping[str, str] | None = None,
    error: ErrorType = FormatError,
    headline: str = "",
) -> T:
    """JSON text straight into the Structs (msgspec's decoder, the fast path measured in
    benchmarks/hardening); text msgspec's strict JSON refuses (NaN written by Python's json) goes
    through :func:`parse_json` and :func:`convert`."""
    try:
        return msgspec.json.decode(text, type=type_, strict=True)
    except RecursionError:
        raise _too_deep(origin, error) from None
    except msgspec.ValidationError as exc:
        # msgspec stops at the first value of the wrong type before it has read the rest: a TOML file
        # (`[build-system]`) was "top level: expected object, got array". Text that is no JSON says so.
        try:
            json.loads(text)
        except ValueError as bad:
            raise error(f"{origin} is not valid JSON: {json_problem(text, bad)}", fix) from None
        except RecursionError:
            pass  # nested too deep to read through: the type error stands
        raise validation_error(exc, origin=origin, fix=fix, fixes=fixes, error=error, headline=headline) from None
    except msgspec.DecodeError:
        pass
    return convert(
        parse_json(text, origin=origin, fix=fix, error=error),
        type_,
        origin=origin,
        fix=fix,
        fixes=fixes,
        error=error,
        headline=headline,
    )
