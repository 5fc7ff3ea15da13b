"""The results file: one run as JSON, ``{"run": RunInfo, "cells": [Cell, ...]}``, raw samples kept.

The exchange format between machines (the GPU host writes it, a CPU machine compares it) and the
same document as the store's JSON export, so either can be handed to ``ktriage compare``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ktriage.errors import FormatError, KtriageError, check_format_version
from ktriage.measure.cells import Cell, RunInfo

# Files written before the key existed (e.g. benchmarks/gpu/issue3) are version 1.
FORMAT_VERSION = 1


def results_to_json(run: RunInfo, cells: list[Cell]) -> dict[str, Any]:
    return {"format_version": FORMAT_VERSION, "run": run.to_json(), "cells": [c.to_json() for c in cells]}


def results_text(run: RunInfo, cells: list[Cell]) -> str:
    """The results file's text: what :func:`write_results` writes and ``ktriage bench --format json``
    prints, so the two are one document."""
    return json.dumps(results_to_json(run, cells), indent=1) + "\n"


def write_results(path: str | Path, run: RunInfo, cells: list[Cell]) -> Path:
    """Write atomically (temp file + rename): a crash never leaves a half-written results file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(results_text(run, cells))
    os.replace(tmp, path)
    return path


def parse_results(text: str, *, origin: str = "the results") -> tuple[RunInfo, list[Cell]]:
    """Parse a results document (a bench ``--output-json`` file or a ``runs export`` JSON)."""
    try:
        data: Any = json.loads(text)
        if not isinstance(data, dict) or "run" not in data or "cells" not in data:
            raise KeyError('top-level keys "run" and "cells"')
        check_format_version(data, FORMAT_VERSION, what=origin, missing_means=1,
                             fix="read it with the ktriage version that wrote it, or write it again with this one")
        return RunInfo.from_json(data["run"]), [Cell.from_json(c) for c in data["cells"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise FormatError(
            f"{origin} is not a ktriage results file ({type(exc).__name__}: {exc})",
            "give a file written by `ktriage bench --output-json` or `ktriage runs export RUN --format json`",
        ) from exc


def read_results(path: str | Path) -> tuple[RunInfo, list[Cell]]:
    """Read a results file; a missing or malformed one is a KtriageError naming the fix."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise FormatError(f"cannot read results file {path}: {exc.strerror or exc}", "check the path") from exc
    return parse_results(text, origin=str(path))
