"""On a GPU host: run a catalog op's REAL launch, capture the PTX Triton's JIT built, compare with ktriage's.

Why: a spec is only useful if compiling it yields the kernel users run. This runs the library the
way TritonBench does (Liger's autograd functions on torch tensors; the tutorial kernels through
their wrappers), takes the PTX from the JIT's own kernel cache, compiles the catalog spec for the
same input with ``ktriage.insitu.worker.compile_in_process`` (this process's Triton), and compares
the texts. The SM count and target come from the real device.

Run one op per process (two liger-kernel versions cannot share one interpreter):
``python -m ktriage.catalog.jit_probe --op liger.layer_norm --mode bwd --input 7 --out result.json``
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import sys
import tempfile
import traceback
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from ktriage.atomic import write_atomic
from ktriage.schema.jsontypes import JSONObject

if TYPE_CHECKING:
    from ktriage.insitu.worker import SpecJSON
    from ktriage.spec.model import KernelSpec


def _probe_environment() -> None:
    """Set up this process for a probe, before Triton is imported (:func:`probe` does it first).

    Not at import: a process that only imports this module (the test suite imports every ktriage
    module) must keep its environment, or its compile workers inherit KTRIAGE_REAL_DRIVER=1 (no fake
    driver: modules that touch the driver at import fail) and this probe's Triton cache folder."""
    # Compile fresh in both paths: never let the JIT or ktriage read the other's cached result.
    os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="ktriage-jit-probe-"))
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"
    # The real GPU driver runs the library's launches here: compile_in_process must not install its fake.
    os.environ["KTRIAGE_REAL_DRIVER"] = "1"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class _Capture:
    """Records what the JIT passed to its compile (signature, constexprs, attrs) via Triton's hook."""

    def __init__(self) -> None:
        self.records: list[JSONObject] = []

    def __call__(self, *, key: Any, repr: str, fn: Any, compile: Mapping[str, Any], **_: Any) -> bool:
        configs = compile.get("configs") or [{}]
        self.records.append(
            {
                "function": getattr(fn, "name", "?"),
                "signature": dict(compile.get("signature") or {}),
                "constants": {str(k): str(v) for k, v in (compile.get("constants") or {}).items()},
                "attrs": {str(k): v for k, v in (configs[0] or {}).items()},
                "num_warps": compile.get("num_warps"),
                "num_stages": compile.get("num_stages"),
            }
        )
        return False

    def install(self) -> None:
        import triton

        knobs = getattr(triton, "knobs", None)
        if knobs is not None and hasattr(knobs.runtime, "jit_post_compile_hook"):
            knobs.runtime.jit_post_compile_hook = self
        else:  # Triton 3.3
            from triton.runtime.jit import JITFunction

            JITFunction.compiled_hook = self


def _clear(jit_fn: Any) -> None:
    for cache in getattr(jit_fn, "device_caches", {}).values():
        cache[0].clear()


def _compiled(jit_fn: Any) -> list[Any]:
    kernels: list[Any] = []
    for cache in getattr(jit_fn, "device_caches", {}).values():
        kernels.extend(cache[0].values())
    return kernels


# ----------------------------------------------------------------------------- real launches
def _liger_layer_norm(facts: dict[str, int], dtype: Any, mode: str) -> tuple[Callable[[], None], Any]:
    import torch
    from liger_kernel.ops import layer_norm as mod

    m, n = facts["M"], facts["N"]
    x = (-2.3 + 0.5 * torch.randn((m, n), dtype=dtype, device="cuda")).requires_grad_()
    w = torch.rand((n,), dtype=dtype, device="cuda", requires_grad=True)
    b = torch.rand((n,), dtype=dtype, device="cuda", requires_grad=True)

    def run() -> None:
        y = mod.LigerLayerNormFunction.apply(x, w, b, 1e-5)
        if mode == "bwd":
            y.backward(0.1 * torch.randn_like(y), retain_graph=True)

    fn = mod._layer_norm_backward_kernel if mode == "bwd" else mod._layer_norm_forward_kernel
    return run, fn


