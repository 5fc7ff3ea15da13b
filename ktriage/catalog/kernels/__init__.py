"""Tutorial-style Triton kernels written for ktriage, with their torch launch wrappers.

The kernel modules import triton and torch; the catalog never imports them on the host: it only
points at their files and computes their launch parameters with :mod:`._params` (pure Python),
the same module the wrappers use, so recipe and real launch cannot drift apart.
"""

from pathlib import Path

KERNELS_DIR = Path(__file__).resolve().parent
