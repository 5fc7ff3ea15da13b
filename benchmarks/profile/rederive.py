"""Re-derive the profile documents from the committed raw ncu CSVs with this checkout's parser and
diff (no GPU): writes h200/<case>/profile.rederived.{json,md} next to the device's own profile.json.

    PYTHONPATH=. python benchmarks/profile/rederive.py
"""

from __future__ import annotations

import json
from pathlib import Path

from ktriage.profile.diff import document, to_markdown
from ktriage.profile.ncu import parse_raw_csv

HERE = Path(__file__).resolve().parent / "h200"

for case in sorted(p for p in HERE.iterdir() if p.is_dir()):
    device = json.loads((case / "profile.json").read_text())
    profiles = []
    for tc, info in device["toolchains"].items():
        raw = case / f"{tc}.raw.csv"
        launches = parse_raw_csv(raw.read_text()) if raw.exists() else []
        profiles.append({"toolchain": tc, "launches": launches, "error": info["error"], "files": info["files"],
                         "command": info["command"]})
    doc = document(op=device["op"], mode=device["mode"], input_id=device["input_id"], backend=device["backend"],
                   reference=device["reference"], profiles=profiles,
                   compile_side={tc: i["compile_side"] for tc, i in device["toolchains"].items()},
                   ncu_version=device["ncu_version"], bundle=device["bundle"])
    doc["created"] = device["created"]
    (case / "profile.rederived.json").write_text(json.dumps(doc, indent=1) + "\n")
    (case / "profile.rederived.md").write_text(to_markdown(doc))
    print(f"{case.name}: {len(doc['findings'])} findings")
