"""A thin, typed layer over ``cuda.bindings.driver`` to launch Triton cubins of any toolchain.

Why not Triton's launcher: the GPU host has one Triton (or none that matches), but a comparison
needs cubins of several Triton versions side by side in ONE process, launched the way each
version's own launcher would. The launcher is small; the facts it follows (read from the launchers
of Triton 3.3.1/3.4.0/3.5, written here from scratch):

- block = 32 * num_warps threads; dynamic shared memory = metadata ``shared``;
- above 48 KB of shared memory, the function gets ``CU_FUNC_CACHE_PREFER_SHARED`` and
  ``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = optin_max - static_shared`` (as Triton does);
- ``num_ctas > 1``: ``cuLaunchKernelEx`` with the cluster dimension attribute (and the spread
  scheduling preference), the grid multiplied by the cluster dims; cooperative and PDL launches
  likewise get their attributes;
- hidden scratch pointers: NULL when the size is 0, else a buffer of grid * num_ctas * size per CTA.

Context: torch and this module share the device's PRIMARY context, so a torch tensor's
``data_ptr()`` is valid in our launches and our kernels run on torch's current stream (also during
CUDA-graph capture). Every driver call is checked; a failure raises :class:`CudaError` carrying the
CUDA error name (``CUDA_ERROR_ILLEGAL_ADDRESS``...), which the isolation layer reports per cell.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ktriage.compile.abi import AbiParam
from ktriage.errors import DeviceError
from ktriage.measure.params import (
    Grid,
    hidden_params,
    normalize_grid,
    num_ctas_of,
    pack_params,
    scratch_bytes,
    visible_params,
)

if TYPE_CHECKING:
    from ktriage.compile.compiler import Artifact

#: Static shared memory every device allows without opting in (the 48 KB rule).
DEFAULT_SHARED_LIMIT = 48 * 1024

#: Errors after which the context is unusable: only a fresh process can continue.
STICKY_ERRORS = frozenset({
    "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    "CUDA_ERROR_MISALIGNED_ADDRESS", "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_INVALID_PC",
    "CUDA_ERROR_HARDWARE_STACK_ERROR", "CUDA_ERROR_ASSERT", "CUDA_ERROR_LAUNCH_TIMEOUT",
    "CUDA_ERROR_ECC_UNCORRECTABLE", "CUDA_ERROR_CONTEXT_IS_DESTROYED",
})  # fmt: skip

_FIXES = {
    "CUDA_ERROR_ILLEGAL_ADDRESS": "the kernel accessed memory outside its buffers: check the grid, sizes and argument order",
    "CUDA_ERROR_INVALID_VALUE": "check the grid, block size and shared memory against the device limits",
    "CUDA_ERROR_NO_BINARY_FOR_GPU": "compile for this GPU's architecture (--target sm_90 for H100/H200)",
    "CUDA_ERROR_INVALID_IMAGE": "the cubin is damaged or not a cubin; recompile the artifact",
    "CUDA_ERROR_UNSUPPORTED_PTX_VERSION": "the driver is older than the ptxas that built the cubin; use an older ptxas",
    "CUDA_ERROR_NOT_FOUND": "the kernel name does not exist in the cubin; check the artifact's kernel_name",
    "CUDA_ERROR_OUT_OF_MEMORY": "free GPU memory or use smaller inputs",
}


class CudaError(DeviceError):
    """A CUDA driver call failed; ``name`` is the CUresult name, ``sticky`` if the context is lost."""

    def __init__(self, call: str, name: str, code: int) -> None:
        fix = _FIXES.get(name, "see the CUDA driver API documentation for this error")
        super().__init__(f"{call} failed: {name} ({code})", fix)
        self.call = call
        self.name = name
        self.code = code

    @property
    def sticky(self) -> bool:
        return self.name in STICKY_ERRORS


@functools.cache
def driver() -> Any:
    """``cuda.bindings.driver``, imported on first use so that CPU-only code never needs it."""
    try:
        from cuda.bindings import driver as drv
    except ImportError as exc:  # pragma: no cover - depends on the host
        raise DeviceError(
            f"cuda.bindings is not importable ({exc})",
            "install cuda-python (pip install cuda-bindings) on the GPU host",
        ) from exc
    return drv


def error_name(code: Any) -> str:
    """The CUresult name of ``code`` (works without a driver: the enum knows its names)."""
    drv = driver()
    try:
        return str(drv.CUresult(int(code)).name)
    except ValueError:
        return f"CUDA_ERROR_{int(code)}"


def check(result: Any, call: str = "CUDA driver call") -> Any:
    """Unwrap a ``cuda.bindings`` result tuple ``(CUresult, *values)``; raise CudaError on failure."""
    if isinstance(result, tuple):
        err, values = result[0], result[1:]
    else:
        err, values = result, ()
    if int(err) != 0:
        raise CudaError(call, error_name(err), int(err))
    if not values:
        return None
    return values[0] if len(values) == 1 else values


@dataclass(frozen=True)
class DeviceContext:
    """The primary context of one device, shared with torch."""

    device: int
    cu_device: Any
    context: Any
    shared_with_torch: bool

    @property
    def shared_optin(self) -> int:
        return device_attribute(
            self, "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"
        )

    @property
    def sm_count(self) -> int:
        return device_attribute(self, "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT")


_CONTEXTS: dict[int, DeviceContext] = {}


def _torch() -> Any | None:
    try:
        import torch
    except ImportError:
        return None
    return torch


def ensure_context(device: int = 0) -> DeviceContext:
    """Make the device's primary context current on this thread, after torch has created it.

    torch's runtime uses the primary context; retaining the same one here (instead of
    ``cuCtxCreate``) is what makes tensors and our launches share memory and streams.
    """
    ctx = _CONTEXTS.get(device)
    drv = driver()
    if ctx is not None:
        check(drv.cuCtxSetCurrent(ctx.context), "cuCtxSetCurrent")
        return ctx
    torch = _torch()
    shared = False
    if torch is not None and torch.cuda.is_available():
        torch.cuda.set_device(device)
        torch.zeros(
            1, device=f"cuda:{device}"
        )  # forces the runtime to create the primary context
        shared = True
    check(drv.cuInit(0), "cuInit")
    cu_dev = check(drv.cuDeviceGet(device), "cuDeviceGet")
    primary = check(drv.cuDevicePrimaryCtxRetain(cu_dev), "cuDevicePrimaryCtxRetain")
    check(drv.cuCtxSetCurrent(primary), "cuCtxSetCurrent")
    ctx = DeviceContext(device, cu_dev, primary, shared)
    _CONTEXTS[device] = ctx
    return ctx


def device_attribute(ctx: DeviceContext, name: str) -> int:
    drv = driver()
    attr = getattr(drv.CUdevice_attribute, name)
    return int(
        check(
            drv.cuDeviceGetAttribute(attr, ctx.cu_device),
            f"cuDeviceGetAttribute({name})",
        )
    )


def synchronize(call: str = "cuCtxSynchronize") -> None:
    """Wait for all work of the current context; a fault of an earlier launch surfaces here."""
    check(driver().cuCtxSynchronize(), call)


def current_stream(device: int = 0) -> int:
    """torch's current stream handle (the capture stream while a CUDA graph is being captured)."""
    torch = _torch()
    if torch is None or not torch.cuda.is_available():
        return 0
    return int(torch.cuda.current_stream(device).cuda_stream)


