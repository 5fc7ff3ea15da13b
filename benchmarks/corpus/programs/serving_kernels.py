"""vLLM and sglang Triton kernels driven on the GPU without their packages (issue 23's corpus).

The serving engines are not installed on the GPU host: their wheels carry CUDA extensions and pull in a
web stack. Their Triton kernels need neither. This program loads the *real* kernel modules, extracted from
the vllm 0.34.0 and sglang 0.5.23 wheels into ``$SERVING_SRC`` (see ../README.md: how the folder is made),
under their own dotted names, and answers the host-side helpers they import (``vllm.platforms``,
``sglang.srt.utils``, ``sgl_kernel``, ...) with a stand-in module (`_HostStandIn`, named as such): platform
queries say "CUDA, not ROCm", environment flags say "off". The kernels, their Python wrappers and their
launch decisions are the engines' own.

Each workload runs in its own try block: one failing kernel never stops the others. Prints one line per
kernel family and a checksum.
"""

from __future__ import annotations

import enum
import importlib.abc
import importlib.machinery
import importlib.util
import math
import os
import sys
import traceback
import types
from pathlib import Path
from typing import Any

import torch
import triton

SRC = Path(os.environ.get("SERVING_SRC", ".carry/serving")).resolve()
DEV = "cuda" if torch.cuda.is_available() else "cpu"  # cpu: TRITON_INTERPRET=1 smoke runs


class _Flag:
    """An environment flag of sglang's ``envs`` (``envs.X.get()``): off."""

    def get(self) -> Any:
        return False


class _Envs:
    """sglang.srt.environ.envs: every flag off."""

    def __getattr__(self, name: str) -> _Flag:
        return _Flag()


class _HostStandIn(types.ModuleType):
    """A host-side helper module of vLLM/sglang that the kernels' modules import but this program does not
    install: attributes are answered by the table below, or by a callable that returns False."""

    ANSWERS: dict[str, Any] = {
        "is_cuda": lambda: True, "is_hip": lambda: False, "is_cpu": lambda: False, "is_npu": lambda: False,
        "is_xpu": lambda: False, "cpu_has_amx_support": lambda: False, "is_sm90_supported": lambda: True,
        "is_sm100_supported": lambda: False, "is_gfx95_supported": lambda: False,
        "is_gfx1250_supported": lambda: False, "is_arch_support_pdl": lambda: False,
        "is_batch_invariant_mode_enabled": lambda: False, "get_moe_padding_size": lambda *a: 0,
        "get_device_core_count": lambda *a: torch.cuda.get_device_properties(0).multi_processor_count
        if torch.cuda.is_available() else 132,
        "init_logger": lambda name: __import__("logging").getLogger(name),
        "VLLM_BATCH_INVARIANT": False, "RCP_LN2": 1.0 / math.log(2.0),
        "next_power_of_2": lambda n: 1 << (int(n) - 1).bit_length(),
        "get_max_shared_memory_bytes": lambda *a: 227 * 1024,
        "tl": __import__("triton.language").language, "triton": triton, "envs": _Envs(),
    }

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name in self.ANSWERS:
            return self.ANSWERS[name]
        if name.isupper() and name.startswith(("SGLANG_", "VLLM_")):
            return _Flag() if name.startswith("SGLANG_") else False
        return lambda *args, **kwargs: False


class _Platform:
    """vllm.platforms.current_platform for one CUDA GPU."""

    def is_rocm(self) -> bool:
        return False

    def is_cuda(self) -> bool:
        return True

    def fp8_dtype(self) -> torch.dtype:
        return torch.float8_e4m3fn

    def get_device_capability(self, *a: Any) -> Any:
        return torch.cuda.get_device_capability() if torch.cuda.is_available() else (9, 0)

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: False


class KVQuantMode(enum.IntEnum):
    """vllm.v1.kv_cache_interface.KVQuantMode's members (the attention wrappers compare against them)."""

    NONE = 0
    FP8_PER_TENSOR = 1
    INT8_PER_TOKEN_HEAD = 2
    FP8_PER_TOKEN_HEAD = 3
    INT4_PER_TOKEN_HEAD = 4


