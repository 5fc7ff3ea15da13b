"""ktriage record on Triton's real launch path with only the GPU driver faked (issue 17, CPU side).

The recorded program is ktriage/insitu/jitrun.py in a toolchain's interpreter launching a library's
kernel with the values its host code passes; the hook is injected from outside by ``ktriage record``
(a sitecustomize on PYTHONPATH), as it would be around a training script on a GPU host.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from record_helpers import record_cases

from ktriage.analyze.artifact import analyze_artifact
from ktriage.analyze.cuobjdump import run_cuobjdump
from ktriage.catalog.registry import expand_launches
from ktriage.compile.compiler import Artifact, Compiler
from ktriage.fidelity.model import FidelityCase
from ktriage.fidelity.thirdparty import autotuned_matmul_case, fla_cases
from ktriage.record.workload import load_workload
from ktriage.spec.launch import Launch
from ktriage.spec.model import KernelSpec
from ktriage.spec.specialize import Ptr
from ktriage.toolchain.supported import SUPPORTED_TRITON

pytestmark = pytest.mark.slow

SPEC_FIELDS = (
    "signature",
    "constexprs",
    "divisible_by_16",
    "equal_to_1",
    "num_warps",
    "num_stages",
    "num_ctas",
    "maxnreg",
    "target",
)


def _fields(spec: KernelSpec) -> dict[str, object]:
    data = spec.to_json()
    return {k: data[k] for k in SPEC_FIELDS}


def test_liger_layer_norm_bwd_records_the_catalog_spec(toolchain, tmp_path: Path) -> None:
    """Liger 0.5.10's layer_norm backward at N=4608, recorded: the spec is the catalog recipe's
    (`liger.layer_norm --bwd -i N=4608`), compiled from the snapshot it has the same resources."""
    tc = toolchain("triton==3.3.1")
    (launch,) = expand_launches("liger.layer_norm", mode="bwd", inputs=["N=4608"], target="sm_90")
    catalog = launch.to_spec()
    code, out = record_cases(tc.python, [FidelityCase(name=launch.name, launch=launch)], tmp_path)
    assert code == 0
    workload = load_workload(out)
    assert not workload.not_captured
    (kernel,) = workload.kernels
    assert kernel.function == catalog.source_function() and kernel.package == "liger-kernel==0.5.10"
    (inp,) = kernel.inputs
    recorded = inp.spec
    assert _fields(recorded) == _fields(catalog)
    assert inp.jit_check == "same"  # against what this JIT passed to triton.compile in the recorded program
    assert recorded.grid == catalog.grid
    assert recorded.package is not None and recorded.package.startswith("snapshot:")
    # the snapshot carries the kernel's module and what it imports from its package, not the whole library
    files = set(workload.snapshots[kernel.snapshot]["files"])
    assert {"liger_kernel/ops/layer_norm.py", "liger_kernel/ops/utils.py", "liger_kernel/utils.py"} <= files
    assert "liger_kernel/transformers/layer_norm.py" not in files
    with Compiler(jobs=1, cache_dir=tmp_path / "artifacts") as compiler:
        ours, theirs = compiler.compile(recorded, tc), compiler.compile(catalog, tc)
        assert isinstance(ours, Artifact) and isinstance(theirs, Artifact)
        (r_ours, o_ours), (r_cat, o_cat) = analyze_artifact(ours), analyze_artifact(theirs)
    for field in ("registers", "stack_bytes", "spill_store_bytes", "spill_load_bytes", "shared_bytes", "sass_opcodes"):
        assert getattr(r_ours, field) == getattr(r_cat, field), field
    assert o_ours == o_cat


def test_autotuned_matmul_records_configs_and_choice(toolchain, tmp_path: Path) -> None:
    """An autotuned tl.dot matmul: the config list, the chosen config (the fake benchmarker picks
    config 1) and the spec with that config's block sizes, warps and stages."""
    tc = toolchain("triton==3.4.0")
    case = autotuned_matmul_case("sm_90")
    code, out = record_cases(tc.python, [case], tmp_path)
    assert code == 0
    (kernel,) = load_workload(out).kernels
    configs = kernel.autotune_configs
    assert configs is not None and len(configs) >= 2
    (inp,) = kernel.inputs
    chosen = inp.autotune_choice
    assert chosen == configs[case.autotune_pick]
    spec = inp.spec
    for name, value in chosen["kwargs"].items():
        assert spec.constexprs[name] == value
    assert (spec.num_warps, spec.num_stages) == (chosen["num_warps"], chosen["num_stages"])
    assert inp.count == 1  # the benchmarking launches are not the program's
    assert inp.jit_check == "same"  # compiled while tuning, filed under the final launch


@pytest.mark.parametrize("version", SUPPORTED_TRITON)
def test_the_hook_on_every_supported_triton(version: str, toolchain, tmp_path: Path) -> None:
    """One wrapper per launch path for Triton 3.2 to 3.9: a kernel under autotune over heuristics over
    jit records its config list, the chosen config, the heuristic's value, and a spec that is what the
    JIT passed to triton.compile (3.2's AttrsDescriptor is not compared)."""
    tc = toolchain(f"triton=={version}")
    kernels = Path(__file__).resolve().parent.parent / "kernels_decorated.py"
    launch = Launch(
        name="heuristic_autotuned",
        source=f"{kernels}:heuristic_autotuned_kernel",
        package=None,
        args=(("x_ptr", Ptr("fp32")), ("y_ptr", Ptr("fp32")), ("n", 4096)),
    )
    case = FidelityCase(name="heuristic_autotuned", launch=launch, autotune_pick=1, pass_options=False)
    code, out = record_cases(tc.python, [case], tmp_path)
    assert code == 0
    workload = load_workload(out)
    assert workload.host["triton"] == version and not workload.not_captured
    (kernel,) = workload.kernels
    (inp,) = kernel.inputs
    assert kernel.autotune_configs is not None and len(kernel.autotune_configs) == 2
    assert inp.autotune_choice == kernel.autotune_configs[1] and inp.heuristics == {"EVEN": True}
    assert inp.spec.constexprs == {"BLOCK": 128, "EVEN": True} and inp.spec.num_warps == 4
    assert inp.jit_check == (
        "unchecked: Triton 3.2's AttrsDescriptor is not compared" if version == "3.2.0" else "same"
    )


