"""What every Liger-Kernel recipe shares: the supported releases, the pip requirement and Liger's
``calculate_settings`` (BLOCK_SIZE/num_warps per row length).

The recipes themselves are with their operators (``ktriage/ops/layer_norm.py``, ``rms_norm.py``,
``embedding.py``), each restating from the release's source what its host code passes to the kernel:
which tensors (and their dtypes), which strides and sizes, the constexprs, num_warps/num_stages (absent
means Triton's default 4/3) and the grid. The values go through ktriage.spec.specialize, so ints of
1 and multiples of 16 are specialized as the JIT would. Releases: 0.5.10 (the TritonBench report's
version, the default) and 0.8.5 (the latest release read).
"""

from __future__ import annotations

from ktriage.errors import KtriageError
from ktriage.ops.inputs import InputCase
from ktriage.ops.tutorial_params import next_power_of_2

DEFAULT_VERSION = "0.5.10"
LATEST_VERSION = "0.8.5"
VERSIONS = (DEFAULT_VERSION, LATEST_VERSION)


def requirement(version: str) -> str:
    return f"liger-kernel=={version}"


def calculate_settings(n: int) -> tuple[int, int]:
    """Liger's (BLOCK_SIZE, num_warps) rule on CUDA (unchanged from v0.0.1 through 0.8.5)."""
    block = next_power_of_2(n)
    if block > 65536:
        raise KtriageError(f"Liger cannot launch a row of {n} elements (block {block} > 65536)", "use N <= 65536")
    if block >= 32768:
        return block, 32
    if block >= 8192:
        return block, 16
    if block >= 2048:
        return block, 8
    return block, 4


def meta(op: str, mode: str, case: InputCase, dtype: str, version: str, **extra: object) -> dict[str, object]:
    return {
        "op": op,
        "mode": mode,
        "input_id": case.id,
        "shape": dict(case.facts),
        "dtype": dtype,
        "package_version": version,
        **extra,
    }
