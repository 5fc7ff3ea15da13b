"""The environment variables that change what Triton compiles, removed before a toolchain runs.

Why: Triton reads knobs from the environment (``PTXAS_OPTIONS``, ``TRITON_PTXAS_PATH``,
``DISABLE_LLVM_OPT``, ``TRITON_DISABLE_LINE_INFO``, ...). A user who has one set in their shell
would otherwise get other cubins than the JIT gives everyone else, and two machines would disagree
on the same spec. ktriage's compiles run with none of them; a ptxas or option that the user wants is
a toolchain spec item (``ptxas=``, ``ptxas-options=``), which is recorded in the toolchain id.

Runs inside a toolchain's interpreter too: stdlib only.
"""

from __future__ import annotations

from collections.abc import Mapping

# Exact names, and prefixes of families, that Triton (3.2 to 3.9) or its LLVM/MLIR read at compile time.
COMPILE_KNOBS = (
    "PTXAS_OPTIONS",
    "DISABLE_PTXAS_OPT",
    "DISABLE_LLVM_OPT",
    "DISABLE_MMA_V3",
    "DISABLE_MMA_V5",
    "LLVM_IR_ENABLE_DUMP",
    "LLVM_ENABLE_TIMING",
    "LLVM_PASS_PLUGIN_PATH",
    "MLIR_ENABLE_DUMP",
    "MLIR_ENABLE_TIMING",
    "MLIR_ENABLE_REMARK",
    "MLIR_ENABLE_DIAGNOSTICS",
    "NVPTX_ENABLE_DUMP",
    "USE_IR_LOC",
    "ENABLE_TMA",
    "ENABLE_PINGPONG",
)
KNOB_PREFIXES = ("TRITON_",)
# TRITON_* variables that do not change the compiled code and that ktriage itself sets.
KEPT = ("TRITON_CACHE_DIR", "TRITON_HOME")


def compile_environment(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without the variables that would change Triton's output (see the module docstring)."""
    clean = {}
    for name, value in env.items():
        if name in KEPT:
            clean[name] = value
        elif name in COMPILE_KNOBS or name.startswith(KNOB_PREFIXES):
            continue
        else:
            clean[name] = value
    return clean


def removed_knobs(env: Mapping[str, str]) -> list[str]:
    """The names :func:`compile_environment` drops (to tell the user once)."""
    return sorted(set(env) - set(compile_environment(env)))
