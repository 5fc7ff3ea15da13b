"""Code that runs INSIDE a toolchain's interpreter (stdlib + that toolchain's Triton, never ``ktriage``).

Why a folder of its own: its modules are started as scripts (``python server.py``) by the host,
which puts this folder first on ``sys.path``; only these modules may be importable that way, so
nothing else of ktriage can shadow a kernel library's module. The host imports them as
``ktriage.insitu.*`` for their constants and, on a GPU host, for in-process compiles.

- ``server``: the compile worker's protocol loop (JSON lines: one request, one reply);
- ``worker``: compile one spec as Triton's JIT compiles it (the server's compile requests, and in process);
- ``fakedriver``: Triton's active driver without a GPU (target, device, stream; no-op load/launch);
- ``ptxas_capture``: the ptxas command lines and logs of Triton's own ``make_cubin``;
- ``jitrun``: drive Triton's real launch path (decorators, binder, compile) for described launches,
  record what the JIT compiled (the JIT-equivalence harness, and recording without a GPU);
- ``launch_spec``: what this Triton's JIT compiles for a launch given by values (spec files by
  values: the worker's ``resolve`` request), stopped before the compile.
"""
