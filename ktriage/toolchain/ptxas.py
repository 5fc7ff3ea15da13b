"""Run ptxas with a command line Triton recorded, and identify a ptxas binary.

Triton assembles its own cubins (the compile worker keeps them). ktriage runs ptxas itself only where
it changes the assembler: another ptxas or extra options for a toolchain, and explain's cross matrix
(one toolchain's PTX through another's ptxas). Then the options are the ones Triton passed for that
spec (recorded by insitu/ptxas_capture.py), never a list of ours. One step Triton never takes: an
older ptxas refuses PTX whose ``.version`` header is newer than it knows (Triton 3.4 writes
``.version 8.7``; ptxas 12.4 knows 8.4), even when the body uses nothing new. We lower the header and
retry; if the body does use newer features, the retry fails and we say so plainly.
"""

from __future__ import annotations

import functools
import hashlib
import re
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ktriage.errors import CompileError, KtriageError, ToolchainError

_VERSION_FULL = re.compile(r"\bV(\d+\.\d+\.\d+)\b")
_VERSION_RELEASE = re.compile(r"release (\d+\.\d+)")
_UNSUPPORTED_VERSION = re.compile(r"Unsupported \.version (\d+\.\d+); current version is '(\d+\.\d+)'")
_PTX_VERSION_LINE = re.compile(r"^(\s*\.version\s+)(\d+\.\d+)", re.M)
_UNKNOWN_ARCH = re.compile(r"Value '(sm_\w+)' is not defined for option 'gpu-name'")


@dataclass(frozen=True)
class PtxasVersion:
    """``version`` is the CUDA release with build number ("12.8.93"); ``text`` the whole ``--version``
    output, which also carries the build date and changelist that tell two builds of one release apart."""

    version: str
    text: str

    @property
    def release(self) -> str:
        """Major.minor ("12.8"), what Triton keys its PTX ISA choice on."""
        return ".".join(self.version.split(".")[:2])


@dataclass(frozen=True)
class AssembleResult:
    """The cubin plus everything needed to understand it: the ``-v`` log of the run that made the cubin
    (registers, spill bytes...), the exact command (a repro), and whether the PTX header had to be
    lowered first (declared, used), e.g. ("8.7", "8.4")."""

    cubin: bytes
    log: str
    command: tuple[str, ...]
    lowered_ptx_version: tuple[str, str] | None = None