class _Scratch:
    """A device buffer for a hidden scratch pointer; torch's allocator when present, else cuMemAlloc."""

    def __init__(self, nbytes: int, device: int) -> None:
        self.nbytes = nbytes
        torch = _torch()
        self._tensor = None
        self._raw = None
        if torch is not None and torch.cuda.is_available():
            self._tensor = torch.empty(
                nbytes, dtype=torch.uint8, device=f"cuda:{device}"
            )
            self.address = int(self._tensor.data_ptr())
        else:
            self._raw = check(driver().cuMemAlloc(nbytes), "cuMemAlloc")
            self.address = int(self._raw)

    def __del__(self) -> None:
        if self._raw is not None:
            try:
                driver().cuMemFree(self._raw)
            except Exception:  # noqa: BLE001, S110 - interpreter shutdown: nothing to free into
                pass


class PreparedLaunch:
    """One launch with its parameters packed once: calling it only enqueues the kernel.

    Packing (bytes, ctypes buffers, scratch) costs tens of microseconds of Python; doing it outside
    the timed region keeps host overhead out of event timings and makes launches graph-capturable.
    """

    def __init__(self, kernel: LoadedKernel, grid: Grid, args: Sequence[Any]) -> None:
        self.kernel = kernel
        self.grid = grid
        self._keep = list(args)  # tensors stay alive as long as the launch can run
        scratch = {
            p.name: kernel.scratch_address(p, grid) for p in hidden_params(kernel.abi)
        }
        packed = pack_params(kernel.abi, args, scratch)
        self._buffers = [
            ctypes.create_string_buffer(blob, len(blob)) for blob in packed.blobs
        ]
        self._pointers = (ctypes.c_void_p * max(1, len(self._buffers)))(
            *[ctypes.addressof(b) for b in self._buffers]
        )
        self.params_address = ctypes.addressof(self._pointers)
        self._config = kernel._launch_config(grid) if kernel.needs_launch_ex else None

    def __call__(self, stream: int | None = None) -> None:
        k = self.kernel
        if self.grid[0] * self.grid[1] * self.grid[2] == 0:
            return  # Triton launches nothing for an empty grid
        handle = current_stream(k.device) if stream is None else int(stream)
        drv = driver()
        if self._config is not None:
            self._config.hStream = handle
            check(
                drv.cuLaunchKernelEx(self._config, k.function, self.params_address, 0),
                "cuLaunchKernelEx",
            )
        else:
            gx, gy, gz = self.grid
            check(
                drv.cuLaunchKernel(
                    k.function,
                    gx,
                    gy,
                    gz,
                    k.block_dim,
                    1,
                    1,
                    k.shared,
                    handle,
                    self.params_address,
                    0,
                ),
                "cuLaunchKernel",
            )


