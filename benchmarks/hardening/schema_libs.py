"""Which validation library for the schema layer: pydantic v2 or msgspec (issue 11).

Validates one large synthetic results file (``{"run": ..., "cells": [...]}``, N cells of S raw samples
each) with the same strict model in both libraries, each in a fresh process, and prints the time of the
validation (best of 5) and the peak resident memory of the process above its baseline.

    /work/main/.venv/bin/python benchmarks/hardening/schema_libs.py [--cells 20000 --samples 200]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile

CHILD = r"""
import json, resource, sys, time
lib, path = sys.argv[1], sys.argv[2]
raw = open(path, "rb").read()
from typing import Any, Literal, Optional
Status = Literal["ok", "wrong", "error", "timeout", "skipped"]
if lib == "msgspec":
    import msgspec
    class Key(msgspec.Struct, forbid_unknown_fields=True):
        op: str; mode: str; input_id: int; input_label: str; backend: str; toolchain: Optional[str] = None
    class Cell(msgspec.Struct, forbid_unknown_fields=True):
        key: Key; status: Status; samples_ms: list[float] = []; error: Optional[str] = None
        accuracy: dict[str, Any] = {}; bytes_moved: Optional[int] = None; flops: Optional[int] = None
        extra: dict[str, Any] = {}
    class Run(msgspec.Struct):
        run_id: str; created: str; command: str = ""; host: str = ""; gpu: dict[str, Any] = {}
        toolchains: list[dict[str, Any]] = []; packages: dict[str, str] = {}; workload_git_sha: Optional[str] = None
        settings: dict[str, Any] = {}; status: str = "running"
    class Doc(msgspec.Struct):
        run: Run; cells: list[Cell]; format_version: int = 1
    dec = msgspec.json.Decoder(Doc)
    def go():
        return dec.decode(raw)
else:
    import pydantic
    from pydantic import BaseModel, ConfigDict
    class M(BaseModel):
        model_config = ConfigDict(strict=True, extra="forbid")
    class Key(M):
        op: str; mode: str; input_id: int; input_label: str; backend: str; toolchain: Optional[str] = None
    class Cell(M):
        key: Key; status: Status; samples_ms: list[float] = []; error: Optional[str] = None
        accuracy: dict[str, Any] = {}; bytes_moved: Optional[int] = None; flops: Optional[int] = None
        extra: dict[str, Any] = {}
    class Run(M):
        run_id: str; created: str; command: str = ""; host: str = ""; gpu: dict[str, Any] = {}
        toolchains: list[dict[str, Any]] = []; packages: dict[str, str] = {}; workload_git_sha: Optional[str] = None
        settings: dict[str, Any] = {}; status: str = "running"
    class Doc(M):
        run: Run; cells: list[Cell]; format_version: int = 1
    def go():
        return Doc.model_validate_json(raw)
def rss_mib():
    return int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize() / 2**20
if sys.argv[3] == "mem":  # one validation in a fresh process: peak RSS and the live result, above the start
    start = rss_mib()
    doc = go()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"lib": lib, "rss_start_mib": round(start, 1), "rss_after_mib": round(rss_mib(), 1),
                      "peak_rss_mib": round(peak, 1), "result_live_mib": round(rss_mib() - start, 1)}))
    raise SystemExit(0)
best = min((lambda t0: (go(), time.perf_counter() - t0)[1])(time.perf_counter()) for _ in range(5))
# the json.loads route (what ktriage did before): parse to dicts, no validation
t0 = time.perf_counter(); json.loads(raw); plain = time.perf_counter() - t0
print(json.dumps({"lib": lib, "validate_best_of_5_s": round(best, 4), "json_loads_s": round(plain, 4)}))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", type=int, default=20000)
    ap.add_argument("--samples", type=int, default=200)
    a = ap.parse_args()
    cells = [
        {
            "key": {
                "op": "layer_norm",
                "mode": "fwd",
                "input_id": i % 50,
                "input_label": f"N={i}",
                "backend": "liger_layer_norm",
                "toolchain": "triton-3.4.0",
            },
            "status": "ok",
            "samples_ms": [0.01 + j * 1e-5 for j in range(a.samples)],
            "error": None,
            "accuracy": {"passed": True},
            "bytes_moved": 1 << 20,
            "flops": None,
            "extra": {},
        }
        for i in range(a.cells)
    ]
    doc = {
        "format_version": 1,
        "run": {"run_id": "abc", "created": "2026-12-01T00:00:00+00:00", "toolchains": [{"id": "t"}]},
        "cells": cells,
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(doc, fh)
        path = fh.name
    size = len(open(path, "rb").read()) / 2**20
    print(json.dumps({"file_mib": round(size, 1), "cells": a.cells, "samples_per_cell": a.samples}))
    for lib in ("msgspec", "pydantic"):
        for what in ("time", "mem"):
            out = subprocess.run(
                [sys.executable, "-c", CHILD, lib, path, what], capture_output=True, text=True, check=True
            )
            print(out.stdout.strip())


if __name__ == "__main__":
    main()
