"""The launches the JIT-equivalence check runs: catalog ops and real third-party kernels.

A case is a Launch (spec/launch.py: argument values as the library passes them) plus what the check
needs to know: which autotune config the fake benchmarker picks, and the Triton releases that have
the language features the kernel uses (a tensor-descriptor kernel cannot exist before 3.4).
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import Version

from ktriage.spec.launch import Launch


@dataclass(frozen=True)
class FidelityCase:
    """One launch to check. ``catalog``: it comes from a catalog recipe, so the recipe's spec must
    also equal the spec of the JIT-level launch. ``pass_options``: the library passes num_warps /
    num_stages itself (False for autotuned kernels, whose configs carry them)."""

    name: str
    launch: Launch
    autotune_pick: int = 0
    min_triton: str = "3.2.0"
    min_reason: str = ""
    max_triton: str | None = None
    max_reason: str = ""
    catalog: bool = False
    pass_options: bool = True

    def supports(self, triton_version: str) -> bool:
        v = Version(triton_version)
        return v >= Version(self.min_triton) and (self.max_triton is None or v <= Version(self.max_triton))

    def version_note(self, triton_version: str) -> str:
        """Why ``triton_version`` cannot run this case."""
        if self.max_triton is not None and Version(triton_version) > Version(self.max_triton):
            return f"needs Triton <= {self.max_triton}" + (f" ({self.max_reason})" if self.max_reason else "")
        return f"needs Triton >= {self.min_triton}" + (f" ({self.min_reason})" if self.min_reason else "")


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
