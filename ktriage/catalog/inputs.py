"""Input sweeps, numbered like TritonBench's ``--input-id`` so that ``--input 7`` means the same shape.

Sources: tritonbench/operators/layer_norm/operator.py (M=4096, N=512*i for i in 2..31) and
tritonbench/operators/embedding/operator.py ((B,T,D) in {(32,512,768),(8,2048,4096)}, V=2**10..2**17),
tritonbench/operators/rms_norm/operator.py (M=2048, H=2**10..2**15; called N here like layer_norm's).
The tutorial sweeps are this project's own, small, and chosen to include sizes that are not
multiples of 16 (so that specs without divisibility hints are covered too).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class InputCase:
    """One input of a sweep: its id and the shape facts a recipe needs (and ``--input K=V`` matches)."""

    id: int
    facts: dict[str, int] = field(default_factory=dict)

    def label(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.facts.items())


def layer_norm_inputs() -> list[InputCase]:
    return [InputCase(i, {"M": 4096, "N": 512 * n}) for i, n in enumerate(range(2, 32))]


def rms_norm_inputs() -> list[InputCase]:
    """TritonBench rms_norm: x of shape (M=2048, H) for H = 2**10..2**15 (ids 0..5; id 4 is N=16384)."""
    return [InputCase(i, {"M": 2048, "N": 2**e}) for i, e in enumerate(range(10, 16))]


def embedding_inputs() -> list[InputCase]:
    cases: list[InputCase] = []
    for b, t, d in [(32, 512, 768), (8, 2048, 4096)]:
        for v in [2**e for e in range(10, 18)]:
            cases.append(InputCase(len(cases), {"B": b, "T": t, "D": d, "V": v}))
    return cases


def vector_add_inputs() -> list[InputCase]:
    return [InputCase(i, {"N": n}) for i, n in enumerate([1000, 65536, 1048576, 16777217])]


def softmax_inputs() -> list[InputCase]:
    return [InputCase(i, {"M": 4096, "N": n}) for i, n in enumerate([256, 1000, 3072, 8192])]


def tutorial_layer_norm_inputs() -> list[InputCase]:
    return [InputCase(i, {"M": 4096, "N": n}) for i, n in enumerate([1024, 4096, 4608, 8192, 12000])]


def matmul_inputs() -> list[InputCase]:
    shapes = [(512, 512, 512), (1000, 1000, 1000), (2048, 2048, 2048), (4096, 4096, 4096)]
    return [InputCase(i, {"M": m, "N": n, "K": k}) for i, (m, n, k) in enumerate(shapes)]
