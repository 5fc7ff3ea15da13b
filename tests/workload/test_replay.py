"""Artifact replays on the CPU: the arguments they build must be the catalog spec's exactly, and the
host-side work (allocations, _DW.sum(0), grad accumulation) must turn kernel results into the
library's outputs. Kernels are replaced by fakes that record launches or emulate the kernel's math
on CPU memory through the raw pointers the replay passes (named Fake*)."""

from __future__ import annotations

import ctypes
import math

import pytest

from ktriage.catalog.inputs import InputCase
from ktriage.errors import KtriageError
from ktriage.spec.model import KernelSpec

torch = pytest.importorskip("torch")

from ktriage.workload.ops.backends import make_input
from ktriage.workload.ops.opdef import bench_op
from ktriage.workload.ops.replay import (
    KernelRef,
    artifact_backend,
    catalog_spec,
    catalog_specs,
)


class FakeRecordingLauncher:
    """Records every launch instead of running a kernel."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[int, ...], list[int | float]]] = []

    def __call__(self, key: str, grid: tuple[int, ...], args) -> None:
        self.calls.append((key, grid, list(args)))


def _view(ptr: int, numel: int, dtype=torch.float32):
    """A CPU tensor over raw memory (what a kernel sees through its pointer)."""
    buf = (ctypes.c_float * numel).from_address(ptr)
    return torch.frombuffer(buf, dtype=dtype, count=numel)


class FakeLigerLayerNormBwdKernel:
    """Emulates liger 0.5.10's _layer_norm_backward_kernel (fp32) on CPU memory, from the ABI args."""

    def __init__(self, spec: KernelSpec) -> None:
        self.rows_per_program = int(spec.constexprs["rows_per_program"])

    def __call__(self, key: str, grid: tuple[int, ...], args) -> None:
        x_p, w_p, mean_p, rstd_p, dx_p, dw_p, db_p, dy_p, sx, sdx, sdw, sdb, sdy, n_rows, n_cols = args
        x = _view(x_p, n_rows * sx).view(n_rows, sx)[:, :n_cols]
        dy = _view(dy_p, n_rows * sdy).view(n_rows, sdy)[:, :n_cols]
        dx = _view(dx_p, n_rows * sdx).view(n_rows, sdx)[:, :n_cols]
        w, mean, rstd = _view(w_p, n_cols), _view(mean_p, n_rows), _view(rstd_p, n_rows)
        dw = _view(dw_p, grid[0] * sdw).view(grid[0], sdw)
        db = _view(db_p, grid[0] * sdb).view(grid[0], sdb)
        for pid in range(grid[0]):
            rows = slice(pid * self.rows_per_program, min((pid + 1) * self.rows_per_program, n_rows))
            xhat = (x[rows] - mean[rows, None]) * rstd[rows, None]
            wdy = w * dy[rows]
            c1 = (xhat * wdy).sum(1, keepdim=True) / n_cols
            c2 = wdy.sum(1, keepdim=True) / n_cols
            dx[rows] = (wdy - (xhat * c1 + c2)) * rstd[rows, None]
            dw[pid, :n_cols] = (dy[rows] * xhat).sum(0)
            db[pid, :n_cols] = dy[rows].sum(0)


@pytest.mark.parametrize("input_id", [6, 7])
def test_layer_norm_bwd_arguments_equal_the_catalog_spec(input_id: int) -> None:
    case = bench_op("layer_norm").inputs()[input_id]
    spec = catalog_spec("liger_layer_norm", case, "bwd", sm_count=132)
    inp = make_input("layer_norm", case, device="cpu")
    launcher = FakeRecordingLauncher()
    b = artifact_backend("liger_layer_norm", launch=launcher, specs=catalog_specs(sm_count=132), timing="library")
    timed = b.prepare(inp, "bwd")
    timed()
    (key, grid, args), last = launcher.calls[0], launcher.calls[-1]
    assert key == spec.key() and grid == (132,) == spec.grid
    n = case.facts["N"]
    runtime = [name for name, ty in spec.signature.items() if ty != "constexpr"]
    assert runtime == [
        "X_ptr",
        "W_ptr",
        "Mean_ptr",
        "RSTD_ptr",
        "DX_ptr",
        "DW_ptr",
        "DB_ptr",
        "DY_ptr",
        "stride_x",
        "stride_dx",
        "stride_dw",
        "stride_db",
        "stride_dy",
        "n_rows",
        "n_cols",
    ]
    assert len(args) == len(runtime)
    assert args[0] == inp.tensors["x"].data_ptr() and args[1] == inp.tensors["weight"].data_ptr()
    assert args[7] == inp.tensors["dy"].data_ptr()
    assert args[8:] == [n, n, n, n, n, 4096, n]  # strides of (4096,N) and (132,N) buffers, n_rows, n_cols
    assert spec.constexprs["rows_per_program"] == math.ceil(4096 / 132) and spec.constexprs["dtype"] == "tl.float32"
    assert last[2][8:] == args[8:]  # the timed call builds the same ints


