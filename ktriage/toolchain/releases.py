"""ptxas releases from NVIDIA's PyPI wheels, unpacked once under ``<home>/ptxas/<version>/bin/ptxas``.

The wheel is ``nvidia-cuda-nvcc-cu12`` for 12.x (``nvidia/cuda_nvcc/bin/ptxas``) and
``nvidia-cuda-nvcc`` for 13.x (``nvidia/cu13/bin/ptxas``); 11.x is ``nvidia-cuda-nvcc-cu11``. We keep
only the ptxas binary (the wheel also carries nvvm, headers...), so a release costs ~30 MB.
The release folder is assembled under a temporary name and renamed into place: it either exists
whole or not at all.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

from ktriage.errors import ToolchainError
from ktriage.home import home_lock, home_subdir
from ktriage.toolchain.installer import (
    Progress,
    is_missing_version,
    no_progress,
    read_json,
    release_not_installed,
    run_uv,
    uv_failure,
    wipe,
    write_json_atomic,
)
from ktriage.toolchain.ptxas import ptxas_version

MARKER = "ptxas.json"


def nvcc_package(version: str) -> str:
    """The PyPI package that ships ptxas of a CUDA release."""
    major = int(version.split(".")[0])
    if major <= 11:
        return "nvidia-cuda-nvcc-cu11"
    if major == 12:
        return "nvidia-cuda-nvcc-cu12"
    return "nvidia-cuda-nvcc"


def releases_dir() -> Path:
    return home_subdir("ptxas").resolve()


def release_ptxas(version: str) -> Path | None:
    """The installed ptxas of a release, or None if not (completely) installed."""
    root = releases_dir() / version
    exe = root / "bin" / "ptxas"
    return exe if read_json(root / MARKER) is not None and exe.is_file() else None


def ensure_ptxas_release(version: str, progress: Progress = no_progress) -> Path:
    """Install a ptxas release (once, under a lock) and return its binary."""
    found = release_ptxas(version)
    if found is not None:
        return found
    with home_lock(releases_dir() / f".{version}.lock"):
        found = release_ptxas(version)
        if found is not None:
            return found
        return _install(version, progress)


def _install(version: str, progress: Progress) -> Path:
    root = releases_dir() / version
    staging = releases_dir() / f".{version}.staging-{os.getpid()}"
    wipe(root)
    for dead in releases_dir().glob(f".{version}.staging-*"):
        wipe(dead)  # an install killed half-way (we hold the release's lock: no live one writes there)
    package = nvcc_package(version)
    progress(f"downloading ptxas {version} ({package})")
    proc = run_uv(
        [
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--python",
            sys.executable,
            "--target",
            str(staging / "wheel"),
            f"{package}=={version}",
        ],
        what=f"download {package}=={version}",
    )
    try:
        if proc.returncode != 0:
            if is_missing_version(proc):
                raise release_not_installed(
                    proc, key="ptxas", version=version, package=package, example="ptxas==12.8.93"
                )
            raise uv_failure(proc, what=f"download {package}=={version}", fix="check the network / index access")
        found = sorted((staging / "wheel").glob("nvidia/**/bin/ptxas"))
        if not found:
            raise ToolchainError(
                f"{package}=={version} contains no bin/ptxas", "pick another release (ktriage knows 11.x-13.x layouts)"
            )
        (staging / "bin").mkdir(parents=True)
        exe = staging / "bin" / "ptxas"
        shutil.copy2(found[0], exe)  # a copy: the wheel's file may be a hard link into uv's cache
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        shutil.rmtree(staging / "wheel")
        info = ptxas_version(exe)
        write_json_atomic(
            staging / MARKER,
            {"version": version, "package": package, "ptxas_version": info.version, "ptxas_version_text": info.text},
        )
        os.replace(staging, root)
    finally:
        wipe(staging)
    progress(f"ptxas {version} ready")
    return root / "bin" / "ptxas"
