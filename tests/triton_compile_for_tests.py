"""Test helper: compile a kernel of kernels_for_tests.py with a real Triton wheel, then run ptxas.

Temporary: the lead will switch this to the project's compile API. Kept small on purpose.

Triton virtualenvs: `$KTRIAGE_TEST_TRITON_VENVS/t<version>` (default /tmp/tcdev, the dev venvs);
when that does not exist, one is created with uv under the test home (`test-triton/t<version>`),
once, under a file lock.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

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

# Runs inside the Triton venv: AOT compile for sm_90 without a GPU, write ptx/cubin/metadata.
_COMPILE_SCRIPT = r"""
import importlib.util, json, sys
from pathlib import Path
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
req = json.loads(sys.argv[1])
spec = importlib.util.spec_from_file_location("kernels_for_tests", req["kernels_file"])
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
fn = getattr(mod, req["kernel"])
src = ASTSource(fn=fn, signature=req["signature"], constexprs=req["constexprs"])
k = triton.compile(src, target=GPUTarget("cuda", req["arch"], 32), options=req["options"])
out = Path(req["out_dir"])
(out / "kernel.ptx").write_text(k.asm["ptx"])
(out / "triton.cubin").write_bytes(k.asm["cubin"])
(out / "meta.json").write_text(json.dumps({"name": k.metadata.name, "shared": k.metadata.shared,
                                           "triton_version": triton.__version__}))
"""


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


def triton_venv(version: str, test_home: Path) -> Path:
    """A virtualenv with `triton==version`: the dev venv if present, else built once with uv."""
    dev = Path(os.environ.get("KTRIAGE_TEST_TRITON_VENVS", "/tmp/tcdev")) / f"t{version}"
    if (dev / "bin" / "python").exists():
        return dev
    venv = test_home / "test-triton" / f"t{version}"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(venv) + ".lock"):
        if not (venv / ".complete").exists():
            subprocess.run(
                ["uv", "venv", "--python", f"{sys.version_info.major}.{sys.version_info.minor}", str(venv)],
                check=True,
            )
            subprocess.run(
                ["uv", "pip", "install", "--python", str(venv / "bin" / "python"), f"triton=={version}"],
                check=True,
            )
            (venv / ".complete").write_text(version)
    return venv


def bundled_bin_dir(venv: Path) -> Path:
    """Where a Triton wheel keeps ptxas, cuobjdump and nvdisasm."""
    found = sorted(venv.glob("lib/python3*/site-packages/triton/backends/nvidia/bin"))
    if not found:
        raise FileNotFoundError(f"no triton/backends/nvidia/bin under {venv}")
    return found[0]


def compile_for_test(
    version: str,
    kernel: str,
    signature: dict[str, str],
    constexprs: dict[str, int],
    out_dir: Path,
    *,
    test_home: Path,
    num_warps: int = 4,
    arch: int = 90,
) -> CompiledForTest:
    """Compile with Triton `version`, then assemble its PTX with the bundled ptxas `-v`."""
    venv = triton_venv(version, test_home)
    out_dir.mkdir(parents=True, exist_ok=True)
    req = {
        "kernels_file": str(KERNELS_FILE),
        "kernel": kernel,
        "signature": signature,
        "constexprs": constexprs,
        "options": {"num_warps": num_warps},
        "arch": arch,
        "out_dir": str(out_dir),
    }
    subprocess.run([str(venv / "bin" / "python"), "-c", _COMPILE_SCRIPT, json.dumps(req)], check=True)
    meta = json.loads((out_dir / "meta.json").read_text())
    bin_dir = bundled_bin_dir(venv)
    gpu = f"sm_{arch}{'a' if arch >= 90 else ''}"
    # -lineinfo as Triton passes it, so the cubin matches Triton's own
    proc = subprocess.run(
        [
            str(bin_dir / "ptxas"),
            "-lineinfo",
            "-v",
            f"--gpu-name={gpu}",
            str(out_dir / "kernel.ptx"),
            "-o",
            str(out_dir / "kernel.cubin"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return CompiledForTest(
        version=version,
        name=meta["name"],
        shared=meta["shared"],
        ptx=out_dir / "kernel.ptx",
        cubin=out_dir / "kernel.cubin",
        triton_cubin=out_dir / "triton.cubin",
        ptxas_log=proc.stdout + proc.stderr,
        bin_dir=bin_dir,
    )


@functools.cache
def standard_compiles(test_home: Path) -> dict[str, CompiledForTest]:
    """The kernels the analyze tests share, compiled once per test process.

    Keys: `red64-<v>` / `red256-<v>` (64x64 / 64x256 reduction tiles) and `atomic-<v>`,
    for v in 3.3.1 and 3.4.0; sm_90a, num_warps=4.
    """
    out = Path(tempfile.mkdtemp(prefix="ktriage-analyze-"))
    result: dict[str, CompiledForTest] = {}
    for version in ("3.3.1", "3.4.0"):
        for rblock in (64, 256):
            result[f"red{rblock}-{version}"] = compile_for_test(
                version,
                "red_kernel",
                RED_SIGNATURE,
                {"XBLOCK": 64, "RBLOCK": rblock},
                out / f"red{rblock}-{version}",
                test_home=test_home,
            )
        result[f"atomic-{version}"] = compile_for_test(
            version,
            "atomic_kernel",
            ATOMIC_SIGNATURE,
            {"BLOCK": 1024},
            out / f"atomic-{version}",
            test_home=test_home,
        )
    return result
