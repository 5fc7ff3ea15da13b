"""The GPU's identity and state (NVML), recorded before and after a run into ``RunInfo.gpu``.

Why: a latency is only comparable to another taken on the same GPU model, driver and clocks.
Clocks and temperature are read before and after each run, so a report can say "the SM clock fell
from 1980 to 1755 MHz during this run" instead of silently comparing throttled and unthrottled
numbers. ktriage never changes clocks or power limits (shared machines): it records them.

NVML (``pynvml`` from nvidia-ml-py) is optional: without it, torch / the CUDA driver still give the
name, SM count and driver version, and ``nvml`` says why the rest is missing.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from ktriage.schema.jsontypes import JSONObject


def _nvml() -> Any:
    import pynvml  # nvidia-ml-py

    pynvml.nvmlInit()
    return pynvml


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _try(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception:
        return None


def _cuda_version_text(v: int | None) -> str | None:
    """NVML/CUDA encode 13.0 as 13000."""
    return None if v is None else f"{v // 1000}.{(v % 1000) // 10}"


def gpu_state(device: int = 0) -> JSONObject:
    """What changes during a run: clocks (MHz), temperature (C), power (W), throttle reasons."""
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    try:
        nv = _nvml()
        h = nv.nvmlDeviceGetHandleByIndex(device)
    except Exception as exc:
        return {"time": now, "nvml": f"unavailable: {type(exc).__name__}: {exc}"}
    power_mw = _try(nv.nvmlDeviceGetPowerUsage, h)
    return {
        "time": now,
        "sm_clock_mhz": _try(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM),
        "mem_clock_mhz": _try(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_MEM),
        "temperature_c": _try(nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU),
        "power_w": None if power_mw is None else power_mw / 1000.0,
        "throttle_reasons": _try(nv.nvmlDeviceGetCurrentClocksEventReasons, h)
        if hasattr(nv, "nvmlDeviceGetCurrentClocksEventReasons")
        else _try(nv.nvmlDeviceGetCurrentClocksThrottleReasons, h),
        "utilization_pct": getattr(_try(nv.nvmlDeviceGetUtilizationRates, h), "gpu", None),
    }


def _sm_count(device: int) -> int | None:
    try:
        import torch

        if torch.cuda.is_available():
            return int(torch.cuda.get_device_properties(device).multi_processor_count)
    except ImportError:
        pass
    try:
        from ktriage.measure.driver import device_attribute, ensure_context

        return device_attribute(ensure_context(device), "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT")
    except Exception:
        return None


def gpu_identity(device: int = 0) -> JSONObject:
    """What does not change during a run: name, uuid, driver, CUDA driver version, SMs, max clocks."""
    info: JSONObject = {"index": device, "sm_count": _sm_count(device)}
    try:
        nv = _nvml()
        h = nv.nvmlDeviceGetHandleByIndex(device)
    except Exception as exc:
        info["nvml"] = f"unavailable: {type(exc).__name__}: {exc}"
        try:
            import torch

            if torch.cuda.is_available():
                p = torch.cuda.get_device_properties(device)
                info.update(
                    name=p.name,
                    compute_capability=f"{p.major}.{p.minor}",
                    torch_cuda=torch.version.cuda,
                )
        except ImportError:
            pass
        return info
    cc = _try(nv.nvmlDeviceGetCudaComputeCapability, h)
    power_mw = _try(nv.nvmlDeviceGetEnforcedPowerLimit, h)
    memory = _try(nv.nvmlDeviceGetMemoryInfo, h)
    info.update(
        name=_text(_try(nv.nvmlDeviceGetName, h)),
        uuid=_text(_try(nv.nvmlDeviceGetUUID, h)),
        driver=_text(_try(nv.nvmlSystemGetDriverVersion)),
        cuda_driver=_cuda_version_text(_try(nv.nvmlSystemGetCudaDriverVersion)),
        compute_capability=None if cc is None else f"{cc[0]}.{cc[1]}",
        max_sm_clock_mhz=_try(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_SM),
        max_mem_clock_mhz=_try(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_MEM),
        power_limit_w=None if power_mw is None else power_mw / 1000.0,
        memory_total_mib=None if memory is None else memory.total // (1024 * 1024),
        persistence_mode=_try(nv.nvmlDeviceGetPersistenceMode, h),
    )
    return info


class GpuRecorder:
    """Fills ``RunInfo.gpu``: identity once, state ``before`` at start and ``after`` at the end.

    Usage: ``rec = GpuRecorder(); run.gpu = rec.start(); ...; run.gpu = rec.finish()``.
    """

    def __init__(self, device: int = 0) -> None:
        self.device = device
        self.record: JSONObject = {}

    def start(self) -> JSONObject:
        self.record = {**gpu_identity(self.device), "before": gpu_state(self.device)}
        return self.record

    def finish(self) -> JSONObject:
        if not self.record:
            self.start()
        self.record["after"] = gpu_state(self.device)
        return self.record
