"""What stops a recorded launch from being benched is named at record time (issue 23), and large integer
tensors are replayed from values the program used, not zeros.

Real parts: the hook's own description code (``insitu/launch_hook.describe_args``) on real torch tensors
(CPU: the hook reads the same tensor methods there), the journal compacted by ``ktriage.record.workload``,
``workload show``, the replay's plan and its torch allocation on the CPU.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from ktriage.cli.app import main
from ktriage.errors import SpecError
from ktriage.insitu.launch_hook import (
    POINTER_TABLE,
    SMALL_INT_TENSOR,
    VALUE_SAMPLE,
    describe,
    describe_args,
    jit_key,
)
from ktriage.predict.facts import uniform_indices
from ktriage.record.workload import compact, save_workload
from ktriage.workload.recorded.args import tensor_arg
from ktriage.workload.recorded.replay import allocate

KERNEL = """
import triton
import triton.language as tl


@triton.jit
def grouped_kernel(ptrs, idx, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(ptrs + tl.program_id(0)).to(tl.pointer_type(tl.float32))
    i = tl.load(idx + offs, mask=offs < n)
    tl.atomic_add(out + i, tl.load(a + offs, mask=offs < n), mask=offs < n)
"""


def test_a_table_of_live_addresses_is_a_pointer_table_and_indices_are_not() -> None:
    a, b = torch.zeros(1024), torch.zeros(4096)
    table = torch.tensor([a.data_ptr(), b.data_ptr() + 64], dtype=torch.int64)
    indices = torch.tensor([0, 5, 7], dtype=torch.int64)  # small integers: never addresses
    past = max(a.data_ptr() + 1024 * 4, b.data_ptr() + 4096 * 4) + (1 << 30)
    stray = torch.tensor([past], dtype=torch.int64)  # an address-sized value outside every allocation
    described = dict(
        (n, d) for n, d in describe_args([("a", a), ("b", b), ("ptrs", table), ("idx", indices), ("stray", stray)])
    )
    assert "2 of 2 values are addresses in live CUDA allocations" in described["ptrs"][POINTER_TABLE]
    assert POINTER_TABLE not in described["idx"] and POINTER_TABLE not in described["stray"]
    with pytest.raises(SpecError) as err:  # the replay refuses it with the cause, instead of faulting
        tensor_arg("ptrs", described["ptrs"])
    assert "pointer table" in err.value.problem and err.value.fix and "explain" in err.value.fix


def test_the_pointer_table_is_named_in_the_workload_at_record_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = torch.zeros(1024)
    args = describe_args(
        [
            ("ptrs", torch.tensor([a.data_ptr()], dtype=torch.int64)),
            ("idx", torch.zeros(8, dtype=torch.int32)),
            ("out", a),
            ("n", 8),
            ("BLOCK", 128),
        ]
    )
    src = tmp_path / "grouped.py"
    src.write_text(KERNEL)
    records = [
        {"type": "header", "format_version": 1, "kind": "ktriage-record-journal", "argv": ["prog.py"]},
        {"type": "host", "triton": "3.4.0", "target": "sm_90"},
        {
            "type": "kernel",
            "id": "K0",
            "kind": "jit",
            "function": "grouped_kernel",
            "module": "grouped",
            "original_module": "grouped",
            "file": str(src),
            "snapshot": {"files": {"grouped.py": KERNEL}, "notes": []},
            "package": None,
        },
        {"type": "launch", "id": "L0", "kernel": "K0", "args": args, "options": {}, "grid": [1]},
        {"type": "counts", "counts": {"L0": 1}},
    ]
    path = save_workload(compact(json.loads(json.dumps(records))), tmp_path / "W.json")
    assert main(["workload", "show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "cannot bench: pointer table: argument ptrs holds device addresses" in out


def test_a_large_integer_tensor_is_replayed_from_its_recorded_sample_not_zeros() -> None:
    rows = torch.arange(SMALL_INT_TENSOR * 3, dtype=torch.int64) % 977 + 10  # token ids 10..986
    desc = describe(rows)
    assert "values" not in desc and desc["value_range"] == [10, 986]
    sample = desc["value_sample"]
    assert len(sample) == VALUE_SAMPLE and set(sample) <= set(range(10, 987)) and len(set(sample)) > 100
    arg = tensor_arg("idx", json.loads(json.dumps(desc)))
    assert arg.fill == "sample"
    buffers = allocate(_plan(arg), seed=3, device="cpu")
    drawn = buffers.views["idx"]
    assert set(drawn.tolist()) <= set(sample) and len(set(drawn.tolist())) > 100  # real rows, not all row 0
    again = allocate(_plan(arg), seed=3, device="cpu").views["idx"]
    assert torch.equal(drawn, again)  # seeded: the same data on every run
    # an old recording (no sample) still replays zeros, and the cost model knows which is which
    old = tensor_arg("idx", {k: v for k, v in desc.items() if k not in ("value_sample", "value_range")})
    assert old.fill == "zeros"
    meta = {"recorded": True, "input_label": f"idx={SMALL_INT_TENSOR * 3}"}
    assert uniform_indices({"idx": "*i64"}, meta) is True
    assert uniform_indices({"idx": "*i64"}, {**meta, "sampled_ints": ["idx"]}) is False


def test_a_tensor_descriptor_of_another_module_is_named_at_record_time() -> None:
    """Triton's host-side ``TensorDescriptor`` is recorded in the spec's form (on Triton's real launch path:
    test_record_descriptor.py); a class of that name from elsewhere (Gluon's, which types with a layout too) is
    named with its module, not described as Triton's, and its launch key needs none of its fields."""

    class TensorDescriptor:  # a class of that name outside triton.tools.tensor_descriptor, as the hook sees it
        base = None

    why = describe(TensorDescriptor())["unsupported"]
    assert why == f"{__name__}.TensorDescriptor (only triton.tools.tensor_descriptor's is described)"
    assert jit_key(TensorDescriptor, (TensorDescriptor(),), (1,), {})[2][0] == "D"


def _plan(arg: object) -> object:
    from ktriage.workload.recorded.args import LaunchPlan

    return LaunchPlan((arg,), (1,))  # type: ignore[arg-type]
