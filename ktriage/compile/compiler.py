"""Compile kernel specs with toolchains into a content-addressed artifact cache.

Two stages with two caches, because they depend on different things:
- the *frontend* (Triton's whole pipeline, TTIR -> ... -> PTX -> cubin) depends on the spec and the
  Triton build; it runs in a worker inside the toolchain's virtualenv, exactly as the JIT compiles,
  and keeps Triton's own cubin with the ptxas command line and ``-v`` log of the run that made it;
- the *assembler* stage (ptxas: PTX -> cubin) runs only where ktriage itself changes the assembler:
  a toolchain with another ptxas or extra options, and explain's cross matrix (each PTX through each
  ptxas). It replays the command line Triton recorded for that spec, binary swapped, options added.
A native toolchain (bundled ptxas, no extra options) therefore gets the JIT's cubin byte for byte;
nothing about ptxas choice, options or PTX ``.version`` is restated here. Splitting the stages makes a
cross-matrix cell cost one ptxas run and a ptxas-only bisect recompile nothing in Triton. Every result
is written to the cache as soon as it exists, so an interrupted sweep keeps what it finished.

The cache's on-disk format (manifests, verification on read, quarantine, fsync before rename) is
``ktriage.compile.cache``'s (docs/cache.md); this module only decides keys and what goes into an
entry. Within one compiler each key is compiled or read once: concurrent callers of one key wait for
the first (``InFlight``) and share its result.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import msgspec
from packaging.version import InvalidVersion, Version

from ktriage.arch import parse_arch
from ktriage.compile.abi import AbiParam, launch_abi
from ktriage.compile.cache import CACHE_FORMAT, SIDECAR_PREFIX, ArtifactCache, Repair, read_sidecar, write_sidecar
from ktriage.compile.pool import InFlight, WorkerPool, import_timeout_s
from ktriage.errors import CompileError, KtriageError
from ktriage.execute.base import Executor
from ktriage.home import home_subdir
from ktriage.insitu.worker import PROTOCOL_VERSION, no_descriptor_padding
from ktriage.schema.compile_cache import CubinRecord, FrontendRecord
from ktriage.schema.jsontypes import JSONObject, as_json_object
from ktriage.spec.launch import DESCRIPTOR_PADDING
from ktriage.spec.model import KernelSpec
from ktriage.toolchain.frontend import triton_options
from ktriage.toolchain.manager import Assembler, Toolchain
from ktriage.toolchain.ptxas import assemble

# Pure-python helpers that kernel libraries import at module level (liger-kernel: packaging;
# flash-linear-attention: einops) and that a toolchain's bare virtualenv lacks. Installed once next
# to the kernel packages.
SUPPORT_PACKAGES = ("packaging==24.2", "einops==0.8.1")


@dataclass(frozen=True)
class FrontendResult:
    """Triton's output for one (spec, Triton build): IR files, metadata, Triton's own cubin."""

    dir: Path
    kernel_name: str
    triton_version: str
    metadata: JSONObject  # Triton's metadata JSON as Triton wrote it (read by name across ktriage)
    placeholder_imports: tuple[str, ...] = ()
    triton_reexports: tuple[str, ...] = ()
    """Library names bound to the toolchain's own Triton module (``vllm.triton_utils.tl -> triton.language``:
    insitu/reexports.py), where the kernel was compiled from its own source."""
    ptxas_argv: tuple[str, ...] = ()
    """The ptxas command line Triton ran for this spec (its binary, options, ``--gpu-name``)."""
    ast_source: JSONObject = field(default_factory=dict)
    """What the worker passed to ``triton.compile``: signature, constants, attributes (for comparisons)."""

    def text(self, stage: str) -> str:
        """One IR stage as text: ``ttir``, ``ttgir``, ``llir`` or ``ptx``."""
        return (self.dir / f"kernel.{stage}").read_text()

    @property
    def ptx_path(self) -> Path:
        return self.dir / "kernel.ptx"

    @property
    def triton_cubin_path(self) -> Path:
        """Triton's own cubin: the one the JIT would load."""
        return self.dir / "kernel.triton.cubin"


