"""Compile kernel specs with toolchains into a content-addressed artifact cache.

Two stages with two caches, because they depend on different things:
- the *frontend* (Triton: TTIR -> TTGIR -> LLIR -> PTX) depends on the spec and the Triton build;
  it runs in a worker inside the toolchain's virtualenv;
- the *assembler* (ptxas: PTX -> cubin) depends on the PTX text, the ptxas release and its options;
  it runs here, with the same flags Triton uses, and records the ``-v`` log (spill bytes live there).
Splitting them makes the cross matrix of ``explain`` (each PTX through each ptxas) cost one ptxas run
per cell, and makes a ptxas-only bisect recompile nothing in Triton. Every result is written to the
cache as soon as it exists, so an interrupted sweep keeps what it finished.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ktriage.arch import parse_arch
from ktriage.compile.abi import AbiParam, launch_abi
from ktriage.compile.pool import WorkerPool
from ktriage.compile.worker import PROTOCOL_VERSION
from ktriage.errors import KtriageError
from ktriage.home import home_subdir
from ktriage.spec.model import KernelSpec
from ktriage.toolchain.manager import Toolchain
from ktriage.toolchain.ptxas import assemble

# Pure-python helpers that kernel libraries import at module level (liger-kernel: packaging) and
# that a toolchain's bare virtualenv lacks. Installed once next to the kernel packages.
SUPPORT_PACKAGES = ("packaging==24.2",)


@dataclass(frozen=True)
class FrontendResult:
    """Triton's output for one (spec, Triton build): IR files, metadata, Triton's own cubin."""

    dir: Path
    kernel_name: str
    triton_version: str
    metadata: dict[str, Any]
    placeholder_imports: tuple[str, ...] = ()

    def text(self, stage: str) -> str:
        """One IR stage as text: ``ttir``, ``ttgir``, ``llir`` or ``ptx``."""
        return (self.dir / f"kernel.{stage}").read_text()

    @property
    def ptx_path(self) -> Path:
        return self.dir / "kernel.ptx"


@dataclass(frozen=True)
class AssembledCubin:
    """ptxas's output for one PTX text: the cubin and the ``-v`` log."""

    dir: Path
    ptxas_version: str
    lowered_ptx_version: tuple[str, str] | None

    @property
    def cubin_path(self) -> Path:
        return self.dir / "kernel.cubin"

    @property
    def ptxas_log(self) -> str:
        return (self.dir / "ptxas.log").read_text()


@dataclass(frozen=True)
class Artifact:
    """A spec compiled by one toolchain: frontend output + assembled cubin + launch ABI."""

    spec: KernelSpec
    toolchain: Toolchain
    frontend: FrontendResult
    cubin: AssembledCubin
    abi: tuple[AbiParam, ...]

    @property
    def kernel_name(self) -> str:
        return self.frontend.kernel_name


@dataclass(frozen=True)
class CompileFailure:
    """A spec that did not compile with a toolchain; the rest of a sweep goes on without it."""

    spec: KernelSpec
    toolchain: Toolchain
    stage: str  # "frontend" or "assemble"
    kind: str
    message: str


CompileOutcome = Artifact | CompileFailure


def _sha(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def _frontend_identity(toolchain: Toolchain) -> str:
    """What makes two toolchains produce the same PTX: the Triton build, not the ptxas."""
    identity = getattr(toolchain, "frontend_id", None)
    return str(identity) if identity else f"{toolchain.triton_version}|{toolchain.python}"


def _atomic_publish(tmp: Path, final: Path) -> None:
    """Move a finished cache entry into place; a concurrent writer of the same entry wins harmlessly."""
    try:
        os.replace(tmp, final)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)


