"""The corpus's coverage table (issue 23): each program of ops.txt x stage, with each failure's cause.

Stages, from the committed files under benchmarks/corpus/h200/:
- recorded: the program under `ktriage record` on the H200 (workloads/, with logs/, rerecord_logs/,
  rerecord_logs_r3/): kernels and inputs, or why none; what the recorder named at record time (a kernel it cannot
  bench, launches it did not capture, a program stopped at the time limit) stays the cause of what follows from it;
- compiled: `ktriage explain` per toolchain (explain/REC.json): kernel inputs that compiled, the first failure;
- benched: `ktriage bench --bundle` on the H200 (bench/REC.json): cells measured per toolchain, the first error;
- profiled: `ktriage profile` of the bundle's first input (profile/REC.json), for the sample;
- triaged: `triage_corpus.py` (triage/REC.json): 3.3.1 -> 3.6.0 from the bench's own results.

A program recorded more than once counts once, by its latest recording (REC): NAME_r3 (round 3, the current
recorder) over NAME_rerecorded (round 2's serving kernels beside the first recording) over NAME. The older ones keep
their names because committed bench results and calibration cells refer to them. A later recording that holds no
kernel at all (its program stopped before the first launch) supersedes nothing: the row keeps the older recording and
names the later one's cause. Profiles and triage of an older recording of the program still count, marked as such.

    .venv/bin/python benchmarks/corpus/coverage.py     # writes coverage.md and coverage.json next to this file
"""

from __future__ import annotations

import ast
import gzip
import json
import re
import sys
import tarfile
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "h200"
RECORD_HOST_TRITON = "3.6.0"
# Latest first: the suffix of each round's re-recording of a program (see the module docstring).
SUCCESSION = ("_r3", "_rerecorded", "")
# Where each round's record logs are; the one whose run started last before the recording holds its log.
LOG_DIRS = ("logs", "rerecord_logs", "rerecord_logs_r3")
VERSIONS = ("3.6.0", "3.3.1", "3.4.0", "3.5.1", "3.9.0")
BENCHED = ("3.6.0", "3.3.1", "3.4.0")


def read_json(path: Path) -> Any:
    """A JSON file, or its gzipped copy (PATH.gz: workloads, explain reports and profiles are committed gzipped)."""
    gz = path.with_name(path.name + ".gz")
    try:
        if not path.exists() and gz.exists():
            return json.loads(gzip.decompress(gz.read_bytes()))
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def program_ids() -> list[str]:
    ids = []
    for line in (HERE / "ops.txt").read_text().splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        ids.append(f"tb_{words[1]}_{words[2]}" if words[0] == "tb" else words[1])
    return ids


def operator(name: str) -> str:
    """The operator a program runs: TritonBench's op (fwd and bwd are one operator), else the program itself."""
    match = re.match(r"^tb_(.+)_(fwd|bwd)$", name)
    return match.group(1) if match else name


def workload(rec: str) -> Any:
    return read_json(DATA / "workloads" / f"{rec}.workload.json")


def kernels_of(doc: Any) -> list[dict[str, Any]]:
    return list(doc.get("kernels", [])) if isinstance(doc, dict) else []


