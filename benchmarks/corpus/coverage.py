"""The corpus's coverage table (issue 23): each program of ops.txt x stage, with each failure's cause.

Stages, from the committed files under benchmarks/corpus/h200/:
- recorded: the program under `ktriage record` on the H200 (logs/, workloads/): kernels and inputs, or why none;
- compiled: `ktriage explain` per toolchain (explain/NAME.json): kernel inputs that compiled, the first failure;
- benched: `ktriage bench --bundle` on the H200 (bench/NAME.json): cells measured per toolchain, the first error;
- profiled: `ktriage profile` of the bundle's first input (profile/NAME.json), for the sample;
- triaged: `triage_corpus.py` (triage/NAME.json): 3.3.1 -> 3.6.0 from the bench's own results.

    .venv/bin/python benchmarks/corpus/coverage.py     # writes coverage.md and coverage.json next to this file
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "h200"
RECORD_HOST_TRITON = "3.6.0"


def read_json(path: Path) -> Any:
    """A JSON file, or its gzipped copy (PATH.gz: the explain reports are committed gzipped)."""
    try:
        if not path.exists() and path.with_name(path.name + ".gz").exists():
            return json.loads(gzip.decompress(path.with_name(path.name + ".gz").read_bytes()))
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


def last_error(log: Path) -> str:
    """The program's own last error line (ModuleNotFoundError, OutOfMemoryError, ...) or how record ended."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return "no log"
    for line in reversed(lines):
        if re.match(r"^\w*(Error|Exception)\b|^torch\.\w+Error", line.strip()):
            return line.strip()[:160]
    for line in reversed(lines):
        if "killed by" in line or "interrupted" in line:
            return line.strip()[:160]
    return ""


def recorded(name: str) -> dict[str, Any]:
    workload = read_json(DATA / "workloads" / f"{name}.workload.json.gz")
    if workload is None:
        return {
            "ok": False,
            "kernels": 0,
            "inputs": 0,
            "cause": last_error(DATA / "logs" / f"{name}.log") or "no workload written",
        }
    kernels = workload.get("kernels", [])
    inputs = sum(len(k.get("inputs", [])) for k in kernels)
    cause = ""
    if not kernels:
        cause = last_error(DATA / "logs" / f"{name}.log") or "the program launched no Triton kernel"
    return {
        "ok": bool(kernels),
        "kernels": len(kernels),
        "inputs": inputs,
        "not_captured": len(workload.get("not_captured", [])),
        "kernel_ids": [k["id"] for k in kernels],
        "cause": cause,
    }


def compiled(name: str) -> dict[str, Any]:
    report = read_json(DATA / "explain" / f"{name}.json")
    if report is None:
        return {}
    out: dict[str, Any] = {}
    for tc in report.get("toolchains", []):
        ok = sum(1 for k in report.get("kernels", []) if "registers" in (k.get("results", {}).get(tc["id"]) or {}))
        fails = [
            f["message"]
            for k in report.get("kernels", [])
            for f in k.get("failures", [])
            if f.get("toolchain") == tc["id"]
        ]
        out[tc["triton_version"]] = {
            "ok": ok,
            "of": len(report.get("kernels", [])),
            "cause": fails[0][:160] if fails else "",
        }
    out["_kernels_ok"] = sorted(
        {
            k["name"].split("[")[0].rsplit(".", 1)[-1]
            for k in report.get("kernels", [])
            if any("registers" in (r or {}) for r in k.get("results", {}).values())
        }
    )
    return out


def benched(name: str) -> dict[str, Any]:
    results = read_json(DATA / "bench" / f"{name}.json")
    if results is None:
        return {}
    per: dict[str, Counter[str]] = {}
    causes: dict[str, str] = {}
    kernels_ok: set[str] = set()
    for cell in results["cells"]:
        version = re.sub(r"^triton-([\d.]+)\..*", r"\1", cell["key"]["toolchain"])
        per.setdefault(version, Counter())[cell["status"]] += 1
        if cell["status"] == "ok":
            kernels_ok.add(cell["key"]["backend"].split(":")[0])
        elif version not in causes:
            causes[version] = (cell.get("error") or cell["status"])[:160]
    out: dict[str, Any] = {
        v: {"ok": c["ok"], "of": sum(c.values()), "cause": causes.get(v, "")} for v, c in per.items()
    }
    out["_kernels_ok"] = sorted(kernels_ok)
    return out


