"""ktriage: find, bisect, explain and fix performance regressions of Triton GPU kernels.

The package layout follows the pipeline of DESIGN.md:
``spec`` (KernelSpec) -> ``compile`` (with a ``toolchain``) -> artifacts -> ``analyze``
(resources, occupancy) -> ``explain`` (findings, attribution). ``catalog`` holds ready-made specs.
Each package imports only the packages below it: docs/architecture.md lists the layers, and the
import-linter contract in pyproject.toml checks them.
"""

__version__ = "0.1.0"
