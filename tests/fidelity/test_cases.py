"""The JIT-equivalence cases describe real launches: sources resolve, arguments name real parameters,
the decorators' values are left to the decorators, and the rms_norm recipe restates Liger's host code.

Fast: no toolchain, no compile (the packages are installed once into the test home, like the
catalog tests do). The harness runs of these cases are in tests/fidelity/test_harness.py
(the rms_norm recipe's catalog listing: tests/cli/test_catalog.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ktriage.catalog.registry import expand_launches, op_inputs
from ktriage.fidelity.cases import CATALOG_SELECTION, all_cases
from ktriage.fidelity.model import FidelityCase
from ktriage.fidelity.thirdparty import thirdparty_cases
from ktriage.spec.source import check_signature, read_params, resolve_source_file, split_source
from ktriage.spec.specialize import Constexpr

THIRDPARTY = thirdparty_cases()


def _module_assignments(tree: ast.Module) -> dict[str, ast.expr]:
    out: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = node.value
    return out


def _config_keys(node: ast.AST, names: dict[str, ast.expr], seen: set[str]) -> set[str]:
    """Keys of the ``triton.Config({...}, ...)`` dicts under ``node``, following module-level names."""
    keys: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "Config":
            first = sub.args[0] if sub.args else next((k.value for k in sub.keywords if k.arg == "kwargs"), None)
            if isinstance(first, ast.Dict):
                keys |= {k.value for k in first.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        elif isinstance(sub, ast.Name) and sub.id in names and sub.id not in seen:
            seen.add(sub.id)
            keys |= _config_keys(names[sub.id], names, seen)
    return keys


def decorator_values(path: Path, function: str) -> tuple[set[str], set[str]]:
    """(parameters ``@triton.heuristics`` computes, parameters the autotune configs set) of ``function``."""
    tree = ast.parse(path.read_text())
    names = _module_assignments(tree)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function)
    heuristics: set[str] = set()
    tuned: set[str] = set()
    for deco in fn.decorator_list:
        if not isinstance(deco, ast.Call):
            continue
        called = deco.func.attr if isinstance(deco.func, ast.Attribute) else getattr(deco.func, "id", "")
        if called == "heuristics" and deco.args and isinstance(deco.args[0], ast.Dict):
            heuristics |= {k.value for k in deco.args[0].keys if isinstance(k, ast.Constant)}
        elif called.endswith("autotune"):
            configs = deco.args[0] if deco.args else next(k.value for k in deco.keywords if k.arg == "configs")
            tuned |= _config_keys(configs, names, set()) | {"__autotuned__"}
    return heuristics, tuned


@pytest.mark.parametrize("case", THIRDPARTY, ids=lambda c: c.name)
def test_thirdparty_args_are_the_kernel_parameters(case: FidelityCase) -> None:
    path = resolve_source_file(case.launch.source, case.launch.package)
    function = split_source(case.launch.source)[1]
    params = read_params(path, function)
    names = [p.name for p in params]
    given = [name for name, _ in case.launch.args]
    assert len(set(given)) == len(given), f"an argument is given twice: {given}"
    assert not set(given) - set(names), f"not parameters of {function}: {sorted(set(given) - set(names))}"
    heuristics, tuned = decorator_values(path, function)
    assert not set(given) & (heuristics | tuned), "the launch passes what the decorators compute"
    required = {p.name for p in params if not p.has_default}
    assert required - set(given) <= heuristics | tuned, (
        f"no value for {sorted(required - set(given) - heuristics - tuned)}"
    )
    # constexpr parameters get Constexpr values, the others plain values: the library's launch, spelled out
    constexpr = {p.name for p in params if p.is_constexpr}
    for name, value in case.launch.args:
        assert isinstance(value, Constexpr) == (name in constexpr), name
    autotuned = "__autotuned__" in tuned
    assert case.pass_options is not autotuned, "autotuned kernels get their options from the configs only"


def test_thirdparty_names_are_unique_and_cover_the_issue() -> None:
    names = [c.name for c in all_cases()]
    assert len(names) == len(set(names))
    tp = " ".join(c.name for c in THIRDPARTY)
    for part in (
        "liger.cross_entropy.",
        "liger.cross_entropy@0.8.5.",
        "liger.swiglu.bwd",
        "liger.swiglu@0.8.5.fwd",
        "fla.chunk_o@0.4.2",
        "fla.recompute_w_u@0.6.0",
        "ktriage.autotuned_matmul",
        "ktriage.descriptor_matmul",
        "liger.rms_norm.bwd[bf16,N=16384]",
        "liger.rms_norm@0.8.5.bwd[bf16,N=16384]",
    ):
        assert part in tp, part
    descriptor = next(c for c in THIRDPARTY if "descriptor" in c.name)
    assert not descriptor.supports("3.3.1") and descriptor.supports("3.4.0")
    assert "make_tensor_descriptor" in descriptor.version_note("3.3.1")


def test_catalog_selection_resolves() -> None:
    for op, mode, inputs in CATALOG_SELECTION:
        assert len(expand_launches(op, mode=mode, inputs=list(inputs))) == len(inputs), op


@pytest.mark.parametrize(("op", "rows_constexpr"), [("liger.rms_norm", True), ("liger.rms_norm@0.8.5", False)])
def test_rms_norm_recipe_at_n16384(op: str, rows_constexpr: bool) -> None:
    """ops/rms_norm.py: calculate_settings(16384) = (16384, 16) for both modes and releases; the
    backward runs on (sm_count,) programs of ceil(2048/132) = 16 rows, a constexpr in 0.5.10 only."""
    assert [c.facts for c in op_inputs(op)][4] == {"M": 2048, "N": 16384}
    for mode in ("fwd", "bwd"):
        (launch,) = expand_launches(op, mode=mode, inputs=["N=16384"], dtype="bf16")
        spec = launch.to_spec()
        assert spec.constexprs["BLOCK_SIZE"] == 16384 and spec.num_warps == 16 and spec.num_stages == 3
        assert spec.signature["W_ptr"] == "*fp32" and spec.signature["RSTD_ptr"] == "*fp32"
        assert spec.constexprs["casting_mode"] == 0 and spec.equal_to_1 == ("W_row_stride", "RSTD_row_stride")
        source_file = resolve_source_file(spec.source, spec.package)
        check_signature(spec.signature, read_params(source_file, split_source(spec.source)[1]), spec.source)
        if mode == "fwd":
            assert spec.grid == (2048,) and spec.signature["X_ptr"] == "*bf16"
            continue
        assert (
            spec.grid == (132,) and spec.constexprs["X_dtype"] == "tl.bfloat16" and spec.signature["dW_ptr"] == "*fp32"
        )
        if rows_constexpr:
            assert spec.constexprs["rows_per_program"] == 16 and "COMPUTE_DW" not in spec.signature
        else:
            assert spec.signature["rows_per_program"] == "i32" and "rows_per_program" in spec.divisible_by_16
            assert spec.constexprs["COMPUTE_DW"] is True and spec.constexprs["elementwise_affine"] is True
