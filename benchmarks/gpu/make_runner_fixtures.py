#!/usr/bin/env python3
"""Compile the runner's GPU-test kernels HERE (CPU machine) and write a self-contained bundle.

The bundle (cubins + manifest.json with metadata, ABI and grid) is what tests/gpu/test_runner_gpu.py
launches on the GPU host, which has no ktriage toolchains. Kernels, each with Triton 3.3.1, 3.4.0
and 3.5.1 (their bundled ptxas; 3.5 adds the hidden profile-scratch pointer), target sm_90:

- tutorial.vector_add (N = 1,048,576): the simplest launch;
- liger.layer_norm backward (liger-kernel 0.5.10, TritonBench fp32 inputs 6 and 7, N = 4096 / 4608,
  grid = 132 SMs): the kernel of the 3.3.1 -> 3.4.0 regression report;
- tutorial.matmul (fp16, 2048^3, 128x128x64 tiles, 3 stages): 96 KB shared, needs the >48 KB opt-in;
- scalars_kernel: one parameter of each scalar type (fp32, fp16, bf16, i64, u32, i1);
- poke_kernel: the planted fault (launched with an address we choose);
- spin_kernel: the planted hang (a bounded spin on a flag nobody sets);
- 3.4.0 and later: desc_scale_kernel (device-side TMA descriptors: global scratch > 0) and
  cluster_add_kernel (num_ctas = 2: a cluster launch), when this Triton compiles them.

Run from the repository root (needs the toolchains; builds them on first use):
    .venv/bin/python benchmarks/gpu/make_runner_fixtures.py --out .gpu-artifacts/runner
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from ktriage.catalog.registry import expand_op
from ktriage.compile.compiler import Artifact, Compiler
from ktriage.spec.model import KernelSpec
from ktriage.toolchain.manager import ensure_toolchain
from ktriage.workload.bundles.named_kernels import write_kernel_bundle

KERNELS = Path(__file__).resolve().parent / "runner_kernels.py"
VERSIONS = ("3.3.1", "3.4.0", "3.5.1")
TARGET = "sm_90"


def own_specs(version: str) -> dict[str, KernelSpec]:
    def src(fn: str) -> str:
        return f"{KERNELS}:{fn}"

    specs = {
        "poke": KernelSpec(
            name="poke",
            source=src("poke_kernel"),
            signature={"ptr": "*fp32", "value": "fp32"},
            num_warps=1,
            target=TARGET,
            grid=(1,),
        ),
        "spin": KernelSpec(
            name="spin",
            source=src("spin_kernel"),
            signature={"flag_ptr": "*i32", "max_iters": "i32"},
            num_warps=1,
            target=TARGET,
            grid=(1,),
        ),
        "scalars": KernelSpec(
            name="scalars",
            source=src("scalars_kernel"),
            signature={"out_ptr": "*fp32", "a": "fp32", "b": "fp16", "c": "bf16", "d": "i64", "e": "u32", "f": "i1"},
            num_warps=1,
            target=TARGET,
            grid=(1,),
        ),
    }
    if version >= "3.4":
        specs["desc_scale"] = KernelSpec(
            name="desc_scale",
            source=src("desc_scale_kernel"),
            signature={
                "in_ptr": "*fp32",
                "out_ptr": "*fp32",
                "M": "i32",
                "N": "i32",
                "BLOCK_M": "constexpr",
                "BLOCK_N": "constexpr",
            },
            constexprs={"BLOCK_M": 64, "BLOCK_N": 64},
            divisible_by_16=("in_ptr", "out_ptr", "M", "N"),
            num_warps=4,
            target=TARGET,
            grid=(512 // 64, 256 // 64),
            meta={"M": 512, "N": 256},
        )
        specs["cluster_add"] = KernelSpec(
            name="cluster_add",
            source=src("cluster_add_kernel"),
            signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
            constexprs={"BLOCK": 1024},
            divisible_by_16=("x_ptr", "y_ptr", "out_ptr"),
            num_warps=4,
            num_ctas=2,
            target=TARGET,
            grid=(1000,),
            meta={"N": 1_000_000},
        )
    return specs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=REPO / ".gpu-artifacts" / "runner")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    catalog = {
        "vector_add": expand_op("tutorial.vector_add", inputs=["2"], target=TARGET),
        "layer_norm_bwd": expand_op("liger.layer_norm", mode="bwd", inputs=["6", "7"], target=TARGET),
        "matmul": expand_op("tutorial.matmul", inputs=["2"], target=TARGET),
    }
    artifacts: dict[str, Artifact] = {}
    skipped: dict[str, str] = {}
    with Compiler(jobs=args.jobs) as compiler:
        for version in VERSIONS:
            tc = ensure_toolchain(f"triton=={version}", progress=lambda line: print(line, file=sys.stderr))
            work: dict[str, KernelSpec] = {}
            for short, specs in catalog.items():
                for spec in specs:
                    input_id = spec.meta.get("input_id", 0)
                    suffix = f"_{input_id}" if short == "layer_norm_bwd" else ""
                    work[f"{short}{suffix}@{version}"] = spec
            for short, spec in own_specs(version).items():
                work[f"{short}@{version}"] = spec
            for name, spec in work.items():
                out = compiler.compile(spec, tc)
                if isinstance(out, Artifact):
                    artifacts[name] = out
                    md = out.frontend.metadata
                    print(
                        f"{name:28s} {out.kernel_name:32s} shared={md.get('shared')} warps={md.get('num_warps')} "
                        f"ctas={md.get('num_ctas')} scratch={md.get('global_scratch_size')} "
                        f"abi={[p.name for p in out.abi if p.hidden]}"
                    )
                else:
                    skipped[name] = f"{out.stage}/{out.kind}: {out.message.splitlines()[0][:300]}"
                    print(f"{name:28s} SKIPPED {skipped[name]}")
    path = write_kernel_bundle(
        args.out,
        artifacts,
        extra={"skipped": skipped, "versions": list(VERSIONS), "target": TARGET},
    )
    print(f"wrote {path} ({len(artifacts)} kernels, {len(skipped)} skipped)")
    required = [n for n in artifacts if not n.startswith(("desc_scale", "cluster_add"))]
    return 0 if len(required) == len(VERSIONS) * 7 else 1


if __name__ == "__main__":
    raise SystemExit(main())
