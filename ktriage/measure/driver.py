"""The CUDA driver layer of the runner: ``cuda.bindings.driver`` imported on first use, every call
checked, the device's primary context shared with torch.

Context: torch and this module share the device's PRIMARY context, so a torch tensor's
``data_ptr()`` is valid in the runner's launches and its kernels run on torch's current stream
(also during CUDA-graph capture). Every driver call is checked; a failure raises :class:`CudaError`
(a :class:`~ktriage.errors.DeviceError`) carrying the CUDA error name (``CUDA_ERROR_ILLEGAL_ADDRESS``...),
which the isolation layer reports per cell. Loading and launching cubins is ``ktriage.measure.launch``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from ktriage.errors import DeviceError

#: Errors after which the context is unusable: only a fresh process can continue.
STICKY_ERRORS = frozenset(
    {
        "CUDA_ERROR_ILLEGAL_ADDRESS",
        "CUDA_ERROR_LAUNCH_FAILED",
        "CUDA_ERROR_ILLEGAL_INSTRUCTION",
        "CUDA_ERROR_MISALIGNED_ADDRESS",
        "CUDA_ERROR_INVALID_ADDRESS_SPACE",
        "CUDA_ERROR_INVALID_PC",
        "CUDA_ERROR_HARDWARE_STACK_ERROR",
        "CUDA_ERROR_ASSERT",
        "CUDA_ERROR_LAUNCH_TIMEOUT",
        "CUDA_ERROR_ECC_UNCORRECTABLE",
        "CUDA_ERROR_CONTEXT_IS_DESTROYED",
    }
)

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
        return device_attribute(self, "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")

    @property
    def sm_count(self) -> int:
        return device_attribute(self, "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT")


_CONTEXTS: dict[int, DeviceContext] = {}


def torch_if_present() -> Any | None:
    """torch, or None where it is not installed (the driver layer works without it)."""
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
    torch = torch_if_present()
    shared = False
    if torch is not None and torch.cuda.is_available():
        torch.cuda.set_device(device)
        torch.zeros(1, device=f"cuda:{device}")  # forces the runtime to create the primary context
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
    torch = torch_if_present()
    if torch is None or not torch.cuda.is_available():
        return 0
    return int(torch.cuda.current_stream(device).cuda_stream)