def log_dir_started(folder: str) -> float:
    """When that round's recording run started (its env.txt's first line), in seconds since the epoch."""
    try:
        first = (DATA / folder / "env.txt").read_text().splitlines()[0].strip()
        return datetime.strptime(first, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
    except (OSError, IndexError, ValueError):
        return 0.0


def log_of(rec: str, doc: Any) -> Path:
    """The record log of this recording: the round whose run started last before the recording did."""
    base = rec
    for suffix in SUCCESSION:
        if suffix and rec.endswith(suffix):
            base = rec[: -len(suffix)]
    started = float((doc or {}).get("recorded", {}).get("started", 0.0)) if isinstance(doc, dict) else 0.0
    best = DATA / "logs" / f"{base}.log"
    best_at = -1.0
    for folder in LOG_DIRS:
        at = log_dir_started(folder)
        log = DATA / folder / f"{base}.log"
        if log.exists() and at > best_at and (not started or at <= started + 60):
            best, best_at = log, at
    return best


def last_error(log: Path, errors_only: bool = False) -> str:
    """The program's own last error line (ModuleNotFoundError, OutOfMemoryError, ...) or how record ended."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return "" if errors_only else "no log"
    for line in reversed(lines):
        if re.match(r"^\w*(Error|Exception)\b|^torch\.\w+Error", line.strip()):
            return line.strip()[:160]
    if errors_only:
        return ""
    for line in reversed(lines):
        if "killed by" in line or "interrupted" in line:
            return line.strip()[:160]
    return ""


def program_end(doc: Any) -> str:
    """How the program ended under the recorder, when that limits the recording (a stop at the time limit)."""
    info = doc.get("recorded", {}) if isinstance(doc, dict) else {}
    if not info.get("interrupted"):
        return ""
    stop = f"the program was stopped by {info['interrupted']} after {float(info.get('seconds', 0)):.0f} s"
    if not kernels_of(doc):
        return f"{stop} (the per-program time limit), before its first Triton launch"
    return f"partial: {stop} (the per-program time limit); the workload holds what ran until then"


def record_notes(doc: Any) -> dict[str, str]:
    """Kernel id -> what the recorder said at record time stops its bench (a pointer table, ...)."""
    out: dict[str, str] = {}
    for kernel in kernels_of(doc):
        for note in kernel.get("notes", []):
            if "cannot bench" in note and kernel["id"] not in out:
                out[kernel["id"]] = re.sub(r"^input \d+: ", "", note)[:200]
    return out


def recorded(rec: str, doc: Any) -> dict[str, Any]:
    kernels = kernels_of(doc)
    end = program_end(doc)
    if doc is None:
        return {
            "recording": rec,
            "ok": False,
            "kernels": 0,
            "inputs": 0,
            "cause": last_error(log_of(rec, doc)) or "no workload written",
        }
    cause = ""
    if not kernels:
        error = last_error(log_of(rec, doc), errors_only=bool(end))
        cause = "; ".join(c for c in (end, error) if c) or "the program launched no Triton kernel"
    not_captured = doc.get("not_captured", [])
    return {
        "recording": rec,
        "ok": bool(kernels),
        "kernels": len(kernels),
        "inputs": sum(len(k.get("inputs", [])) for k in kernels),
        "not_captured": len(not_captured),
        "not_captured_launches": sum(int(n.get("launches", 0)) for n in not_captured),
        "not_captured_why": sorted({str(n.get("why", ""))[:160] for n in not_captured}),
        "partial": end,
        "cannot_bench": record_notes(doc),
        "kernel_ids": [k["id"] for k in kernels],
        "functions": {k["id"]: k.get("function", "") for k in kernels},
        "cause": cause,
    }


def choose(name: str) -> tuple[str, Any, list[dict[str, Any]]]:
    """The program's recording that counts (see the module docstring), its workload, and the others' summaries."""
    present = [(name + s, workload(name + s)) for s in SUCCESSION]
    present = [(rec, doc) for rec, doc in present if doc is not None]
    if not present:
        return name, None, []
    with_kernels = [(rec, doc) for rec, doc in present if kernels_of(doc)]
    rec, doc = with_kernels[0] if with_kernels else present[0]
    others = [recorded(r, d) for r, d in present if r != rec]
    return rec, doc, others


def newer(rec: str, than: str, name: str) -> bool:
    """Whether recording `rec` of program `name` is a later round's than `than` (SUCCESSION is latest first)."""
    return SUCCESSION.index(rec[len(name) :]) < SUCCESSION.index(than[len(name) :])


def kernel_of(name: str) -> str:
    """K0 from an explain kernel name (`fn.K0[args]`) or a bench backend (`K0:fn`)."""
    if ":" in name and "[" not in name.split(":", 1)[0]:
        return name.split(":", 1)[0]
    return name.split("[")[0].rsplit(".", 1)[-1]


def compiled(rec: str) -> dict[str, Any]:
    report = read_json(DATA / "explain" / f"{rec}.json")
    if report is None:
        return {}
    out: dict[str, Any] = {}
    kernels = report.get("kernels", [])
    for tc in report.get("toolchains", []):
        ok = sum(1 for k in kernels if "registers" in (k.get("results", {}).get(tc["id"]) or {}))
        fails = [f["message"] for k in kernels for f in k.get("failures", []) if f.get("toolchain") == tc["id"]]
        out[tc["triton_version"]] = {"ok": ok, "of": len(kernels), "cause": fails[0][:160] if fails else ""}
    out["_kernels_ok"] = sorted(
        {kernel_of(k["name"]) for k in kernels if any("registers" in (r or {}) for r in k.get("results", {}).values())}
    )
    causes: dict[str, str] = {}
    for k in kernels:
        for f in k.get("failures", []):
            causes.setdefault(kernel_of(k["name"]), str(f.get("message", ""))[:200])
    out["_causes"] = causes
    return out


def benched(rec: str) -> dict[str, Any]:
    results = read_json(DATA / "bench" / f"{rec}.json")
    if results is None:
        return {}
    per: dict[str, Counter[str]] = {}
    causes: dict[str, str] = {}
    kernel_causes: dict[str, str] = {}
    kernels_ok: set[str] = set()
    for cell in results["cells"]:
        version = re.sub(r"^triton-([\d.]+)\..*", r"\1", cell["key"]["toolchain"])
        per.setdefault(version, Counter())[cell["status"]] += 1
        kernel = kernel_of(cell["key"]["backend"])
        if cell["status"] == "ok":
            kernels_ok.add(kernel)
            continue
        error = (cell.get("error") or cell["status"])[:200]
        causes.setdefault(version, error[:160])
        if version == RECORD_HOST_TRITON or kernel not in kernel_causes:
            kernel_causes[kernel] = f"{version}: {error}"
    out: dict[str, Any] = {
        v: {"ok": c["ok"], "of": sum(c.values()), "cause": causes.get(v, "")} for v, c in per.items()
    }
    out["_kernels_ok"] = sorted(kernels_ok)
    out["_causes"] = kernel_causes
    return out


def stage_file(stage: str, recs: list[str]) -> dict[str, Any]:
    """The stage's report of the first of the recordings that has one (latest first); a failed run's cause."""
    for rec in recs:
        doc = read_json(DATA / stage / f"{rec}.json")
        if doc is not None:
            return {
                "ok": True,
                "recording": rec,
                "exit": doc.get("exit_code"),
                "headline": str(doc.get("headline") or "")[:160],
            }
    for rec in recs:
        txt = DATA / stage / f"{rec}.txt"
        if txt.exists():
            first = txt.read_text(errors="replace").strip().splitlines()[:1]
            cause = (first[0] if first else "no output")[:160]
            root = root_cause(DATA / stage, rec)
            return {"ok": False, "recording": rec, "cause": f"{cause}: {root}" if root else cause}
    return {}


def root_cause(folder: Path, rec: str) -> str:
    """The innermost error of a failed profile: the last exception line of its ncu logs (in a raw archive)."""
    for archive in sorted(folder.glob("*raw*.tar.xz")):
        try:
            with tarfile.open(archive) as tar:
                for member in tar.getmembers():
                    if not (member.name.startswith(f"{rec}/") and member.name.endswith(".log")):
                        continue
                    handle = tar.extractfile(member)
                    text = handle.read().decode(errors="replace") if handle else ""
                    errors = [ln for ln in text.splitlines() if re.match(r"^[\w.]+(Error|Exception): ", ln)]
                    if errors:
                        return shorten(re.sub(r"^[\w.]*\.(\w+: )", r"\1", errors[-1].strip()))[:240]
        except (OSError, tarfile.TarError):
            continue
    return ""


def shorten(message: str) -> str:
    """A message that quotes two long argument lists, said by their difference (what one has that the other lacks)."""
    match = re.search(r"^(.*?)(\[[^\]]*\]) differ from (.*?)(\[[^\]]*\])", message)
    if not match:
        return message
    try:
        first, second = ast.literal_eval(match.group(2)), ast.literal_eval(match.group(4))
    except (ValueError, SyntaxError):
        return message
    only_second = [a for a in second if a not in first]
    only_first = [a for a in first if a not in second]
    parts = [f"{match.group(3).strip()} also include {', '.join(only_second)}"] if only_second else []
    parts += [f"only the {match.group(1).split(':')[-1].strip()} include {', '.join(only_first)}"] if only_first else []
    return (
        f"{match.group(1).strip()} ({len(first)}) differ from {match.group(3).strip()} ({len(second)}): "
        + "; ".join(parts)
    )


def cell(entry: dict[str, Any]) -> str:
    if not entry:
        return "-"
    text = f"{entry['ok']}/{entry['of']}"
    return text + (f" ({entry['cause']})" if entry.get("cause") else "")


def kernel_failures(rec: dict[str, Any], comp: dict[str, Any], bench: dict[str, Any]) -> list[str]:
    """Each recorded kernel not both explained and benched, with its cause (the record-time one first)."""
    lines = []
    explained = set(comp.get("_kernels_ok", []))
    benched_ok = set(bench.get("_kernels_ok", []))
    for kid in rec.get("kernel_ids", []):
        label = f"{kid}:{rec['functions'].get(kid, '')}"
        if kid not in explained:
            why = comp.get("_causes", {}).get(kid, "no explain report" if not comp else "no toolchain compiled it")
            lines.append(f"{label} not explained: {why}")
        if kid not in benched_ok:
            why = (
                rec["cannot_bench"].get(kid)
                or bench.get("_causes", {}).get(kid)
                or ("not benched yet (no bench of this recording)" if not bench else "no cell of it was measured")
            )
            lines.append(f"{label} not benched: {why}")
    return lines


def render(row: dict[str, Any]) -> str:
    """One program's line of the coverage table."""
    rec = row["recorded"]
    rec_text = f"{rec['kernels']}/{rec['inputs']}" if rec["ok"] else f"0 ({rec['cause']})"
    comp = [cell(row["compiled"].get(v, {})) for v in VERSIONS]
    bench = [cell(row["benched"].get(v, {})) for v in BENCHED]
    prof = row["profiled"]
    if not prof:
        prof_text = "-"
    elif prof.get("ok"):
        prof_text = "yes" + ("" if prof["recording"] == row["recording"] else f" (of {prof['recording']})")
    else:
        prof_text = f"failed ({prof['cause']})"
    tri = row["triaged"]
    if not tri:
        tri_text = "-"
    elif tri.get("ok"):
        tri_text = f"exit {tri['exit']}" + ("" if tri["recording"] == row["recording"] else f" (of {tri['recording']})")
    else:
        tri_text = f"failed ({tri['cause']})"
    return (
        f"| {row['program']} | {row['recording']} | {rec_text} | "
        + " | ".join(comp)
        + " | "
        + " | ".join(bench)
        + f" | {prof_text} | {tri_text} | {'; '.join(row['notes']) or '-'} |"
    )


def main() -> int:
    rows: list[dict[str, Any]] = []
    totals: Counter[str] = Counter()
    profiled_ops: set[str] = set()
    failures: list[str] = []
    for name in program_ids():
        rec_name, doc, others = choose(name)
        rec = recorded(rec_name, doc)
        comp, bench = compiled(rec_name), benched(rec_name)
        recs = [rec_name] + [o["recording"] for o in others]
        prof, tri = stage_file("profile", recs), stage_file("triage", recs)
        kernels = set(rec.get("kernel_ids", []))
        explained = kernels & set(comp.get("_kernels_ok", []))
        benched_k = kernels & set(bench.get("_kernels_ok", []))
        if prof.get("ok"):
            profiled_ops.add(operator(name))
        totals.update(
            programs=1,
            ran=int(rec["ok"]),
            kernels=len(kernels),
            explained=len(explained),
            benched=len(benched_k),
            both=len(explained & benched_k),
            profiled=int(bool(prof.get("ok"))),
        )
        later_empty = [o for o in others if not o["ok"] and newer(o["recording"], rec_name, name)]
        notes = [f"{o['recording']}: no kernel ({o['cause']})" for o in later_empty]
        failures += [f"{name} ({o['recording']}): its re-recording holds no kernel: {o['cause']}" for o in later_empty]
        if rec["ok"]:
            notes += [rec["partial"]] if rec.get("partial") else []
            notes += [
                f"{rec['not_captured']} kernel(s) not captured ({rec['not_captured_launches']} launches): {w}"
                for w in rec.get("not_captured_why", [])[:1]
            ]
            for line in kernel_failures(rec, comp, bench):
                failures.append(f"{name} ({rec_name}) {line}")
        else:
            failures.append(f"{name} ({rec_name}): no Triton kernel recorded: {rec['cause']}")
        if prof and not prof.get("ok"):
            failures.append(f"{name} ({prof['recording']}) profile failed: {prof['cause']}")
        rows.append(
            {
                "program": name,
                "operator": operator(name),
                "recording": rec_name,
                "superseded": [o["recording"] for o in others if o not in later_empty],
                "recorded": rec,
                "notes": notes,
                "compiled": {k: v for k, v in comp.items() if not k.startswith("_")},
                "benched": {k: v for k, v in bench.items() if not k.startswith("_")},
                "profiled": prof,
                "triaged": tri,
                "kernels_explained": len(explained),
                "kernels_benched": len(benched_k),
            }
        )
    totals["profiled_operators"] = len(profiled_ops)
    pct = 100.0 * totals["both"] / max(1, totals["kernels"])
    lines = [
        "# Corpus coverage (issue 23)",
        "",
        "Generated by `benchmarks/corpus/coverage.py` from the files under `benchmarks/corpus/h200/`.",
        "",
        f"- programs: {totals['programs']}; ran and launched Triton kernels under `ktriage record`: {totals['ran']}",
        f"- recorded kernels: {totals['kernels']}; explained (compiled by at least one toolchain): "
        f"{totals['explained']}; benched (at least one measured cell): {totals['benched']}; both: {totals['both']} "
        f"({pct:.1f} %)",
        f"- profiled (sample): {totals['profiled']} programs across {totals['profiled_operators']} operators",
        "",
        "A program recorded more than once counts once, by its latest recording: `NAME_r3` (round 3, the current "
        "recorder) over `NAME_rerecorded` (round 2's serving kernels) over `NAME`; a later recording that holds no "
        "kernel (its program stopped before the first launch) supersedes nothing and is named in the notes. The "
        "`recording` column says which one counts; a profile or triage of an older recording of the program is marked with it.",
        "",
        "| program | recording | recorded (kernels/inputs) | "
        + " | ".join(f"compiled {v}" for v in VERSIONS)
        + " | "
        + " | ".join(f"benched {v}" for v in BENCHED)
        + " | profiled | triaged | notes |",
        "|" + "---|" * (3 + len(VERSIONS) + len(BENCHED) + 3),
    ]
    lines += [render(row) for row in rows]
    lines += [
        "",
        "## Remaining failures",
        "",
        "Each program without a recorded kernel, each recorded kernel of the counted recording that is not both "
        "explained and benched, and each failed profile, with its cause (the one named at record time first).",
        "",
    ]
    lines += [f"- {line}" for line in failures] or ["- none"]
    (HERE / "coverage.md").write_text("\n".join(lines).replace("\\", "/") + "\n")
    doc = {"totals": dict(totals), "failures": failures, "rows": rows}
    (HERE / "coverage.json").write_text(json.dumps(doc, indent=1) + "\n")
    print("\n".join(lines[:9]))
    print(f"remaining failures: {len(failures)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
