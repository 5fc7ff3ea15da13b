"""Which GPUs of this host a run uses (``--gpus all|N|0,2,5``), and how work is placed on them.

The rule that makes the numbers comparable stays: every variant of one comparison is timed
interleaved in one process on one GPU. What spreads over GPUs is work that is independent of other
work: the inputs of a bench sweep (one job = every variant of one input, so each input's reference
is measured on the GPU its comparison runs on), and the candidates of one k-ary bisect round (each
group of candidates with both endpoints, on its own GPU: :func:`split_round`).

Indices are the host's GPU indices in PCI bus order (``nvidia-smi``'s, NVML's): each measurement
worker is started with ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` and ``CUDA_VISIBLE_DEVICES`` set to its GPU,
so inside it the GPU is ``cuda:0`` and its index means the same in the parent's NVML readings.
Pure, except :func:`visible_gpus` and :func:`host_gpus` (read the environment and NVML).

When NVML cannot be read (nvidia-ml-py missing, no driver) and ``CUDA_VISIBLE_DEVICES`` is unset,
the host's GPUs are not counted: a run takes GPU 0, as without ``--gpus``. A ``--gpus`` that asks
for another GPU is then refused rather than assumed: a worker pinned to a GPU that is not there
would fail its whole share of the inputs (or candidates); ``--gpus all`` (as many as there are) takes
GPU 0 with a warning that says so.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import TypeVar

from ktriage.errors import KtriageError, Worded, option, spelled, worded
from ktriage.wording import plural

T = TypeVar("T")
log = logging.getLogger("ktriage.gpus")

GPUS_HELP = (
    "GPUs to spread the work over: all, a count N (the first N), or indices 0,2,5 (nvidia-smi's; one GPU: 3,). "
    "Each input (each bisect candidate group) is measured on one GPU with its reference; default: one GPU. "
    "With --cluster: all or a count of the cluster's GPUs."
)


def _gpus(value: str | None = None) -> Worded:
    """``gpus='0,1' (--gpus 0,1)``: every refusal here reaches kt.bench, kt.bench_recorded and kt.bisect
    callers too (``gpus=``), as well as the command line (``--gpus``)."""
    return option("gpus", "--gpus", value)


_EXAMPLES = worded(
    lambda o: f"e.g. {spelled(_gpus('all'), o)}, {spelled(_gpus('2'), o)} or {spelled(_gpus('0,2,5'), o)}"
)


def visible_gpus() -> list[int]:
    """The GPU indices this process may use: ``CUDA_VISIBLE_DEVICES`` when set (indices only),
    else every GPU NVML counts, else ``[0]`` (NVML not readable: see :func:`counted_gpus`)."""
    return counted_gpus()[0]


def counted_gpus() -> tuple[list[int], str | None]:
    """:func:`visible_gpus`, and why they were not counted (NVML not readable; then ``[0]``), or None."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        parts = [p.strip() for p in env.split(",") if p.strip()]
        if not all(p.isdigit() for p in parts):
            raise KtriageError(
                f"CUDA_VISIBLE_DEVICES={env!r} names GPUs by UUID or MIG id",
                worded(lambda o: f"set it to GPU indices (e.g. 0,1) or unset it and pass {spelled(_gpus('0,1'), o)}"),
            )
        return [int(p) for p in parts], None
    try:
        import pynvml  # nvidia-ml-py
    except ImportError:
        return [0], "nvidia-ml-py (pynvml) is not installed in this Python"
    try:
        pynvml.nvmlInit()
        return list(range(int(pynvml.nvmlDeviceGetCount()))), None
    except Exception as exc:  # no driver, a driver/library mismatch: NVML's own words
        return [0], f"NVML: {str(exc) or type(exc).__name__}"


def select_gpus(spec: str | None, visible: Sequence[int], uncounted: str | None = None) -> list[int] | None:
    """The GPUs ``--gpus spec`` names among ``visible`` (None: no --gpus, one GPU as before).

    ``all``: every visible GPU; ``N``: the first N; ``0,2,5``: exactly those, each visible.
    ``uncounted``: why the host's GPUs were not counted (``visible`` is then the assumed ``[0]``):
    ``all`` takes GPU 0 with a warning, and asking for any other GPU is refused (it cannot be checked)."""
    if spec is None:
        return None
    text = spec.strip().lower()
    if not visible:
        raise KtriageError(
            worded(lambda o: f"{spelled(_gpus(spec), o)}: no GPU is visible on this host"),
            worded(lambda o: f"run on a GPU host (or leave {spelled(_gpus(), o)} out)"),
        )
    if uncounted is not None:
        if text == "all":
            log.warning(
                worded(
                    lambda o: (
                        f"{spelled(_gpus('all'), o)}: could not count this host's GPUs ({uncounted}); using GPU 0 only"
                    )
                )
            )
            return [0]
        _refuse_uncounted(spec, text, uncounted)
    if text == "all":
        return list(visible)
    if text.isdigit():  # a count (one GPU by index: "2,")
        n = int(text)
        if n == 0:
            raise KtriageError(
                worded(lambda o: f"{spelled(_gpus(spec), o)} is a count of no GPUs"),
                worded(
                    lambda o: (
                        f"give a count of 1 or more, {spelled(_gpus('all'), o)}, or indices such as {spelled(_gpus('0,'), o)}"
                    )
                ),
            )
        if n > len(visible):
            raise KtriageError(
                worded(
                    lambda o: (
                        f"{spelled(_gpus(spec), o)}: only {plural(len(visible), 'GPU')} visible ({_names(visible)})"
                    )
                ),
                worded(lambda o: f"give at most {spelled(_gpus(str(len(visible))), o)}, or {spelled(_gpus('all'), o)}"),
            )
        return list(visible[:n])
    try:
        picked = [int(p) for p in text.split(",") if p.strip() != ""]
    except ValueError:
        raise KtriageError(
            worded(lambda o: f"{spelled(_gpus(spec), o)} is not all, a count or a list of GPU indices"), _EXAMPLES
        ) from None
    if not picked or any(p < 0 for p in picked):
        raise KtriageError(worded(lambda o: f"{spelled(_gpus(spec), o)} names no GPU"), _EXAMPLES)
    if len(set(picked)) != len(picked):
        raise KtriageError(worded(lambda o: f"{spelled(_gpus(spec), o)} names a GPU twice"), "list each GPU index once")
    missing = [p for p in picked if p not in visible]
    if missing:
        raise KtriageError(
            worded(
                lambda o: (
                    f"{spelled(_gpus(spec), o)}: GPU {', '.join(map(str, missing))} is not visible here ({_names(visible)})"
                )
            ),
            "pick among the visible GPUs (nvidia-smi -L lists them)",
        )
    return picked