class LoadedKernel:
    """A Triton cubin loaded into the primary context, launchable with its artifact's ABI."""

    def __init__(
        self,
        cubin: bytes,
        kernel_name: str,
        metadata: Mapping[str, Any],
        abi: Sequence[AbiParam],
        *,
        device: int = 0,
    ) -> None:
        self.kernel_name = kernel_name
        self.metadata = dict(metadata)
        self.abi = tuple(abi)
        self.device = device
        self.num_warps = int(self.metadata.get("num_warps", 4))
        self.shared = int(self.metadata.get("shared", 0) or 0)
        self.num_ctas = num_ctas_of(self.metadata)
        dims = self.metadata.get("cluster_dims") or (self.num_ctas, 1, 1)
        self.cluster_dims = tuple(int(d) for d in (list(dims) + [1, 1])[:3])
        self.cooperative = bool(self.metadata.get("launch_cooperative_grid", False))
        self.pdl = bool(self.metadata.get("launch_pdl", False))
        self._scratch: dict[tuple[str, Grid], _Scratch] = {}
        self._configs: dict[Grid, Any] = {}
        self.ctx = ensure_context(device)
        drv = driver()
        self.module = check(drv.cuModuleLoadData(cubin), "cuModuleLoadData")
        self.function = check(
            drv.cuModuleGetFunction(self.module, kernel_name.encode()),
            f"cuModuleGetFunction({kernel_name})",
        )
        self._configure_shared()

    @classmethod
    def from_files(cls, cubin_path: Path | str, kernel_name: str, metadata: Mapping[str, Any],
                   abi: Sequence[AbiParam], *, device: int = 0) -> LoadedKernel:  # fmt: skip
        return cls(
            Path(cubin_path).read_bytes(), kernel_name, metadata, abi, device=device
        )

    @classmethod
    def from_artifact(cls, artifact: Artifact, *, device: int = 0) -> LoadedKernel:
        """Load the ktriage-assembled cubin of a compiled artifact."""
        return cls.from_files(artifact.cubin.cubin_path, artifact.kernel_name, artifact.frontend.metadata,
                              artifact.abi, device=device)  # fmt: skip

    # -- properties -----------------------------------------------------------------------------

    @property
    def block_dim(self) -> int:
        return 32 * self.num_warps

    @property
    def needs_launch_ex(self) -> bool:
        return self.num_ctas > 1 or self.cooperative or self.pdl

    @property
    def params(self) -> list[AbiParam]:
        """The arguments ``launch`` takes, in order (hidden scratch pointers are added here)."""
        return visible_params(self.abi)

    def function_attribute(self, name: str) -> int:
        drv = driver()
        attr = getattr(drv.CUfunction_attribute, name)
        return int(
            check(
                drv.cuFuncGetAttribute(attr, self.function),
                f"cuFuncGetAttribute({name})",
            )
        )

    # -- setup ----------------------------------------------------------------------------------

    def _configure_shared(self) -> None:
        if self.shared <= DEFAULT_SHARED_LIMIT:
            return
        drv = driver()
        optin = self.ctx.shared_optin
        static = self.function_attribute("CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES")
        if self.shared > optin - static:
            raise DeviceError(
                f"{self.kernel_name} needs {self.shared} B of shared memory; this GPU allows {optin - static} B",
                "compile for the GPU it runs on, or with fewer stages / smaller tiles",
            )
        check(
            drv.cuFuncSetCacheConfig(
                self.function, drv.CUfunc_cache.CU_FUNC_CACHE_PREFER_SHARED
            ),
            "cuFuncSetCacheConfig",
        )
        check(
            drv.cuFuncSetAttribute(self.function, drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   optin - static),
            "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
        )  # fmt: skip

    def scratch_address(self, param: AbiParam, grid: Grid) -> int:
        """The buffer of one hidden scratch pointer for ``grid`` (0 = NULL), allocated once per grid."""
        nbytes = scratch_bytes(param.size_bytes_per_cta, grid, self.num_ctas)
        if nbytes == 0:
            return 0
        key = (param.name, grid)
        if key not in self._scratch:
            self._scratch[key] = _Scratch(nbytes, self.device)
        return self._scratch[key].address

    def _launch_config(self, grid: Grid) -> Any:
        if grid in self._configs:
            return self._configs[grid]
        drv = driver()
        cfg = drv.CUlaunchConfig()
        cx, cy, cz = self.cluster_dims if self.num_ctas > 1 else (1, 1, 1)
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = (
            grid[0] * cx,
            grid[1] * cy,
            grid[2] * cz,
        )
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = self.block_dim, 1, 1
        cfg.sharedMemBytes = self.shared
        attrs = []
        ids = drv.CUlaunchAttributeID
        if self.pdl:
            a = drv.CUlaunchAttribute()
            a.id = ids.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
            a.value.programmaticStreamSerializationAllowed = 1
            attrs.append(a)
        if self.cooperative:
            a = drv.CUlaunchAttribute()
            a.id = ids.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
            a.value.cooperative = 1
            attrs.append(a)
        if self.num_ctas > 1:
            a = drv.CUlaunchAttribute()
            a.id = ids.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
            a.value.clusterDim.x, a.value.clusterDim.y, a.value.clusterDim.z = (
                cx,
                cy,
                cz,
            )
            attrs.append(a)
            b = drv.CUlaunchAttribute()
            b.id = ids.CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE
            b.value.clusterSchedulingPolicyPreference = (
                drv.CUclusterSchedulingPolicy.CU_CLUSTER_SCHEDULING_POLICY_SPREAD
            )
            attrs.append(b)
        cfg.attrs = attrs
        cfg.numAttrs = len(attrs)
        self._configs[grid] = cfg
        return cfg

    # -- launching ------------------------------------------------------------------------------

    def prepare(self, grid: Sequence[int] | int, args: Sequence[Any]) -> PreparedLaunch:
        """Pack ``args`` (the non-hidden ABI params, in order) for ``grid``; call the result to launch."""
        return PreparedLaunch(self, normalize_grid(grid), args)

    def launch(
        self,
        grid: Sequence[int] | int,
        args: Sequence[int | float | Any],
        stream: int | None = None,
    ) -> None:
        """Pack and launch once on ``stream`` (default: torch's current stream). Asynchronous."""
        self.prepare(grid, args)(stream)

    def unload(self) -> None:
        """Free the module (only when no launch of it is in flight)."""
        if self.module is not None:
            check(driver().cuModuleUnload(self.module), "cuModuleUnload")
            self.module = None
        self._scratch.clear()
