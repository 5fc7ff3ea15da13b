"""GPU architecture facts: what a compute capability allows per SM, and how targets are written.

Occupancy, spill triage and "grid as the library computes it" all need the same few numbers per
compute capability (CC). They live here, in one table, so that a wrong number is fixed once.
This module imports only the standard library: it must load on a bare GPU host.

Sources (research notes: /work/shared/research/registers_occupancy.md, §3):
- [OCC] ``cuda_occupancy.h`` (``__CUDA_OCC_MAJOR__ 12``, ``MINOR 1``; read from the CUDA 12.9 runtime
  wheel and the CUDA 13.0 toolkit): register allocation unit (256 per warp), sub-partitions (4),
  max CTAs per SM (``cudaOccMaxBlocksPerMultiprocessor``), shared-memory allocation unit and the
  carveout steps (``cudaOccAlignUpShmemSizeVoltaPlus``), the 1 KB driver reservation per block
  from CC 8.0 on (``cudaOccSMemPerBlock``: "Starting Ampere, CUDA driver reserves additional shared
  memory per block").
- Warps per SM: ``eyalroz/cuda-api-wrappers`` ``device_properties.hpp`` (7.5: 32, other 7.x: 64,
  8.0: 64, other 8.x: 48, 9.0: 64); XLA ``gpu_device_info_for_tests.cc`` (B200: 2048 threads/SM);
  CUDA C++ Programming Guide "Technical Specifications per Compute Capability" for 10.1/11.0/12.x
  (1536 threads/SM) and 10.3 (2048) -- the last two not re-checked against a device.
- Shared memory per SM / per block opt-in: XLA device infos (A100 164/163 KB, RTX A6000 100/99 KB,
  H100 228/227 KB, B200 228/227 KB) and the largest [OCC] carveout for the other CCs.
- [GPU] H200 (CC 9.0) ``cuDeviceGetAttribute``: 65536 regs/SM, 2048 threads/SM, 233472 B shared/SM,
  232448 B opt-in per block, 1024 B reserved per block, 32 blocks/SM, 132 SMs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ktriage.errors import SpecError

KB = 1024

# Carveout steps (bytes of shared memory an SM can be configured with), [OCC]
# cudaOccAlignUpShmemSizeVoltaPlus. The SM's L1/shared split is one of these values.
_VOLTA_STEPS = (0, 8, 16, 32, 64, 96)
_TURING_STEPS = (32, 64)
_GA100_STEPS = (0, 8, 16, 32, 64, 100, 132, 164)  # 8.0 and 8.7
_GA10X_STEPS = (0, 8, 16, 32, 64, 100)  # 8.6, 8.9, 12.x
_HOPPER_STEPS = (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)  # 9.0, 10.x, 11.0


@dataclass(frozen=True)
class _Row:
    """One CC's per-SM limits (the columns of research §3.4, extended to every CC we support)."""

    max_warps_per_sm: int
    max_ctas_per_sm: int
    shared_per_sm: int  # largest carveout, bytes
    shared_per_block_optin: int  # bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin
    shared_alloc_unit: int  # bytes
    carveouts_kb: tuple[int, ...]
    default_sm_count: int
    default_part: str
    family: str


