"""The measuring worker's refusal when torch sees no GPU (ktriage.bench.worker.no_gpu_refusal): it names
why, from torch's build and the CUDA driver's answer. "no CUDA GPU is visible ... measure on the GPU
machine" was said on the GPU machine itself when its torch was a CPU-only build.

A GPU that the driver sees with a CPU-only torch cannot be arranged on a CPU host: those cases are
tested on the message-building function with fake facts (named FAKE_...); the wiring (ready_gpu reads
the real torch and asks the real driver) is tested where this host's torch is CPU-only and no GPU is
visible."""

from __future__ import annotations

import pytest

from ktriage.bench.worker import TorchBuild, no_gpu_fix, no_gpu_refusal, ready_gpu
from ktriage.errors import DeviceError

FAKE_CPU_ONLY_TORCH = TorchBuild("2.5.1+cpu", None)
FAKE_CUDA_TORCH = TorchBuild("2.8.0+cu128", "12.8")
FAKE_ROCM_TORCH = TorchBuild("2.5.1+rocm6.2", None, "6.2.41133")
FAKE_DRIVER_SEES_A_GPU = None  # gpu_problem()'s answer where the driver sees a GPU
FAKE_NO_DRIVER = "no CUDA driver on this host (libcuda.so.1 cannot be loaded: ...)"
PYTHON = "/opt/venv/bin/python"
NO_GPU_FIX = no_gpu_fix("B", "`ktriage explain W.json -t OLD -t NEW`")


def test_a_cpu_only_torch_on_a_gpu_host_is_named_with_the_torch_to_install() -> None:
    refusal = no_gpu_refusal(FAKE_CPU_ONLY_TORCH, FAKE_DRIVER_SEES_A_GPU, NO_GPU_FIX, PYTHON)
    assert "torch 2.5.1+cpu is a CPU-only build (torch.version.cuda is None)" in refusal.problem
    fix = refusal.fix or ""
    assert f"install a CUDA build of torch in this Python ({PYTHON})" in fix, fix
    assert f"{PYTHON} -c 'import torch; print(torch.version.cuda, torch.cuda.is_available())'" in fix, fix
    assert "GPU machine" not in fix, fix  # this is the GPU machine


def test_a_rocm_torch_on_a_gpu_host_is_named_rocm_not_cpu_only() -> None:
    """A ROCm build has ``torch.version.cuda`` None too: it was called "CPU-only", which it is not."""
    refusal = no_gpu_refusal(FAKE_ROCM_TORCH, FAKE_DRIVER_SEES_A_GPU, NO_GPU_FIX, PYTHON)
    assert "torch 2.5.1+rocm6.2 is a ROCm build (torch.version.hip is 6.2.41133" in refusal.problem
    assert "ktriage measures on CUDA GPUs" in refusal.problem and "CPU-only" not in refusal.problem
    fix = refusal.fix or ""
    assert f"install a CUDA build of torch in this Python ({PYTHON})" in fix, fix
    assert "GPU machine" not in fix, fix


def test_a_rocm_torch_without_a_gpu_is_named_rocm_with_the_no_gpu_fix() -> None:
    refusal = no_gpu_refusal(FAKE_ROCM_TORCH, FAKE_NO_DRIVER, NO_GPU_FIX, PYTHON)
    assert refusal.problem.startswith(f"no CUDA GPU is visible to the measurement worker: {FAKE_NO_DRIVER}")
    assert "torch 2.5.1+rocm6.2 here is a ROCm build" in refusal.problem and "CPU-only" not in refusal.problem
    assert "a CUDA build of torch" in refusal.problem and refusal.fix == NO_GPU_FIX


def test_a_cuda_torch_the_driver_cannot_serve_is_named() -> None:
    refusal = no_gpu_refusal(FAKE_CUDA_TORCH, FAKE_DRIVER_SEES_A_GPU, NO_GPU_FIX, PYTHON)
    assert "torch 2.8.0+cu128 (built for CUDA 12.8) sees no GPU, though the CUDA driver sees one" in refusal.problem
    assert "GPU machine" not in (refusal.fix or "") and PYTHON in (refusal.fix or "")


@pytest.mark.parametrize("build", [FAKE_CPU_ONLY_TORCH, FAKE_CUDA_TORCH], ids=["cpu-only", "cuda"])
def test_no_gpu_at_all_keeps_the_fix_of_measuring_on_the_gpu_machine(build: TorchBuild) -> None:
    refusal = no_gpu_refusal(build, FAKE_NO_DRIVER, NO_GPU_FIX, PYTHON)
    assert refusal.problem.startswith(f"no CUDA GPU is visible to the measurement worker: {FAKE_NO_DRIVER}")
    assert ("CPU-only build as well" in refusal.problem) == (build.cuda is None)
    assert refusal.fix == NO_GPU_FIX


def test_ready_gpu_names_this_hosts_cpu_only_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real worker start on a host whose torch is CPU-only, with the real driver probe (no GPU is
    visible: CUDA_VISIBLE_DEVICES="" hides any)."""
    import torch

    if torch.version.cuda is not None:
        pytest.skip("this host's torch is a CUDA build")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(DeviceError) as refused:
        ready_gpu(l2_flush=False, fix=NO_GPU_FIX)
    problem = refused.value.problem
    assert f"torch {torch.__version__} here is a CPU-only build as well" in problem, problem
    assert problem.startswith("no CUDA GPU is visible to the measurement worker: ") and refused.value.fix == NO_GPU_FIX
