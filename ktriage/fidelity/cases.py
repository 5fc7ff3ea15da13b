"""The launches the JIT-equivalence check runs: catalog ops and real third-party kernels.

Each is a :class:`ktriage.fidelity.model.FidelityCase`; this module lists the catalog's
(:data:`CATALOG_SELECTION`) and all of them (with ``thirdparty.py``'s).
"""

from __future__ import annotations

from ktriage.fidelity.model import FidelityCase

# (op, mode, input selectors): the layer_norm cliffs (N=4096 -> 4608, 8192 -> 8704), both embedding sweeps,
# rms_norm at N=1024 and N=16384 (issue 9: the bf16 backward spills there on 3.9.0; fidelity/thirdparty.py adds bf16).
CATALOG_SELECTION: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("liger.layer_norm", "bwd", ("0", "7", "15")),
    ("liger.layer_norm", "fwd", ("7",)),
    ("liger.embedding", "bwd", ("0", "8")),
    ("liger.embedding", "fwd", ("0",)),
    ("liger.layer_norm@0.8.5", "bwd", ("7",)),
    ("liger.layer_norm@0.8.5", "fwd", ("7",)),
    ("liger.embedding@0.8.5", "bwd", ("0",)),
    ("liger.rms_norm", "bwd", ("0", "4")),
    ("liger.rms_norm", "fwd", ("4",)),
    ("liger.rms_norm@0.8.5", "bwd", ("4",)),
    ("liger.rms_norm@0.8.5", "fwd", ("4",)),
    ("tutorial.vector_add", "fwd", ("0",)),
    ("tutorial.softmax", "fwd", ("0",)),
    ("tutorial.layer_norm", "fwd", ("0",)),
    ("tutorial.matmul", "fwd", ("0",)),
)


def catalog_cases(target: str = "sm_90") -> list[FidelityCase]:
    """A few inputs of every catalog op, as its recipe describes the library's launch."""
    from ktriage.catalog.registry import expand_launches

    cases = []
    for op, mode, inputs in CATALOG_SELECTION:
        for launch in expand_launches(op, mode=mode, inputs=list(inputs), target=target):
            cases.append(FidelityCase(name=launch.name, launch=launch, catalog=True))
    return cases


def all_cases(target: str = "sm_90") -> list[FidelityCase]:
    """The catalog cases and the third-party ones (fidelity/thirdparty.py)."""
    from ktriage.fidelity.thirdparty import thirdparty_cases

    return [*catalog_cases(target), *thirdparty_cases(target)]