def test_fla_chunk_gated_delta_rule_kernels(toolchain, tmp_path: Path) -> None:
    """fla-core 0.6.0's heuristics+autotune kernels (its CachedAutotuner subclass calls Autotuner.run
    through super()): each recorded with its configs, choice and heuristic values, and the JIT's spec."""
    tc = toolchain("triton==3.6.0")
    cases = fla_cases("0.6.0", "sm_90")
    code, out = record_cases(tc.python, cases, tmp_path)
    assert code == 0
    workload = load_workload(out)
    assert not workload.not_captured
    assert [k.function for k in workload.kernels] == [c.launch.source.rpartition(":")[2] for c in cases]
    for kernel, case in zip(workload.kernels, cases):
        (inp,) = kernel.inputs
        assert kernel.autotune_configs and inp.autotune_choice == kernel.autotune_configs[case.autotune_pick]
        assert inp.jit_check == "same", (kernel.function, inp.jit_check)
        assert kernel.package == "fla-core==0.6.0"  # provenance; the spec's package is the snapshot
    assert any(inp.heuristics for k in workload.kernels for inp in k.inputs)
    # compiled from the snapshot alone, the first kernel has the JIT's machine code: the same SASS (the
    # cubins differ in their line-info section, which names the source file: the snapshot's, not fla's)
    jit = json.loads((tmp_path / "jit" / "result.json").read_text())["cases"][0]
    jit_cubin = Path(jit["compiles"][-1]["cubin"])
    with Compiler(jobs=1, cache_dir=tmp_path / "artifacts") as compiler:
        artifact = compiler.compile(workload.kernels[0].inputs[0].spec, tc)
    assert isinstance(artifact, Artifact)
    ours = run_cuobjdump(tc.cuobjdump, artifact.cubin.cubin_path, "-sass")
    assert ours == run_cuobjdump(tc.cuobjdump, jit_cubin, "-sass") and "chunk_local_cumsum" in ours
    # every kernel compiles from its snapshot, also those whose module fla's ``@dispatch`` decorates:
    # the backends it imports with importlib at import time (no import statement) are carried too
    snapshot = workload.snapshots[workload.kernels[-1].snapshot]["files"]
    assert "fla/ops/common/backends/__init__.py" in snapshot
    with Compiler(jobs=1, cache_dir=tmp_path / "artifacts") as compiler:
        for kernel in workload.kernels[1:]:
            assert isinstance(compiler.compile(kernel.inputs[0].spec, tc), Artifact), kernel.function


def test_repeated_autotuned_launches_are_counted(toolchain, tmp_path: Path) -> None:
    """The second launch of an autotuned kernel (the tuner's cache answers) is counted, not recorded again."""
    tc = toolchain("triton==3.4.0")
    kernels = Path(__file__).resolve().parent.parent / "kernels_decorated.py"
    launch = Launch(
        name="heuristic_autotuned",
        source=f"{kernels}:heuristic_autotuned_kernel",
        package=None,
        args=(("x_ptr", Ptr("fp32")), ("y_ptr", Ptr("fp32")), ("n", 4096)),
    )
    cases = [FidelityCase(name=f"launch{i}", launch=launch, autotune_pick=1, pass_options=False) for i in range(3)]
    code, out = record_cases(tc.python, cases, tmp_path)
    assert code == 0
    (kernel,) = load_workload(out).kernels
    (inp,) = kernel.inputs
    assert inp.count == 3 and inp.autotune_choice == kernel.autotune_configs[1]  # type: ignore[index]


REPEATS_PROGRAM = """
import sys
sys.path.insert(0, sys.argv[1])
import fakedriver
fakedriver.install(90)
import triton
import triton.language as tl


@triton.jit
def add(x, y, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + i, tl.load(x + i, mask=i < n), mask=i < n)


small = [fakedriver.FakeTensor("fp32", shape=(4096,)) for _ in range(2)]
large = [fakedriver.FakeTensor("fp32", shape=(8192,)) for _ in range(2)]
for _ in range(5):
    add[(4,)](*small, 4096, BLOCK=1024)  # positional tensors: the first one meets a new tensor type
for _ in range(3):
    add[(8,)](*large, 8192, BLOCK=1024)
for _ in range(2):
    add.run(*small, 4096, BLOCK=1024, grid=(4,), warmup=False)  # as autotuners and libraries call it
"""


def test_repeated_launches_are_one_input_each(toolchain, tmp_path: Path) -> None:
    """``fn[grid](...)`` and ``fn.run(...)`` launches of one shape are one recorded input with their
    count: the first launch (a tensor type the hook had not seen) has the same key as the repeats."""
    tc = toolchain("triton==3.6.0")
    program = tmp_path / "repeats.py"
    program.write_text(REPEATS_PROGRAM)
    from record_helpers import INSITU, record_cli

    out = tmp_path / "W.json"
    assert record_cli(out, [str(tc.python), str(program), str(INSITU)]) == 0
    workload = load_workload(out)
    assert not workload.not_captured
    (kernel,) = workload.kernels
    assert sorted((inp.count, inp.spec.grid) for inp in kernel.inputs) == [(3, (8,)), (7, (4,))]
