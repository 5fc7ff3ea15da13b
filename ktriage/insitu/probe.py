"""Ask a toolchain's Triton, by compiling, how it builds cubins: run as ``python probe.py 80 90 100``.

For each compute capability it compiles the priming kernel twice in this fresh process and prints
JSON ``{"order_sensitive": bool, "archs": {cc: {...}}}``: per arch the ptxas command line Triton ran
(which binary it picks for the arch, which options it passes), that binary's ``--version`` text and
the PTX ``.version`` it emitted; ``order_sensitive`` says whether the process's second compile of the
same kernel differs from its first (the output then depends on what the process compiled before, as
in Triton 3.2/3.3; only the first pair of a process can show it). Nothing here is a table of ours:
every fact is read from what this Triton did. An arch this Triton cannot build for gets ``{"error"}``.

Runs inside a toolchain's interpreter: stdlib + that Triton only, never ``ktriage``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile

if __package__:
    from ktriage.insitu import worker
else:
    import worker  # type: ignore[import-not-found,no-redef]


def probe(cc: int) -> tuple[dict[str, object], bool | None]:
    spec: worker.SpecJSON = {
        "source": f"{worker.PRIMING_KERNEL}:priming_kernel",
        "signature": {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        "constexprs": {"BLOCK": 128},
        "divisible_by_16": ["x_ptr"],
        "target": f"sm_{cc}",
    }
    try:
        first = worker.compile_in_process(spec)
        second = worker.compile_in_process(spec)
    except worker.WorkerError as exc:
        return {"error": f"{exc.kind}: {str(exc).splitlines()[0] if str(exc) else ''}"}, None
    runs = second["ptxas_runs"]
    if not runs:
        return {"error": "Triton ran no ptxas (its cache answered?)"}, None
    argv = runs[-1]["argv"]
    version = subprocess.run([argv[0], "--version"], capture_output=True, text=True)
    m = re.search(r"^\s*\.version\s+(\d+\.\d+)", second["ptx"], re.M)
    facts = {
        "ptxas_argv": argv,
        "ptxas_version_text": (version.stdout + version.stderr).strip(),
        "ptx_version": m.group(1) if m else None,
    }
    return facts, first["llir"] != second["llir"] or first["ptx"] != second["ptx"]


def main(argv: list[str]) -> int:
    os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="ktriage-probe-"))
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"
    archs: dict[str, object] = {}
    order_sensitive: bool | None = None
    real_stdout = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    # Only the process's first pair can show an order effect (a compile that fails in ptxas has
    # already run the LLVM steps that set the options), so the host asks for it with sm_80 alone.
    for cc in argv:
        facts, differs = probe(int(cc))
        if order_sensitive is None:
            order_sensitive = differs
        archs[cc] = facts
    real_stdout.write(json.dumps({"order_sensitive": order_sensitive, "archs": archs}))
    real_stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
