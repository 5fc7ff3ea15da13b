"""The results file: one run as JSON, ``{"run": RunInfo, "cells": [Cell, ...]}``, raw samples kept.

The exchange format between machines (the GPU host writes it, a CPU machine compares it) and the
same document as the store's JSON export, so either can be handed to ``ktriage compare``.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path
from typing import Any

import msgspec

from ktriage.atomic import write_atomic
from ktriage.errors import FormatError, check_format_version, joined, run_as
from ktriage.measure.cells import Cell, CellKey, RunInfo
from ktriage.schema.core import GZIP_MAGIC, check_depth, convert, decode_json, read_text_gz, size_limit
from ktriage.schema.jsontypes import JSONObject, as_json_object
from ktriage.schema.results import (
    FIX,
    FIXES,
    PROFILE_FIX,
    PROFILE_FORMAT,
    ProfileSectionSchema,
    ResultsSchema,
    RunFieldsCheck,
)

# The key of a cell's profile section in ``Cell.extra`` (ktriage.schema.results: why there) and of the
# run's profile notes in ``RunInfo.settings`` (one line per toolchain ncu could not profile, and so on).
PROFILE_KEY = "profile"

# Files written before the key existed (e.g. benchmarks/gpu/issue3) are version 1.
FORMAT_VERSION = 1
# Files larger than this are refused before they are read (KTRIAGE_MAX_INPUT_MB raises it): 20,000
# cells of 200 samples are about 50 MB. The limit is of the decompressed text for a gzipped file.
MAX_RESULTS_MB = 512
GZ_SUFFIX = ".gz"


# The columns of a run's CSV export (``ktriage runs export RUN --format csv``: ktriage.store.export writes it).
# Here, below the store, so that a reader of results files knows that table when it is given one to import.
EXPORT_CSV_COLUMNS = (
    "op",
    "mode",
    "input_id",
    "x_val",
    "backend",
    "toolchain",
    "status",
    "latency_median_ms",
    "latency_min_ms",
    "latency_p20_ms",
    "latency_p80_ms",
    "samples",
    "gbps",
    "tflops",
    "accuracy",
    "error",
    "run_id",
)
# the columns that tell the export apart (a later version may add columns after them)
_EXPORT_CSV_HEAD = list(EXPORT_CSV_COLUMNS[:8])


def refuse_csv_export(text: str, origin: str) -> None:
    """A run's CSV export given where a results file is read (``runs import``, ``compare``) was "not valid
    JSON" (or "not a TritonBench CSV"): it is named, and so is the JSON export that carries the samples."""
    first = next(csv.reader(io.StringIO(text[:4096].lstrip("\ufeff"))), [])
    if [h.strip() for h in first[: len(_EXPORT_CSV_HEAD)]] == _EXPORT_CSV_HEAD:
        # each export as its reader makes it (run_as): `runs import` and compare show the command line no kt.* call
        raise FormatError(
            joined(
                f"{origin} is a run's CSV export, written by ",
                run_as("kt.runs_export(run=RUN).to_csv()", "ktriage runs export RUN --format csv"),
                " for people and spreadsheets: a table of medians, it holds no samples and cannot be imported or compared",
            ),
            joined(
                "export the run as JSON where it is stored and give that file: ",
                run_as("kt.runs_export(run=RUN).json_text(), written to a file", "ktriage runs export RUN -o run.json"),
            ),
        )


def results_name(path: str | Path) -> Path:
    """``path`` without a trailing ``.gz``: what names a results file's kind (``.json``, ``.csv``) and its
    label (``tb_sum_fwd`` of ``tb_sum_fwd.json.gz``). Why: results files are kept gzipped (the calibration
    results under benchmarks/ are), and a gzipped one reads as the plain one (:func:`read_results_text`)."""
    path = Path(path)
    return path.with_suffix("") if path.suffix.lower() == GZ_SUFFIX else path


def read_results_text(path: str | Path) -> str:
    """The text of a results file (ktriage's JSON, TritonBench's CSV or JSON), plain or gzip-compressed
    (told by its first bytes, not its name), under the size limit once decompressed: every reader of a
    results file reads it here, so a ``run.json.gz`` reads wherever a ``run.json`` does."""
    return read_text_gz(path, what="results file", limit=size_limit(MAX_RESULTS_MB))


def is_gzipped(path: str | Path) -> bool:
    """Whether the file at ``path`` is gzip data (its first bytes): a writer that rewrites a results file
    in place (``profile --results``) keeps it compressed."""
    try:
        with Path(path).open("rb") as fh:
            return fh.read(len(GZIP_MAGIC)) == GZIP_MAGIC
    except OSError:
        return False


def results_to_json(run: RunInfo, cells: list[Cell]) -> JSONObject:
    return {"format_version": FORMAT_VERSION, "run": run.to_json(), "cells": [c.to_json() for c in cells]}


def results_text(run: RunInfo, cells: list[Cell]) -> str:
    """The results file's text: what :func:`write_results` writes and ``ktriage bench --format json``
    prints, so the two are one document."""
    return json.dumps(results_to_json(run, cells), indent=1) + "\n"


