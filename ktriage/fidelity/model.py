"""One launch the JIT-equivalence check runs, and what the check needs to know about it.

A case is a Launch (spec/launch.py: argument values as the library passes them) plus which autotune
config the fake benchmarker picks and the Triton releases that have the language features the kernel
uses (a tensor-descriptor kernel cannot exist before 3.4). Its own module, below the lists of cases
(``cases.py``: the catalog's, ``thirdparty.py``: real third-party kernels), which both build it.
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
