"""Diff the ncu counters of a bundle's toolchains per kernel and tie them to the compile side.

The reference is the bundle's first toolchain (as in bench and explain). Launches pair up by order
within the profiled call (every toolchain replays the same library call, so the same kernels in
the same order). Each pair gets the deltas of :data:`ktriage.profile.ncu.SCALARS`, the stall
reasons' shares in points, and one sentence that starts from what the compiler did (spill bytes,
the opcodes that changed most; from the bundle's resources summary) and says what the counters
show for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from ktriage.mdsafe import markdown_writer, md_code_span, md_text
from ktriage.profile.ncu import summarize
from ktriage.schema.jsontypes import JSONObject

if TYPE_CHECKING:
    from ktriage.profile.source import LaunchLines, LineStallRow, TopLine

FORMAT = 1


class SourceLines(TypedDict, total=False):
    """One launch's per-line part of a toolchain's entry: its top lines, or why there are none."""

    error: str | None
    lines: list[TopLine]
    unmapped_samples: int


class _ToolchainSideBase(TypedDict):
    status: str  # "ok", or "unavailable" (ncu could not profile it: error)
    error: str | None
    files: dict[str, str]  # the raw files ncu wrote, by kind
    command: list[str]
    compile_side: Mapping[str, Any] | None  # the bundle's resources of the kernel (free-form, as the bundle has them)
    launches: list[JSONObject]  # ncu.summarize of each launch: the counters are data, not fixed keys


class ToolchainSide(_ToolchainSideBase, total=False):
    """One toolchain's part of the profile document."""

    source_lines: list[SourceLines]  # when the source pages were read


class LineDiff(TypedDict):
    """The per-line part of a launch pair's diff: stall rows, the compile side's line diff, their sentence."""

    stalls: list[LineStallRow]
    compile: list[JSONObject]  # analyze.lines' LineDiff.to_json of each moved line
    finding: str | None


class _LaunchDiffBase(TypedDict):
    kernel: str
    launch: int
    toolchain: str
    reference: str
    deltas: JSONObject  # per counter {reference, new, delta, ratio}; stall_share_points
    finding: str


class LaunchDiff(_LaunchDiffBase, total=False):
    """One launch of a toolchain against the same launch of the reference."""

    lines: LineDiff  # when both sides have per-line samples


class ProfileReport(TypedDict):
    """The profile document (``ktriage profile``'s profile.json, :func:`document`): its keys are fixed,
    the counters inside (``launches``, ``deltas``) are data. A TypedDict, not a class, because the
    document is the JSON as written: the file, the attach to a results file and the markdown all read it."""

    format: int
    kind: str
    created: str
    bundle: str
    op: str
    mode: str
    input_id: int
    backend: str
    reference: str
    ncu_version: str | None
    toolchains: dict[str, ToolchainSide]
    diffs: list[LaunchDiff]
    findings: list[str]
    notes: list[str]


def _compile_side(resources: Mapping[str, Any] | None, reference: Mapping[str, Any] | None, toolchain: str) -> str:
    if not resources or "error" in resources:
        return f"{toolchain}: no compile-side resources in the bundle"
    spill, ref_spill = (
        int(resources.get("spill_store_bytes") or 0),
        int((reference or {}).get("spill_store_bytes") or 0),
    )
    regs = resources.get("registers")
    parts = []
    if spill or ref_spill:
        parts.append(f"{toolchain} spills {spill} B/thread (reference {ref_spill} B), {regs} registers")
    ops, ref_ops = resources.get("sass_opcodes") or {}, (reference or {}).get("sass_opcodes") or {}
    deltas = {k: int(ops.get(k, 0)) - int(ref_ops.get(k, 0)) for k in set(ops) | set(ref_ops)}
    changed = sorted((k for k, d in deltas.items() if d), key=lambda k: (-abs(deltas[k]), k))[:4]
    if changed:
        what = ", ".join(f"{k} {int(ref_ops.get(k, 0))}->{int(ops.get(k, 0))}" for k in changed)
        parts.append(f"SASS {what}" if parts else f"{toolchain} SASS {what}")
    banks = _bank_change(resources.get("shared_wavefronts"), (reference or {}).get("shared_wavefronts"))
    if banks:
        parts.append(banks if parts else f"{toolchain} {banks}")
    return "; ".join(parts) if parts else f"{toolchain}: the same resources as the reference"


