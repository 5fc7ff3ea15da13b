#!/usr/bin/env python3
"""Check ktriage's occupancy calculator against the CUDA driver on a real GPU.

Why: ktriage computes occupancy offline (no GPU) for every artifact; this script proves, on a real
device, that ``ktriage.analyze.occupancy.compute_occupancy`` returns what
``cuOccupancyMaxActiveBlocksPerMultiprocessor`` returns, over a grid of
(registers per thread, warps per CTA 1..32, dynamic shared memory), and that the ``ktriage.arch``
table matches the device's attributes.

How: PTX kernels are generated here with a chosen register need -- N values loaded with volatile
loads (so they stay in order) and then folded starting from the LAST one, so all N are live at once
-- and capped with ``.maxnreg`` to land on a chosen count (ptxas spills the rest, which does not
matter: nothing is launched). Some kernels also declare static shared memory. Each is JIT-loaded with
``cuModuleLoadData``; the driver reports ``CU_FUNC_ATTRIBUTE_NUM_REGS`` / ``SHARED_SIZE_BYTES``, and
those reported values (not the intended ones) feed the model. Dynamic shared memory above 48 KB needs
``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES``, set to the opt-in maximum as Triton's launcher does.

Run on the GPU host from the repository root:
    PYTHONPATH=. python3 benchmarks/gpu/occupancy_vs_cuda.py --out benchmarks/gpu/results
Writes occupancy_check.json (every cell) and occupancy_check.md (summary); exits 1 on any mismatch.
Needs only ``cuda.bindings`` (cuda-python >= 12.x) plus ktriage.arch / ktriage.analyze.occupancy.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import platform
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ktriage.analyze.occupancy import compute_occupancy
from ktriage.arch import Arch, parse_arch

# --------------------------------------------------------------------------- PTX generation (pure)

#: Live values for the register-hungry kernels: more than 255, so ptxas always wants every register.
HUNGRY = 300


@dataclass(frozen=True)
class KernelRecipe:
    """One generated kernel: ``live`` simultaneously-live f32 values, an optional ``.maxnreg`` cap,
    and optional static shared memory. ``intended_registers`` is what ptxas 12.8 (sm_90) allocates."""

    live: int
    maxnreg: int | None
    static_shared: int
    intended_registers: int

    @property
    def name(self) -> str:
        cap = f"m{self.maxnreg}" if self.maxnreg else "m0"
        return f"occ_l{self.live}_{cap}_s{self.static_shared}"


def recipes() -> list[KernelRecipe]:
    """Kernels covering 8..255 registers, including counts that are not multiples of 8 (they round
    up to the 256-registers-per-warp unit) and a few with static shared memory."""
    out = [
        # Small kernels: no cap; the count follows the live values (ptxas 12.8, sm_90).
        KernelRecipe(1, None, 0, 8),
        KernelRecipe(10, None, 0, 16),
        KernelRecipe(14, None, 0, 20),
    ]
    for regs in (24, 32, 33, 40, 48, 56, 64, 65, 72, 80, 96, 104, 128, 129, 152, 168, 170, 200, 232, 250):
        out.append(KernelRecipe(HUNGRY, regs, 0, regs))
    out.append(KernelRecipe(HUNGRY, None, 0, 255))
    # Static shared memory: 3000 B (not a multiple of the 128 B unit), 12 KB, and 40000 B (near the
    # 48 KB static maximum).
    out += [
        KernelRecipe(HUNGRY, 64, 3000, 64),
        KernelRecipe(HUNGRY, 128, 12288, 128),
        KernelRecipe(1, None, 40000, 10),
        KernelRecipe(HUNGRY, None, 3000, 255),
    ]
    return out


def _ptx_version(cc: int) -> str:
    """Lowest PTX ISA that knows the target (sm_90: 7.8, sm_100/101/120: 8.7, sm_103/121: 8.8, sm_110: 9.0)."""
    if cc <= 90:
        return "7.8"
    if cc in (100, 101, 120):
        return "8.7"
    if cc in (103, 121):
        return "8.8"
    return "9.0"


def make_ptx(recipe: KernelRecipe, cc: int) -> str:
    """PTX text of one kernel ``recipe.name(in_ptr, out_ptr)`` for ``sm_{cc}``.

    All ``live`` loads are volatile (ptxas keeps their order) and the fold starts from the last loaded
    value, so no load can be consumed early: every value is live at the same time.
    """
    n = recipe.live
    lines = [f".version {_ptx_version(cc)}", f".target sm_{cc}", ".address_size 64", ""]
    if recipe.static_shared:
        lines.append(f".shared .align 16 .b8 smem_static[{recipe.static_shared}];")
        lines.append("")
    lines.append(f".visible .entry {recipe.name}(.param .u64 p_in, .param .u64 p_out)")
    if recipe.maxnreg:
        lines.append(f".maxnreg {recipe.maxnreg}")
    lines += ["{", f"  .reg .f32 %f<{n + 1}>;", "  .reg .b64 %rd<3>;"]
    lines += [
        "  ld.param.u64 %rd1, [p_in];",
        "  ld.param.u64 %rd2, [p_out];",
        "  cvta.to.global.u64 %rd1, %rd1;",
        "  cvta.to.global.u64 %rd2, %rd2;",
    ]
    lines += [f"  ld.volatile.global.f32 %f{i}, [%rd1+{4 * i}];" for i in range(n)]
    acc = f"%f{n}"
    lines.append(f"  mov.f32 {acc}, %f{n - 1};")
    lines += [f"  fma.rn.f32 {acc}, {acc}, %f{i}, %f{i};" for i in range(n - 1)]
    if recipe.static_shared:
        # Touch both ends of the array so it is kept at its full size.
        lines.append(f"  st.volatile.shared.f32 [smem_static+{recipe.static_shared - 4}], {acc};")
        lines.append(f"  ld.volatile.shared.f32 {acc}, [smem_static];")
    lines += [f"  st.global.f32 [%rd2], {acc};", "  ret;", "}", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- the grid and comparison (pure)


def dynamic_shared_grid(arch: Arch, static_shared: int, reserved: int) -> list[int]:
    """Dynamic shared-memory sizes to query: round values, the exact fit for k = 1..8, 12, 16, 32
    CTAs per SM and one byte more (where the reservation and the 128 B unit decide), 48 KB (the
    no-opt-in limit), the opt-in maximum, and one value past it (no CTA fits)."""
    limit = arch.shared_per_block_optin - static_shared  # what MAX_DYNAMIC_SHARED_SIZE_BYTES allows
    sizes = {0, 1, 1000, 3072, 4096, 8192, 16384, 32768, 40000, 48 * 1024, 65536, 100000, limit, limit + 128}
    for k in (1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 32):
        fit = (arch.shared_per_sm // k) // arch.shared_alloc_unit * arch.shared_alloc_unit - reserved - static_shared
        sizes.update({fit, fit + 1, fit - 1024})
    return sorted(s for s in sizes if 0 <= s <= limit + 128)


@dataclass
class Cell:
    """One query: the driver's answer next to the model's."""

    kernel: str
    registers: int
    static_shared: int
    warps: int
    dynamic_shared: int
    driver_ctas: int | None
    driver_error: str | None
    model_ctas: int
    model_limiter: str
    match: bool = field(default=False)


def cells_match(model_ctas: int, driver_ctas: int | None, driver_error: str | None) -> bool:
    """A cell matches when the driver returns the model's count; a driver refusal (error) matches
    only a model answer of 0 CTAs (the launch could not run either way)."""
    if driver_error is not None:
        return model_ctas == 0
    return driver_ctas == model_ctas


def summarize(cells: list[Cell], device: dict[str, Any], facts: list[dict[str, Any]]) -> dict[str, Any]:
    mismatches = [asdict(c) for c in cells if not c.match]
    fact_mismatches = [f for f in facts if f["must_match"] and not f["match"]]
    return {
        "device": device,
        "cells": len(cells),
        "matches": len(cells) - len(mismatches),
        "mismatches": len(mismatches),
        "mismatched_cells": mismatches,
        "driver_errors": sum(1 for c in cells if c.driver_error),
        "facts": facts,
        "fact_mismatches": len(fact_mismatches),
        "ok": not mismatches and not fact_mismatches,
    }


CELL_COLUMNS = tuple(Cell.__dataclass_fields__)


def render_json(summary: dict[str, Any], kernels: list[dict[str, Any]], cells: list[Cell]) -> str:
    """Summary and kernels indented; every cell as one compact row under ``cell_columns`` (one
    line per cell keeps the file small enough to commit and diff)."""
    head = {**summary, "kernels": kernels, "cell_columns": list(CELL_COLUMNS)}
    text = json.dumps(head, indent=1)
    rows = ",\n".join(json.dumps([getattr(c, k) for k in CELL_COLUMNS], separators=(",", ":")) for c in cells)
    return text[:-2] + ',\n "cells_rows": [\n' + rows + "\n ]\n}\n"


def render_markdown(summary: dict[str, Any], kernels: list[dict[str, Any]]) -> str:
    d = summary["device"]
    lines = [
        "# Occupancy: ktriage model vs cuOccupancyMaxActiveBlocksPerMultiprocessor",
        "",
        f"- device: {d.get('name')} (CC {d.get('cc')}, {d.get('sm_count')} SMs)",
        f"- driver: {d.get('driver_version')} (cuDriverGetVersion), cuda.bindings {d.get('cuda_bindings')}",
        f"- date: {d.get('date')}, host python {d.get('python')}",
        f"- command: `{d.get('command')}`",
        "",
        f"**{summary['cells']} cells, {summary['matches']} matches, {summary['mismatches']} mismatches** "
        f"({summary['driver_errors']} cells where the driver refused the query); "
        f"device facts: {summary['fact_mismatches']} mismatches.",
        "",
        "## Device attributes vs ktriage.arch",
        "",
        "| attribute | device | ktriage.arch | match |",
        "|---|---|---|---|",
    ]
    for f in summary["facts"]:
        mark = "yes" if f["match"] else ("**NO**" if f["must_match"] else "no (informational)")
        lines.append(f"| {f['attribute']} | {f['device']} | {f['model']} | {mark} |")
    lines += [
        "",
        "## Kernels (driver JIT)",
        "",
        "| kernel | intended regs | NUM_REGS | static smem | local bytes |",
        "|---|---|---|---|---|",
    ]
    for k in kernels:
        lines.append(
            f"| {k['name']} | {k['intended_registers']} | {k['num_regs']} | {k['static_shared']} | {k['local_bytes']} |"
        )
    lines += ["", "## Mismatches", ""]
    if not summary["mismatched_cells"]:
        lines.append("None.")
    else:
        lines += [
            "| kernel | regs | warps | static | dynamic | driver | model (limiter) |",
            "|---|---|---|---|---|---|---|",
        ]
        for c in summary["mismatched_cells"][:200]:
            drv = c["driver_ctas"] if c["driver_error"] is None else c["driver_error"]
            lines.append(
                f"| {c['kernel']} | {c['registers']} | {c['warps']} | {c['static_shared']} | {c['dynamic_shared']} "
                f"| {drv} | {c['model_ctas']} ({c['model_limiter']}) |"
            )
        if len(summary["mismatched_cells"]) > 200:
            lines.append(f"\n({len(summary['mismatched_cells']) - 200} more in occupancy_check.json)")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the CUDA side


class CudaError(RuntimeError):
    pass


class Cuda:
    """Thin checked wrapper over ``cuda.bindings.driver``: every call's CUresult is verified."""

    def __init__(self) -> None:
        from cuda.bindings import driver  # imported here so the pure parts load without CUDA

        self.drv = driver
        self.attr = driver.CUdevice_attribute
        self.fattr = driver.CUfunction_attribute

    def error_name(self, err: Any) -> str:
        res = self.drv.cuGetErrorName(err)
        if res[0] == self.drv.CUresult.CUDA_SUCCESS and res[1]:
            return res[1].decode() if isinstance(res[1], bytes) else str(res[1])
        return str(err)

    def check(self, result: Any, what: str) -> Any:
        """Raise CudaError unless the call succeeded; return its value(s)."""
        err = result[0] if isinstance(result, tuple) else result
        if err != self.drv.CUresult.CUDA_SUCCESS:
            raise CudaError(f"{what} failed: {self.error_name(err)}")
        values = result[1:] if isinstance(result, tuple) else ()
        if not values:
            return None
        return values[0] if len(values) == 1 else values

    def device_attr(self, name: str, dev: Any) -> int:
        return int(self.check(self.drv.cuDeviceGetAttribute(getattr(self.attr, name), dev), name))

    def func_attr(self, name: str, func: Any) -> int:
        return int(self.check(self.drv.cuFuncGetAttribute(getattr(self.fattr, name), func), name))


