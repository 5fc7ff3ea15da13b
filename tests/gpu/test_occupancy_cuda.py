"""The occupancy model against the CUDA driver on a real GPU (run on the GPU host:
``PYTHONPATH=. python3 -m pytest -m gpu tests/gpu/test_occupancy_cuda.py``).

Runs benchmarks/gpu/occupancy_vs_cuda.py's full grid: every (registers, warps 1..32, shared) cell
must give the same CTAs per SM as ``cuOccupancyMaxActiveBlocksPerMultiprocessor``, and the device's
attributes must equal ktriage.arch's table for its compute capability.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.gpu


def test_occupancy_model_matches_the_cuda_driver(tmp_path: Path, occupancy_gpu_check) -> None:
    pytest.importorskip("cuda.bindings.driver", reason="needs cuda-python (cuda.bindings) and an NVIDIA GPU")
    check = occupancy_gpu_check
    rc = check.run(tmp_path, progress=lambda _line: None)
    data = json.loads((tmp_path / "occupancy_check.json").read_text())
    assert data["mismatches"] == 0, data["mismatched_cells"][:20]
    assert data["fact_mismatches"] == 0, [f for f in data["facts"] if not f["match"]]
    assert rc == 0
    # The grid is the real one: every kernel x 32 warp counts x the shared-memory sizes.
    assert data["cells"] == len(data["cells_rows"]) > 20000
    regs = {k["num_regs"] for k in data["kernels"]}
    assert min(regs) <= 16 and max(regs) == 255 and len(regs) >= 20
    ctas = {row[data["cell_columns"].index("driver_ctas")] for row in data["cells_rows"]}
    assert 0 in ctas and 1 in ctas and 2 in ctas and max(ctas) == 32  # zero, low and block-capped cells
    assert (tmp_path / "occupancy_check.md").read_text().count("mismatches") >= 1
