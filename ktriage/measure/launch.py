"""Load Triton cubins of any toolchain into the primary context and launch them with their ABI.

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

The driver calls, their errors and the shared context are ``ktriage.measure.driver``.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ktriage.compile.abi import AbiParam
from ktriage.errors import DeviceError
from ktriage.measure.driver import check, current_stream, driver, ensure_context, torch_if_present
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


class _Scratch:
    """A device buffer for a hidden scratch pointer; torch's allocator when present, else cuMemAlloc."""

    def __init__(self, nbytes: int, device: int) -> None:
        self.nbytes = nbytes
        torch = torch_if_present()
        self._tensor = None
        self._raw = None
        if torch is not None and torch.cuda.is_available():
            self._tensor = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{device}")
            self.address = int(self._tensor.data_ptr())
        else:
            self._raw = check(driver().cuMemAlloc(nbytes), "cuMemAlloc")
            self.address = int(self._raw)

    def __del__(self) -> None:
        if self._raw is not None:
            try:
                driver().cuMemFree(self._raw)
            except Exception:
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
        scratch = {p.name: kernel.scratch_address(p, grid) for p in hidden_params(kernel.abi)}
        packed = pack_params(kernel.abi, args, scratch)
        self._buffers = [ctypes.create_string_buffer(blob, len(blob)) for blob in packed.blobs]
        self._pointers = (ctypes.c_void_p * max(1, len(self._buffers)))(*[ctypes.addressof(b) for b in self._buffers])
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
    def from_files(
        cls,
        cubin_path: Path | str,
        kernel_name: str,
        metadata: Mapping[str, Any],
        abi: Sequence[AbiParam],
        *,
        device: int = 0,
    ) -> LoadedKernel:
        return cls(Path(cubin_path).read_bytes(), kernel_name, metadata, abi, device=device)

    @classmethod
    def from_artifact(cls, artifact: Artifact, *, device: int = 0) -> LoadedKernel:
        """Load the ktriage-assembled cubin of a compiled artifact."""
        return cls.from_files(
            artifact.cubin.cubin_path, artifact.kernel_name, artifact.frontend.metadata, artifact.abi, device=device
        )

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
            drv.cuFuncSetCacheConfig(self.function, drv.CUfunc_cache.CU_FUNC_CACHE_PREFER_SHARED),
            "cuFuncSetCacheConfig",
        )
        check(
            drv.cuFuncSetAttribute(
                self.function, drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, optin - static
            ),
            "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
        )

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