class _StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Real files under SRC load as themselves; any other vllm/sglang/sgl_kernel module is a stand-in."""

    ROOTS = ("vllm", "sglang", "sgl_kernel")

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name.split(".")[0] not in self.ROOTS:
            return None
        real = SRC / (name.replace(".", "/") + ".py")
        if real.is_file():
            return importlib.util.spec_from_file_location(name, real)
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec: Any) -> types.ModuleType:
        module = _HostStandIn(spec.name)
        module.__path__ = []
        if spec.name == "vllm.platforms":
            module.current_platform = _Platform()  # type: ignore[attr-defined]
        if spec.name == "vllm.v1.kv_cache_interface":
            module.KVQuantMode = KVQuantMode  # type: ignore[attr-defined]
            module.is_quantized_kv_cache = lambda *a: False  # type: ignore[attr-defined]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


sys.meta_path.insert(0, _StandInFinder())


def moe_align(topk_ids: torch.Tensor, num_experts: int, block_m: int) -> tuple[torch.Tensor, ...]:
    """sgl_kernel's moe_align_block_size in torch: token slots sorted by expert, each expert padded to
    block_m with the sentinel numel(topk_ids); one expert id per block; the padded total."""
    flat = topk_ids.flatten()
    sentinel = flat.numel()
    ids, experts = [], []
    for e in range(num_experts):
        slots = (flat == e).nonzero().flatten().to(torch.int32)
        pad = (-slots.numel()) % block_m
        ids.append(torch.cat([slots, torch.full((pad,), sentinel, dtype=torch.int32, device=flat.device)]))
        experts += [e] * ((slots.numel() + pad) // block_m)
    sorted_ids = torch.cat(ids)
    return (sorted_ids, torch.tensor(experts, dtype=torch.int32, device=flat.device),
            torch.tensor([sorted_ids.numel()], dtype=torch.int32, device=flat.device))


def sglang_fused_moe(tokens: int) -> float:
    from sglang.kernels.ops.moe.fused_moe_triton_kernels import invoke_fused_moe_kernel

    E, topk, K, N = 8, 2, 1024, 2 * 1408
    a = torch.randn(tokens, K, device=DEV, dtype=torch.bfloat16) / 8
    w = torch.randn(E, N, K, device=DEV, dtype=torch.bfloat16) / 8
    c = torch.zeros(tokens, topk, N, device=DEV, dtype=torch.bfloat16)
    logits = torch.randn(tokens, E, device=DEV)
    topk_w, topk_ids = torch.topk(logits.softmax(-1), topk, dim=-1)
    config = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8,
              "num_warps": 4, "num_stages": 3}
    sorted_ids, expert_ids, padded = moe_align(topk_ids, E, config["BLOCK_SIZE_M"])
    invoke_fused_moe_kernel(a, w, None, c, None, None, None, topk_w.contiguous(), topk_ids, sorted_ids, expert_ids,
                            padded, False, topk, config, triton.language.bfloat16, False, False, False, False, False)
    return float(c.float().abs().sum())


def sglang_decode(batch: int, seq: int) -> float:
    from sglang.kernels.ops.attention.decode_attention import decode_attention_fwd

    H, KVH, D, splits = 32, 8, 128, 8
    q = torch.randn(batch, H, D, device=DEV, dtype=torch.bfloat16)
    k = torch.randn(batch * seq, KVH, D, device=DEV, dtype=torch.bfloat16)
    v = torch.randn(batch * seq, KVH, D, device=DEV, dtype=torch.bfloat16)
    o = torch.empty(batch, H, D, device=DEV, dtype=torch.bfloat16)
    indptr = torch.arange(0, batch + 1, device=DEV, dtype=torch.int32) * seq
    indices = torch.arange(batch * seq, device=DEV, dtype=torch.int32)
    logits = torch.empty(batch, H, splits, D, device=DEV, dtype=torch.float32)
    lse = torch.empty(batch, H, splits, device=DEV, dtype=torch.float32)
    n_splits = torch.full((batch,), splits, device=DEV, dtype=torch.int32)
    decode_attention_fwd(q, k, v, o, indptr, indices, logits, lse, n_splits, splits, 1 / math.sqrt(D), 1.0, 1.0)
    return float(o.float().abs().sum())


def vllm_unified(seqs: int, q_len: int, ctx: int) -> float:
    from vllm.v1.attention.ops.triton_unified_attention import unified_attention

    H, KVH, D, block = 32, 8, 128, 16
    blocks_per_seq = (ctx + block - 1) // block
    q = torch.randn(seqs * q_len, H, D, device=DEV, dtype=torch.bfloat16)
    kc = torch.randn(seqs * blocks_per_seq, block, KVH, D, device=DEV, dtype=torch.bfloat16)
    vc = torch.randn_like(kc)
    out = torch.empty_like(q)
    cu_q = torch.arange(0, seqs + 1, device=DEV, dtype=torch.int32) * q_len
    used_k = torch.full((seqs,), ctx, device=DEV, dtype=torch.int32)
    table = torch.arange(seqs * blocks_per_seq, device=DEV, dtype=torch.int32).reshape(seqs, blocks_per_seq)
    unified_attention(q, kc, vc, out, cu_q, q_len, used_k, ctx, 1 / math.sqrt(D), True, (-1, -1), table, 0.0,
                      None, None, None)
    return float(out.float().abs().sum())


def vllm_decode(batch: int, seq: int) -> float:
    from vllm.v1.attention.ops.triton_decode_attention import decode_attention_fwd

    H, KVH, D, splits = 32, 8, 128, 8
    q = torch.randn(batch, H, D, device=DEV, dtype=torch.bfloat16)
    k = torch.randn(batch * seq, KVH, D, device=DEV, dtype=torch.bfloat16)
    v = torch.randn_like(k)
    o = torch.empty(batch, H, D, device=DEV, dtype=torch.bfloat16)
    lse = torch.empty(batch, H, device=DEV, dtype=torch.float32)
    req_to_token = torch.arange(batch * seq, device=DEV, dtype=torch.int32).reshape(batch, seq)
    seq_len = torch.full((batch,), seq, device=DEV, dtype=torch.int32)
    logits = torch.empty(batch, H, splits, D + 1, device=DEV, dtype=torch.float32)
    decode_attention_fwd(q, k, v, o, lse, req_to_token, seq_len, logits, splits, 1 / math.sqrt(D))
    return float(o.float().abs().sum())


def vllm_merge(tokens: int) -> float:
    from vllm.v1.attention.ops.triton_merge_attn_states import merge_attn_states

    H, D = 32, 128
    out = torch.empty(tokens, H, D, device=DEV, dtype=torch.bfloat16)
    p, s = (torch.randn(tokens, H, D, device=DEV, dtype=torch.bfloat16) for _ in range(2))
    plse, slse = (torch.randn(H, tokens, device=DEV, dtype=torch.float32) for _ in range(2))
    merge_attn_states(out, p, plse, s, slse)
    return float(out.float().abs().sum())


WORKLOADS = [
    ("sglang fused_moe_kernel tokens=256", lambda: sglang_fused_moe(256)),
    ("sglang fused_moe_kernel tokens=2048", lambda: sglang_fused_moe(2048)),
    ("sglang decode_attention batch=16 seq=2048", lambda: sglang_decode(16, 2048)),
    ("sglang decode_attention batch=64 seq=1024", lambda: sglang_decode(64, 1024)),
    ("vllm unified_attention prefill 4x512 ctx=512", lambda: vllm_unified(4, 512, 512)),
    ("vllm unified_attention decode 64x1 ctx=2048", lambda: vllm_unified(64, 1, 2048)),
    ("vllm decode_attention batch=32 seq=2048", lambda: vllm_decode(32, 2048)),
    ("vllm merge_attn_states tokens=4096", lambda: vllm_merge(4096)),
]


def main() -> int:
    torch.manual_seed(0)
    failed = 0
    total = 0.0
    for name, run in WORKLOADS:
        try:
            value = run()
            if DEV == "cuda":
                torch.cuda.synchronize()
            total += value
            print(f"ok   {name}: {value:.6e}", flush=True)
        except Exception:
            failed += 1
            print(f"FAIL {name}:\n{traceback.format_exc()}", flush=True)
    print(f"checksum={total:.6e} failed={failed}/{len(WORKLOADS)}")
    return 1 if failed == len(WORKLOADS) else 0


if __name__ == "__main__":
    sys.exit(main())