def _facts(cuda: Cuda, dev: Any, arch: Arch) -> list[dict[str, Any]]:
    """Device attributes next to ktriage.arch's values (the SM count is informational: parts differ)."""
    rows = [
        ("MAX_REGISTERS_PER_MULTIPROCESSOR", arch.regs_per_sm, True),
        ("MAX_REGISTERS_PER_BLOCK", arch.regs_per_block, True),
        ("MAX_THREADS_PER_MULTIPROCESSOR", arch.max_threads_per_sm, True),
        ("MAX_THREADS_PER_BLOCK", arch.max_threads_per_block, True),
        ("MAX_BLOCKS_PER_MULTIPROCESSOR", arch.max_ctas_per_sm, True),
        ("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", arch.shared_per_sm, True),
        ("MAX_SHARED_MEMORY_PER_BLOCK", arch.shared_per_block, True),
        ("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", arch.shared_per_block_optin, True),
        ("RESERVED_SHARED_MEMORY_PER_BLOCK", arch.reserved_shared_per_block, True),
        ("WARP_SIZE", arch.warp_size, True),
        ("MULTIPROCESSOR_COUNT", arch.default_sm_count, False),
    ]
    out = []
    for name, model, must in rows:
        value = cuda.device_attr(f"CU_DEVICE_ATTRIBUTE_{name}", dev)
        out.append({"attribute": name, "device": value, "model": model, "match": value == model, "must_match": must})
    return out


