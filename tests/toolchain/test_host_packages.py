"""``triton=host`` on a host without network: the kernel modules' imports come from the interpreter.

A recorded workload's kernels import helpers at module level (Liger-Kernel's ``liger_kernel.ops.utils``:
``from packaging.version import Version``). For a release toolchain ktriage installs them next to the
kernel packages; a ``triton=host`` interpreter is the environment the program ran in and already has
them, and a GPU host often has no network. Here the "current interpreter" is the test home's Triton
3.6.0 virtualenv running ktriage (this checkout, and the test venv's packages, which have
``packaging``, on PYTHONPATH), as in test_host_toolchain.py; the package index is a closed port on
127.0.0.1, uv is offline with an empty cache, and the ktriage home is fresh (no packages installed).
The recording is the real one of benchmarks/corpus/programs/liger_step.py (Liger-Kernel 0.8.5) on an
H200 (tests/data/workloads/liger_step.workload.json).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sysconfig
import textwrap
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
WORKLOAD = REPO / "tests" / "data" / "workloads" / "liger_step.workload.json"


def closed_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound, then released): a connect is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def offline_env(home: Path, scratch: Path) -> dict[str, str]:
    """The environment of a host without network for pip and uv, with a fresh ktriage home."""
    index = f"http://127.0.0.1:{closed_port()}/simple"
    return {
        **os.environ,
        "KTRIAGE_HOME": str(home),
        "UV_OFFLINE": "1",
        "UV_INDEX_URL": index,
        "UV_DEFAULT_INDEX": index,
        "PIP_INDEX_URL": index,
        "UV_CACHE_DIR": str(scratch / "uv-cache"),
        "PIP_NO_INDEX": "1",
    }


HOST_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from ktriage.compile.compiler import Artifact, Compiler
    from ktriage.record.workload import load_workload
    from ktriage.toolchain.manager import ensure_toolchain
    from ktriage.workload.recorded.bundle import workload_entries

    workload = load_workload(sys.argv[1])
    spec = next(s for e, s in workload_entries(workload) if e.kernel == "K0")  # _rms_norm_forward_kernel
    tc = ensure_toolchain("triton=host")
    with Compiler(jobs=1) as compiler:
        art = compiler.compile(spec, tc)
    print(json.dumps({"package": spec.package, "ok": isinstance(art, Artifact),
                      "why": None if isinstance(art, Artifact) else art.message,
                      "kernel": art.frontend.kernel_name if isinstance(art, Artifact) else None}))
    """
)


@pytest.mark.slow
def test_host_toolchain_compiles_a_recorded_liger_kernel_offline_with_the_interpreters_packaging(
    toolchain: Any, tmp_path: Path
) -> None:
    interpreter = toolchain("triton==3.6.0").python  # a real Python whose Triton is 3.6.0
    home = tmp_path / "home"
    purelib = sysconfig.get_paths()["purelib"]
    assert (Path(purelib) / "packaging").is_dir()  # the interpreter below has packaging (PYTHONPATH)
    env = {**offline_env(home, tmp_path), "PYTHONPATH": os.pathsep.join([str(REPO), purelib])}
    proc = subprocess.run(
        [str(interpreter), "-c", HOST_SCRIPT, str(WORKLOAD)], capture_output=True, text=True, env=env, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])

    assert out["package"].startswith("snapshot:")  # the recorded Liger source, not a PyPI install
    assert out["ok"], out["why"]
    assert out["kernel"] == "_rms_norm_forward_kernel"
    # nothing was installed (nor tried: a failed uv install leaves its lock file): packaging is the interpreter's
    packages = home / "packages"
    assert not packages.exists() or not list(packages.iterdir()), list(packages.iterdir())