# (major, minor) -> row. Register file (65536 per SM and per block), 255 registers per thread,
# 256-register-per-warp allocation, 4 sub-partitions and 1024 threads per block are common to all.
_TABLE: dict[tuple[int, int], _Row] = {
    (7, 0): _Row(64, 32, 96 * KB, 96 * KB, 256, _VOLTA_STEPS, 80, "Tesla V100 SXM2", "Volta"),
    (7, 2): _Row(64, 32, 96 * KB, 96 * KB, 256, _VOLTA_STEPS, 8, "Jetson AGX Xavier", "Volta"),
    (7, 5): _Row(32, 16, 64 * KB, 64 * KB, 256, _TURING_STEPS, 40, "Tesla T4", "Turing"),
    (8, 0): _Row(64, 32, 164 * KB, 163 * KB, 128, _GA100_STEPS, 108, "A100 SXM4", "Ampere"),
    (8, 6): _Row(48, 16, 100 * KB, 99 * KB, 128, _GA10X_STEPS, 84, "RTX A6000 / A40", "Ampere"),
    (8, 7): _Row(48, 16, 164 * KB, 163 * KB, 128, _GA100_STEPS, 16, "Jetson AGX Orin", "Ampere"),
    (8, 9): _Row(48, 24, 100 * KB, 99 * KB, 128, _GA10X_STEPS, 142, "L40S", "Ada"),
    (9, 0): _Row(64, 32, 228 * KB, 227 * KB, 128, _HOPPER_STEPS, 132, "H100 / H200 SXM", "Hopper"),
    (10, 0): _Row(64, 32, 228 * KB, 227 * KB, 128, _HOPPER_STEPS, 148, "B200", "Blackwell"),
    # 10.1 is Jetson Thor's CC before CUDA 13 renamed it 11.0; both kept so either spelling works.
    (10, 1): _Row(48, 24, 228 * KB, 227 * KB, 128, _HOPPER_STEPS, 20, "Jetson AGX Thor", "Blackwell"),
    # B300 SM count assumed equal to B200's (not verified on a device).
    (10, 3): _Row(64, 32, 228 * KB, 227 * KB, 128, _HOPPER_STEPS, 148, "B300", "Blackwell"),
    (11, 0): _Row(48, 24, 228 * KB, 227 * KB, 128, _HOPPER_STEPS, 20, "Jetson AGX Thor", "Blackwell"),
    (12, 0): _Row(48, 24, 100 * KB, 99 * KB, 128, _GA10X_STEPS, 188, "RTX PRO 6000 Blackwell Server", "Blackwell"),
    (12, 1): _Row(48, 24, 100 * KB, 99 * KB, 128, _GA10X_STEPS, 48, "DGX Spark (GB10)", "Blackwell"),
}

SUPPORTED: tuple[str, ...] = tuple(f"sm_{ma}{mi}" for ma, mi in _TABLE)


@dataclass(frozen=True)
class Throughput:
    """Speeds of a CC's usual datacenter part, for ranking configs of one kernel (ktriage/predict/configs.py)
    and as the cost model's rates (ktriage/predict/model.py: DRAM bytes at ``dram_bytes_per_s``' share of an
    SM, bytes re-read from L2 at ``l2_bytes_per_clk``).

    Crude public figures, not measurements of the user's part: the model predicts ratios of two kernels on
    one part, and its fitted parameters (calibrated on the H200) absorb what the figures get wrong.

    - ``dram_bytes_per_s``, ``sm_clock_hz``: the part's HBM/GDDR bandwidth and boost clock (H200 SXM
      4.8 TB/s at 1.98 GHz; H100 SXM has 3.35 TB/s);
    - ``dram_latency_s``: loaded global-memory latency, what a software pipeline or enough warps in
      flight must cover (Little's law);
    - ``mma_flops_per_clk``: dense 16-bit tensor-core flop per cycle per SM (H100/H200 989 TFLOP/s
      at ~1.8 GHz over 132 SMs is 4096; A100 312 TFLOP/s / 108 SMs / 1.41 GHz is 2048);
    - ``l2_bytes_per_clk``: operand bandwidth from L2 to one SM, chosen so that a 128x256 fp16 tile
      is just compute bound on Hopper and 128x128 ~25% slower (the order Triton's Hopper matmuls show).
    """

    dram_bytes_per_s: float
    sm_clock_hz: float
    dram_latency_s: float
    mma_flops_per_clk: float = 1024.0
    l2_bytes_per_clk: float = 32.0

    @property
    def dram_latency_cycles(self) -> float:
        """The loaded memory latency in SM cycles (H200: 600 ns at 1.98 GHz is ~1190 cycles)."""
        return self.dram_latency_s * self.sm_clock_hz


_THROUGHPUT: dict[tuple[int, int], Throughput] = {
    (7, 0): Throughput(0.90e12, 1.53e9, 500e-9),
    (8, 0): Throughput(2.04e12, 1.41e9, 550e-9, 2048.0, 32.0),
    (8, 6): Throughput(0.77e12, 1.80e9, 550e-9, 1024.0, 32.0),
    (8, 9): Throughput(0.86e12, 2.52e9, 550e-9, 1024.0, 32.0),
    (9, 0): Throughput(4.80e12, 1.98e9, 600e-9, 4096.0, 48.0),
    (10, 0): Throughput(8.00e12, 1.96e9, 600e-9, 8192.0, 64.0),
}
_DEFAULT_THROUGHPUT = Throughput(2.0e12, 1.5e9, 600e-9)