def _liger_embedding(facts: dict[str, int], dtype: Any, mode: str) -> tuple[Callable[[], None], Any]:
    import torch
    from liger_kernel.ops.experimental import embedding as mod

    b, t, d, v = (facts[k] for k in ("B", "T", "D", "V"))
    idx = torch.randint(0, v, (b, t), device="cuda")
    weight = torch.nn.Embedding(v, d).to("cuda").to(dtype).weight

    def run() -> None:
        out = mod.LigerEmbeddingFunction.apply(weight, idx)
        if mode == "bwd":
            out.backward(torch.randn_like(out), retain_graph=True)

    fn = mod.embedding_backward_kernel if mode == "bwd" else mod.embedding_forward_kernel
    return run, fn


def _liger_rms_norm(facts: dict[str, int], dtype: Any, mode: str) -> tuple[Callable[[], None], Any]:
    import torch
    from liger_kernel.ops import rms_norm as mod

    m, n = facts["M"], facts["N"]
    x = torch.randn((m, n), dtype=dtype, device="cuda").requires_grad_()
    w = torch.ones((n,), dtype=torch.float32, device="cuda", requires_grad=True)  # LigerRMSNorm's weight

    def run() -> None:
        y = mod.LigerRMSNormFunction.apply(x, w, 1e-6, 0.0, "llama", True)
        if mode == "bwd":
            y.backward(torch.randn_like(y), retain_graph=True)

    fn = mod._rms_norm_backward_kernel if mode == "bwd" else mod._rms_norm_forward_kernel
    return run, fn


def _tutorial(short: str) -> Callable[[dict[str, int], Any, str], tuple[Callable[[], None], Any]]:
    def make(facts: dict[str, int], dtype: Any, mode: str) -> tuple[Callable[[], None], Any]:
        import torch

        from ktriage.catalog.kernels import layer_norm, matmul, softmax, vector_add

        if short == "vector_add":
            x = torch.rand(facts["N"], dtype=dtype, device="cuda")
            y = torch.rand(facts["N"], dtype=dtype, device="cuda")
            return (lambda: vector_add.add(x, y)), vector_add.add_kernel
        if short == "softmax":
            x = torch.randn((facts["M"], facts["N"]), dtype=dtype, device="cuda")
            return (lambda: softmax.softmax(x)), softmax.softmax_kernel
        if short == "layer_norm":
            x = torch.randn((facts["M"], facts["N"]), dtype=dtype, device="cuda")
            w = torch.rand(facts["N"], dtype=dtype, device="cuda")
            bias = torch.rand(facts["N"], dtype=dtype, device="cuda")
            return (lambda: layer_norm.layer_norm(x, w, bias)), layer_norm.layer_norm_fwd_kernel
        a = torch.randn((facts["M"], facts["K"]), dtype=dtype, device="cuda")
        bm = torch.randn((facts["K"], facts["N"]), dtype=dtype, device="cuda")
        return (lambda: matmul.matmul(a, bm)), matmul.matmul_kernel

    return make


_RUNNERS = {
    "liger.layer_norm": _liger_layer_norm,
    "liger.embedding": _liger_embedding,
    "liger.rms_norm": _liger_rms_norm,
    "tutorial.vector_add": _tutorial("vector_add"),
    "tutorial.softmax": _tutorial("softmax"),
    "tutorial.layer_norm": _tutorial("layer_norm"),
    "tutorial.matmul": _tutorial("matmul"),
}


def _worker_spec(spec: KernelSpec) -> SpecJSON:
    """``KernelSpec.to_json()`` is the spec format the compile worker reads (its keys are SpecJSON's)."""
    return cast("SpecJSON", spec.to_json())


def _spec_view(spec: Any) -> JSONObject:
    return {
        "signature": spec.signature,
        "constexprs": {k: str(v) for k, v in spec.constexprs.items()},
        "divisible_by_16": list(spec.divisible_by_16),
        "equal_to_1": list(spec.equal_to_1),
        "num_warps": spec.num_warps,
        "num_stages": spec.num_stages,
    }


