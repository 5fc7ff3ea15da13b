"""A stand-in for Triton's GPU driver, so that Triton's real launch path runs on a machine without a GPU.

Why: what the JIT compiles for a launch is decided in Python before any GPU work (the decorators
``@triton.heuristics``/``@triton.autotune``, the binder's specialization, the options, the compile).
Only three things need a device: the active driver's target/device/stream, loading the cubin, and
launching it. This module answers those with fixed facts (a target such as sm_90, device 0, stream 0,
H100/H200-like device properties) and does nothing on load and launch. Everything else, compile
included, is the toolchain's own Triton. The compile worker installs it too: a library module that
touches ``driver.active`` at import time (a module-level ``@triton.autotune`` does) then imports on a
CPU machine instead of failing on a missing libcuda/libamdhip64.

Tensors: :class:`FakeTensor` carries what the JIT reads from a tensor (``dtype``, ``data_ptr()``),
plus shape/strides for heuristics that look at them; it holds no data.

Runs inside a toolchain's interpreter: stdlib + that Triton only, never ``ktriage``.
"""

from __future__ import annotations

from typing import Any

# What the fake device reports (an H100/H200-class part); only load-time checks read these.
DEVICE_PROPERTIES = {
    "max_shared_mem": 232448,
    "max_num_regs": 65536,
    "multiprocessor_count": 132,
    "warpSize": 32,
    "sm_clock_rate": 1980000,
    "mem_clock_rate": 2619000,
    "mem_bus_width": 5120,
}
MAX_THREADS_PER_BLOCK = 1024


def _triton_version() -> tuple[int, int]:
    import triton

    major, minor = triton.__version__.split(".")[:2]
    return int(major), int(minor)


