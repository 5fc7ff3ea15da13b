"""Recording: a launch described by its argument values must give the same spec as the catalog
recipe for that launch (so recorded and catalog kernels are the same kernels). The JIT hook itself
runs on the GPU host; here the launches are fed by hand, as the hook would feed them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ktriage.errors import KtriageError
from ktriage.workload.ops.replay import catalog_spec

torch = pytest.importorskip("torch")

from ktriage.workload.ops.opdef import bench_op
from ktriage.workload.recorded.in_process import JitSource, launch_to_spec, load_specs, save_specs


class FakeTritonDtype:
    """Stands for tl.float32 (a Triton dtype object passed as a constexpr)."""

    name = "fp32"


def _same_kernel(a, b) -> None:
    assert a.signature == b.signature
    assert a.constexprs == b.constexprs
    assert set(a.divisible_by_16) == set(b.divisible_by_16) and set(a.equal_to_1) == set(b.equal_to_1)
    assert (a.num_warps, a.num_stages, a.grid, a.source, a.package) == (
        b.num_warps,
        b.num_stages,
        b.grid,
        b.source,
        b.package,
    )


def test_recorded_liger_layer_norm_bwd_equals_the_catalog_spec(ktriage_home: Path) -> None:
    from ktriage.spec.packages import ensure_package

    root = ensure_package("liger-kernel==0.5.10")
    src = JitSource(
        "_layer_norm_backward_kernel",
        root / "liger_kernel/ops/layer_norm.py",
        "liger_kernel.ops.layer_norm",
        "liger-kernel==0.5.10",
    )
    case = bench_op("layer_norm").inputs()[7]
    m, n = 4096, case.facts["N"]
    x, dy, dx = torch.empty(m, n), torch.empty(m, n), torch.empty(m, n)
    w, mean, rstd = torch.empty(n), torch.empty(m), torch.empty(m)
    dw, db = torch.empty(132, n), torch.empty(132, n)
    # positional and keyword arguments exactly as liger 0.5.10's layer_norm_backward passes them
    args = (
        x,
        w,
        mean,
        rstd,
        dx,
        dw,
        db,
        dy,
        x.stride(0),
        dx.stride(0),
        dw.stride(0),
        db.stride(0),
        dy.stride(0),
        m,
        n,
        32,
    )
    spec = launch_to_spec(src, args, {"BLOCK_SIZE": 8192, "dtype": FakeTritonDtype()}, (132,), target="sm_90")
    _same_kernel(spec, catalog_spec("liger_layer_norm", case, "bwd", sm_count=132))
    assert spec.key() == catalog_spec("liger_layer_norm", case, "bwd", sm_count=132).key()


def test_recorded_tutorial_launch_with_options_and_callable_grid(tmp_path: Path) -> None:
    from ktriage.catalog.kernels import KERNELS_DIR

    src = JitSource("layer_norm_fwd_kernel", KERNELS_DIR / "layer_norm.py", None, None)
    case = bench_op("layer_norm").inputs()[7]
    x, w, b, y = torch.empty(4096, 4608), torch.empty(4608), torch.empty(4608), torch.empty(4096, 4608)
    mean, rstd = torch.empty(4096), torch.empty(4096)
    spec = launch_to_spec(
        src,
        (x, w, b, y, mean, rstd, 4608, 4608, 1e-5),
        {"BLOCK_SIZE": 4096, "num_warps": 8},
        lambda meta: (meta["x_ptr"].shape[0],),
        target="sm_90",
    )
    _same_kernel(spec, catalog_spec("triton_layer_norm", case, "fwd"))
    saved = load_specs(save_specs([spec], tmp_path / "specs.json"))
    assert saved == [spec] and json.loads((tmp_path / "specs.json").read_text())["specs"][0]["meta"] == {
        "recorded": True
    }
    with pytest.raises(KtriageError, match="unknown keyword 'BLOCK'"):
        launch_to_spec(src, (x, w, b, y, mean, rstd, 4608, 4608, 1e-5), {"BLOCK": 4096}, (4096,), target="sm_90")