def ptxas_version(path: Path | str) -> PtxasVersion:
    """Ask a ptxas binary for its version. Cached per (path, size, mtime): the binary is run once."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        raise ToolchainError(f"ptxas binary {p} does not exist", "check the toolchain's ptxas path") from None
    return _ptxas_version_cached(str(p), st.st_size, st.st_mtime_ns)


def version_from_text(text: str) -> str | None:
    """The release with build number ("12.8.93") from a ``ptxas --version`` text (or "12.8.0")."""
    m = _VERSION_FULL.search(text)
    if m:
        return m.group(1)
    r = _VERSION_RELEASE.search(text)
    return f"{r.group(1)}.0" if r else None


@functools.lru_cache(maxsize=64)
def _ptxas_version_cached(path: str, _size: int, _mtime: int) -> PtxasVersion:
    try:
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    except OSError as exc:
        raise ToolchainError(
            f"cannot run ptxas {path}: {exc}", f"check that {path} is a ptxas binary for this machine and executable"
        ) from None
    text = (proc.stdout + proc.stderr).strip()
    version = version_from_text(text)
    if proc.returncode != 0 or version is None:
        raise ToolchainError(
            f"{path} --version did not report a ptxas version (exit {proc.returncode}): {text[:300]!r}",
            "point the toolchain at a real ptxas binary",
        )
    return PtxasVersion(version=version, text=text)


def ptxas_command(ptxas: Path, gpu_name: str, src: Path, out: Path, options: Sequence[str]) -> list[str]:
    """The shape of Triton's make_cubin command: options as recorded (``-lineinfo``, ``--fmad=false``,
    ``-v``, ...), then the arch, the input and ``-o OUTPUT``."""
    return [str(ptxas), *options, f"--gpu-name={gpu_name}", str(src), "-o", str(out)]


def ptx_header_version(ptx: str) -> str | None:
    """The ``.version X.Y`` a PTX module declares (None if it has no header)."""
    m = _PTX_VERSION_LINE.search(ptx)
    return m.group(2) if m else None


def lower_ptx_version(ptx: str, version: str) -> str:
    """Rewrite the ``.version`` header only; the body is left untouched."""
    return _PTX_VERSION_LINE.sub(lambda m: m.group(1) + version, ptx, count=1)


def assemble(
    ptx: str,
    ptxas: Path,
    gpu_name: str,
    options: Sequence[str],
    *,
    workdir: Path | None = None,
) -> AssembleResult:
    """Assemble PTX into a cubin with the given options (Triton's recorded ones, ``-v`` among them);
    lower a too-new ``.version`` header once.

    ``workdir`` keeps the .ptx/.cubin files (handy for a repro); by default a temporary dir is used.
    Raises CompileError with ptxas's message and a fix when ptxas cannot assemble the PTX (ToolchainError
    when this ptxas cannot handle the target, option or PTX version at all).
    """
    ptxas = Path(ptxas)
    if "-v" not in options:
        raise ToolchainError(
            f"ptxas options {list(options)} lack -v", "this is a bug in ktriage: the -v log holds the spill counts"
        )
    if workdir is not None:
        workdir.mkdir(parents=True, exist_ok=True)
        return _assemble_in(ptx, ptxas, gpu_name, options, workdir)
    with tempfile.TemporaryDirectory(prefix="ktriage-ptxas-") as tmp:
        try:
            return _assemble_in(ptx, ptxas, gpu_name, options, Path(tmp))
        except KtriageError as exc:
            raise _with_kept_ptx(exc, ptx, Path(tmp)) from None


def _with_kept_ptx(exc: KtriageError, ptx: str, tmp: Path) -> KtriageError:
    """Keep a failing PTX under the ktriage home so that the repro command in the message still works."""
    from ktriage.home import home_subdir

    keep = home_subdir("ptxas-failures").resolve() / hashlib.sha256(ptx.encode()).hexdigest()[:16]
    keep.mkdir(parents=True, exist_ok=True)
    (keep / "kernel.ptx").write_text(ptx)
    problem = exc.problem.replace(str(tmp), str(keep))
    return type(exc)(problem + f"\n  PTX kept at {keep / 'kernel.ptx'}", exc.fix)


def _assemble_in(ptx: str, ptxas: Path, gpu_name: str, options: Sequence[str], workdir: Path) -> AssembleResult:
    src, out = workdir / "kernel.ptx", workdir / "kernel.cubin"
    cmd, rc, log = _run(ptx, ptxas, gpu_name, options, src, out)
    lowered: tuple[str, str] | None = None
    if rc != 0:
        m = _UNSUPPORTED_VERSION.search(log)
        if m is None:
            raise _failure(ptxas, gpu_name, cmd, log)
        lowered = (m.group(1), m.group(2))
        cmd, rc, log = _run(lower_ptx_version(ptx, lowered[1]), ptxas, gpu_name, options, src, out)
        if rc != 0:
            version = _version_or_path(ptxas)
            raise ToolchainError(
                f"the PTX (.version {lowered[0]}) uses features that ptxas {version} does not support, even with its "
                f"header lowered to .version {lowered[1]}:\n{_error_lines(log)}",
                f"assemble it with a newer ptxas (ptxas {version} knows PTX ISA up to {lowered[1]}), e.g. the one "
                "this Triton bundles, or ptxas==12.8.93 / a 13.x release",
            )
    try:
        cubin = out.read_bytes()
    except OSError:
        raise CompileError(
            f"ptxas reported success but wrote no cubin: {' '.join(cmd)}", "run the command by hand to see why"
        ) from None
    return AssembleResult(cubin=cubin, log=log, command=tuple(cmd), lowered_ptx_version=lowered)


def _run(
    ptx: str, ptxas: Path, gpu_name: str, options: Sequence[str], src: Path, out: Path
) -> tuple[list[str], int, str]:
    src.write_text(ptx)
    out.unlink(missing_ok=True)
    cmd = ptxas_command(ptxas, gpu_name, src, out, options)
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError as exc:
        raise ToolchainError(
            f"cannot run ptxas {ptxas}: {exc}", "check the toolchain's ptxas (ktriage toolchain show)"
        ) from None
    return cmd, proc.returncode, proc.stdout


def _failure(ptxas: Path, gpu_name: str, cmd: list[str], log: str) -> KtriageError:
    version = _version_or_path(ptxas)
    arch = _UNKNOWN_ARCH.search(log)
    if arch:
        return ToolchainError(
            f"ptxas {version} does not know {arch.group(1)}: {_error_lines(log)}",
            f"use a ptxas release that supports {arch.group(1)} (sm_100a needs 12.8 or newer, sm_120a 12.8, sm_90a 12.0), e.g. ptxas==12.8.93",
        )
    if "Unknown option" in log or "is not defined for option" in log:
        return ToolchainError(
            f"ptxas {version} rejected an option: {_error_lines(log)}",
            f"check the toolchain's ptxas-options against `{ptxas} --help`",
        )
    return CompileError(
        f"ptxas {version} failed for {gpu_name}:\n{_error_lines(log)}\n  command: {' '.join(cmd)}",
        "if the PTX is from a newer Triton, try a newer ptxas; otherwise report the PTX (the command above reproduces it)",
    )


def _version_or_path(ptxas: Path) -> str:
    try:
        return ptxas_version(ptxas).version
    except KtriageError:
        return str(ptxas)


def _error_lines(log: str, limit: int = 8) -> str:
    lines = [ln for ln in log.splitlines() if "error" in ln.lower() or "fatal" in ln.lower()] or log.splitlines()
    shown = lines[:limit]
    more = f"\n  ... ({len(lines) - limit} more)" if len(lines) > limit else ""
    return "\n".join("  " + ln.strip() for ln in shown) + more
