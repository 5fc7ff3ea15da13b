"""Compile jobs on a remote executor (``--cluster``): the frontend on the cluster, the rest here.

Why only the frontend goes out: it is Triton's whole pipeline, seconds per kernel; the assembler stage
(a ptxas run for toolchains with another ptxas or options, milliseconds) and the analysis need this
machine's files anyway. The driver dedupes by the frontend cache key before anything is sent: a key
already in this machine's cache is not sent, and pairs that share a key (two toolchains with one
Triton build) send one job, so the same spec is never compiled twice in the cluster. A node compiles
into its own content-addressed cache (a second request for a key it holds compiles nothing) and
returns the entry's files through Ray's object store; the driver publishes them under the same key
in its cache as each job finishes, so an interrupted sweep keeps what finished, as locally. With
``KTRIAGE_CLUSTER_SHARED_CACHE=1`` the driver's cache directory is on storage every node mounts at
the same path: nodes compile straight into it and return no bytes. Each node builds a toolchain once,
under the toolchain manager's file lock (``ensure_toolchain``), and only its Triton build
(:func:`frontend_toolchain`): the ptxas stage is this machine's. A node that cannot build it raises
``NodeUnfit``: the executor sends the job to another node.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ktriage.compile.compiler import CompileFailure, CompileOutcome, Compiler
from ktriage.errors import CompileError, ToolchainError
from ktriage.execute.base import Executor, Job, JobResult, NodeUnfit
from ktriage.schema.jsontypes import JSONObject
from ktriage.spec.model import KernelSpec
from ktriage.toolchain.manager import Toolchain

SHARED_CACHE_ENV = "KTRIAGE_CLUSTER_SHARED_CACHE"
_NODE_COMPILERS: dict[str, Compiler] = {}
_NODE_LOCK = threading.Lock()


def node_compiler(cache_dir: str | None) -> Compiler:
    """One compiler per cache dir per node process: its Triton worker stays warm across jobs."""
    key = cache_dir or ""
    with _NODE_LOCK:
        if key not in _NODE_COMPILERS:
            _NODE_COMPILERS[key] = Compiler(jobs=1, cache_dir=Path(cache_dir) if cache_dir else None)
        return _NODE_COMPILERS[key]


def frontend_job(spec: KernelSpec, toolchain_spec: str, shared_cache: str | None) -> JSONObject:
    """Runs on a node: the frontend of ``spec`` with the node's build of ``toolchain_spec``.

    Returns ``{"ok", "compiled", "files" | "stage", "kind", "message"}``; files as ``{relpath: bytes}``
    unless the cache is shared."""
    from ktriage.toolchain.manager import ensure_toolchain

    compiler = node_compiler(shared_cache)
    try:
        toolchain = ensure_toolchain(toolchain_spec)  # built once per node, under the manager's file lock
    except ToolchainError as exc:
        # The driver built this toolchain, so it exists: this node cannot build it (no package index or
        # network here, a full disk). Another node may compile the cell (the executor sends it there).
        # The toolchain's own fix ("pick an existing version, e.g. triton==3.4.0") was wrong here.
        why = " ".join(line.strip() for line in exc.problem.splitlines() if line.strip())
        raise NodeUnfit(
            f"cannot build the toolchain {toolchain_spec} here: {why[:300]}",
            f"make `ktriage toolchain add '{toolchain_spec}'` work on that node (its package index, network, "
            "disk; KTRIAGE_HOME), or start the cluster without it (docs/cluster.md)",
        ) from None
    before = compiler.frontend_compiles
    front = compiler.frontend(spec, toolchain)
    compiled = compiler.frontend_compiles - before
    if isinstance(front, CompileFailure):
        return {"ok": False, "compiled": compiled, "stage": front.stage, "kind": front.kind, "message": front.message}
    files = (
        {}
        if shared_cache
        else {p.relative_to(front.dir).as_posix(): p.read_bytes() for p in sorted(front.dir.rglob("*")) if p.is_file()}
    )
    return {"ok": True, "compiled": compiled, "files": files}


def frontend_toolchain(toolchain: Toolchain) -> str:
    """The toolchain a node needs for a frontend job: the Triton build alone. The frontend is the same for
    every ptxas (its key names the Triton build only) and the ptxas stage runs here, so a node has no use
    for the toolchain's ptxas; sent the whole spec, a node that could not fetch its ptxas release (or
    lacked the local ptxas path) was unfit for cells it could compile."""
    return str(replace(toolchain.spec, ptxas_version=None, ptxas_path=None, ptxas_options=()))


def publish_frontend(compiler: Compiler, key: str, files: dict[str, bytes]) -> None:
    """Write a node's frontend entry under ``key`` in this machine's cache, sealed like a local one
    (the cache's own manifest and fsyncs, ktriage.compile.cache); an entry already there is kept.
    The node's manifest and sidecars are not copied: the manifest is rewritten here, sidecars are
    recomputed from the verified files."""
    from ktriage.compile.cache import MANIFEST, is_sidecar

    if not files or compiler.store.read("frontend", key) is not None:
        return
    tmp = compiler.store.temp_dir("frontend", key)
    try:
        for rel, data in files.items():
            name = rel.rsplit("/", 1)[-1]
            if rel == MANIFEST or is_sidecar(name):
                continue
            out = tmp / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(data)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    compiler.store.publish("frontend", key, tmp)


def compile_many_remote(
    compiler: Compiler,
    executor: Executor,
    specs: Sequence[KernelSpec],
    toolchains: Sequence[Toolchain],
    *,
    on_done: Callable[[CompileOutcome], None] | None = None,
) -> list[CompileOutcome]:
    """``Compiler.compile_many`` with the frontend compiles on ``executor``; same results, same order."""
    asked = [(s, t) for s in specs for t in toolchains]
    # A spec written by values is first specialized by each toolchain's JIT, here (one cheap worker
    # request, no compile), so that the node compiles, and the key names, that toolchain's kernel.
    decided = [compiler.resolve(s, t) for s, t in asked]
    pairs = [(d if isinstance(d, KernelSpec) else s, t) for d, (s, t) in zip(decided, asked)]
    keys = [compiler.frontend_key(s, t) for s, t in pairs]
    shared = str(compiler.cache) if os.environ.get(SHARED_CACHE_ENV, "").strip() in ("1", "true", "yes") else None
    outcomes: list[CompileOutcome | None] = [None] * len(pairs)
    by_key: dict[str, list[int]] = {}
    for i, (key, d) in enumerate(zip(keys, decided)):
        if isinstance(d, CompileFailure):
            outcomes[i] = d
            continue
        by_key.setdefault(key, []).append(i)
    lock = threading.Lock()
    if on_done is not None:
        for outcome in outcomes:
            if outcome is not None:
                on_done(outcome)

    def finish(i: int, outcome: CompileOutcome) -> None:
        with lock:
            outcomes[i] = outcome
            if on_done is not None:
                on_done(outcome)

    jobs: list[Job[JSONObject]] = []
    for key, idx in by_key.items():
        if compiler.store.read("frontend", key) is not None:
            for i in idx:
                finish(i, compiler.compile(*pairs[i]))  # a cache hit here: nothing to send
            continue
        spec, tc = pairs[idx[0]]
        needs = frontend_toolchain(tc)  # a node that cannot build it is sent no more of its cells
        args = (spec, needs, shared)
        jobs.append(Job("compile", frontend_job, args, key=key, label=f"compile {spec.name}", needs=needs))

    def landed(j: int, result: JobResult[Any]) -> None:
        key = jobs[j].key
        assert key is not None
        value = result.value if result.ok else None
        if value is not None and value.get("ok"):
            for _ in range(int(value.get("compiled", 0))):
                compiler._count_compile()
            try:
                publish_frontend(compiler, key, value.get("files") or {})
            except (OSError, CompileError) as exc:
                value = {
                    "ok": False,
                    "stage": "frontend",
                    "kind": "cache",
                    "message": f"cannot write the node's artifact here: {exc}",
                }
        for i in by_key[key]:
            spec, tc = pairs[i]
            if value is not None and value.get("ok"):
                finish(i, compiler.compile(spec, tc))  # the frontend is cached now; assemble + ABI here
            elif value is not None:
                finish(i, CompileFailure(spec, tc, str(value["stage"]), str(value["kind"]), str(value["message"])))
            else:
                finish(i, CompileFailure(spec, tc, "frontend", "cluster", result.error))

    executor.run(jobs, on_done=landed)
    return [o for o in outcomes if o is not None]


class ClusterCompiler(Compiler):
    """A :class:`Compiler` whose ``compile_many`` sends the frontend compiles to a remote executor
    (``--cluster``: :func:`compile_many_remote`); with a local executor or none, the plain compiler.

    Why a subclass and not a branch in ``Compiler.compile_many``: this module drives a Compiler (the
    node's, the driver's cache), so the compiler importing it back made the two modules one cycle.
    Whoever takes an executor builds this class; a plain Compiler refuses a remote executor."""

    sends_remote = True

    def compile_many(
        self,
        specs: Sequence[KernelSpec],
        toolchains: Sequence[Toolchain],
        *,
        on_done: Callable[[CompileOutcome], None] | None = None,
    ) -> list[CompileOutcome]:
        if self.executor is not None and self.executor.remote:
            return compile_many_remote(self, self.executor, specs, toolchains, on_done=on_done)
        return super().compile_many(specs, toolchains, on_done=on_done)
