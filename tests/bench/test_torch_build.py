"""A bench with -t is refused before its compile when this Python's torch is a CPU-only build, read from
torch's version.py without importing it (ktriage.bench.torch_build; ktriage.api._bench
refusal_before_compiling). Before, only the CUDA driver was asked: on a GPU host with a CPU-only torch
the bench compiled for minutes, then the measuring worker refused.

A GPU the driver sees cannot be arranged on a CPU host: the decision is tested with fake facts (named
FAKE_...); the reading is tested against the real torch, on whatever build this host has."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ktriage.api._bench import COMPILE_THEN_MEASURE_FIX, refusal_before_compiling
from ktriage.bench.torch_build import TorchBuild, installed_torch_build, parse_torch_version_py
from ktriage.bench.worker import no_gpu_refusal
from ktriage.errors import DeviceError

FAKE_CPU_VERSION_PY = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']
__version__ = '2.5.1+cpu'
debug = False
cuda: Optional[str] = None
git_version = 'a8d6afb511a69687bbb2b7e88a3cf67917e1697e'
hip: Optional[str] = None
"""
FAKE_CUDA_VERSION_PY = FAKE_CPU_VERSION_PY.replace("'2.5.1+cpu'", "'2.8.0+cu128'").replace(
    "cuda: Optional[str] = None", "cuda: Optional[str] = '12.8'"
)
FAKE_CPU_ONLY_TORCH = TorchBuild("2.5.1+cpu", None)
FAKE_CUDA_TORCH = TorchBuild("2.8.0+cu128", "12.8")
FAKE_DRIVER_SEES_A_GPU = None  # gpu_problem()'s answer where the driver sees a GPU
FAKE_NO_DRIVER = "no CUDA driver on this host (libcuda.so.1 cannot be loaded: ...)"
PYTHON = "/opt/venv/bin/python"


def test_version_py_states_the_build() -> None:
    assert parse_torch_version_py(FAKE_CPU_VERSION_PY) == FAKE_CPU_ONLY_TORCH
    assert parse_torch_version_py(FAKE_CUDA_VERSION_PY) == FAKE_CUDA_TORCH


@pytest.mark.parametrize(
    "text",
    [
        "not python (",
        "__version__ = '2.5.1'\n",  # no cuda: cannot tell
        "__version__ = '2.5.1'\ncuda = _read_it()\n",  # not a literal
        FAKE_CPU_VERSION_PY.replace("hip: Optional[str] = None", "hip = '6.2.41133'"),  # ROCm: no CPU-only build
    ],
    ids=["garbled", "no-cuda", "not-a-literal", "rocm"],
)
def test_what_cannot_be_told_is_none(text: str) -> None:
    assert parse_torch_version_py(text) is None


def test_the_installed_build_is_what_torch_itself_says() -> None:
    """The real file of this host's torch, read as text, says what importing torch says (any build)."""
    import torch

    if getattr(torch.version, "hip", None):
        pytest.skip("a ROCm build is not judged (read as None)")
    assert installed_torch_build() == TorchBuild(str(torch.__version__), torch.version.cuda)


def test_reading_the_build_imports_no_torch() -> None:
    probe = (
        "import sys; from ktriage.bench.torch_build import installed_torch_build; "
        "assert installed_torch_build() is not None; print('torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False", done


def test_a_cpu_only_torch_beside_a_gpu_is_refused_before_the_compile_in_the_workers_words() -> None:
    refusal = refusal_before_compiling(FAKE_DRIVER_SEES_A_GPU, FAKE_CPU_ONLY_TORCH, PYTHON)
    workers = no_gpu_refusal(FAKE_CPU_ONLY_TORCH, FAKE_DRIVER_SEES_A_GPU, COMPILE_THEN_MEASURE_FIX, PYTHON)
    assert isinstance(refusal, DeviceError)
    assert (refusal.problem, refusal.fix) == (workers.problem, workers.fix)
    assert "torch 2.5.1+cpu is a CPU-only build" in refusal.problem
    assert f"install a CUDA build of torch in this Python ({PYTHON})" in (refusal.fix or "")


def test_no_gpu_keeps_the_compile_only_way() -> None:
    for build in (FAKE_CPU_ONLY_TORCH, FAKE_CUDA_TORCH, None):
        refusal = refusal_before_compiling(FAKE_NO_DRIVER, build, PYTHON)
        assert (
            refusal is not None
            and refusal.problem == f"measuring needs an NVIDIA GPU on this machine: {FAKE_NO_DRIVER}"
        )
        assert refusal.fix == COMPILE_THEN_MEASURE_FIX


@pytest.mark.parametrize("build", [FAKE_CUDA_TORCH, None], ids=["cuda-torch", "cannot-tell"])
def test_a_cuda_torch_or_an_unknown_one_goes_through(build: TorchBuild | None) -> None:
    assert refusal_before_compiling(FAKE_DRIVER_SEES_A_GPU, build, PYTHON) is None


def test_this_hosts_torch_as_read_decides() -> None:
    """With the driver's answer taken as "a GPU is there": this host's real torch, read from its files,
    is refused where it is a CPU-only build and let through where it is a CUDA one."""
    import torch

    refusal = refusal_before_compiling(FAKE_DRIVER_SEES_A_GPU, installed_torch_build(), sys.executable)
    if torch.version.cuda is None and not getattr(torch.version, "hip", None):
        assert refusal is not None and f"torch {torch.__version__} is a CPU-only build" in refusal.problem
    else:
        assert refusal is None