def write_results(path: str | Path, run: RunInfo, cells: list[Cell], *, compress: bool = False) -> Path:
    """Write atomically (temp file + rename): a crash never leaves a half-written results file.
    ``compress``: gzip it (a results file read gzipped and written back in place stays gzipped)."""
    path = Path(path)
    text = results_text(run, cells)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, gzip.compress(text.encode("utf-8"), mtime=0) if compress else text)
    except OSError as exc:
        raise FormatError(
            f"cannot write results file {path}: {exc.strerror or exc}", "choose a writable path for the results file"
        ) from exc
    return path


def parse_results(text: str, *, origin: str = "the results") -> tuple[RunInfo, list[Cell]]:
    """Parse a results document (a bench ``--output-json`` file or a ``runs export`` JSON) through
    its schema (``ktriage.schema.results``): every problem is a FormatError naming the field."""
    try:
        doc = decode_json(
            text, ResultsSchema, origin=origin, fix=FIX, fixes=FIXES, headline=" is not a ktriage results file"
        )
    except FormatError:
        refuse_csv_export(text, origin)  # the run's other export: named, with the JSON export as the fix
        _refuse_envelope(text, origin)  # a newer format_version, or no results file at all, says so
        raise
    _check_version(doc.format_version, origin)
    run = RunInfo(**msgspec.structs.asdict(doc.run))
    convert(
        {"run": {"settings": run.settings, "toolchains": run.toolchains}},
        RunFieldsCheck,
        origin=origin,
        fix=FIX,
        fixes=FIXES,
        headline=" is not a ktriage results file",
    )
    check_depth([run.gpu, run.toolchains, run.settings], origin=f"{origin}: run", error=FormatError)
    cells = []
    for i, c in enumerate(doc.cells):
        if c.accuracy or c.extra:
            check_depth([c.accuracy, c.extra], origin=f"{origin}: cells[{i}]", error=FormatError)
        if PROFILE_KEY in c.extra:
            check_profile_section(c.extra[PROFILE_KEY], origin=f"{origin}: cells[{i}].extra.profile")
        cells.append(
            Cell(
                key=CellKey(**msgspec.structs.asdict(c.key)),
                status=c.status,
                samples_ms=c.samples_ms,
                error=c.error,
                accuracy=as_json_object(c.accuracy),
                bytes_moved=c.bytes_moved,
                flops=c.flops,
                extra=as_json_object(c.extra),
            )
        )
    return run, cells


def _check_version(version: object, origin: str) -> None:
    check_format_version(
        {} if version is msgspec.UNSET else {"format_version": version},
        FORMAT_VERSION,
        what=origin,
        missing_means=1,
        fix="read it with the ktriage version that wrote it, or write it again with this one",
    )


class _Envelope(msgspec.Struct):
    """The top level of a results file alone: what a document that failed the schema was meant to be."""

    format_version: Any = msgspec.UNSET
    run: Any = msgspec.UNSET
    cells: Any = msgspec.UNSET


def _refuse_envelope(text: str, origin: str) -> None:
    """Raise the better error for a document the schema refused, when there is one: a format_version
    this ktriage does not read comes before its fields (a newer file's fields may differ: "upgrade"
    is the fix, not a missing key), and a JSON object with neither ``run`` nor ``cells`` is no results
    file at all (the fix says what one is, not what its ``run`` holds). Otherwise nothing is raised."""
    try:
        top = msgspec.json.decode(text, type=_Envelope)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return  # not a JSON object: the schema's own error says so
    _check_version(top.format_version, origin)
    if top.run is msgspec.UNSET and top.cells is msgspec.UNSET:
        raise FormatError(f"{origin} is not a ktriage results file: it has no 'run' and no 'cells'", FIX)


def read_results(path: str | Path) -> tuple[RunInfo, list[Cell]]:
    """Read a results file, plain or gzipped; a missing, too large, non-UTF-8 or malformed one is a
    FormatError naming the fix."""
    return parse_results(read_results_text(path), origin=f"results file {path}")


def check_profile_section(section: object, *, origin: str) -> ProfileSectionSchema:
    """A cell's profile section, validated: its ``format`` first (an unknown one is refused with the
    fix), then its fields (a FormatError naming the field)."""
    check_format_version(
        {"format_version": section.get("format")} if isinstance(section, dict) else section,
        PROFILE_FORMAT,
        what=origin,
        fix=PROFILE_FIX,
    )
    return convert(section, ProfileSectionSchema, origin=origin, fix=PROFILE_FIX)


def cell_profile(cell: Cell) -> JSONObject | None:
    """The cell's profile section (``extra["profile"]``), or None when the cell was not profiled."""
    section = cell.extra.get(PROFILE_KEY)
    return section if isinstance(section, dict) else None


def run_profile_notes(run: RunInfo) -> list[str]:
    """The run's profile notes: one line per toolchain (or input) ncu could not profile."""
    info = run.settings.get(PROFILE_KEY)
    notes = info.get("notes") if isinstance(info, dict) else None
    return [str(n) for n in notes] if isinstance(notes, list) else []