def probe(op: str, *, mode: str | None, inputs: list[str] | None, dtype: str | None) -> list[JSONObject]:
    """Compare JIT and ktriage PTX for each selected input of ``op``; one result dict per spec."""
    _probe_environment()
    import torch
    import triton

    from ktriage.catalog import catalog_op, expand_op
    from ktriage.insitu.worker import compile_in_process
    from ktriage.spec.packages import is_installed, package_dir

    info = catalog_op(op)
    props = torch.cuda.get_device_properties(0)
    target = f"sm_{props.major}{props.minor}"
    specs = expand_op(op, mode=mode, inputs=inputs, dtype=dtype, target=target, sm_count=props.multi_processor_count)
    sys_path: list[str] = []
    if info.package:
        if not is_installed(info.package):
            raise SystemExit(
                f"{info.package} is not installed under {package_dir(info.package)}: carry it to this host"
            )
        sys_path = [str(package_dir(info.package))]
        sys.path.insert(0, sys_path[0])
    runner = _RUNNERS[op.split("@")[0] if op.startswith("liger.") else op]
    capture = _Capture()
    capture.install()
    results = []
    for spec in specs:
        torch.manual_seed(1337)
        row: JSONObject = {
            "op": info.name,
            "spec": spec.name,
            "input_id": spec.meta.get("input_id"),
            "mode": spec.meta.get("mode"),
            "target": target,
            "sm_count": props.multi_processor_count,
            "device": props.name,
            "triton_version": triton.__version__,
            "torch_version": torch.__version__,
            "package": info.package,
        }
        try:
            tdtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[spec.meta["dtype"]]
            run, jit_fn = runner(spec.meta["shape"], tdtype, spec.meta["mode"])
            _clear(jit_fn)
            capture.records.clear()
            run()
            torch.cuda.synchronize()
            kernels = _compiled(jit_fn)
            if len(kernels) != 1:
                raise RuntimeError(f"expected 1 compiled {spec.source_function()} kernel, the JIT has {len(kernels)}")
            jit_ptx = kernels[0].asm["ptx"]
            ours = compile_in_process(_worker_spec(spec), sys_path)
            kt_ptx = ours["ptx"]
            row["cubin_equal"] = kernels[0].asm["cubin"] == ours["cubin"]  # Triton's own cubin, both sides
            row["jit_cubin_sha256"] = hashlib.sha256(kernels[0].asm["cubin"]).hexdigest()
            jit_spec = [r for r in capture.records if str(r["function"]).split(".")[-1] == spec.source_function()]
            row.update(
                equal=jit_ptx == kt_ptx,
                jit_ptx_sha256=_sha(jit_ptx),
                ktriage_ptx_sha256=_sha(kt_ptx),
                ptx_lines=jit_ptx.count("\n"),
                jit_specialization=jit_spec[-1] if jit_spec else None,
                spec_specialization=_spec_view(spec),
            )
            # Sensitivity check: the same spec without divisibility hints must give other PTX,
            # otherwise "equal" would prove nothing about the specialization.
            if spec.divisible_by_16:
                plain = spec.replace(divisible_by_16=())
                row["ptx_differs_without_divisibility"] = (
                    compile_in_process(_worker_spec(plain), sys_path)["ptx"] != kt_ptx
                )
            if jit_ptx != kt_ptx:
                diff = difflib.unified_diff(
                    jit_ptx.splitlines(), kt_ptx.splitlines(), "jit", "ktriage", lineterm="", n=1
                )
                row["ptx_diff_head"] = list(diff)[:40]
        except Exception as exc:
            row.update(equal=False, error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc()[-2000:])
        results.append(row)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", required=True)
    parser.add_argument("--mode")
    parser.add_argument("--dtype")
    parser.add_argument("--input", action="append", dest="inputs")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    results = probe(args.op, mode=args.mode, inputs=args.inputs, dtype=args.dtype)
    write_atomic(args.out, json.dumps(results, indent=2))
    for r in results:
        print(f"{'EQUAL' if r.get('equal') else 'DIFF '} {r['spec']} {r.get('error', '')}")
    return 0 if all(r.get("equal") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