def stage_file(stage: str, name: str) -> dict[str, Any]:
    doc = read_json(DATA / stage / f"{name}.json")
    if doc is None:
        return {}
    return {"ok": True, "exit": doc.get("exit_code"), "headline": str(doc.get("headline") or "")[:160]}


def cell(entry: dict[str, Any]) -> str:
    if not entry:
        return "-"
    text = f"{entry['ok']}/{entry['of']}"
    return text + (f" ({entry['cause']})" if entry.get("cause") else "")


def main() -> int:
    rows = []
    totals = Counter()
    for name in program_ids():
        rec, comp, bench = recorded(name), compiled(name), benched(name)
        prof, tri = stage_file("profile", name), stage_file("triage", name)
        kernels = set(rec.get("kernel_ids", []))
        explained = kernels & set(comp.get("_kernels_ok", [])) if comp else set()
        benched_k = kernels & set(bench.get("_kernels_ok", [])) if bench else set()
        totals.update(
            programs=1,
            ran=int(rec["ok"]),
            kernels=len(kernels),
            explained=len(explained),
            benched=len(benched_k),
            both=len(explained & benched_k),
            profiled=int(bool(prof)),
        )
        rows.append(
            {
                "program": name,
                "recorded": rec,
                "compiled": {k: v for k, v in comp.items() if not k.startswith("_")},
                "benched": {k: v for k, v in bench.items() if not k.startswith("_")},
                "profiled": prof,
                "triaged": tri,
                "kernels_explained": len(explained),
                "kernels_benched": len(benched_k),
            }
        )
    versions = ["3.6.0", "3.3.1", "3.4.0", "3.5.1", "3.9.0"]
    lines = [
        "# Corpus coverage (issue 23)",
        "",
        "Generated by `benchmarks/corpus/coverage.py` from the files under `benchmarks/corpus/h200/`.",
        "",
        f"- programs: {totals['programs']}; ran and launched Triton kernels under `ktriage record`: {totals['ran']}",
        f"- recorded kernels: {totals['kernels']}; explained (compiled by at least one toolchain): {totals['explained']}; "
        f"benched (at least one measured cell): {totals['benched']}; both: {totals['both']} "
        f"({100.0 * totals['both'] / max(1, totals['kernels']):.1f} %)",
        f"- profiled (sample): {totals['profiled']}",
        "",
        "| program | recorded (kernels/inputs) | "
        + " | ".join(f"compiled {v}" for v in versions)
        + " | benched 3.6.0 | benched 3.3.1 | benched 3.4.0 | profiled | triaged |",
        "|" + "---|" * (4 + len(versions) + 4),
    ]
    for row in rows:
        rec = row["recorded"]
        rec_text = f"{rec['kernels']}/{rec['inputs']}" if rec["ok"] else f"0 ({rec['cause']})"
        comp = [cell(row["compiled"].get(v, {})) for v in versions]
        bench = [cell(row["benched"].get(v, {})) for v in ("3.6.0", "3.3.1", "3.4.0")]
        prof = "yes" if row["profiled"] else "-"
        tri = f"exit {row['triaged']['exit']}" if row["triaged"] else "-"
        lines.append(
            f"| {row['program']} | {rec_text} | "
            + " | ".join(comp)
            + " | "
            + " | ".join(bench)
            + f" | {prof} | {tri} |"
        )
    (HERE / "coverage.md").write_text("\n".join(lines).replace("\\", "/") + "\n")
    (HERE / "coverage.json").write_text(json.dumps({"totals": dict(totals), "rows": rows}, indent=1) + "\n")
    print("\n".join(lines[:9]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
