"""Kernels written for the JIT-equivalence check: language features no catalog op exercises.

They import triton only (no torch), so they load in any toolchain's interpreter; the check launches
them through their decorators like any library kernel (fidelity/thirdparty.py describes the launches).
"""

from pathlib import Path

KERNELS_DIR = Path(__file__).resolve().parent