def host_gpus(spec: str | None) -> list[int] | None:
    """``--gpus spec`` resolved against this host's visible GPUs (None: no --gpus; NVML not read)."""
    if spec is None:
        return None
    visible, uncounted = counted_gpus()
    return select_gpus(spec, visible, uncounted)


def _refuse_uncounted(spec: str, text: str, uncounted: str) -> None:
    """Refuse a ``--gpus`` count above 1, or an index other than 0, on a host whose GPUs were not
    counted; a malformed one is left to :func:`select_gpus`, which names its own problem."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts or not all(p.isdigit() for p in parts):
        return
    beyond = int(text) > 1 if text.isdigit() else any(int(p) != 0 for p in parts)
    if beyond:
        raise KtriageError(
            worded(
                lambda o: (
                    f"{spelled(_gpus(spec), o)} asks for GPUs beyond GPU 0, but this host's GPUs could not be counted ({uncounted}); "
                    "a worker pinned to a GPU that is not there would fail its whole share of the work"
                )
            ),
            worded(
                lambda o: (
                    "install nvidia-ml-py in this Python (pip install nvidia-ml-py) so that ktriage counts them, or name "
                    f"them with CUDA_VISIBLE_DEVICES (e.g. CUDA_VISIBLE_DEVICES=0,1 with {spelled(_gpus('all'), o)}); or leave {spelled(_gpus(), o)} "
                    "out (one GPU)"
                )
            ),
        )


def select_gpu_count(spec: str | None, available: int) -> int:
    """How many GPUs ``--gpus spec`` asks of a cluster that has ``available`` (its timing slots).

    On a cluster, Ray places each measurement worker on a free GPU of some node, so only ``all`` or
    a count can be asked; indices name GPUs of one host and are refused. None: one GPU, as before."""
    if spec is None:
        return 1
    text = spec.strip().lower()
    if text == "all":
        return max(1, available)
    if not text.isdigit():
        raise KtriageError(
            worded(
                lambda o: (
                    f"{spelled(_gpus(spec), o)} with {o('cluster', '--cluster')}: GPU indices name GPUs of one host"
                )
            ),
            worded(
                lambda o: (
                    f"on a cluster give {spelled(_gpus('all'), o)} or a count (e.g. {spelled(_gpus('4'), o)}): Ray places each worker on a free GPU"
                )
            ),
        )
    n = int(text)
    if n == 0:
        raise KtriageError(
            worded(lambda o: f"{spelled(_gpus(spec), o)} is a count of no GPUs"),
            worded(lambda o: f"give a count of 1 or more, or {spelled(_gpus('all'), o)}"),
        )
    if n > available:
        raise KtriageError(
            worded(lambda o: f"{spelled(_gpus(spec), o)}: the cluster has {plural(available, 'GPU')} for timing"),
            worded(
                lambda o: (
                    f"give at most {spelled(_gpus(str(available)), o)}, or {spelled(_gpus('all'), o)} (ray status lists the GPUs)"
                )
            ),
        )
    return n


def _names(visible: Sequence[int]) -> str:
    return "GPUs " + ", ".join(map(str, visible))


def worker_env(gpu: int) -> dict[str, str]:
    """The environment of the measurement worker pinned to ``gpu`` (set before CUDA starts in it)."""
    return {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": str(gpu)}


def split_round(candidates: Sequence[T], gpus: Sequence[int]) -> list[tuple[int, list[T]]]:
    """The candidates of one bisect round over the GPUs: contiguous groups in search order, as even
    as possible, each for one GPU, where it is timed interleaved with both endpoints (so each GPU
    measures its own endpoints: no verdict compares samples of two GPUs). GPUs beyond the number of
    candidates get nothing; an empty round gives no groups."""
    if not gpus:
        raise KtriageError("split_round needs at least one GPU", "pass the GPU indices the round may use")
    used = list(gpus[: len(candidates)])
    out: list[tuple[int, list[T]]] = []
    start = 0
    for i, gpu in enumerate(used):
        size = len(candidates) // len(used) + (1 if i < len(candidates) % len(used) else 0)
        out.append((gpu, list(candidates[start : start + size])))
        start += size
    return out
