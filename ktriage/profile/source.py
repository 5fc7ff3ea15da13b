"""Per-line stalls: Nsight Compute's SourceCounters per SASS instruction, summed per source line with
the cubin's line map, diffed between toolchains, next to the compile-side line diff.

Why: ``profile`` says "stall long_scoreboard +13 points"; the kernel engineer asks where. ncu samples
the warps' program counters (the SourceCounters section, which ``profile`` already collects); its
source page lists, per SASS instruction, the samples and their stall reasons:

    ncu --import R.ncu-rep --csv --page source --print-source sass

One block per profiled launch: a header row with ``Address`` and ``Source`` (the SASS text), the
sample columns (``Warp Stall Sampling (All Samples)``, and per reason
``smsp__pcsamp_warps_issue_stalled_<reason>`` or ``stall_<reason>``, depending on the ncu version),
one row per instruction. Addresses are where the kernel was loaded: the lowest one of a block is the
function's first instruction, so ``address - lowest`` is the offset nvdisasm prints. The offsets map
to source lines through the same cubin's line table (``ktriage.analyze.lines``), disassembled with
whichever ``nvdisasm`` this host has (the CUDA toolkit's, or the one in Triton's wheel).

Per line and toolchain: the samples, their share of the launch's samples, and per reason. The diff
is in points of share (a line that held 10% of the stall samples and now holds 51%: +41 points), the
top lines first; the sentence names the line and reason that grew most and what the compiler did at
that line (its LDL/STL delta from the two cubins' line maps).
"""

from __future__ import annotations

import csv
import importlib.util
import io
import os
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from ktriage.analyze.lines import (
    CarriedText,
    LineMap,
    LineStats,
    SourceLoc,
    diff_lines,
    display_path,
    is_library,
    line_map_of_listing,
    listing_line_stats,
    source_text,
)
from ktriage.schema.jsontypes import JSONObject

_REASON_COLUMNS = (re.compile(r"^smsp__pcsamp_warps_issue_stalled_(\w+)$"), re.compile(r"^stall_(\w+)$", re.I))
_SAMPLES = ("Warp Stall Sampling (All Samples)", "smsp__pcsamp_sample_count", "Warp Stall Sampling (All Cycles)")
_NUMBER = re.compile(r"^[+-]?[\d,]*\.?\d+(?:[eE][+-]?\d+)?$")
TOP_LINES = 10


@dataclass(frozen=True)
class SassSamples:
    """One SASS instruction of ncu's source page: its offset in the function and its samples."""

    offset: int
    source: str
    samples: float
    stalls: dict[str, float] = field(default_factory=dict)


def _number(text: str) -> float:
    text = text.strip()
    return float(text.replace(",", "")) if _NUMBER.match(text) else 0.0


def _address(text: str) -> int | None:
    text = text.strip()
    try:
        return int(text, 16) if text.lower().startswith("0x") else int(text)
    except ValueError:
        return None


def parse_source_csv(text: str) -> list[list[SassSamples]]:
    """The blocks (one per profiled launch, in order) of a ``--page source --print-source sass`` CSV."""
    rows = list(csv.reader(io.StringIO("\n".join(ln for ln in text.splitlines() if not ln.startswith("==")))))
    blocks: list[list[tuple[int, str, float, dict[str, float]]]] = []
    header: dict[str, int] | None = None
    reasons: dict[int, str] = {}
    for row in rows:
        names = [c.strip().lstrip("#").strip() for c in row]
        if "Address" in names and "Source" in names:
            header = {n: i for i, n in enumerate(names)}
            reasons = {}
            for i, n in enumerate(names):
                for pattern in _REASON_COLUMNS:
                    if (m := pattern.match(n)) and not m.group(1).endswith("not_issued"):
                        reasons[i] = m.group(1).lower()
            blocks.append([])
            continue
        if header is None or len(row) < len(header):
            continue
        address = _address(row[header["Address"]])
        if address is None:
            continue
        sample_col = next((header[n] for n in _SAMPLES if n in header), None)
        stalls = {r: v for i, r in reasons.items() if (v := _number(row[i]))}
        samples = _number(row[sample_col]) if sample_col is not None else sum(stalls.values())
        blocks[-1].append((address, row[header["Source"]].strip(), samples, stalls))
    out = []
    for block in blocks:
        if not block:
            continue
        base = min(a for a, *_ in block)
        out.append([SassSamples(a - base, src, n, st) for a, src, n, st in block])
    return out


