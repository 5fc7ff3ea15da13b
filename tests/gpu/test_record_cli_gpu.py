"""GPU host only: ``ktriage record`` end to end on a small program, and what the workload keeps of the GPU.

The recorder stores the recording GPU's SM count (``host.sm_count``), and every recorded kernel carries it
as ``meta.sm_count``: what explain prices the launch for (``ktriage.spec.sms``) unless ``--sm-count`` says
otherwise. On a CPU host ``record`` refuses, so this is the only place the count is read from a device.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

PROGRAM = """
import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


x = torch.randn(4096, device="cuda")
out = torch.empty_like(x)
scale_kernel[(triton.cdiv(4096, 1024),)](x, out, 4096, BLOCK=1024)
torch.cuda.synchronize()
assert torch.allclose(out, x * 2.0)
"""


def test_record_keeps_the_gpus_sm_count_on_every_kernel(tmp_path: Path) -> None:
    import torch

    from ktriage.record.workload import load_workload

    program = tmp_path / "prog.py"
    program.write_text(PROGRAM)
    output = tmp_path / "W.json"
    done = subprocess.run(
        [sys.executable, "-m", "ktriage", "record", "-o", str(output), "--", sys.executable, str(program)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    workload = load_workload(output)
    assert workload.host.get("sm_count") == sms, workload.host
    specs = workload.specs()
    assert [s.name.split(".")[0] for s in specs] == ["scale_kernel"], [s.name for s in specs]
    assert all(s.meta.get("sm_count") == sms for s in specs), [s.meta for s in specs]
