"""The fix line of a failed compile names the cause a user can act on (pure logic on real messages)."""

from __future__ import annotations

from ktriage.compile.compiler import CompileFailure
from ktriage.explain.failures import fix_for
from ktriage.spec.model import KernelSpec

# what Triton 3.6.0 said for benchmarks/record/h200b/compiled_model.workload.json.gz, a torch.compile
# recording made before `ktriage record` wrote stubs for inductor's host-side runtime
OLD_INDUCTOR_RECORDING = (
    "importing ktr_c7awykgdqe25n7jkwxsfdq5ecnsl25hblxhdy3qfipwbc3lhhrok_e3bf0b9b failed: TypeError: The last "
    "parameter to Concatenate should be a ParamSpec variable or ellipsis.; compiling "
    "triton_per_fused_add_mul_native_layer_norm_rsqrt_sub_var_mean_0 from its own source failed too: line 5 "
    "`from torch._inductor.runtime import triton_helpers, triton_heuristics`: TypeError: The last parameter to "
    "Concatenate should be a ParamSpec variable or ellipsis."
)


def _failure(message: str) -> CompileFailure:
    spec = KernelSpec("k", "m:k", {"x": "*fp32"}, {})
    return CompileFailure(spec, None, "frontend", "import", message)  # type: ignore[arg-type]


def test_an_old_inductor_recording_is_told_to_record_again() -> None:
    fix = fix_for(_failure(OLD_INDUCTOR_RECORDING))
    assert fix is not None and "record the program again" in fix and "torch._inductor.runtime" in fix


def test_other_import_failures_keep_the_general_fix() -> None:
    message = (
        "importing mymod failed: RuntimeError: no GPU; compiling k from its own source failed too: line 3 `x = f()`"
    )
    fix = fix_for(_failure(message))
    assert fix is not None and "fails to import in a compile worker" in fix and "record the program again" not in fix


# what Triton 3.3.1 said for fla-core 0.6.0's chunk_hgrn (benchmarks/corpus/fla2/explain/fla2_hgrn.json.gz)
FLA_ON_AN_OLDER_TRITON = (
    "importing fla.ops.hgrn.chunk failed: AttributeError: module 'triton.language.core' has no attribute "
    "'make_tensor_descriptor'; compiling chunk_hgrn_fwd_kernel_h from its own source failed too: line 30 `exp = "
    "__import__('importlib').import_module('fla.ops.utils.op').exp`: AttributeError: module 'triton.language.core' "
    "has no attribute 'make_tensor_descriptor'"
)


def test_a_triton_api_the_toolchain_lacks_is_named_not_blamed_on_the_worker() -> None:
    """The general fix ("make them run without a GPU") sent the user after the wrong cause: no worker
    change makes Triton 3.3.1 have tl.make_tensor_descriptor."""
    fix = fix_for(_failure(FLA_ON_AN_OLDER_TRITON))
    assert fix is not None
    assert "triton.language.make_tensor_descriptor" in fix and "cannot compile" in fix
    assert "without a GPU" not in fix


# what Triton 3.6.0 said for vllm 0.33.0's mamba _bmm_chunk_fwd_kernel by its file: the statement that failed
# is past the one line's MAX_LINE, so the report's message never shows it
VLLM_REEXPORTED_TRITON = (
    "importing /src/vllm/model_executor/layers/mamba/ops/ssd_bmm.py failed: PackageNotFoundError: No package "
    "metadata was found for torch; compiling _bmm_chunk_fwd_kernel from its own source failed too: line 12 "
    "`from vllm.triton_utils import tl, triton`: PackageNotFoundError: No package metadata was found for torch"
)


def test_the_fix_quotes_the_statement_of_the_kernels_source_that_failed() -> None:
    """Before, the fix said "the statements of it the kernel needs (quoted above)", and the line above it
    was cut before the statement: the user was sent to text no report showed."""
    fix = fix_for(_failure(VLLM_REEXPORTED_TRITON))
    assert fix is not None and "quoted above" not in fix
    assert "so does line 12 `from vllm.triton_utils import tl, triton`, which the kernel needs" in fix
    assert "can be imported from triton itself" in fix
