"""Spec files written by values (spec/values.py): loading, the preview, errors and warnings. Fast:
no toolchain (the per-release compiles are tests/fidelity/test_by_value.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ktriage.errors import SpecError
from ktriage.spec.model import KernelSpec
from ktriage.spec.toml_file import dump_spec_toml, load_spec_file, loads_spec

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "specs" / "scaled_rows.toml"
KERNEL = REPO / "examples" / "specs" / "scaled_rows.py"

ARGS = """
x_ptr = { dtype = "bf16", shape = [64, 64], strides = [64, 1] }
y_ptr = { dtype = "bf16", shape = [64, 64], strides = [64, 1], align = 4 }
M = 64
N = 64
stride_xm = 64
stride_xn = 1
stride_ym = 64
stride_yn = 1
scale = 0.5
seed = 1
BLOCK_N = 64
"""


def _load(body: str, args: str = ARGS) -> KernelSpec:
    text = f'[kernel]\nsource = "{KERNEL}:scaled_rows_kernel"\n{body}\n[kernel.args]\n{args}'
    (spec,) = loads_spec(text, base_dir=KERNEL.parent)
    return spec


def test_example_loads_with_its_launch_and_a_preview() -> None:
    (spec,) = load_spec_file(EXAMPLE)
    assert spec.launch is not None and spec.launch["grid"] == [4096] and spec.launch["options"] == {"num_warps": 4}
    args = dict(spec.launch["args"])
    assert args["x_ptr"] == {"tensor": "bf16", "aligned": True, "shape": [4096, 4096], "strides": [4096, 1]}
    assert "EVEN_N" not in args and spec.meta["decided_at_compile"] == ["EVEN_N"]  # @triton.heuristics decides
    assert set(spec.equal_to_1) == {"stride_xn", "stride_yn"}  # the preview, before any toolchain decides
    assert spec.to_json()["launch"] == spec.launch and KernelSpec.from_json(spec.to_json()) == spec


def test_values_are_part_of_the_key_and_types_only_json_is_unchanged() -> None:
    a, b = _load(""), _load("", ARGS.replace("stride_yn = 1", "stride_yn = 2"))
    assert a.key() != b.key()
    assert "launch" not in a.replace(launch=None).to_json()


def test_alignment_and_seed_in_the_preview() -> None:
    spec = _load("")
    assert "y_ptr" not in spec.divisible_by_16 and "x_ptr" in spec.divisible_by_16  # align = 4
    assert spec.signature["seed"] == "i32" and "seed" not in spec.equal_to_1  # do_not_specialize
    assert dict(spec.launch["args"])["y_ptr"]["aligned"] is False  # type: ignore[index]


def test_dump_reads_back_to_the_same_spec(tmp_path: Path) -> None:
    (spec,) = load_spec_file(EXAMPLE)
    path = tmp_path / "again.toml"
    path.write_text(dump_spec_toml(spec))
    (again,) = load_spec_file(path)
    assert again.launch == spec.launch and again.key() == spec.key()


@pytest.mark.parametrize(
    ("body", "args", "problem", "fix"),
    [
        ("", ARGS + "nope = 1\n", "which scaled_rows_kernel does not take", "its parameters are"),
        ("", ARGS.replace("scale = 0.5\n", ""), "no value for 'scale'", "add scale = <value>"),
        ('[kernel.signature]\nx_ptr = "*bf16"\n', ARGS, "restates what the JIT decides", "remove [kernel.signature]"),
        (
            "",
            ARGS.replace("strides = [64, 1] }", "stride = [64, 1] }", 1),
            "1 unknown tensor key ['stride']",
            "a tensor has",
        ),
        (
            "",
            ARGS.replace("strides = [64, 1] }", "strides = [1] }", 1),
            "1 stride for 2 dimensions",
            "one stride per dimension",
        ),
        ("", ARGS.replace('dtype = "bf16"', 'dtype = "bf17"', 1), "unknown element dtype", "use one of"),
        # a tensor's fields are free values to the schema: each was an internal error (TypeError,
        # ValueError) or a stand-in tensor no launch has (shape -1, 1.5 taken as 1, const = "no" as true)
        (
            "",
            ARGS.replace("shape = [64, 64], strides = [64, 1] }", "shape = 64 }", 1),
            "shape = 64 is not a list of non-negative integers",
            "shape = [4096, 128]",
        ),
        (
            "",
            ARGS.replace("shape = [64, 64]", "shape = [-1, 64]", 1),
            "shape = [-1, 64] is not a list of non-negative integers",
            "in elements as a list",
        ),
        (
            "",
            ARGS.replace("strides = [64, 1] }", 'strides = [64, "1"] }', 1),
            "strides = [64, '1'] is not a list of non-negative integers",
            "strides = [128, 1]",
        ),
        ("", ARGS.replace("align = 4 }", 'align = "16" }', 1), "align = '16' is not a positive number", "align = 16"),
        (
            "",
            ARGS.replace("align = 4 }", 'align = 4, const = "no" }', 1),
            "const = 'no' is not true or false",
            "const = true",
        ),
        ("autotune_config = 1\n", ARGS, "has no @triton.autotune", "remove autotune_config"),
        (  # the fix is TOML (the specialization's own names Ptr(...)/Constexpr(...), the Python API)
            "",
            ARGS.replace("M = 64", 'M = "abc"'),
            "[kernel.args] M = 'abc' is not a value Triton specializes a runtime argument on",
            'M = { dtype = "fp16"',
        ),
    ],
)
def test_errors_name_the_problem_and_the_fix(body: str, args: str, problem: str, fix: str) -> None:
    with pytest.raises(SpecError) as err:
        _load(body, args)
    assert problem in err.value.problem and fix in err.value.fix


def test_a_missing_constexpr_is_offered_constexpr_values_not_a_tensor() -> None:
    """A tl.constexpr left out of [kernel.args]: the fix said "(a number, "tl.float32", { none = true },
    or a tensor { dtype ... })", and a tensor is no constexpr value (Triton compiles the value in). The
    fix names what a constexpr takes; a runtime parameter's still offers a tensor, not a string."""
    with pytest.raises(SpecError) as err:
        _load("", ARGS.replace("BLOCK_N = 64\n", ""))
    assert "no value for 'BLOCK_N'" in err.value.problem
    assert "a tl.constexpr takes a number, a bool (true/false) or a string" in err.value.fix, err.value.fix
    assert "tensor" not in err.value.fix, err.value.fix
    with pytest.raises(SpecError) as err:
        _load("", ARGS.replace("stride_xm = 64\n", ""))
    assert "tensor { dtype" in err.value.fix and "tl.float32" not in err.value.fix, err.value.fix