# ------------------------------------------------------------------------------------------- per line
class LineShare(TypedDict):
    """One side's samples at a line: the count, its share of the launch's samples, per stall reason."""

    samples: float
    share_pct: float
    stalls: dict[str, float]


class LineStallRow(TypedDict):
    """One line of the per-line stall diff (:func:`diff_line_samples`), as the profile document writes it."""

    file: str
    line: int
    text: str
    ref: LineShare | None
    new: LineShare | None
    points: float  # the change of the line's share of the stall samples, in points
    stall_points: dict[str, float]  # per reason, largest change first


class TopLine(TypedDict):
    """One of a launch's lines with the most stall samples (:func:`top_lines_json`)."""

    file: str
    line: int
    text: str
    samples: float
    share_pct: float
    stalls: dict[str, float]


class _LaunchLinesBase(TypedDict):
    error: str | None  # why this launch has no per-line samples; None when it has


class LaunchLines(_LaunchLinesBase, total=False):
    """One profiled launch's per-line samples (:func:`toolchain_lines`): in-memory, not written as is."""

    lines: dict[tuple[str, str | int], LineSamples]
    cubin: CubinLines
    unmapped_samples: int


@dataclass
class LineSamples:
    """The samples of one source line of one launch."""

    file: str
    line: int
    text: str
    samples: float = 0.0
    stalls: dict[str, float] = field(default_factory=dict)
    unmapped: bool = False  # offsets the line map did not know (another cubin than the profiled one?)


def _key(loc: SourceLoc | None, carried: CarriedText | None = None) -> tuple[str, str | int]:
    if loc is None:
        return ("(no line)", 0)
    display = display_path(loc.path)
    text = source_text(loc.path, loc.line, carried)
    return (display, text) if is_library(display) and text else (display, loc.line)


def line_samples(
    rows: Sequence[SassSamples], line_map: LineMap, carried: CarriedText | None = None
) -> tuple[dict[tuple[str, str | int], LineSamples], int]:
    """Samples per source line (keyed as lines match across toolchains: a line of Triton's library by its
    text, so its text must be known, from the file or what the bundle ``carried``) and how many sampled
    instructions had no known offset."""
    where = line_map.by_address()
    out: dict[tuple[str, str | int], LineSamples] = {}
    missing = 0
    for row in rows:
        if row.offset not in where:
            missing += row.samples > 0
            continue
        loc = where[row.offset]
        key = _key(loc, carried)
        item = out.get(key)
        if item is None:
            line = loc.line if loc is not None else 0
            text = source_text(loc.path, line, carried) if loc is not None else ""
            item = out[key] = LineSamples(key[0], line, text)
        item.samples += row.samples
        for reason, n in row.stalls.items():
            item.stalls[reason] = item.stalls.get(reason, 0.0) + n
    return out, missing


def _share(item: LineSamples | None, total: float, reason: str | None = None) -> float:
    if item is None or total <= 0:
        return 0.0
    value = item.samples if reason is None else item.stalls.get(reason, 0.0)
    return 100.0 * value / total


def diff_line_samples(
    ref: Mapping[tuple[str, str | int], LineSamples], new: Mapping[tuple[str, str | int], LineSamples]
) -> list[LineStallRow]:
    """Per line: both sides' samples and shares, and the change in points (of all the launch's
    samples), per reason too; largest change first."""
    ref_total = sum(x.samples for x in ref.values())
    new_total = sum(x.samples for x in new.values())
    rows: list[LineStallRow] = []
    for key in set(ref) | set(new):
        a, b = ref.get(key), new.get(key)
        shown = b if b is not None else a
        assert shown is not None
        reasons = set(a.stalls if a else {}) | set(b.stalls if b else {})
        points = {r: _share(b, new_total, r) - _share(a, ref_total, r) for r in reasons}
        rows.append(
            {
                "file": shown.file,
                "line": shown.line,
                "text": shown.text,
                "ref": None
                if a is None
                else {"samples": a.samples, "share_pct": _share(a, ref_total), "stalls": dict(a.stalls)},
                "new": None
                if b is None
                else {"samples": b.samples, "share_pct": _share(b, new_total), "stalls": dict(b.stalls)},
                "points": _share(b, new_total) - _share(a, ref_total),
                "stall_points": dict(
                    sorted(((r, p) for r, p in points.items() if abs(p) >= 0.05), key=lambda kv: -abs(kv[1]))
                ),
            }
        )
    rows.sort(key=lambda r: (-abs(r["points"]), r["file"], r["line"]))
    return rows


