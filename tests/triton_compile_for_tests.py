"""Test helper: the analyze tests' kernels (kernels_for_tests.py), compiled through the project's own
compile stage (real toolchains, real ptxas), exposed as plain paths the parsers can read."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from ktriage.analyze.resources import Resources, analyze
from ktriage.compile.compiler import Artifact, Compiler
from ktriage.spec.model import KernelSpec
from ktriage.toolchain.manager import ensure_toolchain

TESTS = Path(__file__).resolve().parent
KERNELS_FILE = TESTS / "kernels_for_tests.py"

RED_SIGNATURE = {
    "in_ptr": "*fp32",
    "out_ptr": "*fp32",
    "xnumel": "i32",
    "rnumel": "i32",
    "XBLOCK": "constexpr",
    "RBLOCK": "constexpr",
}
ATOMIC_SIGNATURE = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}


@dataclass(frozen=True)
class CompiledForTest:
    """Artifacts of one test compile. `cubin` is the one ptxas wrote with the log beside it."""

    version: str
    name: str
    shared: int
    ptx: Path
    cubin: Path
    triton_cubin: Path
    ptxas_log: str
    bin_dir: Path

    @property
    def cuobjdump(self) -> Path:
        return self.bin_dir / "cuobjdump"

    @property
    def ptxas(self) -> Path:
        return self.bin_dir / "ptxas"


def compile_for_test(
    version: str,
    kernel: str,
    signature: dict[str, str],
    constexprs: dict[str, int],
    *,
    compiler: Compiler,
    num_warps: int = 4,
    target: str = "sm_90",
) -> CompiledForTest:
    """Compile with the `triton==version` toolchain (bundled ptxas, Triton's flags, `-v` log kept).

    No divisibility hints: these kernels are compiled as a plain ASTSource would compile them."""
    toolchain = ensure_toolchain(f"triton=={version}")
    spec = KernelSpec(
        name=kernel,
        source=f"{KERNELS_FILE}:{kernel}",
        signature=signature,
        constexprs=dict(constexprs),
        num_warps=num_warps,
        target=target,
    )
    art = compiler.compile(spec, toolchain)
    assert isinstance(art, Artifact), art
    return CompiledForTest(
        version=version,
        name=art.kernel_name,
        shared=int(art.frontend.metadata.get("shared", 0)),
        ptx=art.frontend.ptx_path,
        cubin=art.cubin.cubin_path,
        triton_cubin=art.frontend.dir / "kernel.triton.cubin",
        ptxas_log=art.cubin.ptxas_log,
        bin_dir=toolchain.cuobjdump.parent,
    )


@functools.cache
def standard_compiles(test_home: Path) -> dict[str, CompiledForTest]:
    """The kernels the analyze tests share, compiled once per test home (the artifact cache).

    Keys: `red64-<v>` / `red256-<v>` (64x64 / 64x256 reduction tiles) and `atomic-<v>`,
    for v in 3.3.1 and 3.4.0; sm_90a, num_warps=4.
    """
    result: dict[str, CompiledForTest] = {}
    with Compiler(jobs=2) as compiler:
        for version in ("3.3.1", "3.4.0"):
            for rblock in (64, 256):
                result[f"red{rblock}-{version}"] = compile_for_test(
                    version, "red_kernel", RED_SIGNATURE, {"XBLOCK": 64, "RBLOCK": rblock}, compiler=compiler
                )
            result[f"atomic-{version}"] = compile_for_test(
                version, "atomic_kernel", ATOMIC_SIGNATURE, {"BLOCK": 1024}, compiler=compiler
            )
    return result


def analyze_compiled(c: CompiledForTest) -> Resources:
    """Resources of a test compile, with its ptxas log, PTX and Triton's shared size."""
    return analyze(
        c.cubin,
        cuobjdump=c.cuobjdump,
        ptxas_log=c.ptxas_log,
        ptx=c.ptx.read_text(),
        kernel_name=c.name,
        triton_shared=c.shared,
    )
