"""A recorded workload compiles from its snapshot alone: a kernel in a temporary local file (standing
in for an inductor-generated module) with a @triton.jit helper from another module, recorded, its
files deleted, the workload copied elsewhere and explained with Triton 3.3.1 and 3.4.0. And a
program killed by SIGKILL keeps what was recorded before."""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

import pytest
from record_helpers import INSITU, record_cli

from ktriage.cli.app import main
from ktriage.record.run import hook_environment
from ktriage.record.workload import load_workload
from ktriage.spec.packages import snapshot_dir

pytestmark = pytest.mark.slow

HELPERS = """
import triton
import triton.language as tl


@triton.jit
def twice(x):
    return x * 2
"""

KERNEL = """
import triton
import triton.language as tl
from helpers import twice


@triton.jit
def twice_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, twice(tl.load(x_ptr + offs, mask=mask)), mask=mask)
"""

PROGRAM = """
import os, signal, sys
sys.path.insert(0, {insitu!r})
import fakedriver  # stands in for the GPU: Triton's real launch path, no device
fakedriver.install(90)
sys.path.insert(0, {src!r})
import kern

sizes = [int(s) for s in sys.argv[1].split(",")]
kill_after = int(sys.argv[2]) if len(sys.argv) > 2 else -1
for i, n in enumerate(sizes):
    x, out = fakedriver.FakeTensor("fp32", shape=(n,)), fakedriver.FakeTensor("fp32", shape=(n,))
    kern.twice_kernel[((n + 255) // 256,)](x, out, n, BLOCK=256)
    if i + 1 == kill_after:
        os.kill(os.getpid(), signal.SIGKILL)
print("done")
"""


def _program(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    (src / "helpers.py").write_text(HELPERS)
    (src / "kern.py").write_text(KERNEL)
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM.format(insitu=str(INSITU), src=str(src)))
    return prog


def test_a_local_file_kernel_is_explained_from_its_snapshot_alone(
    toolchain, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tc = toolchain("triton==3.3.1")
    toolchain("triton==3.4.0")
    prog = _program(tmp_path)
    out = tmp_path / "rec" / "W.json"
    assert record_cli(out, [str(tc.python), str(prog), "4096,4096,8192,4096,1000"]) == 0
    capsys.readouterr()
    workload = load_workload(out)
    assert [(len(k.inputs), k.launches) for k in workload.kernels] == [(2, 4), (1, 1)]  # n=1000: not divisible by 16
    # the first launch of each specialization compiled; the next was served by the JIT's cache
    assert [[i.jit_check for i in k.inputs] for k in workload.kernels] == [["same", None], ["same"]]
    files = set(workload.snapshots[workload.kernels[0].snapshot]["files"])
    assert files == {"kern.py", "helpers.py", "_ktriage_globals.py"}  # the module-level values its kernels read
    # nothing of the original is left: the source files, the materialized snapshots; the workload moves
    shutil.rmtree(tmp_path / "src")
    prog.unlink()
    for k in workload.kernels:
        shutil.rmtree(snapshot_dir(f"snapshot:{k.snapshot}"), ignore_errors=True)
    moved = tmp_path / "elsewhere" / "W.json"
    moved.parent.mkdir()
    shutil.copy(out, moved)
    shutil.rmtree(tmp_path / "rec")
    assert main(["explain", str(moved), "-t", "triton==3.3.1", "-t", "triton==3.4.0", "-f", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    text = json.dumps(result)
    for k in workload.kernels:
        for i in k.inputs:
            assert i.spec.name in text
    assert "3.3.1" in text and "3.4.0" in text


def test_sigkill_keeps_what_was_recorded(toolchain, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tc = toolchain("triton==3.3.1")
    prog = _program(tmp_path)
    out = tmp_path / "W.json"
    code = record_cli(out, [str(tc.python), str(prog), "1024,2048,2048,4096,8192,16384", "4"])
    assert code == 4  # the program did not exit 0
    assert "SIGKILL" in capsys.readouterr().err
    workload = load_workload(out)
    assert workload.recorded["returncode"] == -signal.SIGKILL
    (kernel,) = workload.kernels
    assert [i.label.split(",")[0] for i in kernel.inputs] == ["x_ptr=1024", "x_ptr=2048", "x_ptr=4096"]
    assert [i.count for i in kernel.inputs] == [1, 2, 1]


def test_sigkill_of_the_recorder_too_keeps_the_journal(toolchain, tmp_path: Path) -> None:
    """Without ktriage record's compaction (as if it was killed too), the journal alone is the workload."""
    import subprocess
    import tempfile

    from ktriage.insitu.launch_hook import SITECUSTOMIZE

    tc = toolchain("triton==3.3.1")
    prog = _program(tmp_path)
    journal = tmp_path / "W.json.journal"
    with tempfile.TemporaryDirectory() as shim:
        (Path(shim) / "sitecustomize.py").write_text(SITECUSTOMIZE)
        env = hook_environment(journal, Path(shim), {"PATH": "/usr/bin:/bin"})
        proc = subprocess.run([str(tc.python), str(prog), "1024,2048", "2"], env=env, check=False)
    assert proc.returncode == -signal.SIGKILL
    workload = load_workload(tmp_path / "W.json")
    assert [i.count for i in workload.kernels[0].inputs] == [1, 1]
    assert workload.host["triton"] == "3.3.1"


def test_processes_the_program_starts_record_into_the_same_workload(toolchain, tmp_path: Path) -> None:
    """A launcher (torchrun-like) starting two workers: the hook is in each (PYTHONPATH is inherited),
    both append to one journal, and the same kernel launched by both is one kernel with summed counts."""
    tc = toolchain("triton==3.3.1")
    prog = _program(tmp_path)
    launcher = tmp_path / "launcher.py"
    launcher.write_text(
        "import subprocess, sys\n"
        f"procs = [subprocess.Popen([sys.executable, {str(prog)!r}, '4096,8192,8192']) for _ in range(2)]\n"
        "sys.exit(max(p.wait() for p in procs))\n"
    )
    out = tmp_path / "W.json"
    assert record_cli(out, [str(tc.python), str(launcher)]) == 0
    (kernel,) = load_workload(out).kernels
    assert [i.count for i in kernel.inputs] == [2, 4]


def test_a_forked_child_records_as_its_own_process(toolchain, tmp_path: Path) -> None:
    """DataLoader-style fork: the child's launches are its own (ids with its pid), merged at compaction."""
    tc = toolchain("triton==3.3.1")
    prog = _program(tmp_path)
    forking = tmp_path / "forking.py"
    forking.write_text(
        "import os, runpy, sys\n"
        f"sys.argv = [{str(prog)!r}, '4096,8192']\n"
        f"runpy.run_path({str(prog)!r}, run_name='__main__')\n"
        "pid = os.fork()\n"
        f"sys.argv = [{str(prog)!r}, '8192,16384']\n"
        f"runpy.run_path({str(prog)!r}, run_name='__main__')\n"
        "if pid:\n    os.waitpid(pid, 0)\n"
    )
    out = tmp_path / "W.json"
    assert record_cli(out, [str(tc.python), str(forking)]) == 0
    (kernel,) = load_workload(out).kernels
    labels = [i.label.split(",")[0] for i in kernel.inputs]
    assert labels == ["x_ptr=4096", "x_ptr=8192", "x_ptr=16384"]
    assert [i.count for i in kernel.inputs] == [1, 3, 2]  # 8192: parent before and after the fork, and the child