def _bank_change(new: object, ref: object) -> str:
    """``bank conflicts read from the SASS: STS x1.0 -> x7.9`` when a factor moved by ``SHARED_CHANGE``
    either way (``analyze.shared_banks``, in the bundle's resources since schema 6), else "": the
    compile-side prediction next to the wavefronts ncu counts in the same sentence."""
    if not isinstance(new, Mapping) or not isinstance(ref, Mapping):
        return ""
    moved = []
    for kind in ("LDS", "STS"):
        a, b = ref.get(kind), new.get(kind)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and min(a, b) > 0:
            if max(a, b) / min(a, b) >= SHARED_CHANGE:
                moved.append(f"{kind} x{a:.1f} -> x{b:.1f}")
    return f"bank conflicts read from the SASS: {', '.join(moved)}" if moved else ""


def _mb(value: float) -> str:
    return f"{value / 1e6:.1f} MB"


def compare_launches(ref: Mapping[str, Any], new: Mapping[str, Any]) -> JSONObject:
    """Deltas of every number both summaries have, and stall-share deltas in points."""
    out: JSONObject = {}
    for key, value in new.items():
        if isinstance(value, float) and isinstance(ref.get(key), float):
            base = ref[key]
            out[key] = {
                "reference": base,
                "new": value,
                "delta": value - base,
                "ratio": (value / base) if base else None,
            }
    shares, ref_shares = new.get("stall_share_pct") or {}, ref.get("stall_share_pct") or {}
    if shares or ref_shares:
        points: dict[str, float] = {
            r: shares.get(r, 0.0) - ref_shares.get(r, 0.0) for r in set(shares) | set(ref_shares)
        }
        ranked: dict[str, float] = dict(sorted(points.items(), key=lambda kv: -abs(kv[1])))
        out["stall_share_points"] = ranked
    return out


def sentence(
    kernel: str,
    toolchain: str,
    reference: str,
    compile_side: str,
    ref: Mapping[str, Any],
    new: Mapping[str, Any],
    deltas: Mapping[str, Any],
) -> str:
    """One sentence: the compile-side change, then the counters that show (or do not show) it."""
    said: list[str] = []
    if new.get("local_share_of_l1_sectors_pct") or ref.get("local_share_of_l1_sectors_pct"):
        sectors = new.get("local_ld_sectors", 0.0) + new.get("local_st_sectors", 0.0)
        ref_share = ref.get("local_share_of_l1_sectors_pct", 0.0)
        said.append(
            f"local-memory (spill) traffic is {new['local_share_of_l1_sectors_pct']:.0f}% of all L1 sectors "
            f"({sectors:,.0f} sectors; reference {ref_share:.0f}%)"
        )
    atoms = [
        (k, label)
        for k, label in (("global_atom_requests", "atomic"), ("global_red_requests", "reduction"))
        if k in new and (new[k] or ref.get(k))
    ]
    if atoms:
        said.append(", ".join(f"global {label} requests {ref.get(k, 0.0):,.0f} -> {new[k]:,.0f}" for k, label in atoms))
    shared = _shared_memory_clause(ref, new)
    if shared:
        said.append(shared)
    if "dram_bytes" in new and "dram_bytes" in ref:
        said.append(f"DRAM {_mb(ref['dram_bytes'])} -> {_mb(new['dram_bytes'])}")
    points = deltas.get("stall_share_points") or {}
    if points:
        reason, delta = max(points.items(), key=lambda kv: kv[1])
        now = (new.get("stall_share_pct") or {}).get(reason, 0.0)
        said.append(f"stall '{reason}' {delta:+.0f} points (now {now:.0f}% of stall cycles)")
    if "achieved_occupancy_pct" in new and "achieved_occupancy_pct" in ref:
        limiter = new.get("occupancy_limiter")
        said.append(
            f"achieved occupancy {ref['achieved_occupancy_pct']:.0f}% -> {new['achieved_occupancy_pct']:.0f}%"
            + (f" (limit: {limiter})" if limiter else "")
        )
    if "duration_ns" in new and "duration_ns" in ref and ref["duration_ns"]:
        pct = 100.0 * (new["duration_ns"] / ref["duration_ns"] - 1)
        said.append(f"duration {ref['duration_ns'] / 1e3:.1f} -> {new['duration_ns'] / 1e3:.1f} us ({pct:+.0f}%)")
    counters = "; ".join(said) if said else "ncu reported none of the compared counters"
    return f"{kernel} ({toolchain} vs {reference}): {compile_side}: {counters}."


# a shared-memory change is named when the bank passes moved by this factor either way: a layout
# conversion through shared memory that became 8-way conflicted (Triton 3.3.1's inductor mul_sum
# reduction on the H200: 4.3M store wavefronts against 0.5M, +14 % time) is the cause there
SHARED_CHANGE = 1.5


