"""The compile worker's protocol: JSON lines on stdin, one reply per request on the real stdout.

Runs INSIDE a toolchain's virtualenv: the host (``ktriage.compile.pool``) starts it as ``python server.py``,
which puts this folder first on ``sys.path``; stdlib + the toolchain's ``triton`` + its sibling modules,
never ``ktriage``. A compile request goes to ``worker.compile_in_process`` (Triton's whole pipeline, as
the JIT compiles); a ``resolve`` request (a launch given by values) to ``launch_spec.resolve``. Why apart
from worker.py: the protocol dispatches to launch_spec, which compiles through worker; with the loop in
worker.py the two imported each other.

Request: {"id": str, "spec": <KernelSpec.to_json()>, "sys_path": [str], "out_dir": str}
Reply:   {"id": str, "ok": true, "files": {"ptx": path, "triton_cubin": path, ...}, "metadata": {...},
          "triton_version": str, "placeholder_imports": [str], "triton_reexports": [str], "ptxas_runs": [{argv, log, returncode}],
          "ast_source": {...}}  or  {"id": str, "ok": false, "kind": str, "error": str}
Progress: {"stage": "imported", "id": str} when the kernel's module is imported (the host bounds the
import by a shorter timeout than the compile). First line: {"hello": PROTOCOL_VERSION, "python", "primed"}.

Environment: ``KTRIAGE_PRIME_COMPILE=1`` makes the worker compile a tiny kernel before its first
request, for Triton versions whose output depends on whether a kernel is the process's first
(``nvptx-short-ptr`` in 3.2 and 3.3, see docs/toolchains.md).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback
from typing import Any, TypedDict

if __package__:  # imported as ktriage.insitu.server (tests)
    from ktriage.insitu import launch_spec, worker
else:  # started as a script inside a toolchain's virtualenv: this folder is sys.path[0]
    import launch_spec  # type: ignore[import-not-found,no-redef]
    import worker  # type: ignore[import-not-found,no-redef]


class CompileRequest(TypedDict, total=False):
    """One request line: a spec to compile into ``out_dir``, or a launch to ``resolve`` (launch_spec.py)."""

    id: str
    out_dir: str
    spec: worker.SpecJSON
    sys_path: list[str]
    target: str
    resolve: launch_spec.ResolveRequest


def handle(request: CompileRequest) -> dict[str, object]:
    """Compile one request and write its files into request['out_dir'] (a ``resolve`` request asks
    what this Triton's JIT compiles for a launch given by values instead: launch_spec.py)."""
    if request.get("resolve") is not None:
        return launch_spec.resolve(request)
    out_dir = request["out_dir"]
    os.makedirs(out_dir, exist_ok=True)
    result = worker.compile_in_process(request["spec"], request.get("sys_path") or [])
    files: dict[str, str] = {}
    for key in ("ttir", "ttgir", "llir", "ptx"):
        if key in result:
            path = os.path.join(out_dir, f"kernel.{key}")
            with open(path, "w") as fh:
                fh.write(result[key])
            files[key] = path
    cubin_path = os.path.join(out_dir, "kernel.triton.cubin")
    with open(cubin_path, "wb") as fh:
        fh.write(result["cubin"])
    files["triton_cubin"] = cubin_path
    return {
        "ok": True,
        "files": files,
        "metadata": result["metadata"],
        "triton_version": result["triton_version"],
        "placeholder_imports": result["placeholder_imports"],
        "triton_reexports": result["triton_reexports"],
        "ptxas_runs": result["ptxas_runs"],
        "ast_source": result["ast_source"],
    }


def serve() -> None:
    """Answer JSON-line requests until stdin closes. Replies go to the real stdout only."""
    reply_stream = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything the compiler prints goes to stderr, never into the protocol
    if "TRITON_CACHE_DIR" not in os.environ:  # the host gives one (and removes it); else our own, removed at exit
        import atexit
        import shutil

        own = tempfile.mkdtemp(prefix="ktriage-triton-cache-")
        atexit.register(shutil.rmtree, own, True)
        os.environ["TRITON_CACHE_DIR"] = own
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"  # every request is compiled by this Triton, never read from its cache
    try:  # before the hello, so that the host's import timeout counts the kernel's module only
        import triton  # noqa: F401
    except Exception:
        pass  # the request says why
    primed: bool | str | None = None
    if os.environ.get("KTRIAGE_PRIME_COMPILE") == "1":
        try:
            worker.prime()
            primed = True
        except Exception as exc:  # the worker still serves; the host sees why in the hello
            primed = f"{type(exc).__name__}: {exc}"
    reply_stream.write(
        json.dumps({"hello": worker.PROTOCOL_VERSION, "python": sys.version.split()[0], "primed": primed}) + "\n"
    )
    reply_stream.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except json.JSONDecodeError as exc:
            reply_stream.write(json.dumps({"ok": False, "kind": "protocol", "error": f"bad request: {exc}"}) + "\n")
            reply_stream.flush()
            continue

        def stage(name: str, rid: Any = request.get("id")) -> None:
            reply_stream.write(json.dumps({"stage": name, "id": rid}) + "\n")
            reply_stream.flush()

        worker.arm_stage(stage)
        try:
            reply = handle(request)
        except worker.WorkerError as exc:
            reply = {"ok": False, "kind": exc.kind, "error": str(exc)}
        except Exception as exc:  # never let one kernel kill the worker
            reply = {"ok": False, "kind": "internal", "error": f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"}
        worker.arm_stage(None)
        reply["id"] = request.get("id")
        reply_stream.write(json.dumps(reply) + "\n")
        reply_stream.flush()


if __name__ == "__main__":
    serve()
