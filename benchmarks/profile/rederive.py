"""Re-derive the profile documents from the committed raw ncu CSVs with this checkout's parser and
diff (no GPU): writes h200/<case>/profile.rederived.{json,md} next to the device's own profile.json,
and lines_h200/profile.rederived.{json,md} (per-line stalls: its source pages on its bundle's cubins,
nvdisasm from $KTRIAGE_NVDISASM, PATH or Triton's wheel) when that run is committed.

    PYTHONPATH=. python benchmarks/profile/rederive.py
"""

from __future__ import annotations

import json
from pathlib import Path

from ktriage.profile.diff import bundle_lines_side, document, to_markdown
from ktriage.profile.ncu import parse_raw_csv

HERE = Path(__file__).resolve().parent
CASES = [p for p in sorted((HERE / "h200").iterdir()) if p.is_dir()] + (
    [HERE / "lines_h200"] if (HERE / "lines_h200" / "profile.json").exists() else []
)

for case in CASES:
    device = json.loads((case / "profile.json").read_text())
    profiles = []
    for tc, info in device["toolchains"].items():
        raw = case / f"{tc}.raw.csv"
        launches = parse_raw_csv(raw.read_text()) if raw.exists() else []
        profiles.append(
            {
                "toolchain": tc,
                "launches": launches,
                "error": info["error"],
                "files": info["files"],
                "command": info["command"],
            }
        )
    lines_side = None
    if (case / "bundle" / "manifest.json").exists():  # a per-line run (lines_h200.sh): its cubins came back
        from types import SimpleNamespace

        from ktriage.workload.bundles.format import load_bundle

        bundle = load_bundle(case / "bundle")
        entry = next(i for i in bundle.inputs if int(i["id"]) == device["input_id"])
        keys = list(entry["kernels"][device["backend"]].values())
        lines_side = bundle_lines_side(
            bundle,
            keys,
            [SimpleNamespace(toolchain=p["toolchain"], files=p["files"], launches=p["launches"]) for p in profiles],
            case,
        )
    doc = document(
        op=device["op"],
        mode=device["mode"],
        input_id=device["input_id"],
        backend=device["backend"],
        reference=device["reference"],
        profiles=profiles,
        compile_side={tc: i["compile_side"] for tc, i in device["toolchains"].items()},
        ncu_version=device["ncu_version"],
        bundle=device["bundle"],
        lines_side=lines_side,
    )
    doc["created"] = device["created"]
    (case / "profile.rederived.json").write_text(json.dumps(doc, indent=1) + "\n")
    (case / "profile.rederived.md").write_text(to_markdown(doc))
    print(f"{case.name}: {len(doc['findings'])} findings")