@dataclass(frozen=True)
class AssembledCubin:
    """ptxas's output for one PTX text: the cubin and the ``-v`` log."""

    dir: Path
    ptxas_version: str
    lowered_ptx_version: tuple[str, str] | None
    command: tuple[str, ...] = ()
    """The ptxas command line that made the cubin (temporary file names as they were)."""
    cubin_file: str = "kernel.cubin"
    native: bool = False
    """True: Triton's own cubin (the frontend's output), not re-assembled by ktriage."""

    @property
    def cubin_path(self) -> Path:
        return self.dir / self.cubin_file

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


def _refused_padding(spec: KernelSpec, toolchain: Toolchain) -> CompileFailure | None:
    """A recorded launch's descriptor with NaN padding (``meta["descriptor_padding"]``) refused by a Triton
    before 3.5, whose ``TensorDescriptor`` has no padding (the program could not make that launch there), as
    the same launch by values is refused in that Triton's worker (insitu/jitrun.descriptor). Here, per input,
    before the compile that its kernel's other inputs share: the padding is no part of the spec's key."""
    paddings = spec.meta.get(DESCRIPTOR_PADDING)
    if not isinstance(paddings, Mapping) or not paddings:
        return None
    try:
        if Version(toolchain.triton_version).release[:2] >= (3, 5):
            return None
    except InvalidVersion:
        return None  # a build that names no release: its compile decides
    name, padding = next(iter(paddings.items()))
    refusal = no_descriptor_padding(str(name), str(padding), toolchain.triton_version)
    return CompileFailure(spec, toolchain, "frontend", refusal.kind, str(refusal))


