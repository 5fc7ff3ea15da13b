"""Regenerate the recorded tool outputs in this folder (see README.md). Needs no GPU.

    .venv/bin/python tests/data/resources/make_fixtures.py [--cubins DIR]

Uses the Triton 3.3.1 / 3.4.0 virtualenvs of tests/triton_compile_for_tests.py and their bundled
ptxas (12.4.99 / 12.8.93) and cuobjdump / nvdisasm (12.8.55). `--cubins DIR` also keeps the cubins
that device_shared_check.py reads.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent.parent
sys.path.insert(0, str(TESTS))

from triton_compile_for_tests import (
    ATOMIC_SIGNATURE,
    RED_SIGNATURE,
    bundled_bin_dir,
    compile_for_test,
    triton_venv,
)

HOME = TESTS.parent / ".ktriage-home"


def tool(path: Path, *args: str) -> str:
    proc = subprocess.run([str(path), *args], capture_output=True, text=True, check=True)
    return proc.stdout + proc.stderr


def main() -> None:
    keep = Path(sys.argv[sys.argv.index("--cubins") + 1]) if "--cubins" in sys.argv else None
    work = Path(tempfile.mkdtemp())
    for version in ("3.3.1", "3.4.0"):
        for rblock in (64, 256):
            c = compile_for_test(
                version,
                "red_kernel",
                RED_SIGNATURE,
                {"XBLOCK": 64, "RBLOCK": rblock},
                work / f"red{rblock}-{version}",
                test_home=HOME,
            )
            (HERE / f"red64x{rblock}-{version}.ptxas.log").write_text(c.ptxas_log)
            if version == "3.4.0" and rblock == 256:
                (HERE / "red64x256-3.4.0.resusage.txt").write_text(
                    tool(c.cuobjdump, "--dump-resource-usage", str(c.cubin))
                )
            if keep:
                keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(c.triton_cubin, keep / f"red64x{rblock}-{version}.cubin")
        a = compile_for_test(
            version,
            "atomic_kernel",
            ATOMIC_SIGNATURE,
            {"BLOCK": 1024},
            work / f"atomic-{version}",
            test_home=HOME,
        )
        shutil.copy(a.ptx, HERE / f"atomic-{version}.ptx")
        (HERE / f"atomic-{version}.sass").write_text(tool(a.cuobjdump, "-sass", str(a.cubin)))
        (HERE / f"atomic-{version}.resusage.txt").write_text(
            tool(a.cuobjdump, "--dump-resource-usage", str(a.cubin))
        )
        if version == "3.4.0":
            (HERE / "atomic-3.4.0.nvdisasm.sass").write_text(tool(a.bin_dir / "nvdisasm", "-c", str(a.cubin)))
        # the hand-written multi-function module, assembled by this wheel's ptxas
        bins = bundled_bin_dir(triton_venv(version, HOME))
        ptxas_version = "12.4" if version == "3.3.1" else "12.8"
        cubin = work / f"multi-{version}.cubin"
        log = tool(bins / "ptxas", "-v", "--gpu-name=sm_90a", str(HERE / "multi.ptx"), "-o", str(cubin))
        (HERE / f"multi-ptxas{ptxas_version}.log").write_text(log)
        if version == "3.4.0":
            (HERE / "multi-sm90a.resusage.txt").write_text(
                tool(bins / "cuobjdump", "--dump-resource-usage", str(cubin))
            )
            (HERE / "multi-sm90a.sass").write_text(tool(bins / "cuobjdump", "-sass", str(cubin)))
            (HERE / "multi-sm90a.elf.txt").write_text(tool(bins / "cuobjdump", "-elf", str(cubin)))
            if keep:
                shutil.copy(cubin, keep / "multi.cubin")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
