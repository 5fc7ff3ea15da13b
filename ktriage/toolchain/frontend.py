"""The Triton frontend of a toolchain: one virtualenv per Triton version (or wheel), shared by every
toolchain that differs only in ptxas or ptxas options, so trying five ptxas releases costs one venv.

Layout: ``<home>/toolchains/envs/<key>/`` is a uv virtualenv; ``frontend.json`` inside it is written
last and atomically, so its presence means "complete".
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from ktriage.errors import KtriageError
from ktriage.home import home_subdir
from ktriage.toolchain.installer import (
    Progress,
    is_missing_version,
    no_progress,
    read_json,
    run_uv,
    sha256_file,
    uv_failure,
    versions_hint,
    wipe,
    write_json_atomic,
)
from ktriage.toolchain.spec import ToolchainSpec

MARKER = "frontend.json"
# Where Triton wheels keep their CUDA tools: 3.x under backends/nvidia/bin, 2.x under third_party/cuda/bin.
_TOOL_DIRS = ("triton/backends/nvidia/bin", "triton/third_party/cuda/bin")


@dataclass(frozen=True)
class Frontend:
    """A built frontend virtualenv and the CUDA tools its Triton wheel bundles."""

    key: str
    root: Path
    python: Path
    triton_version: str
    wheel_sha256: str | None
    bundled_ptxas: Path
    bundled_ptxas_blackwell: Path | None
    cuobjdump: Path
    nvdisasm: Path | None


def envs_dir() -> Path:
    path = home_subdir("toolchains").resolve() / "envs"
    path.mkdir(parents=True, exist_ok=True)
    return path


def frontend_key(spec: ToolchainSpec) -> tuple[str, str | None]:
    """The venv folder name for a spec's frontend, and the wheel's sha256 (None for PyPI)."""
    if spec.triton_wheel is None:
        return f"triton-{spec.triton_version}", None
    sha = _wheel_sha256(spec.triton_wheel)
    version = _wheel_version(spec.triton_wheel)
    return f"triton-{_safe(version)}-wheel-{sha[:12]}", sha


def ensure_frontend(spec: ToolchainSpec, progress: Progress = no_progress) -> Frontend:
    """Return the spec's frontend venv, building it (once, under a lock) if needed."""
    key, sha = frontend_key(spec)
    root = envs_dir() / key
    built = _load(root)
    if built is not None:
        return built
    with FileLock(str(envs_dir() / f".{key}.lock")):
        built = _load(root)  # another process may have finished it while we waited
        if built is not None:
            return built
        return _build(spec, key, sha, root, progress)


def load_frontend(root: Path) -> Frontend | None:
    """A complete frontend at ``root`` or None."""
    return _load(root)


def _build(spec: ToolchainSpec, key: str, sha: str | None, root: Path, progress: Progress) -> Frontend:
    wipe(root)  # leftovers of a killed build
    label = f"triton=={spec.triton_version}" if spec.triton_wheel is None else str(spec.triton_wheel)
    progress(f"creating virtualenv for {label}")
    proc = run_uv(["venv", "--quiet", "--python", sys.executable, str(root)], what="create a virtualenv")
    if proc.returncode != 0:
        wipe(root)
        raise uv_failure(proc, what=f"create a virtualenv at {root}", fix="check that uv can create virtualenvs: uv venv /tmp/x")
    python = root / "bin" / "python"
    progress(f"installing {label}")
    requirement = f"triton=={spec.triton_version}" if spec.triton_wheel is None else str(spec.triton_wheel)
    # setuptools: Triton <= 3.2 imports it at run time (bare uv virtualenvs do not have it)
    proc = run_uv(["pip", "install", "--quiet", "--python", str(python), requirement, "setuptools"], what=f"install {label}")
    if proc.returncode != 0:
        wipe(root)
        if spec.triton_wheel is None and is_missing_version(proc):
            raise KtriageError(
                f"triton=={spec.triton_version} is not on the package index (or has no wheel for Python "
                f"{sys.version_info.major}.{sys.version_info.minor} on this platform)",
                versions_hint("triton", "triton==3.4.0"),
            )
        raise uv_failure(proc, what=f"install {label}", fix="check the network / index access, or the wheel file")
    progress(f"checking {label}")
    version = _installed_triton_version(python)
    tools = _tool_dir(root)
    if tools is None or not (tools / "ptxas").is_file():
        wipe(root)
        raise KtriageError(
            f"{label} installed, but it bundles no ptxas (looked for {', '.join(_TOOL_DIRS)})",
            "use a Triton wheel built with its NVIDIA backend (PyPI wheels are), or give ptxas=... and a wheel that has cuobjdump",
        )
    data = {
        "key": key,
        "triton_version": version,
        "wheel_sha256": sha,
        "requirement": requirement,
        "tools_dir": str(tools.relative_to(root)),
        "python_version": f"{sys.version_info.major}.{sys.version_info.minor}",
    }
    write_json_atomic(root / MARKER, data)
    loaded = _load(root)
    assert loaded is not None
    return loaded


def _load(root: Path) -> Frontend | None:
    data: dict[str, Any] | None = read_json(root / MARKER)
    if data is None:
        return None
    tools = root / data["tools_dir"]
    python = root / "bin" / "python"
    if not python.exists() or not (tools / "ptxas").is_file():
        return None  # damaged: treat as not built
    blackwell = tools / "ptxas-blackwell"
    nvdisasm = tools / "nvdisasm"
    return Frontend(
        key=data["key"],
        root=root,
        python=python,
        triton_version=data["triton_version"],
        wheel_sha256=data.get("wheel_sha256"),
        bundled_ptxas=tools / "ptxas",
        bundled_ptxas_blackwell=blackwell if blackwell.is_file() else None,
        cuobjdump=tools / "cuobjdump",
        nvdisasm=nvdisasm if nvdisasm.is_file() else None,
    )


def _installed_triton_version(python: Path) -> str:
    # PyPI wheels are "triton"; PyTorch's nightly builds ship the same package as "pytorch-triton".
    code = (
        "import importlib.metadata as m\n"
        "for d in ('triton', 'pytorch-triton', 'triton-nightly'):\n"
        "    try:\n        print(m.version(d)); break\n"
        "    except m.PackageNotFoundError:\n        pass\n"
    )
    proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise KtriageError(f"triton is not importable in {python}: {proc.stderr.strip()[-500:]}", "remove the toolchain and add it again")
    return proc.stdout.strip()


def _tool_dir(root: Path) -> Path | None:
    for site in sorted((root / "lib").glob("python*/site-packages")):
        for rel in _TOOL_DIRS:
            if (site / rel).is_dir():
                return site / rel
    return None


def _wheel_sha256(path: Path) -> str:
    """sha256 of a wheel, hashed once per process and file state (a Triton wheel is ~150 MB)."""
    st = path.stat()
    return _sha_cached(str(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _sha_cached(path: str, _size: int, _mtime: int) -> str:
    return sha256_file(Path(path))


def _wheel_version(path: Path) -> str:
    """Version from a wheel file name (``triton-3.4.0+gitabc-cp311-...whl``)."""
    parts = path.name.split("-")
    if len(parts) < 5 or parts[0].lower() not in ("triton", "pytorch_triton", "triton_nightly"):
        raise KtriageError(
            f"{path.name} is not a Triton wheel file name (expected triton-VERSION-PYTAG-ABITAG-PLATFORM.whl)",
            "pass the wheel as built, without renaming it",
        )
    return parts[1]


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]", "_", text)