def throughput(major: int, minor: int) -> Throughput:
    """:class:`Throughput` of a CC's usual part; a CC without figures gets middling defaults (the
    ranking of one kernel's configs depends on ratios, which the defaults keep plausible)."""
    return _THROUGHPUT.get((major, minor), _DEFAULT_THROUGHPUT)


#: Architecture-specific targets (the ``a`` suffix) a kernel spec may name as its target, next to SUPPORTED.
ARCH_SPECIFIC: tuple[str, ...] = ("sm_90a", "sm_100a")
#: Every target a kernel spec may name, in table order, each ``a`` target after its base.
SPEC_TARGETS: tuple[str, ...] = tuple(
    t for name in SUPPORTED for t in (name, name + "a") if t == name or t in ARCH_SPECIFIC
)

_TARGET_RE = re.compile(
    r"^(?:(?:sm|compute)_(?P<sm>\d{2,3})[af]?|cuda:(?P<cuda>\d{2,3})|(?P<dot>\d{1,2})\.(?P<dotmin>\d)|(?P<num>\d{2,3}))$"
)


def _unsupported(target: object) -> SpecError:
    return SpecError(
        f"unknown or unsupported GPU target {target!r}",
        "write the target as sm_90, sm_90a, 90, 9.0 or cuda:90; supported: " + ", ".join(SPEC_TARGETS),
    )


@dataclass(frozen=True)
class Arch:
    """A compute capability and the per-SM limits that the CUDA occupancy rules use.

    Build it with :func:`parse_arch` (or ``Arch(9, 0)``). Limit fields are filled from the table
    above at construction; an unsupported (major, minor) raises :class:`~ktriage.errors.SpecError`.
    """

    major: int
    minor: int
    # Common to every supported CC ([OCC] and research §3.4).
    warp_size: int = field(default=32, init=False, repr=False)
    regs_per_sm: int = field(default=65536, init=False, repr=False)
    regs_per_block: int = field(default=65536, init=False, repr=False)
    # ptxas never reports more than 255 (the header says 256 for CC >= 7: the 256th is not usable).
    max_regs_per_thread: int = field(default=255, init=False, repr=False)
    reg_alloc_unit: int = field(default=256, init=False, repr=False)  # registers per warp
    sub_partitions: int = field(default=4, init=False, repr=False)
    max_threads_per_block: int = field(default=1024, init=False, repr=False)
    shared_per_block: int = field(default=48 * KB, init=False, repr=False)  # without opt-in
    # Named barriers a CTA can use: PTX ISA, "bar/barrier": the barrier operand is "a logical barrier
    # resource ... with value 0 through 15", so 16 per CTA on every CC (ptxas's "used N barriers" <= 16).
    max_barriers_per_cta: int = field(default=16, init=False, repr=False)
    # Per CC, from _TABLE.
    max_warps_per_sm: int = field(default=0, init=False, repr=False)
    max_ctas_per_sm: int = field(default=0, init=False, repr=False)
    shared_per_sm: int = field(default=0, init=False, repr=False)
    shared_per_block_optin: int = field(default=0, init=False, repr=False)
    shared_alloc_unit: int = field(default=0, init=False, repr=False)
    carveouts: tuple[int, ...] = field(default=(), init=False, repr=False)  # bytes, ascending
    reserved_shared_per_block: int = field(default=0, init=False, repr=False)
    default_sm_count: int = field(default=0, init=False, repr=False)
    default_part: str = field(default="", init=False, repr=False)
    family: str = field(default="", init=False, repr=False)

    def __post_init__(self) -> None:
        row = _TABLE.get((self.major, self.minor))
        if row is None:
            raise _unsupported(f"sm_{self.major}{self.minor}")
        values = {
            "max_warps_per_sm": row.max_warps_per_sm,
            "max_ctas_per_sm": row.max_ctas_per_sm,
            "shared_per_sm": row.shared_per_sm,
            "shared_per_block_optin": row.shared_per_block_optin,
            "shared_alloc_unit": row.shared_alloc_unit,
            "carveouts": tuple(kb * KB for kb in row.carveouts_kb),
            # "Starting Ampere, CUDA driver reserves additional shared memory per block" [OCC];
            # 1024 B measured on the H200 and listed for 8.0/8.6 by the calculator port (§3.3).
            "reserved_shared_per_block": 1024 if self.major >= 8 else 0,
            "default_sm_count": row.default_sm_count,
            "default_part": row.default_part,
            "family": row.family,
        }
        for key, value in values.items():
            object.__setattr__(self, key, value)

    @property
    def throughput(self) -> Throughput:
        """The speeds of this CC's usual part (:func:`throughput`)."""
        return throughput(self.major, self.minor)

    @property
    def cc(self) -> int:
        """Compute capability as one int, as Triton's GPUTarget wants it (9.0 -> 90)."""
        return self.major * 10 + self.minor

    @property
    def name(self) -> str:
        """Canonical target name, e.g. ``sm_90``."""
        return f"sm_{self.cc}"

    @property
    def ptxas_name(self) -> str:
        """The ``--gpu-name`` Triton passes to ptxas: it appends ``a`` from CC 9.0 on
        (``sm_arch_from_capability`` in triton/backends/nvidia/compiler.py, 3.3.1 and 3.4.0)."""
        return f"sm_{self.cc}{'a' if self.cc >= 90 else ''}"

    @property
    def cubin_shared_includes_reservation(self) -> bool:
        """From sm_90 on, ptxas puts the 1 KB the driver reserves per block
        (``reserved_shared_per_block``) into the function's ``.nv.shared.<fn>`` section as soon as the
        kernel uses shared memory, so cuobjdump's SHARED is that much above what the driver calls
        static shared memory. Checked on an H200: a kernel with ``.shared .b8 buf[4096]`` shows
        SHARED:5120 and CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES 4096; Triton kernels show SHARED:1024
        and 0 (tests/data/resources/h200_shared_check.json)."""
        return self.major >= 9

    @property
    def max_threads_per_sm(self) -> int:
        return self.max_warps_per_sm * self.warp_size

    @property
    def max_warps_per_block(self) -> int:
        return self.max_threads_per_block // self.warp_size

    def describe(self) -> str:
        """One line for reports: ``sm_90 (Hopper; default part H100 / H200 SXM, 132 SMs)``."""
        return f"{self.name} ({self.family}; default part {self.default_part}, {self.default_sm_count} SMs)"


