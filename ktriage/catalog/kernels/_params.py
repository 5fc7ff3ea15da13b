"""The tutorial kernels' launch parameters, as their wrappers import them (``ktriage.ops.tutorial_params``).

The kernel files keep this import path because their bytes are hashed into spec keys
(``KernelSpec.key``): the rules themselves live with the operators, below the catalog.
"""

from ktriage.ops.tutorial_params import (
    MatmulLaunch,
    RowLaunch,
    cdiv,
    layer_norm_launch,
    matmul_launch,
    next_power_of_2,
    softmax_launch,
    vector_add_launch,
)

__all__ = [
    "MatmulLaunch",
    "RowLaunch",
    "cdiv",
    "layer_norm_launch",
    "matmul_launch",
    "next_power_of_2",
    "softmax_launch",
    "vector_add_launch",
]