def run(out_dir: Path, device_index: int = 0, progress: Callable[[str], None] = print) -> int:
    cuda = Cuda()
    drv = cuda.drv
    cuda.check(drv.cuInit(0), "cuInit")
    dev = cuda.check(drv.cuDeviceGet(device_index), "cuDeviceGet")
    name = cuda.check(drv.cuDeviceGetName(256, dev), "cuDeviceGetName")
    name = (name.decode() if isinstance(name, bytes) else str(name)).split("\x00")[0].strip()
    major = cuda.device_attr("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR", dev)
    minor = cuda.device_attr("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR", dev)
    arch = parse_arch(f"{major}.{minor}")
    driver_version = cuda.check(drv.cuDriverGetVersion(), "cuDriverGetVersion")
    # The primary context: cuCtxCreate's signature changed in CUDA 13 (CUctxCreateParams), the
    # primary context API did not, and the occupancy query only needs a current context.
    ctx = cuda.check(drv.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
    cuda.check(drv.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    try:
        import cuda.bindings as _cb

        bindings_version = getattr(_cb, "__version__", "?")
    except Exception:  # pragma: no cover - informational only
        bindings_version = "?"
    reserved = cuda.device_attr("CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK", dev)
    optin = cuda.device_attr("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", dev)
    device = {
        "name": name,
        "cc": f"{major}.{minor}",
        "arch": arch.name,
        "sm_count": cuda.device_attr("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT", dev),
        "driver_version": int(driver_version),
        "cuda_bindings": bindings_version,
        "python": platform.python_version(),
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
    }
    progress(f"device {name} ({arch.name}), driver {driver_version}")
    facts = _facts(cuda, dev, arch)

    cells: list[Cell] = []
    kernels: list[dict[str, Any]] = []
    modules = []
    try:
        for recipe in recipes():
            ptx = make_ptx(recipe, arch.cc).encode() + b"\0"
            module = cuda.check(drv.cuModuleLoadData(ptx), f"cuModuleLoadData({recipe.name})")
            modules.append(module)
            func = cuda.check(
                drv.cuModuleGetFunction(module, recipe.name.encode()), f"cuModuleGetFunction({recipe.name})"
            )
            regs = cuda.func_attr("CU_FUNC_ATTRIBUTE_NUM_REGS", func)
            static = cuda.func_attr("CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES", func)
            local = cuda.func_attr("CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES", func)
            max_threads = cuda.func_attr("CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK", func)
            # As Triton's launcher does for kernels over 48 KB: allow dynamic shared memory up to
            # the opt-in maximum minus the static part.
            cuda.check(
                drv.cuFuncSetAttribute(
                    func, cuda.fattr.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, optin - static
                ),
                f"cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, {recipe.name})",
            )
            kernels.append(
                {
                    "name": recipe.name,
                    "intended_registers": recipe.intended_registers,
                    "num_regs": regs,
                    "static_shared": static,
                    "local_bytes": local,
                    "max_threads_per_block": max_threads,
                }
            )
            progress(f"{recipe.name}: {regs} registers, {static} B static shared, {local} B local")
            for warps in range(1, arch.max_warps_per_block + 1):
                for dyn in dynamic_shared_grid(arch, static, reserved):
                    res = drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(func, warps * arch.warp_size, dyn)
                    if res[0] == drv.CUresult.CUDA_SUCCESS:
                        driver_ctas, driver_error = int(res[1]), None
                    else:
                        driver_ctas, driver_error = None, cuda.error_name(res[0])
                    # Our kernels use no named barriers (ptxas: "used 0 barriers").
                    model = compute_occupancy(arch, regs, warps, static + dyn, reserved_shared=reserved, barriers=0)
                    cell = Cell(
                        recipe.name,
                        regs,
                        static,
                        warps,
                        dyn,
                        driver_ctas,
                        driver_error,
                        model.ctas_per_sm,
                        model.limiter,
                    )
                    cell.match = cells_match(model.ctas_per_sm, driver_ctas, driver_error)
                    cells.append(cell)
    finally:
        for module in modules:
            cuda.check(drv.cuModuleUnload(module), "cuModuleUnload")
        cuda.check(drv.cuDevicePrimaryCtxRelease(dev), "cuDevicePrimaryCtxRelease")

    summary = summarize(cells, device, facts)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "occupancy_check.json").write_text(render_json(summary, kernels, cells))
    (out_dir / "occupancy_check.md").write_text(render_markdown(summary, kernels))
    progress(
        f"{summary['cells']} cells: {summary['matches']} match, {summary['mismatches']} mismatch; "
        f"device facts mismatching: {summary['fact_mismatches']} -> {out_dir}"
    )
    return 0 if summary["ok"] else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="directory for occupancy_check.json / .md")
    parser.add_argument("--device", type=int, default=0, help="CUDA device ordinal")
    args = parser.parse_args(argv)
    try:
        return run(args.out, args.device)
    except CudaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