# ------------------------------------------------------------------------------------------- cubins
def find_nvdisasm() -> Path | None:
    """An nvdisasm on this host: ``$KTRIAGE_NVDISASM``, PATH, the CUDA toolkit, or the one in the
    installed Triton wheel (``triton/backends/nvidia/bin``; found without importing Triton)."""
    env = os.environ.get("KTRIAGE_NVDISASM")
    if env and Path(env).is_file():
        return Path(env)
    found = shutil.which("nvdisasm")
    if found:
        return Path(found)
    candidates = [Path("/usr/local/cuda/bin/nvdisasm")]
    spec = importlib.util.find_spec("triton")
    for root in (spec.submodule_search_locations or []) if spec is not None else []:
        candidates.append(Path(root) / "backends" / "nvidia" / "bin" / "nvdisasm")
    return next((c for c in candidates if c.is_file()), None)


@dataclass(frozen=True)
class CubinLines:
    """One cubin's line map (for the samples) and per-line counts (the compile side)."""

    line_map: LineMap
    stats: tuple[LineStats, ...]


def cubin_lines(cubin: Path, kernel_name: str, nvdisasm: Path, carried: CarriedText | None = None) -> CubinLines | str:
    """Disassemble ``cubin`` with ``nvdisasm -c -ndf -gi`` (as explain does), its lines' text from ``carried``
    or the files; a failure is returned as text."""
    import subprocess

    from ktriage.analyze.sass import parse_sass
    from ktriage.analyze.sass_loops import find_loops

    try:
        proc = subprocess.run(
            [str(nvdisasm), "-c", "-ndf", "-gi", str(cubin)], capture_output=True, text=True, timeout=300, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"nvdisasm could not run: {exc}"
    if proc.returncode != 0:
        return f"nvdisasm failed on {cubin.name} (exit {proc.returncode}): {proc.stderr.strip()[:200]}"
    funcs = parse_sass(proc.stdout)
    fn = funcs.get(kernel_name)
    if fn is None:
        return f"{cubin.name} has no function {kernel_name!r}"
    loops = find_loops(fn)
    body = loops[0].body if loops and loops[0].main else frozenset()
    return CubinLines(line_map_of_listing(proc.stdout, fn), listing_line_stats(proc.stdout, fn, body, carried))


def quoted(code: str) -> str:
    """A source line quoted in plain text (the JSON, the terminal): between backticks, as written."""
    return f"`{code}`"


def _where(row: LineStallRow, code: Callable[[str], str] = quoted, plain: Callable[[str], str] = str) -> str:
    snippet = str(row.get("text") or "")
    snippet = snippet if len(snippet) <= 40 else snippet[:39] + "…"
    return plain(f"{row['file']}:{row['line']}") + (f" ({code(snippet)})" if snippet else "")


def line_sentence(
    kernel: str,
    toolchain: str,
    reference: str,
    stall_rows: Sequence[LineStallRow],
    compile_rows: Sequence[Mapping[str, Any]],
    *,
    code: Callable[[str], str] = quoted,
    plain: Callable[[str], str] = str,
) -> str | None:
    """``_layer_norm_backward_kernel (B vs A), per line: stall 'long_scoreboard' +41 points at
    layer_norm.py:126 (`dx = ...`), where the compiler added 283 LDL/STL (+276 instructions)``.

    ``code``/``plain``: how the quoted source line and the rest are written; the markdown passes
    ``mdsafe.md_code_span``/``md_text`` (as explain's line evidence does): a quoted line holding a
    backtick closed the plain quote early there, and its tail read as text."""
    best: tuple[float, str, LineStallRow] | None = None
    for row in stall_rows:
        for reason, points in (row.get("stall_points") or {}).items():
            if best is None or points > best[0]:
                best = (points, reason, row)
    if best is None or best[0] <= 0:
        top = next(iter(stall_rows), None)
        if top is None:
            return None
        return (
            plain(f"{kernel} ({toolchain} vs {reference}), per line: the largest change is ")
            + _where(top, code, plain)
            + plain(f" {top['points']:+.0f} points of the stall samples.")
        )
    points, reason, row = best
    text = plain(
        f"{kernel} ({toolchain} vs {reference}), per line: stall '{reason}' {points:+.0f} points at "
    ) + _where(row, code, plain)
    same = next((c for c in compile_rows if c.get("file") == row["file"] and c.get("line") == row["line"]), None)
    if same is not None:
        delta = same.get("delta") or {}
        local = int(delta.get("local_loads", 0)) + int(delta.get("local_stores", 0))
        parts = []
        if local:
            parts.append(f"{local:+d} LDL/STL")
        if delta.get("instructions"):
            parts.append(f"{int(delta['instructions']):+d} instructions")
        if parts:
            text += plain(f", where the compiler changed {', '.join(parts)}")
    return text + "."


def compile_line_rows(ref: CubinLines | None, new: CubinLines | None) -> list[JSONObject]:
    """The compile-side line diff of the two profiled cubins (``analyze.lines.diff_lines``): every
    moved line, highest predicted impact first."""
    if ref is None or new is None:
        return []
    return [d.to_json() for d in diff_lines(ref.stats, new.stats)]


def toolchain_lines(
    source_csv: str | None,
    kernel_names: Sequence[str],
    cubin_of: Any,
    nvdisasm: Path | None,
    carried_of: Callable[[str], CarriedText | None] | None = None,
) -> list[LaunchLines]:
    """Per profiled launch of one toolchain (in order): its samples per line, the cubin's lines, or
    why there are none. ``cubin_of(kernel_name)`` gives the launched cubin's path (or None),
    ``carried_of(kernel_name)`` the source text its bundle carries (``analyze.lines.CarriedText``)."""
    if source_csv is None:
        return [{"error": "no ncu source page (SourceCounters) for this toolchain"} for _ in kernel_names]
    blocks = parse_source_csv(source_csv)
    out: list[LaunchLines] = []
    for i, name in enumerate(kernel_names):
        if i >= len(blocks):
            out.append({"error": "the ncu source page has no block for this launch"})
            continue
        cubin = cubin_of(name)
        if cubin is None:
            out.append({"error": f"no cubin of {name!r} in the bundle for this toolchain"})
            continue
        if nvdisasm is None:
            out.append(
                {
                    "error": "no nvdisasm on this host (PATH, /usr/local/cuda/bin, Triton's wheel, $KTRIAGE_NVDISASM): "
                    "the samples cannot be put on source lines"
                }
            )
            continue
        carried = carried_of(name) if carried_of is not None else None
        lines = cubin_lines(Path(cubin), name, nvdisasm, carried)
        if isinstance(lines, str):
            out.append({"error": lines})
            continue
        per_line, missing = line_samples(blocks[i], lines.line_map, carried)
        out.append({"lines": per_line, "cubin": lines, "unmapped_samples": missing, "error": None})
    return out


def top_lines_json(per_line: Mapping[tuple[str, str | int], LineSamples], top: int = TOP_LINES) -> list[TopLine]:
    """A launch's lines with the most stall samples, for the per-toolchain part of the document."""
    total = sum(x.samples for x in per_line.values())
    ranked = sorted(per_line.values(), key=lambda x: (-x.samples, x.file, x.line))[:top]
    return [
        {
            "file": x.file,
            "line": x.line,
            "text": x.text,
            "samples": x.samples,
            "share_pct": _share(x, total),
            "stalls": dict(sorted(x.stalls.items(), key=lambda kv: -kv[1])),
        }
        for x in ranked
    ]