def _shared_memory_clause(ref: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """``shared-memory wavefronts 1.1M -> 5.3M (bank conflicts 19k -> 4.2M)``, when they moved by
    ``SHARED_CHANGE`` or more, else "" (a few percent of bank traffic explains nothing)."""

    def total(side: Mapping[str, Any], kind: str) -> float | None:
        parts = [side.get(f"shared_{op}_{kind}") for op in ("ld", "st")]
        return None if all(p is None for p in parts) else float(sum(p or 0.0 for p in parts))

    waves, ref_waves = total(new, "wavefronts"), total(ref, "wavefronts")
    if waves is None or ref_waves is None or min(waves, ref_waves) <= 0:
        return ""
    if max(waves, ref_waves) / min(waves, ref_waves) < SHARED_CHANGE:
        return ""
    text = f"shared-memory wavefronts {_count(ref_waves)} -> {_count(waves)}"
    conflicts, ref_conflicts = total(new, "bank_conflicts"), total(ref, "bank_conflicts")
    if conflicts is not None and ref_conflicts is not None:
        text += f" (bank conflicts {_count(ref_conflicts)} -> {_count(conflicts)})"
    return text


def _count(value: float) -> str:
    for unit, size in (("M", 1e6), ("k", 1e3)):
        if value >= size:
            return f"{value / size:.1f}{unit}"
    return f"{value:.0f}"


def document(
    *,
    op: str,
    mode: str,
    input_id: int,
    backend: str,
    reference: str,
    profiles: Sequence[Mapping[str, Any]],
    compile_side: Mapping[str, Mapping[str, Any] | None],
    ncu_version: str | None,
    bundle: str = "",
    lines_side: Mapping[str, Sequence[LaunchLines]] | None = None,
) -> ProfileReport:
    """The profile document. ``profiles``: per toolchain {"toolchain", "launches": [Launch], "error", "files"};
    ``lines_side``: per toolchain, per launch, ``profile.source.toolchain_lines``' entries (the per-line
    stalls and the cubin's line map), when the source pages were read."""
    per_tc: dict[str, ToolchainSide] = {}
    summaries: dict[str, list[JSONObject]] = {}
    for p in profiles:
        tc = p["toolchain"]
        summaries[tc] = [summarize(launch) for launch in p.get("launches") or []]
        per_tc[tc] = {
            "status": "ok" if p.get("error") is None else "unavailable",
            "error": p.get("error"),
            "files": dict(p.get("files") or {}),
            "command": list(p.get("command") or []),
            "compile_side": compile_side.get(tc),
            "launches": summaries[tc],
        }
    diffs: list[LaunchDiff] = []
    findings: list[str] = []
    notes: list[str] = []
    for tc, info in per_tc.items():
        if info["error"]:
            notes.append(f"{tc}: {info['error']}")
    if lines_side is not None:
        from ktriage.profile.source import top_lines_json

        for tc, entries in lines_side.items():
            if tc in per_tc:
                per_tc[tc]["source_lines"] = [
                    {"error": e.get("error")}
                    if e.get("error")
                    else {"lines": top_lines_json(e["lines"]), "unmapped_samples": e.get("unmapped_samples", 0)}
                    for e in entries
                ]
                errors = sorted({str(e["error"]) for e in entries if e.get("error")})
                notes += [f"{tc}: per-line stalls: {err}" for err in errors]
    ref_launches = summaries.get(reference) or []
    for tc, launches in summaries.items():
        if tc == reference or not launches or not ref_launches:
            continue
        for i, (ref, new) in enumerate(zip(ref_launches, launches)):
            kernel = str(new.get("kernel_name", f"launch {i}"))
            deltas = compare_launches(ref, new)
            side = _compile_side(compile_side.get(tc), compile_side.get(reference), tc)
            text = sentence(kernel, tc, reference, side, ref, new, deltas)
            entry: LaunchDiff = {
                "kernel": kernel,
                "launch": i,
                "toolchain": tc,
                "reference": reference,
                "deltas": deltas,
                "finding": text,
            }
            diffs.append(entry)
            findings.append(text)
            line_text = _line_diff(entry, lines_side, reference, tc, i, kernel)
            if line_text:
                findings.append(line_text)
    return {
        "format": FORMAT,
        "kind": "ktriage-profile",
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "bundle": bundle,
        "op": op,
        "mode": mode,
        "input_id": input_id,
        "backend": backend,
        "reference": reference,
        "ncu_version": ncu_version,
        "toolchains": per_tc,
        "diffs": diffs,
        "findings": findings,
        "notes": notes,
    }


def _line_diff(
    entry: LaunchDiff,
    lines_side: Mapping[str, Sequence[LaunchLines]] | None,
    reference: str,
    tc: str,
    i: int,
    kernel: str,
) -> str | None:
    """Put the per-line stall diff and the compile-side line diff of launch ``i`` into ``entry``
    (``lines``); returns its sentence, or None when either side has no per-line samples."""
    from ktriage.profile.source import TOP_LINES, compile_line_rows, diff_line_samples, line_sentence

    if lines_side is None:
        return None
    ref_entries, new_entries = lines_side.get(reference) or [], lines_side.get(tc) or []
    if i >= len(ref_entries) or i >= len(new_entries):
        return None
    a, b = ref_entries[i], new_entries[i]
    if a.get("error") or b.get("error"):
        return None
    stalls = diff_line_samples(a["lines"], b["lines"])[:TOP_LINES]
    compile_rows = compile_line_rows(a.get("cubin"), b.get("cubin"))
    sentence_text = line_sentence(kernel, tc, reference, stalls, compile_rows)
    entry["lines"] = {"stalls": stalls, "compile": compile_rows, "finding": sentence_text}
    return sentence_text


def profile_document(
    bundle: Any,
    input_id: int,
    backend: str,
    profiles: Sequence[Any],
    *,
    ncu_version: str | None,
    raw_dir: Path | None = None,
) -> ProfileReport:
    """:func:`document` for a loaded bundle (``ktriage.workload.bundles.format.Bundle``) and run.ToolchainProfile's."""
    from ktriage.workload.bundles.format import BundleArtifact

    entry = next(i for i in bundle.inputs if int(i["id"]) == input_id)
    # an op input names its kernels per backend and role; a recorded entry is one spec
    keys = [str(entry["spec"])] if "spec" in entry else list(entry["kernels"][backend].values())
    compile_side: dict[str, Mapping[str, Any] | None] = {}
    for tc in bundle.toolchain_ids():
        art = bundle.artifacts.get((keys[0], tc)) if keys else None
        compile_side[tc] = art.resources if isinstance(art, BundleArtifact) else None
    rows = [
        {"toolchain": p.toolchain, "launches": p.launches, "error": p.error, "files": p.files, "command": p.command}
        for p in profiles
    ]
    return document(
        op=bundle.op,
        mode=bundle.mode,
        input_id=input_id,
        backend=backend,
        reference=bundle.toolchain_ids()[0],
        profiles=rows,
        compile_side=compile_side,
        ncu_version=ncu_version,
        bundle=str(bundle.path),
        lines_side=bundle_lines_side(bundle, keys, profiles, raw_dir),
    )


def bundle_lines_side(
    bundle: Any, keys: Sequence[str], profiles: Sequence[Any], raw_dir: Path | None
) -> dict[str, list[LaunchLines]]:
    """Per toolchain, the per-line samples of each launch: its source page (``<name>.source.csv`` in
    ``raw_dir``) on the bundle's cubins of this input (``profile.source.toolchain_lines``)."""
    from ktriage.analyze.lines import CarriedText
    from ktriage.profile.source import find_nvdisasm, toolchain_lines
    from ktriage.workload.bundles.format import BundleArtifact

    nvdisasm = find_nvdisasm()
    out: dict[str, list[LaunchLines]] = {}
    for p in profiles:
        name = p.files.get("source_csv")
        path = raw_dir / name if raw_dir is not None and name else None
        text = path.read_text() if path is not None and path.is_file() else None

        def artifact_of(kernel: str, tc: str = p.toolchain) -> BundleArtifact | None:
            for key in keys:
                art = bundle.artifacts.get((key, tc))
                if isinstance(art, BundleArtifact) and art.kernel_name == kernel:
                    return art
            return None

        def cubin_of(kernel: str) -> Path | None:
            art = artifact_of(kernel)
            return Path(art.cubin_path) if art is not None else None

        def carried_of(kernel: str) -> CarriedText | None:
            art = artifact_of(kernel)
            return art.source_text if art is not None else None

        kernels = [launch.kernel_name for launch in p.launches]
        out[p.toolchain] = toolchain_lines(text, kernels, cubin_of, nvdisasm, carried_of)
    return out


@markdown_writer
def to_markdown(doc: ProfileReport) -> str:
    """A short readable summary (the JSON has every number)."""
    lines = [
        f"# ktriage profile: {doc['op']} {doc['mode']} input {doc['input_id']} ({doc['backend']})",
        "",
        f"ncu: {doc.get('ncu_version') or 'not found'}; reference: `{doc['reference']}`",
        "",
    ]
    for note in doc.get("notes") or []:
        lines.append(f"- not profiled: {note}")
    if doc.get("findings"):
        # a per-line finding quotes a source line: written again for markdown (its quote a code span)
        written = {d["lines"]["finding"]: _line_finding_markdown(d) for d in doc.get("diffs") or [] if d.get("lines")}
        lines += ["## Findings", ""] + [f"- {written.get(f) or f}" for f in doc["findings"]] + [""]
    keys = (
        "registers_per_thread",
        "theoretical_occupancy_pct",
        "achieved_occupancy_pct",
        "occupancy_limiter",
        "local_ld_requests",
        "local_st_requests",
        "local_ld_sectors",
        "local_st_sectors",
        "local_share_of_l1_sectors_pct",
        "global_atom_requests",
        "global_red_requests",
        "shared_ld_wavefronts",
        "shared_st_wavefronts",
        "shared_ld_bank_conflicts",
        "shared_st_bank_conflicts",
        "dram_bytes",
        "dram_throughput_pct",
        "l2_throughput_pct",
        "inst_executed",
        "duration_ns",
    )
    tcs = [tc for tc, info in doc["toolchains"].items() if info["launches"]]
    if tcs:
        lines += [
            "## Counters (first launch of each toolchain)",
            "",
            "| counter | " + " | ".join(f"`{t}`" for t in tcs) + " |",
            "|---|" + "---|" * len(tcs),
        ]
        for key in keys:
            vals = [doc["toolchains"][t]["launches"][0].get(key) for t in tcs]
            if all(v is None for v in vals):
                continue
            cells = [("" if v is None else f"{v:,.1f}" if isinstance(v, float) else str(v)) for v in vals]
            lines.append(f"| {key} | " + " | ".join(cells) + " |")
        for t in tcs:
            shares = doc["toolchains"][t]["launches"][0].get("stall_share_pct")
            top = list(shares.items())[:5] if isinstance(shares, Mapping) else []
            if top:
                lines.append("")
                lines.append(f"Top stalls `{t}`: " + ", ".join(f"{r} {v:.0f}%" for r, v in top))
    lines += _lines_markdown(doc)
    return "\n".join(lines) + "\n"


def _delta(row: JSONObject) -> Mapping[str, Any]:
    """A compile-side line row's per-count change (``delta``; empty when nothing moved)."""
    delta = row.get("delta")
    return delta if isinstance(delta, Mapping) else {}


def _line_finding_markdown(d: LaunchDiff) -> str | None:
    """A launch pair's per-line finding as markdown: ``line_sentence`` again from the rows the JSON keeps,
    its quoted source line a code span (``md_code_span``), the rest escaped. The plain sentence's
    backticks closed early on a line that holds one (``s = '`'``), its tail read as text."""
    from ktriage.profile.source import line_sentence

    info = d.get("lines")
    if not info:
        return None
    return line_sentence(
        d["kernel"],
        d["toolchain"],
        d["reference"],
        info.get("stalls") or [],
        info.get("compile") or [],
        code=md_code_span,
        plain=md_text,
    )


def _lines_markdown(doc: ProfileReport) -> list[str]:
    """Per launch pair with per-line samples: the lines whose share of the stall samples moved most,
    next to what the compiler did at each line (the two cubins' line diff)."""
    out: list[str] = []
    for d in doc.get("diffs") or []:
        info = d.get("lines")
        if not info or not info.get("stalls"):
            continue
        compile_at = {(c["file"], c["line"]): _delta(c) for c in info.get("compile") or []}
        out += [
            "",
            f"## Per line: {d['kernel']} (`{d['toolchain']}` vs `{d['reference']}`)",
            "",
            _line_finding_markdown(d) or "",
            "",
            "| line | source | stall samples, reference | new | points | reasons (points) | compile side |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in info["stalls"]:
            ref, new = row["ref"], row["new"]
            reasons = ", ".join(f"{r} {p:+.1f}" for r, p in list((row.get("stall_points") or {}).items())[:3])
            delta = compile_at.get((row["file"], row["line"]), {})
            local = int(delta.get("local_loads", 0)) + int(delta.get("local_stores", 0))
            side = ", ".join(
                x
                for x in (
                    f"LDL/STL {local:+d}" if local else "",
                    f"instructions {int(delta['instructions']):+d}" if delta.get("instructions") else "",
                )
                if x
            )
            text = str(row.get("text") or "").replace("|", "\\|").replace("`", "'")
            out.append(
                f"| {row['file']}:{row['line']} | `{text[:60]}` | {ref['share_pct'] if ref else 0.0:.1f}% | "
                f"{new['share_pct'] if new else 0.0:.1f}% | {row['points']:+.1f} | {reasons} | {side} |"
            )
    return out