class Compiler:
    """Compiles specs with toolchains, in parallel, through the artifact cache."""

    def __init__(self, jobs: int | None = None, cache_dir: Path | None = None, timeout_s: float = 600.0) -> None:
        self.jobs = jobs or max(1, os.cpu_count() or 1)
        self.cache = cache_dir or home_subdir("artifacts")
        self.timeout_s = timeout_s
        self._pool = WorkerPool(self.jobs)
        # Frontend compiles actually run (cache misses), in total and per thread: bisect reports its
        # cost in compiles and charges each candidate of a parallel round its own.
        self.frontend_compiles = 0
        self._count_lock = threading.Lock()
        self._local = threading.local()

    def thread_compiles(self) -> int:
        """Frontend compiles run so far by the calling thread."""
        return int(getattr(self._local, "n", 0))

    def _count_compile(self) -> None:
        with self._count_lock:
            self.frontend_compiles += 1
        self._local.n = getattr(self._local, "n", 0) + 1

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> Compiler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- frontend -------------------------------------------------------------------------------

    def _kernel_sys_path(self, spec: KernelSpec) -> list[str]:
        if not spec.package:
            return []
        from ktriage.spec.packages import ensure_package

        paths = [str(ensure_package(spec.package))]
        paths += [str(ensure_package(req)) for req in SUPPORT_PACKAGES]
        return paths

    def frontend(self, spec: KernelSpec, toolchain: Toolchain) -> FrontendResult | CompileFailure:
        key = _sha("frontend", str(PROTOCOL_VERSION), spec.key(), _frontend_identity(toolchain))
        final = self.cache / "frontend" / key
        done = final / "result.json"
        if done.exists():
            return _frontend_from_json(final, json.loads(done.read_text()))
        try:
            sys_path = self._kernel_sys_path(spec)
        except KtriageError as exc:
            return CompileFailure(spec, toolchain, "frontend", "package", str(exc))
        tmp = final.parent / f".tmp-{key}-{uuid.uuid4().hex[:8]}"
        self._count_compile()
        worker = self._pool.acquire(toolchain.python, tuple(sys_path))
        try:
            reply = worker.request(
                {"id": key, "spec": spec.to_json(), "sys_path": sys_path, "out_dir": str(tmp)},
                timeout=self.timeout_s,
            )
        finally:
            self._pool.release(toolchain.python, worker, tuple(sys_path))
        if not reply.ok:
            shutil.rmtree(tmp, ignore_errors=True)
            return CompileFailure(spec, toolchain, "frontend", reply.kind, reply.error)
        data = reply.data
        record = {
            "kernel_name": data["metadata"].get("name", ""),
            "triton_version": data["triton_version"],
            "metadata": data["metadata"],
            "placeholder_imports": data.get("placeholder_imports", []),
            "spec": spec.to_json(),
        }
        (tmp / "result.json").write_text(json.dumps(record, indent=1))
        final.parent.mkdir(parents=True, exist_ok=True)
        _atomic_publish(tmp, final)
        return _frontend_from_json(final, record)

    # -- assembler ------------------------------------------------------------------------------

    def assemble(self, ptx: str, toolchain: Toolchain, target: str, *, fmad: bool = True) -> AssembledCubin:
        """Assemble PTX with the toolchain's ptxas and options (raises KtriageError on failure)."""
        arch = parse_arch(target)
        ptxas = toolchain.ptxas_for(arch.cc)
        options = tuple(toolchain.ptxas_options)
        key = _sha("cubin", hashlib.sha256(ptx.encode()).hexdigest(), str(ptxas), toolchain.ptxas_version_text,
                   " ".join(options), arch.ptxas_name, str(fmad))
        final = self.cache / "cubin" / key
        done = final / "result.json"
        if done.exists():
            return _cubin_from_json(final, json.loads(done.read_text()))
        result = assemble(ptx, ptxas, arch.ptxas_name, options, fmad=fmad)
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key}-", dir=final.parent))
        (tmp / "kernel.cubin").write_bytes(result.cubin)
        (tmp / "ptxas.log").write_text(result.log)
        record = {
            "ptxas": str(ptxas),
            "ptxas_version": toolchain.ptxas_version,
            "options": list(options),
            "gpu_name": arch.ptxas_name,
            "lowered_ptx_version": list(result.lowered_ptx_version) if result.lowered_ptx_version else None,
        }
        (tmp / "result.json").write_text(json.dumps(record, indent=1))
        _atomic_publish(tmp, final)
        return _cubin_from_json(final, record)

    # -- both -----------------------------------------------------------------------------------

    def compile(self, spec: KernelSpec, toolchain: Toolchain) -> CompileOutcome:
        """Frontend + assemble for one pair; failures come back as CompileFailure, never raised."""
        front = self.frontend(spec, toolchain)
        if isinstance(front, CompileFailure):
            return front
        ptx = front.text("ptx")
        try:
            cubin = self.assemble(ptx, toolchain, spec.target, fmad=bool(front.metadata.get("enable_fp_fusion", True)))
            abi = launch_abi(spec.signature, tuple(spec.equal_to_1), ptx, front.metadata)
        except KtriageError as exc:
            return CompileFailure(spec, toolchain, "assemble", "ptxas", str(exc))
        return Artifact(spec, toolchain, front, cubin, tuple(abi))

    def compile_many(
        self,
        specs: Sequence[KernelSpec],
        toolchains: Sequence[Toolchain],
        *,
        on_done: Callable[[CompileOutcome], None] | None = None,
    ) -> list[CompileOutcome]:
        """Every spec with every toolchain, ``jobs`` at a time; results in (spec, toolchain) order."""
        pairs = [(s, t) for s in specs for t in toolchains]

        def run(pair: tuple[KernelSpec, Toolchain]) -> CompileOutcome:
            outcome = self.compile(*pair)
            if on_done is not None:
                on_done(outcome)
            return outcome

        with ThreadPoolExecutor(max_workers=self.jobs) as executor:
            return list(executor.map(run, pairs))


def _frontend_from_json(path: Path, record: dict[str, Any]) -> FrontendResult:
    return FrontendResult(
        dir=path,
        kernel_name=record["kernel_name"],
        triton_version=record["triton_version"],
        metadata=record["metadata"],
        placeholder_imports=tuple(record.get("placeholder_imports", ())),
    )


def _cubin_from_json(path: Path, record: dict[str, Any]) -> AssembledCubin:
    lowered = record.get("lowered_ptx_version")
    return AssembledCubin(
        dir=path,
        ptxas_version=record["ptxas_version"],
        lowered_ptx_version=(lowered[0], lowered[1]) if lowered else None,
    )
