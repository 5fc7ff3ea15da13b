"""On the GPU host: does the fake-driver JIT (ktriage/insitu/jitrun.py, what CI runs for every Triton)
build the same cubin as the real JIT on the real GPU, for the catalog cases?

Real side: ktriage.catalog.jit_probe runs each op's real library launch on the GPU (real torch tensors)
and records the JIT's cubin sha256. Fake side: jitrun.py in the same Python (host Triton) replays the
catalog launches with the fake driver and stand-in tensors. Both sides compile in their own process.

    python3 benchmarks/fidelity/gpu_fake_vs_real.py OUT_DIR [REAL_DIR]   (KTRIAGE_HOME holds the Liger packages)

REAL_DIR: read the real side from jit_probe JSON files already written there (tests/gpu/
test_jit_equivalence.py writes them under $KTRIAGE_GPU_OUT/jit_equivalence) instead of running them again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from ktriage.fidelity.cases import CATALOG_SELECTION, catalog_cases
from ktriage.spec.packages import package_dir


def main(out: Path, real_dir: Path | None = None) -> int:
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    real: dict[str, dict] = {}
    for path in sorted(real_dir.glob("*.json")) if real_dir else []:
        for row in json.loads(path.read_text()):
            real[row["spec"]] = row
    for op, mode, inputs in [] if real_dir else CATALOG_SELECTION:
        path = out / f"real-{op}-{mode}.json"
        cmd = [sys.executable, "-m", "ktriage.catalog.jit_probe", "--op", op, "--mode", mode, "--out", str(path)]
        for i in inputs:
            cmd += ["--input", i]
        subprocess.run(cmd, env=env, cwd=REPO, check=False, timeout=900)
        for row in json.loads(path.read_text()) if path.exists() else []:
            real[row["spec"]] = row
    cases = catalog_cases()
    groups: dict[str | None, list] = {}
    for c in cases:
        groups.setdefault(c.launch.package, []).append(c)
    fake: dict[str, dict] = {}
    for index, (pkg, members) in enumerate(groups.items()):
        sys_path = [str(package_dir(pkg)), str(package_dir("packaging==24.2"))] if pkg else []
        req = {
            "target_cc": 90,
            "prime": False,
            "out_dir": str(out / f"fake-{index}"),
            "cases": [
                {
                    "id": c.name,
                    "source": c.launch.source,
                    "sys_path": sys_path,
                    "args": c.launch.encoded_args(),
                    "options": c.launch.options(),
                    "grid": list(c.launch.grid),
                    "autotune_pick": 0,
                }
                for c in members
            ],
        }
        Path(req["out_dir"]).mkdir(parents=True, exist_ok=True)
        (out / f"fake-{index}.request.json").write_text(json.dumps(req))
        res = out / f"fake-{index}.json"
        subprocess.run(
            [sys.executable, str(REPO / "ktriage/insitu/jitrun.py"), str(out / f"fake-{index}.request.json"), str(res)],
            check=False,
            timeout=1800,
        )
        for item in json.loads(res.read_text())["cases"] if res.exists() else []:
            fake[item["id"]] = item
    rows = []
    for c in cases:
        r, f = real.get(c.name, {}), fake.get(c.name, {})
        compiles = f.get("compiles") or []
        fake_sha = compiles[-1]["cubin_sha256"] if compiles else None
        rows.append(
            {
                "case": c.name,
                "real_cubin_sha256": r.get("jit_cubin_sha256"),
                "fake_cubin_sha256": fake_sha,
                "equal": bool(fake_sha) and fake_sha == r.get("jit_cubin_sha256"),
                "real_error": r.get("error"),
                "fake_error": f.get("error"),
                "ktriage_equal_real": r.get("cubin_equal"),
            }
        )
    (out / "fake_vs_real.json").write_text(json.dumps(rows, indent=1))
    for row in rows:
        print(("EQUAL" if row["equal"] else "DIFF "), row["case"], row["real_error"] or "", row["fake_error"] or "")
    return 0 if all(r["equal"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else None))
