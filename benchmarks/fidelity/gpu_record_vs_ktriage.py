"""On the GPU host: record a REAL program's Triton launches (real torch, real driver, real autotuning)
and check that ktriage's spec of each recorded JIT-level launch compiles to the JIT's cubin.

The program: flash-linear-attention's ``chunk_gated_delta_rule`` forward (bf16, B=1, T=8192, H=16,
K=V=128), whose kernels carry ``@triton.heuristics`` and ``@triton.autotune``; the autotuner really
times its configs here, so every config it tried is a compile to check. Then Liger's swiglu and
cross_entropy through their autograd functions. Recording: insitu/jitrun.Recorder (wraps
``JITFunction.run`` and ``triton.compile``). ktriage side: fidelity.harness.spec_from_jit_launch (the
spec by ktriage's rules from the launch values) compiled by insitu/worker.compile_in_process with the
host's Triton; compared byte for byte with the cubin the JIT built.

    python3 benchmarks/fidelity/gpu_record_vs_ktriage.py OUT_DIR   (KTRIAGE_HOME holds the packages)
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="ktriage-record-")
os.environ["TRITON_ALWAYS_COMPILE"] = "1"
os.environ["KTRIAGE_REAL_DRIVER"] = "1"

from ktriage.fidelity.harness import normalized_ast, spec_from_jit_launch
from ktriage.fidelity.model import FidelityCase
from ktriage.insitu import jitrun, ptxas_capture, worker
from ktriage.spec.launch import Launch
from ktriage.spec.packages import package_dir

PROGRAMS = {"fla": "fla-core==0.6.0", "liger": "liger-kernel==0.8.5"}


def run_fla() -> None:
    import torch
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule

    torch.manual_seed(0)
    b, t, h, d = 1, 8192, 16, 128
    q, k, v = (torch.randn(b, t, h, d, dtype=torch.bfloat16, device="cuda") for _ in range(3))
    k = torch.nn.functional.normalize(k.float(), dim=-1).to(torch.bfloat16)
    g = torch.nn.functional.logsigmoid(torch.randn(b, t, h, dtype=torch.float32, device="cuda"))
    beta = torch.rand(b, t, h, dtype=torch.bfloat16, device="cuda").sigmoid()
    chunk_gated_delta_rule(q, k, v, g, beta)
    torch.cuda.synchronize()


def run_liger() -> None:
    import torch
    from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction

    a = torch.randn(8192, 11008, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    bb = torch.randn(8192, 11008, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    y = LigerSiLUMulFunction.apply(a, bb)
    y.backward(torch.randn_like(y))
    x = torch.randn(4096, 32000, dtype=torch.float32, device="cuda", requires_grad=True)
    target = torch.randint(0, 32000, (4096,), device="cuda")
    loss = LigerCrossEntropyFunction.apply(x, target, None)
    loss = loss[0] if isinstance(loss, tuple) else loss
    loss.backward()
    torch.cuda.synchronize()


def check(program: str, out: Path) -> list[dict[str, Any]]:
    package = PROGRAMS[program]
    sys_path = [str(package_dir(package)), str(package_dir("einops==0.8.1")), str(package_dir("packaging==24.2"))]
    for entry in reversed(sys_path):
        sys.path.insert(0, entry)
    ptxas_capture.install()
    recorder = jitrun.Recorder(str(out))
    recorder.install()
    {"fla": run_fla, "liger": run_liger}[program]()
    launches, compiles = recorder.take()
    rows = []
    for launch in launches:
        for index in launch["compiles"]:
            record = compiles[index]
            module = launch["module"]
            source = f"{module}:{launch['function']}"
            case = FidelityCase(
                name=f"{program}:{launch['function']}#{index}",
                launch=Launch(name=launch["function"], source=source, package=package, args=()),
            )
            row: dict[str, Any] = {
                "case": case.name,
                "function": launch["function"],
                "options": {k: launch["options"].get(k) for k in ("num_warps", "num_stages")},
                "jit_cubin_sha256": record["cubin_sha256"],
            }
            try:
                spec = spec_from_jit_launch(case, launch, "sm_90")
                ours = worker.compile_in_process(spec.to_json(), sys_path)
                import hashlib

                row["ktriage_cubin_sha256"] = hashlib.sha256(ours["cubin"]).hexdigest()
                row["equal"] = row["ktriage_cubin_sha256"] == record["cubin_sha256"]
                row["ast_equal"] = normalized_ast(ours["ast_source"]) == normalized_ast(record["ast_source"])
            except Exception as exc:
                row["equal"] = False
                row["error"] = f"{type(exc).__name__}: {exc}"
                row["traceback"] = traceback.format_exc()[-1500:]
            rows.append(row)
    return rows


def main(out: Path, program: str) -> int:
    out.mkdir(parents=True, exist_ok=True)
    rows = check(program, out)
    (out / f"record_vs_ktriage_{program}.json").write_text(json.dumps(rows, indent=1))
    for row in rows:
        print("EQUAL" if row["equal"] else "DIFF ", row["case"], row["options"], row.get("error", ""))
    print(f"{sum(r['equal'] for r in rows)} of {len(rows)} recorded compiles identical")
    return 0 if rows and all(r["equal"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "fla"))