def test_mismatched_gpu_or_dtype_is_an_error_not_a_wrong_launch() -> None:
    case = bench_op("layer_norm").inputs()[7]
    inp = make_input("layer_norm", case, device="cpu")
    launcher = FakeRecordingLauncher()
    with pytest.raises(KtriageError) as sms:
        artifact_backend("liger_layer_norm", launch=launcher, specs=catalog_specs(sm_count=132), sm_count=144).prepare(
            inp, "bwd"
        )
    # the fix names kt.bench's keyword as well as the flag (ktriage.errors.option)
    assert sms.value.fix == "rebuild the bundle with sm_count=144 (--sm-count 144)"

    def bf16_specs(backend, c, role):
        spec = catalog_spec(backend, c, role, precision="bf16")
        return KernelRef("k", spec)

    with pytest.raises(KtriageError, match=r"types \(replay, spec\)") as types:
        artifact_backend("liger_layer_norm", launch=launcher, specs=bf16_specs).prepare(inp, "bwd")
    assert types.value.fix == (
        "build the bundle for this input, precision and GPU (precision (--precision), sm_count (--sm-count) = the "
        "GPU's SM count)"
    )
    assert launcher.calls == []


def test_layer_norm_bwd_replay_host_work_matches_autograd() -> None:
    """With the kernel emulated, the replay's outputs (dx, _DW.sum(0), _DB.sum(0)) equal torch's backward."""
    case = InputCase(0, {"M": 64, "N": 96})
    inp = make_input("layer_norm", case, device="cpu")
    source = catalog_specs(sm_count=8)
    kernel = FakeLigerLayerNormBwdKernel(source("liger_layer_norm", case, "bwd").spec)
    b = artifact_backend("liger_layer_norm", launch=kernel, specs=source, sm_count=8, timing="tritonbench")
    timed = b.prepare(inp, "bwd")
    x, w, bias = (inp.tensors[k] for k in ("x", "weight", "bias"))
    torch.nn.functional.layer_norm(x, (96,), w, bias, 1e-5).backward(inp.tensors["dy"])
    got = b.outputs()
    assert torch.allclose(got["dx"], x.grad, atol=1e-5)
    assert torch.allclose(got["dw"], w.grad, atol=1e-4) and torch.allclose(got["db"], bias.grad, atol=1e-4)
    # the tritonbench target also does autograd's weight.grad += dw / bias.grad += db
    timed()
    timed()
    assert torch.allclose(b._wgrad, 2 * w.grad, atol=1e-4) and torch.allclose(b._bgrad, 2 * bias.grad, atol=1e-4)


def test_kernel_only_target_allocates_nothing_per_call() -> None:
    case = InputCase(0, {"M": 64, "N": 96})
    inp = make_input("layer_norm", case, device="cpu")
    launcher = FakeRecordingLauncher()
    b = artifact_backend(
        "liger_layer_norm", launch=launcher, specs=catalog_specs(sm_count=8), sm_count=8, timing="kernel"
    )
    timed = b.prepare(inp, "bwd")
    timed()
    timed()
    assert len(launcher.calls) == 3 and launcher.calls[1][2] == launcher.calls[2][2]  # same buffers every call
    with pytest.raises(KtriageError, match="tritonbench, library, kernel"):
        artifact_backend("liger_layer_norm", launch=launcher, specs=catalog_specs(), timing="fast")


def test_embedding_replay_arguments_and_memset() -> None:
    case = bench_op("embedding").inputs()[0]
    spec = catalog_spec("liger_embedding", case, "bwd")
    inp = make_input("embedding", case, device="cpu")
    launcher = FakeRecordingLauncher()
    b = artifact_backend("liger_embedding", launch=launcher, specs=catalog_specs(), timing="tritonbench")
    timed = b.prepare(inp, "bwd")
    timed()
    key, grid, args = launcher.calls[-1]
    assert key == spec.key() and grid == (128, 6) == spec.grid
    assert [n for n, t in spec.signature.items() if t != "constexpr"] == [
        "grad_output_ptr",
        "grad_weight_ptr",
        "indices_ptr",
        "n_elements",
    ]
    assert args[0] == inp.tensors["dy"].data_ptr() and args[2] == inp.tensors["indices"].data_ptr() and args[3] == 16384
    assert spec.constexprs == {"embedding_dim": 768, "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128}
    # the library zeroes grad_weight; with a recording fake, the replay's outputs are that zeroed table
    assert float(b.outputs()["dweight"].abs().sum()) == 0.0 and tuple(b.outputs()["dweight"].shape) == (1024, 768)
    fwd = artifact_backend("liger_embedding", launch=launcher, specs=catalog_specs())
    fwd.prepare(inp, "fwd")()
    k2, _g2, a2 = launcher.calls[-1]
    assert k2 == catalog_spec("liger_embedding", case, "fwd").key() and a2[0] == inp.tensors["weight"].data_ptr()


def test_layer_norm_fwd_replays_match_their_specs() -> None:
    case = bench_op("layer_norm").inputs()[7]
    inp = make_input("layer_norm", case, device="cpu")
    for name, nargs in (("liger_layer_norm", 10), ("triton_layer_norm", 9)):
        launcher = FakeRecordingLauncher()
        b = artifact_backend(name, launch=launcher, specs=catalog_specs())
        b.prepare(inp, "fwd")()
        key, grid, args = launcher.calls[-1]
        assert key == catalog_spec(name, case, "fwd").key() and grid == (4096,) and len(args) == nargs
    with pytest.raises(KtriageError, match="forward only"):
        artifact_backend("triton_layer_norm", launch=FakeRecordingLauncher(), specs=catalog_specs()).prepare(inp, "bwd")
