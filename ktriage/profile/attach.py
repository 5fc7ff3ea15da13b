"""Put a profile's counters into the results file and the store, next to the timings.

A profile document (:func:`ktriage.profile.diff.document`: one bundle input, one backend, every
toolchain) becomes one *profile section* per toolchain, stored in the timed cell of the same
(op, mode, input, backend, toolchain) as ``cell.extra["profile"]`` (why there, and its schema:
``ktriage.schema.results``). Where ncu could not run for a toolchain, its section says why
(``status: unavailable``, ``error``: one line) and the run's ``settings["profile"]["notes"]`` gets
that line; the timings are never touched.

Used by ``ktriage bench --profile`` (after the timing: :func:`profile_measured`) and by
``ktriage profile --results R.json`` (:func:`attach_to_results_file`); :func:`attach_to_store` writes
the same sections into the store's run.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ktriage.atomic import write_atomic
from ktriage.errors import KtriageError
from ktriage.measure.cells import Cell, RunInfo
from ktriage.measure.results_file import PROFILE_KEY, check_profile_section, is_gzipped, read_results, write_results
from ktriage.schema.jsontypes import JSONObject, JSONValue
from ktriage.schema.results import PROFILE_FORMAT
from ktriage.wording import plural

if TYPE_CHECKING:
    from ktriage.profile.diff import ProfileReport

Say = Callable[[str], None]
# compile-side resources kept in the section (the bundle has more; profile.json keeps them all)
COMPILE_KEYS = (
    "registers",
    "spill_store_bytes",
    "spill_load_bytes",
    "stack_bytes",
    "local_loads",
    "local_stores",
    "shared_bytes",
    "sass_instructions",
    "sass_opcodes",
    "error",
)


def sections(doc: ProfileReport, *, raw_dir: str = "") -> dict[str, JSONObject]:
    """The profile section of each toolchain of a profile document."""
    out: dict[str, JSONObject] = {}
    for tc, info in doc["toolchains"].items():
        side = info.get("compile_side")
        out[tc] = {
            "format": PROFILE_FORMAT,
            "toolchain": tc,
            "status": info["status"],
            "error": info.get("error"),
            "reference": doc.get("reference"),
            "ncu_version": doc.get("ncu_version"),
            "input_id": doc.get("input_id"),
            "backend": doc.get("backend"),
            "launches": list(info.get("launches") or []),
            "compile_side": {k: side[k] for k in COMPILE_KEYS if k in side} if isinstance(side, dict) else None,
            "findings": [d["finding"] for d in doc.get("diffs") or [] if d.get("toolchain") == tc],
            "raw_dir": raw_dir,
            "files": dict(info.get("files") or {}),
        }
    return out


def attach(cells: Sequence[Cell], doc: ProfileReport, *, raw_dir: str = "") -> list[str]:
    """Store each toolchain's section in its timed cell (in place); returns the notes: one line per
    toolchain ncu could not profile, and one per section whose cell was not timed."""
    notes = []
    by_key = {(c.key.op, c.key.mode, c.key.input_id, c.key.backend, c.key.toolchain): c for c in cells}
    for tc, section in sections(doc, raw_dir=raw_dir).items():
        check_profile_section(section, origin=f"the profile section of {tc}")
        where = f"input {doc['input_id']} {doc['backend']}@{tc}"
        if section["status"] != "ok":
            notes.append(f"{where}: {str(section['error'] or 'not profiled').splitlines()[0]}")
        cell = by_key.get((doc["op"], doc["mode"], int(doc["input_id"]), doc["backend"], tc))
        if cell is None:
            notes.append(f"{where}: profiled, but the results have no timed cell of it (counters not attached)")
            continue
        cell.extra = dict(cell.extra) | {PROFILE_KEY: section}
    return notes


def note_run(run: RunInfo, docs: Iterable[ProfileReport], notes: Iterable[str]) -> None:
    """The run's ``settings["profile"]``: the ncu version, what was profiled, and the notes (merged
    with any an earlier attach left)."""
    section = run.settings.get(PROFILE_KEY)
    info: JSONObject = dict(section) if isinstance(section, Mapping) else {}
    earlier_notes, earlier_profiled = info.get("notes"), info.get("profiled")
    old_notes = [str(n) for n in earlier_notes] if isinstance(earlier_notes, list) else []
    profiled: list[JSONValue] = list(earlier_profiled) if isinstance(earlier_profiled, list) else []
    for doc in docs:
        info["ncu_version"] = doc.get("ncu_version")
        profiled.append({"input_id": doc["input_id"], "backend": doc["backend"], "reference": doc.get("reference")})
    info.update(
        {"format": PROFILE_FORMAT, "profiled": profiled, "notes": old_notes + [n for n in notes if n not in old_notes]}
    )
    run.settings = dict(run.settings) | {PROFILE_KEY: info}


def attach_to_results_file(
    path: Path, docs: Sequence[ProfileReport], *, raw_dirs: Sequence[str] = ()
) -> tuple[RunInfo, list[Cell], list[str]]:
    """Read the results file, attach every document's sections, write it back (atomically; a gzipped
    file stays gzipped, so its name still says what it holds)."""
    compress = is_gzipped(path)
    run, cells = read_results(path)
    notes: list[str] = []
    for i, doc in enumerate(docs):
        notes += attach(cells, doc, raw_dir=raw_dirs[i] if i < len(raw_dirs) else "")
    note_run(run, docs, notes)
    write_results(path, run, cells, compress=compress)
    return run, cells, notes


def attach_to_store(db: str | None, run: RunInfo, cells: Sequence[Cell]) -> str:
    """Write the cells' sections and the run's profile notes into the store's copy of the run; one
    line saying what happened (a run the store does not have is said, not an error: the results file
    has the counters, and ``ktriage runs import`` stores both)."""
    from ktriage.store import open_store

    with open_store(db) as store:
        try:
            store.resolve_run_id(run.run_id)
        except KtriageError:
            return (
                f"run {run.run_id} is not in the store {store.url}: only the results file has the counters "
                "(`ktriage runs import FILE` stores them with the timings)"
            )
        n = store.attach_profiles(run.run_id, list(cells), settings=run.settings)
        return f"counters of {plural(n, 'cell')} stored with run {run.run_id} in {store.url}"


def profile_measured(
    run: RunInfo,
    cells: list[Cell],
    bundle: Path,
    *,
    backends: Sequence[str],
    input_ids: Sequence[int],
    ncu: str | None = None,
    warmup: int = 3,
    say: Say | None = None,
) -> list[ProfileReport]:
    """``bench --profile``: after the timing, profile every (input, artifact backend) of the bundle
    with :func:`ktriage.profile.run.profile_bundle` and attach the counters to the run's cells (in
    place). One input or backend that cannot be profiled is a note; the others still run, and the
    timings are kept whatever happens. Raw files: ``BUNDLE/profile-input<ID>-<backend>/``."""
    from ktriage.profile.run import profile_bundle

    speak = say or (lambda _m: None)
    docs: list[ProfileReport] = []
    notes: list[str] = []
    for input_id in input_ids:
        for backend in backends:
            out_dir = Path(bundle) / f"profile-input{input_id}-{backend}"
            speak(f"profiling input {input_id} {backend} under ncu ({out_dir})")
            try:
                doc = profile_bundle(
                    bundle, input_id=input_id, backend=backend, out_dir=out_dir, ncu=ncu, warmup=warmup
                )
            except (KtriageError, OSError, ValueError, KeyError, subprocess.SubprocessError) as exc:
                notes.append(
                    f"input {input_id} {backend}: not profiled: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                )
                continue
            write_atomic(out_dir / "profile.json", json.dumps(doc, indent=1) + "\n")
            docs.append(doc)
            notes += attach(cells, doc, raw_dir=str(out_dir))
    note_run(run, docs, notes)
    for n in notes:
        speak(n)
    return docs