def test_neither_args_nor_signature_is_an_error() -> None:
    with pytest.raises(SpecError) as err:
        loads_spec(f'[kernel]\nsource = "{KERNEL}:scaled_rows_kernel"\n', base_dir=KERNEL.parent)
    assert "neither [kernel.args] nor [kernel.signature]" in err.value.problem and "[kernel.args]" in err.value.fix


def test_python_form_gives_the_same_spec_as_the_file() -> None:
    from ktriage.spec.specialize import Ptr
    from ktriage.spec.values import spec_by_values

    (from_file,) = load_spec_file(EXAMPLE)
    tensor = {"dtype": "bf16", "shape": [4096, 4096], "strides": [4096, 1]}
    args = {
        "x_ptr": tensor,
        "y_ptr": tensor,
        "M": 4096,
        "N": 4096,
        "stride_xm": 4096,
        "stride_xn": 1,
        "stride_ym": 4096,
        "stride_yn": 1,
        "scale": 0.5,
        "seed": 7,
        "BLOCK_N": 1024,
    }
    spec = spec_by_values(
        f"{KERNEL}:scaled_rows_kernel", args, grid=[4096], options={"num_warps": 4}, name="scaled_rows[M=N=4096,bf16]"
    )
    assert spec.key() == from_file.key() and spec.launch == from_file.launch
    bare = spec_by_values(
        f"{KERNEL}:scaled_rows_kernel", {**args, "x_ptr": Ptr("bf16"), "y_ptr": Ptr("bf16", aligned=False)}
    )
    assert dict(bare.launch["args"])["y_ptr"] == {"tensor": "bf16", "aligned": False}  # type: ignore[index]