def parse_arch(target: str | int | Arch) -> Arch:
    """Read a GPU target written as ``sm_90``, ``sm_90a``, ``compute_90``, ``90``, ``9.0``, ``cuda:90``
    (or an int CC like 90, or an Arch). Raises SpecError naming the supported targets otherwise."""
    if isinstance(target, Arch):
        return target
    if isinstance(target, bool):
        raise _unsupported(target)
    if isinstance(target, int):
        text = str(target)
    elif isinstance(target, str):
        text = target.strip().lower()
    else:
        raise _unsupported(target)
    m = _TARGET_RE.match(text)
    if not m:
        raise _unsupported(target)
    if m.group("dot") is not None:
        major, minor = int(m.group("dot")), int(m.group("dotmin"))
    else:
        digits = m.group("sm") or m.group("cuda") or m.group("num")
        cc = int(digits)
        major, minor = divmod(cc, 10)
    if (major, minor) not in _TABLE:
        raise _unsupported(target)
    return Arch(major, minor)


def supported_archs() -> list[Arch]:
    """Every supported compute capability, oldest first."""
    return [Arch(ma, mi) for ma, mi in _TABLE]


def cubin_runs_on(target: str, major: int, minor: int) -> bool:
    """Whether a Triton cubin compiled for ``target`` loads on a GPU of compute capability
    ``major.minor``. Why: a bundle compiled for sm_90 and copied to an A100 failed every cell with the
    driver's "no kernel image" instead of one refusal naming the GPU. A cubin is SASS with no PTX to
    JIT from, and runs on the same major at an equal or later minor; from 9.0 on Triton assembles for
    the arch-specific target (``sm_90a``: :attr:`Arch.ptxas_name`), which runs on that exact CC only."""
    built = parse_arch(target)
    if built.cc >= 90:
        return (major, minor) == (built.major, built.minor)
    return major == built.major and minor >= built.minor
