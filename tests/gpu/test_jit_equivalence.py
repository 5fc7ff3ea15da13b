"""GPU host only: for every catalog op, the PTX ktriage compiles from the catalog spec must equal,
text for text, the PTX Triton's JIT produced for the real launch (Liger's autograd functions on
TritonBench-like tensors; the tutorial kernels through their wrappers).

Each op runs in its own process (ktriage.catalog.jit_probe) because two liger-kernel versions
cannot be imported into one interpreter. Needs the liger-kernel packages under
``$KTRIAGE_HOME/packages`` (``ensure_package`` on a connected machine, then carry the folder).
Per-kernel results go to ``$KTRIAGE_GPU_OUT/jit_equivalence/<op>.<mode>.json`` when that is set.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[2]

# (op, mode, inputs): a few inputs each, including the layer_norm cliffs (4096 -> 4608, 8192 -> 8704).
CASES = [
    ("liger.layer_norm", "bwd", ["0", "6", "7", "14", "15"]),
    ("liger.layer_norm", "fwd", ["6", "7"]),
    ("liger.embedding", "bwd", ["0", "8"]),
    ("liger.embedding", "fwd", ["0", "8"]),
    ("liger.layer_norm@0.8.5", "bwd", ["0", "6", "7", "15"]),
    ("liger.layer_norm@0.8.5", "fwd", ["7"]),
    ("liger.embedding@0.8.5", "bwd", ["0", "8"]),
    ("liger.rms_norm", "bwd", ["0", "4"]),
    ("liger.rms_norm", "fwd", ["4"]),
    ("liger.rms_norm@0.8.5", "bwd", ["0", "4"]),
    ("liger.rms_norm@0.8.5", "fwd", ["4"]),
    ("tutorial.vector_add", "fwd", None),
    ("tutorial.softmax", "fwd", None),
    ("tutorial.layer_norm", "fwd", None),
    ("tutorial.matmul", "fwd", None),
]


# Without a GPU tests/conftest.py skips these (the `gpu` marker).
@pytest.mark.parametrize(("op", "mode", "inputs"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_catalog_ptx_equals_jit_ptx(op: str, mode: str, inputs: list[str] | None, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    cmd = [sys.executable, "-m", "ktriage.catalog.jit_probe", "--op", op, "--mode", mode, "--out", str(out)]
    for i in inputs or []:
        cmd += ["--input", i]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env, cwd=REPO, timeout=900)
    assert out.exists(), f"probe wrote no result:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    results = json.loads(out.read_text())
    gpu_out = os.environ.get("KTRIAGE_GPU_OUT")
    if gpu_out:
        dest = Path(gpu_out) / "jit_equivalence"
        dest.mkdir(parents=True, exist_ok=True)
        (dest / f"{op}.{mode}.json").write_text(json.dumps(results, indent=2))
    expected = len(inputs) if inputs else None
    if expected is not None:
        assert len(results) == expected
    assert results, "no spec was probed"
    failures = [
        f"{r['spec']}: {r.get('error') or chr(10).join(r.get('ptx_diff_head', [])[:20])}"
        for r in results
        if not r.get("equal")
    ]
    assert not failures, "PTX differs from the JIT's:\n" + "\n".join(failures)
    # The captured launch is the one the spec describes (same device SM count as the grid's source).
    for r in results:
        assert r["ptx_lines"] > 10
        assert r["jit_ptx_sha256"] == r["ktriage_ptx_sha256"]
        assert r["cubin_equal"], f"{r['spec']}: the PTX is the JIT's but the cubin is not"
    # The comparison is sensitive: dropping the divisibility hints changes the PTX of these kernels.
    if op.startswith(("liger.layer_norm", "tutorial.vector_add")):
        assert any(r.get("ptx_differs_without_divisibility") for r in results)