class FakeDtype:
    """A torch-like dtype: ``str()`` gives ``torch.float32`` and friends, which is what the JIT reads."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.itemsize = _ITEMSIZE.get(name, 4)
        self.is_floating_point = name.startswith(("float", "bfloat"))

    def __str__(self) -> str:
        return f"torch.{self.name}"

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FakeDtype) and other.name == self.name or str(other) == str(self)

    def __hash__(self) -> int:
        return hash(str(self))


# Triton type names -> torch dtype names (what a tensor of that element type reports).
TORCH_DTYPE = {
    "fp32": "float32",
    "fp16": "float16",
    "bf16": "bfloat16",
    "fp64": "float64",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "i1": "bool",
    "fp8e4nv": "float8_e4m3fn",
    "fp8e5": "float8_e5m2",
}
_ITEMSIZE = {
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "float64": 8,
    "int8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "uint8": 1,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
    "bool": 1,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
}


class FakeTensor:
    """What the JIT reads from a tensor argument, and no data.

    ``data_ptr`` is a 512-byte aligned address (torch's allocator), or one 4 bytes past it when the
    launch passes a misaligned view; its divisibility by 16 is what the JIT specializes on.
    """

    _next_address = 0x7F0000000000

    def __init__(
        self,
        triton_dtype: str,
        *,
        aligned: bool = True,
        shape: tuple[int, ...] = (1,),
        strides: tuple[int, ...] | None = None,
    ) -> None:
        self.dtype = FakeDtype(TORCH_DTYPE.get(triton_dtype, triton_dtype))
        self.triton_dtype = triton_dtype
        FakeTensor._next_address += 1 << 20
        self._ptr = FakeTensor._next_address + (0 if aligned else 4)
        self.shape = tuple(shape)
        self._strides = tuple(strides) if strides is not None else _contiguous(self.shape)
        self.device = "cuda:0"
        self.is_cuda = True

    def data_ptr(self) -> int:
        return self._ptr

    def stride(self, dim: int | None = None) -> Any:
        return self._strides if dim is None else self._strides[dim]

    def size(self, dim: int | None = None) -> Any:
        return self.shape if dim is None else self.shape[dim]

    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def element_size(self) -> int:
        return self.dtype.itemsize

    def dim(self) -> int:
        return len(self.shape)

    # The autotuner's restore/reset hooks touch these; nothing is stored, so nothing to do.
    def zero_(self) -> FakeTensor:
        return self

    def clone(self) -> FakeTensor:
        return self

    def copy_(self, other: Any) -> FakeTensor:
        return self

    def __repr__(self) -> str:
        return f"FakeTensor({self.triton_dtype}, ptr=0x{self._ptr:x}, shape={self.shape})"


def _contiguous(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(1, s)
    return tuple(reversed(strides))


class _FakeLauncher:
    """Takes the place of the compiled C launcher: accepts a launch and does nothing."""

    def __init__(self, src: Any, metadata: Any) -> None:
        self.launch_cooperative_grid = getattr(metadata, "launch_cooperative_grid", False)
        self.global_scratch_size = getattr(metadata, "global_scratch_size", 0)
        self.profile_scratch_size = getattr(metadata, "profile_scratch_size", 0)

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        return None


class _FakeUtils:
    def __init__(self, load_binary_arity: int) -> None:
        self._arity = load_binary_arity

    def load_binary(self, name: str, kernel: bytes, shared: int, device: int) -> tuple[int, ...]:
        # module, function, n_regs, n_spills (+ n_max_threads from Triton 3.4 on)
        return (1, 1, 0, 0, MAX_THREADS_PER_BLOCK)[: self._arity]

    def get_device_properties(self, device: int) -> dict[str, int]:
        return dict(DEVICE_PROPERTIES)

    def unload_module(self, module: Any) -> None:
        return None


class FakeBenchmarker:
    """The autotuner's ``do_bench``: times nothing. The config chosen is ``pick`` (an index into the
    configs in the order the autotuner benches them); only that one is compiled, the others report
    infinity without running, so an autotuned kernel costs one compile."""

    def __init__(self, pick: int = 0) -> None:
        self.pick = pick
        self.calls = 0

    def __call__(self, kernel_call: Any, quantiles: Any = None, **kwargs: Any) -> Any:
        index = self.calls
        self.calls += 1
        if index == self.pick:
            kernel_call()
            value = 1.0
        else:
            value = float("inf")
        return [value, value, value] if quantiles else value

    def reset(self) -> None:
        self.calls = 0


class FakeDriver:
    """Triton's active-driver interface, answered without a GPU (see the module docstring)."""

    def __init__(self, cc: int, benchmarker: FakeBenchmarker | None = None) -> None:
        from triton.backends.compiler import GPUTarget

        self.target = GPUTarget("cuda", cc, 32)
        self.benchmarker = benchmarker or FakeBenchmarker()
        self.utils = _FakeUtils(5 if _triton_version() >= (3, 4) else 4)
        self.launcher_cls = _FakeLauncher
        self.backend = "cuda"

    @staticmethod
    def is_active() -> bool:
        return True

    def get_current_target(self) -> Any:
        return self.target

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device: int) -> None:
        return None

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_device_capability(self, device: int = 0) -> tuple[int, int]:
        return divmod(int(self.target.arch), 10)

    def get_benchmarker(self) -> FakeBenchmarker:
        return self.benchmarker

    def get_active_torch_device(self) -> str:
        return "cuda:0"

    def map_python_to_cpp_type(self, ty: str) -> str:
        return ty


_installed: FakeDriver | None = None


def install(cc: int = 90, benchmarker: FakeBenchmarker | None = None) -> FakeDriver:
    """Make a FakeDriver Triton's active driver (for every later ``driver.active`` access)."""
    global _installed
    from triton.runtime.driver import driver

    fake = FakeDriver(cc, benchmarker)
    driver.set_active(fake)
    _as_cuda_driver()
    _installed = fake
    return fake


def _as_cuda_driver() -> None:
    """Let the fake pass for Triton's CUDA driver class (``isinstance(driver.active, CudaDriver)``).
    Why: inductor's generated modules call ``triton_helpers.set_driver_to_gpu()`` at import, which keeps
    the active driver only if it is an instance of the active GPU backend's driver class, and otherwise
    constructs a real CudaDriver (libcuda: no GPU here). The class is an ABC: registering is enough."""
    try:
        from triton.backends import backends
    except ImportError:
        return
    cuda = backends.get("nvidia")
    register = getattr(getattr(cuda, "driver", None), "register", None)
    if register is not None:
        register(FakeDriver)


def installed() -> FakeDriver | None:
    return _installed