def _sha(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def _insitu_fingerprint() -> str:
    """A hash of the code that runs inside the toolchains (ktriage/insitu/*.py): a frontend cache entry
    made by other worker code (how sources are built, what is recorded) is never served."""
    h = hashlib.sha256()
    for path in sorted((Path(__file__).resolve().parent.parent / "insitu").glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


INSITU_FINGERPRINT = _insitu_fingerprint()


def source_location(spec: KernelSpec) -> str:
    """Where the compile worker reads ``spec``'s kernel from, as Triton's line info names it: Triton
    writes the file's path into the PTX's ``.file`` table and the cubin's line table, so the same kernel
    text at two paths (two clones sharing a home, a moved project) compiles to two artifacts, each
    naming its own file, as the JIT at that path would. The path is absolute and not resolved (Triton
    names the file as it was imported, links kept); one under the ktriage home (a kernel package, a
    recorded workload's snapshot) is named relative to the home, as the toolchain's own files in that
    table are: every node of a cluster computes the key the driver does."""
    from ktriage.home import HOME_VAR, ktriage_home
    from ktriage.spec.source import resolve_source_file

    path = Path(os.path.abspath(resolve_source_file(spec.source, spec.package)))
    home = ktriage_home()
    if path.is_relative_to(home):
        return f"{HOME_VAR}/{path.relative_to(home).as_posix()}"
    return str(path)


def _frontend_identity(toolchain: Toolchain) -> str:
    """What makes two toolchains produce the same PTX: the Triton build, not the ptxas."""
    identity = getattr(toolchain, "frontend_id", None)
    return str(identity) if identity else f"{toolchain.triton_version}|{toolchain.python}"


class Compiler:
    """Compiles specs with toolchains, in parallel, through the artifact cache.

    On this machine: a remote executor (``--cluster``) needs :class:`ktriage.compile.remote.ClusterCompiler`,
    which builds on this class (so this module never imports the cluster path back)."""

    sends_remote = False  # True in ClusterCompiler: its compile_many sends frontend compiles to a remote executor

    def __init__(
        self,
        jobs: int | None = None,
        cache_dir: Path | None = None,
        timeout_s: float = 600.0,
        executor: Executor | None = None,
    ) -> None:
        self.jobs = jobs or max(1, os.cpu_count() or 1)
        # None or a local executor: this process's worker pool. A remote one (``--cluster``): only
        # ClusterCompiler sends to it; a plain Compiler would compile here and ignore it, silently.
        if executor is not None and executor.remote and not self.sends_remote:
            raise CompileError(
                "a plain Compiler cannot send compiles to a remote executor",
                "build ktriage.compile.remote.ClusterCompiler(executor=...) for --cluster",
            )
        self.executor = executor
        try:
            self.cache = cache_dir or home_subdir("artifacts")
        except OSError as exc:
            raise CompileError(
                f"cannot create the artifact cache under the ktriage home ({exc.strerror or exc})",
                "make the ktriage home writable or point KTRIAGE_HOME at a writable folder",
            ) from exc
        self.store = ArtifactCache(self.cache)
        # Within one run each key is compiled (or read and verified) once, whichever thread asks first.
        self._inflight = InFlight()
        self._front_memo: dict[str, FrontendResult | CompileFailure] = {}
        self._cubin_memo: dict[str, AssembledCubin | KtriageError] = {}
        self._abi_memo: dict[str, tuple[AbiParam, ...]] = {}
        self._resolve_memo: dict[str, JSONObject | CompileFailure] = {}  # the JIT's reply per launch
        # The frontend keys compile_many computed to order its pairs, for their compiles: a key reads the
        # kernel's file and finds its package (a third of a warm compile). Only for the call's duration:
        # a later call may see an edited kernel. Held with the (spec, toolchain) it was computed for.
        self._ordered_keys: dict[tuple[int, int], tuple[KernelSpec, Toolchain, str]] = {}
        self.timeout_s = timeout_s
        self.import_timeout_s = import_timeout_s()
        self._pool = WorkerPool(self.jobs)
        # Frontend compiles actually run (cache misses), in total and per thread: bisect reports its
        # cost in compiles and charges each candidate of a parallel round its own.
        self.frontend_compiles = 0
        self._count_lock = threading.Lock()
        self._local = threading.local()

    @property
    def cache_repairs(self) -> list[Repair]:
        """Damaged cache entries found (and quarantined, then recompiled) by this compiler."""
        return list(self.store.repairs)

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

    def kernel_sys_path(self, spec: KernelSpec, toolchain: Toolchain) -> list[str]:
        """The folders the compile worker puts on sys.path for ``spec``'s kernel package (or source
        snapshot) and the helpers kernel libraries import; installs what is missing (SpecError when
        it cannot). A ``triton=host`` interpreter is the environment the program ran in, and a GPU
        host often has no network: the helpers are its own (one it lacks, the program did not import;
        a kernel module that does gets a compile failure naming the import), and the pinned kernel
        package is installed only when the interpreter has not that version."""
        if not spec.package:
            return []
        from ktriage.spec.packages import ensure_package, provided_by

        wanted = [spec.package]
        if toolchain.host_sha256:
            from ktriage.toolchain.frontend import host_packages

            if provided_by(spec.package, host_packages(toolchain.python)):
                wanted = []
        else:
            wanted += SUPPORT_PACKAGES
        return [str(ensure_package(req)) for req in wanted]

    def frontend_key(self, spec: KernelSpec, toolchain: Toolchain) -> str:
        """The frontend cache key of a (spec, toolchain): the same on every node with that Triton build.
        The kernel's text and fields (``spec.key()``) and its file's path (:func:`source_location`: the
        PTX and cubin name it)."""
        return _sha(
            "frontend",
            str(PROTOCOL_VERSION),
            INSITU_FINGERPRINT,
            f"cache={CACHE_FORMAT}",
            spec.key(),
            source_location(spec),
            _frontend_identity(toolchain),
        )

    def _order_key(self, spec: KernelSpec, toolchain: Toolchain) -> str:
        """The frontend key for ordering only: a spec whose key cannot be computed (its package or
        source is missing) counts as unique here; its compile reports the problem."""
        try:
            key = self.frontend_key(spec, toolchain)
        except (KtriageError, OSError):
            return f"unkeyed-{id(spec)}-{id(toolchain)}"
        if spec.launch is None:  # compiled as it is (a spec by values is keyed once the JIT resolved it)
            self._ordered_keys[(id(spec), id(toolchain))] = (spec, toolchain, key)
        return key

    def resolve(self, spec: KernelSpec, toolchain: Toolchain) -> KernelSpec | CompileFailure:
        """A spec written by values as this toolchain's own JIT specializes it (its decorators, binder
        and rules run in the toolchain's worker: insitu/launch_spec.py, spec/values.py); any other
        spec as it is. Asked once per (launch, Triton build) in a compiler."""
        if spec.launch is None:
            return _refused_padding(spec, toolchain) or spec
        from ktriage.spec.values import resolve_request, resolved_spec

        try:
            # per file, not only per text: the JIT decides in the module at that path (its decorators and
            # heuristics run there); each spec keeps its own source, name and meta (resolved_spec below)
            key = _sha("resolve", INSITU_FINGERPRINT, spec.key(), source_location(spec), _frontend_identity(toolchain))
            sys_path = self.kernel_sys_path(spec, toolchain)
            prime = toolchain.facts().order_sensitive  # the worker goes on to compile: primed as for those
        except KtriageError as exc:
            return CompileFailure(spec, toolchain, "frontend", "package", str(exc))
        with self._inflight.hold(key):
            memo = self._resolve_memo.get(key)
            if memo is None:
                worker = self._pool.acquire(toolchain.python, tuple(sys_path), prime=prime)
                try:
                    reply = worker.request(
                        {"id": key, "resolve": resolve_request(spec), "sys_path": sys_path, "target": spec.target},
                        timeout=self.timeout_s,
                        import_timeout=self.import_timeout_s,
                    )
                finally:
                    self._pool.release(toolchain.python, worker, tuple(sys_path))
                memo = (
                    CompileFailure(
                        spec,
                        toolchain,
                        "frontend",
                        reply.kind,
                        f"the launch by values in Triton {toolchain.triton_version}: {reply.error}",
                    )
                    if not reply.ok
                    else reply.data
                )
                self._resolve_memo[key] = memo
        if isinstance(memo, CompileFailure):
            return replace(memo, spec=spec, toolchain=toolchain)
        # the JIT's decision is shared; the name, labels and meta are this spec's own (two inputs with one
        # launch, e.g. a sweep whose sizes round to the same specialization, keep their own labels)
        return resolved_spec(spec, memo)

    def decide(self, spec: KernelSpec, toolchain: Toolchain) -> KernelSpec:
        """A spec by values whose fields are what ``toolchain``'s JIT decides for its launch, the launch
        kept (spec/values.decided_spec: what a tuner's or a fix's change is measured against); any
        other spec, or one whose launch fails here, as it is (its compile reports the failure)."""
        if spec.launch is None:
            return spec
        from ktriage.spec.values import decided_spec

        resolved = self.resolve(spec, toolchain)
        return spec if isinstance(resolved, CompileFailure) else decided_spec(spec, resolved)

    def frontend(self, spec: KernelSpec, toolchain: Toolchain) -> FrontendResult | CompileFailure:
        resolved = self.resolve(spec, toolchain)
        if isinstance(resolved, CompileFailure):
            return resolved
        spec = resolved
        known = self._ordered_keys.get((id(spec), id(toolchain)))
        key = known[2] if known is not None and known[0] is spec and known[1] is toolchain else None
        if key is None:
            key = self.frontend_key(spec, toolchain)
        with self._inflight.hold(key):  # a kernel shared by several inputs compiles once
            memo = self._front_memo.get(key)
            if memo is None:
                memo = self._frontend_locked(key, spec, toolchain)
                self._front_memo[key] = memo
        if isinstance(memo, CompileFailure):
            return replace(memo, spec=spec, toolchain=toolchain)
        return memo

    def _frontend_locked(self, key: str, spec: KernelSpec, toolchain: Toolchain) -> FrontendResult | CompileFailure:
        hit = self.store.read("frontend", key)
        if hit is not None:
            return _frontend_from_json(*hit)
        try:
            sys_path = self.kernel_sys_path(spec, toolchain)
        except KtriageError as exc:
            return CompileFailure(spec, toolchain, "frontend", "package", str(exc))
        try:
            prime = toolchain.facts().order_sensitive
        except KtriageError as exc:
            return CompileFailure(spec, toolchain, "frontend", "toolchain", str(exc))
        tmp = self.store.temp_dir("frontend", key, create=False)
        self._count_compile()
        worker = self._pool.acquire(toolchain.python, tuple(sys_path), prime=prime)
        try:
            reply = worker.request(
                {"id": key, "spec": spec.to_json(), "sys_path": sys_path, "out_dir": str(tmp)},
                timeout=self.timeout_s,
                import_timeout=self.import_timeout_s,
            )
        finally:
            self._pool.release(toolchain.python, worker, tuple(sys_path))
        if not reply.ok:
            shutil.rmtree(tmp, ignore_errors=True)
            return CompileFailure(spec, toolchain, "frontend", reply.kind, reply.error)
        try:
            data = msgspec.convert(reply.data, FrontendReply)
        except msgspec.ValidationError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            return CompileFailure(spec, toolchain, "frontend", "protocol", f"the compile worker's reply: {exc}")
        runs = data.ptxas_runs
        metadata = as_json_object(data.metadata)
        record: JSONObject = {
            "cache_format": CACHE_FORMAT,
            "kernel_name": metadata.get("name", ""),
            "triton_version": data.triton_version,
            "metadata": metadata,
            "placeholder_imports": data.placeholder_imports,
            "triton_reexports": data.triton_reexports,
            "ptxas_argv": runs[-1].argv if runs else [],
            "ast_source": as_json_object(data.ast_source or {}),
            "spec": spec.to_json(),
        }
        try:
            (tmp / "ptxas.log").write_text(runs[-1].log if runs else "")
            (tmp / "result.json").write_text(json.dumps(record, indent=1))
            final = self.store.publish("frontend", key, tmp)
        except (KtriageError, OSError) as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            return CompileFailure(spec, toolchain, "frontend", "cache", str(exc))
        hit = self.store.read("frontend", key)
        return _frontend_from_json(*hit) if hit is not None else _frontend_from_json(final, record)

    # -- assembler ------------------------------------------------------------------------------

    def assemble(self, ptx: str, toolchain: Toolchain, target: str, template: Sequence[str]) -> AssembledCubin:
        """Assemble PTX with ``toolchain``'s ptxas the way Triton would: ``template`` is the command line
        Triton recorded for the spec (its options, ``--fmad``, ``--gpu-name``), the binary is swapped
        for the toolchain's and its extra options are added. Raises KtriageError on failure."""
        arch = parse_arch(target)
        assembler = toolchain.assembler(arch.cc)
        if not template:
            raise CompileError(
                f"no ptxas command line was recorded for this kernel with Triton {toolchain.triton_version}",
                "clear the artifact cache entry (it predates ktriage's recording) and compile again",
            )
        gpu_name = next((w.split("=", 1)[1] for w in template if w.startswith("--gpu-name=")), arch.ptxas_name)
        options = (*triton_options(template), *assembler.extra_options)
        key = _sha(
            "cubin",
            f"cache={CACHE_FORMAT}",
            hashlib.sha256(ptx.encode()).hexdigest(),
            str(assembler.ptxas),
            assembler.version_text,
            " ".join(options),
            gpu_name,
        )
        with self._inflight.hold(key):
            memo = self._cubin_memo.get(key)
            if memo is None:
                try:
                    memo = self._assemble_locked(key, ptx, assembler, gpu_name, options)
                except KtriageError as exc:  # ptxas failed: the same PTX fails the same way
                    memo = exc
                self._cubin_memo[key] = memo
        if isinstance(memo, KtriageError):
            raise memo
        return memo

    def _assemble_locked(
        self, key: str, ptx: str, assembler: Assembler, gpu_name: str, options: tuple[str, ...]
    ) -> AssembledCubin:
        hit = self.store.read("cubin", key)
        if hit is not None:
            return _cubin_from_json(*hit)
        self.store.check_writable("cubin")
        result = assemble(ptx, assembler.ptxas, gpu_name, options)
        tmp = self.store.temp_dir("cubin", key)
        (tmp / "kernel.cubin").write_bytes(result.cubin)
        (tmp / "ptxas.log").write_text(result.log)
        record: JSONObject = {
            "cache_format": CACHE_FORMAT,
            "ptxas": str(assembler.ptxas),
            "ptxas_version": assembler.version,
            "options": list(options),
            "gpu_name": gpu_name,
            "command": list(result.command),
            "lowered_ptx_version": list(result.lowered_ptx_version) if result.lowered_ptx_version else None,
        }
        (tmp / "result.json").write_text(json.dumps(record, indent=1))
        final = self.store.publish("cubin", key, tmp)
        hit = self.store.read("cubin", key)
        return _cubin_from_json(*hit) if hit is not None else _cubin_from_json(final, record)

    @staticmethod
    def native_cubin(front: FrontendResult, assembler: Assembler) -> AssembledCubin:
        """Triton's own cubin of a frontend result, as the artifact of a native toolchain."""
        return AssembledCubin(
            front.dir,
            assembler.version,
            None,
            command=front.ptxas_argv,
            cubin_file=front.triton_cubin_path.name,
            native=True,
        )

    # -- both -----------------------------------------------------------------------------------

    def compile(self, spec: KernelSpec, toolchain: Toolchain) -> CompileOutcome:
        """Frontend + assemble for one pair; failures come back as CompileFailure, never raised. A spec
        written by values is compiled as the toolchain's JIT specializes it: the Artifact carries that
        spec (``resolve``)."""
        resolved = self.resolve(spec, toolchain)
        if isinstance(resolved, CompileFailure):
            return resolved
        spec = resolved
        front = self.frontend(spec, toolchain)
        if isinstance(front, CompileFailure):
            return front
        try:
            assembler = toolchain.assembler(parse_arch(spec.target).cc)
            if assembler.native:
                cubin = self.native_cubin(front, assembler)
            else:
                cubin = self.assemble(front.text("ptx"), toolchain, spec.target, front.ptxas_argv)
            abi = self._abi(spec, front)
        except KtriageError as exc:
            return CompileFailure(spec, toolchain, "assemble", "ptxas", str(exc))
        return Artifact(spec, toolchain, front, cubin, abi)

    def _abi(self, spec: KernelSpec, front: FrontendResult) -> tuple[AbiParam, ...]:
        """The launch ABI of a frontend result, parsed once per entry: the inputs of a sweep that share
        a kernel share it (the signature and ``equal_to_1`` it depends on are part of the entry's key),
        and parsing the PTX for every input was most of a warm run."""
        key = str(front.dir)
        abi = self._abi_memo.get(key)
        if abi is None:
            abi = cached_abi(spec, front)
            self._abi_memo[key] = abi
        return abi

    def compile_many(
        self,
        specs: Sequence[KernelSpec],
        toolchains: Sequence[Toolchain],
        *,
        on_done: Callable[[CompileOutcome], None] | None = None,
    ) -> list[CompileOutcome]:
        """Every spec with every toolchain, ``jobs`` at a time; results in (spec, toolchain) order."""
        pairs = [(s, t) for s in specs for t in toolchains]

        def run(index: int) -> CompileOutcome:
            outcome = self.compile(*pairs[index])
            if on_done is not None:
                on_done(outcome)
            return outcome

        pending = unique_first(pairs, self._order_key)
        try:
            return self._compile_pending(pairs, pending, run)
        finally:
            self._ordered_keys.clear()

    def _compile_pending(
        self,
        pairs: Sequence[tuple[KernelSpec, Toolchain]],
        pending: list[int],
        run: Callable[[int], CompileOutcome],
    ) -> list[CompileOutcome]:
        """Compile ``pairs`` in ``pending``'s order, ``jobs`` threads sharing each toolchain's workers."""
        lanes = [str(t.python) for _s, t in pairs]
        share = max(1, self.jobs // max(1, len(set(lanes))))
        busy: dict[str, int] = {}
        lock = threading.Lock()
        results: dict[int, CompileOutcome] = {}

        def take() -> int | None:
            with lock:
                index = pick_next(pending, lanes, busy, share)
                if index is not None:
                    busy[lanes[index]] = busy.get(lanes[index], 0) + 1
                return index

        def lane() -> None:
            while (index := take()) is not None:
                try:
                    results[index] = run(index)
                finally:
                    with lock:
                        busy[lanes[index]] -= 1

        with ThreadPoolExecutor(max_workers=self.jobs) as executor:
            for future in [executor.submit(lane) for _ in range(min(self.jobs, len(pairs)))]:
                future.result()
        return [results[i] for i in range(len(pairs))]


ABI_SCHEMA = 1


def _abi_sidecar_name(spec: KernelSpec) -> str:
    """``resources-abi-<hash>.json``: under the sidecar prefix, so that a ktriage of before this
    sidecar, sharing the home, verifies it as a sidecar instead of quarantining the entry for a file
    its manifest does not list."""
    ident = json.dumps([ABI_SCHEMA, list(spec.signature.items()), sorted(spec.equal_to_1)])
    return f"{SIDECAR_PREFIX}abi-{hashlib.sha256(ident.encode()).hexdigest()[:16]}.json"


def _abi_from_json(data: object) -> tuple[AbiParam, ...] | None:
    """The ABI a sidecar holds, or None when it is not a list of parameters (then it is recomputed)."""
    if not isinstance(data, list):
        return None
    try:
        return tuple(AbiParam(**item) for item in data)
    except TypeError:
        return None


def cached_abi(spec: KernelSpec, front: FrontendResult) -> tuple[AbiParam, ...]:
    """The launch ABI of a frontend entry, kept next to it as a self-hashed sidecar
    (``compile/cache.py``): a warm run reads a few hundred bytes instead of parsing the PTX. A damaged
    sidecar is quarantined by ``read_sidecar`` and the ABI recomputed from the verified PTX. Raises
    CompileError when the PTX does not match the signature (nothing is stored then)."""
    name = _abi_sidecar_name(spec)
    abi = _abi_from_json(read_sidecar(front.dir, name))
    if abi is not None:
        return abi
    abi = tuple(launch_abi(spec.signature, tuple(spec.equal_to_1), front.text("ptx"), front.metadata))
    write_sidecar(front.dir, name, [p.to_json() for p in abi])
    return abi


def unique_first(
    pairs: Sequence[tuple[KernelSpec, Toolchain]], key: Callable[[KernelSpec, Toolchain], str]
) -> list[int]:
    """The order to compile ``pairs`` in: the first pair of every frontend key, then the pairs that
    share a key with an earlier one (they wait for its entry). Many inputs of a sweep compile to one
    kernel (layer_norm's 30 inputs are 5 kernels); in input order a thread would pick up the second
    input of a kernel and wait for the first instead of compiling the next kernel."""
    seen: set[str] = set()
    first: list[int] = []
    rest: list[int] = []
    for i, (spec, toolchain) in enumerate(pairs):
        k = key(spec, toolchain)
        (rest if k in seen else first).append(i)
        seen.add(k)
    return first + rest


def pick_next(pending: list[int], lanes: Sequence[str], busy: dict[str, int], share: int) -> int | None:
    """Remove and return the next pair to compile: the first pending one whose toolchain has fewer
    than ``share`` threads on it, else the first pending one. Each toolchain's worker compiles one
    kernel at a time; a thread that took the next pair in plain order while another thread held that
    toolchain's only worker started a second worker for it (another Triton import, about a second, and
    its priming compile) while the other toolchain's kernels waited. Once a toolchain has nothing
    left, its threads help the others (a second worker then pays for itself)."""
    if not pending:
        return None
    pos = next((k for k, i in enumerate(pending) if busy.get(lanes[i], 0) < share), 0)
    return pending.pop(pos)


class PtxasRun(msgspec.Struct):
    """One ptxas run the frontend saw Triton make (insitu/worker.py)."""

    argv: list[str]
    log: str = ""


class FrontendReply(msgspec.Struct):
    """The compile worker's reply to a frontend request (insitu/server.py), the fields read here."""

    triton_version: str
    metadata: dict[str, object]
    placeholder_imports: list[str] = []
    triton_reexports: list[str] = []
    ptxas_runs: list[PtxasRun] = []
    ast_source: dict[str, object] | None = None


def _frontend_from_json(path: Path, record: JSONObject) -> FrontendResult:
    rec = msgspec.convert(record, FrontendRecord)
    return FrontendResult(
        dir=path,
        kernel_name=rec.kernel_name,
        triton_version=rec.triton_version,
        metadata=as_json_object(rec.metadata),
        placeholder_imports=tuple(rec.placeholder_imports),
        triton_reexports=tuple(rec.triton_reexports),
        ptxas_argv=tuple(rec.ptxas_argv),
        ast_source=as_json_object(rec.ast_source),
    )


def _cubin_from_json(path: Path, record: JSONObject) -> AssembledCubin:
    rec = msgspec.convert(record, CubinRecord)
    return AssembledCubin(
        dir=path,
        ptxas_version=rec.ptxas_version,
        lowered_ptx_version=rec.lowered_ptx_version or None,
        command=tuple(rec.command),
    )
