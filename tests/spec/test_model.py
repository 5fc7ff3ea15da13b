"""KernelSpec: JSON round trip, content key, validate() messages, and the ast signature check."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ktriage.errors import KtriageError
from ktriage.spec.model import KernelSpec
from ktriage.spec.source import read_params

KERNEL = textwrap.dedent(
    """
    import triton
    import triton.language as tl

    @triton.jit
    def my_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, DT: tl.constexpr = tl.float32, ACT: tl.constexpr = "relu"):
        pass

    def helper():
        pass
    """
)


@pytest.fixture()
def kernel_file(tmp_path: Path) -> Path:
    path = tmp_path / "k.py"
    path.write_text(KERNEL)
    return path


def _spec(path: Path, **changes) -> KernelSpec:
    base = {
        "name": "k",
        "source": f"{path}:my_kernel",
        "signature": {
            "x_ptr": "*fp32",
            "out_ptr": "*fp32",
            "n": "i32",
            "BLOCK": "constexpr",
            "DT": "constexpr",
            "ACT": "constexpr",
        },
        "constexprs": {"BLOCK": 1024, "DT": "tl.float32", "ACT": "relu"},
        "divisible_by_16": ("x_ptr", "out_ptr", "n"),
        "grid": (4,),
        "meta": {"op": "test"},
    }
    base.update(changes)
    return KernelSpec(**base)


def test_json_round_trip(kernel_file: Path) -> None:
    spec = _spec(kernel_file, maxnreg=128)
    data = spec.to_json()
    assert data["divisible_by_16"] == ["x_ptr", "out_ptr", "n"] and data["grid"] == [4]
    assert KernelSpec.from_json(data) == spec
    import json

    assert KernelSpec.from_json(json.dumps(data)) == spec
    with pytest.raises(KtriageError, match="unknown field"):
        KernelSpec.from_json({**data, "warps": 8})


def test_equal_to_1_is_normalized_to_the_jit_form(kernel_file: Path) -> None:
    spec = _spec(kernel_file, equal_to_1=("n",), divisible_by_16=("x_ptr", "out_ptr"))
    assert spec.signature["n"] == "constexpr" and spec.constexprs["n"] == 1
    spec.validate()
    assert KernelSpec.from_json(spec.to_json()) == spec


def test_key_changes_with_source_text_and_fields_but_not_with_path_or_meta(kernel_file: Path, tmp_path: Path) -> None:
    spec = _spec(kernel_file)
    key = spec.key()
    assert spec.replace(name="other", meta={"x": 1}, grid=(9,)).key() == key
    copy_dir = tmp_path / "elsewhere"
    copy_dir.mkdir()
    (copy_dir / "k.py").write_text(KERNEL)
    assert _spec(copy_dir / "k.py").key() == key  # same text at another path: same kernel
    assert spec.replace(num_warps=8).key() != key
    assert spec.replace(divisible_by_16=("x_ptr",)).key() != key
    assert spec.replace(target="sm_80").key() != key
    kernel_file.write_text(KERNEL + "\n# edited\n")
    assert spec.key() != key


@pytest.mark.parametrize(
    ("changes", "message", "fix"),
    [
        (
            {
                "signature": {
                    "x_ptr": "*float",
                    "out_ptr": "*fp32",
                    "n": "i32",
                    "BLOCK": "constexpr",
                    "DT": "constexpr",
                    "ACT": "constexpr",
                }
            },
            "signature['x_ptr'] = '*float' is not a Triton type",
            '"*fp32"',
        ),
        (
            {"constexprs": {"DT": "tl.float32", "ACT": "relu"}},
            "constexpr parameter 'BLOCK' has no value",
            "BLOCK = <value>",
        ),
        ({"divisible_by_16": ("x_ptr", "nn")}, "divisible_by_16 names 'nn', which is not a parameter", "x_ptr"),
        (
            {"divisible_by_16": ("BLOCK",)},
            "divisible_by_16 names 'BLOCK' of type 'constexpr'",
            "only pointers and integers",
        ),
        ({"target": "sm_91"}, "unknown target 'sm_91'", "sm_90"),
        ({"num_warps": 6}, "num_warps = 6 is not a power of two", "1, 2, 4"),
        ({"maxnreg": 300}, "maxnreg = 300 is out of range", "16..255"),
        ({"source": "k.py"}, "names no function", "file.py:function"),
        (
            {"constexprs": {"BLOCK": 1, "DT": "tl.float32", "ACT": "relu", "n": 4}},
            "'n' has a constexpr value but its type is 'i32'",
            "constexpr",
        ),
    ],
)
def test_validate_names_the_field_and_the_fix(kernel_file: Path, changes, message, fix) -> None:
    with pytest.raises(KtriageError) as info:
        _spec(kernel_file, **changes).validate()
    assert message in info.value.problem
    assert fix in (info.value.fix or "")


@pytest.mark.parametrize(
    "changes",
    [
        {},  # BLOCK's value under constexprs, as the by-types format asks for every constexpr
        {"constexprs": {"DT": "tl.float32", "ACT": "relu"}, "divisible_by_16": ("x_ptr", "out_ptr", "n", "BLOCK")},
        {"constexprs": {"DT": "tl.float32", "ACT": "relu", "BLOCK": 1}, "equal_to_1": ("BLOCK",)},
    ],
)
def test_a_parameter_the_signature_left_out_is_named_as_such(kernel_file: Path, changes) -> None:
    """A signature that leaves out BLOCK, while a value or list names it, was told "constexprs has 'BLOCK',
    which is not a parameter" with the signature's names as "parameters": BLOCK is one of the function's,
    and the fix is to add it to the signature, as for any parameter left out."""
    no_block = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "DT": "constexpr", "ACT": "constexpr"}
    with pytest.raises(KtriageError) as info:
        _spec(kernel_file, signature=no_block, **changes).validate()
    assert "signature lists 5 arguments but my_kernel takes 6" in info.value.problem, info.value.problem
    assert "add `BLOCK` (type constexpr)" in (info.value.fix or "")
    # without the source check (no file to read) the field is still named
    with pytest.raises(KtriageError) as info:
        _spec(kernel_file, signature=no_block, **changes).validate(check_source=False)
    assert "'BLOCK', which is not a parameter" in info.value.problem


def test_signature_checked_against_source_with_ast(kernel_file: Path) -> None:
    missing_n = {"x_ptr": "*fp32", "out_ptr": "*fp32", "BLOCK": "constexpr", "DT": "constexpr", "ACT": "constexpr"}
    with pytest.raises(KtriageError) as info:
        _spec(kernel_file, signature=missing_n, divisible_by_16=("x_ptr",)).validate()
    assert "signature lists 5 arguments but my_kernel takes 6" in info.value.problem
    assert "add `n` (type i32)" in info.value.fix

    swapped = {
        "out_ptr": "*fp32",
        "x_ptr": "*fp32",
        "n": "i32",
        "BLOCK": "constexpr",
        "DT": "constexpr",
        "ACT": "constexpr",
    }
    with pytest.raises(KtriageError, match="in another order") as info:
        _spec(kernel_file, signature=swapped).validate()
    assert "x_ptr, out_ptr, n, BLOCK" in info.value.fix

    block_as_int = {
        "x_ptr": "*fp32",
        "out_ptr": "*fp32",
        "n": "i32",
        "BLOCK": "i32",
        "DT": "constexpr",
        "ACT": "constexpr",
    }
    with pytest.raises(KtriageError, match="BLOCK is declared `tl.constexpr`"):
        _spec(kernel_file, signature=block_as_int, constexprs={"DT": "tl.float32", "ACT": "relu"}).validate()

    with pytest.raises(KtriageError, match="defines no function 'my_kernl'") as info:
        _spec(kernel_file, source=f"{kernel_file}:my_kernl").validate()
    assert "did you mean my_kernel" in info.value.fix


def test_read_params_defaults_and_annotations(kernel_file: Path) -> None:
    params = read_params(kernel_file, "my_kernel")
    assert [p.name for p in params] == ["x_ptr", "out_ptr", "n", "BLOCK", "DT", "ACT"]
    assert [p.is_constexpr for p in params] == [False, False, False, True, True, True]
    assert params[4].default == "tl.float32" and params[5].default == "relu" and not params[3].has_default


def test_fp_fusion_off_is_in_the_json_and_key_and_on_leaves_both_as_they_were(kernel_file: Path) -> None:
    on, off = _spec(kernel_file), _spec(kernel_file, enable_fp_fusion=False)
    assert "enable_fp_fusion" not in on.to_json()  # Triton's default: the JSON (and key) of before
    assert off.to_json()["enable_fp_fusion"] is False
    assert KernelSpec.from_json(off.to_json()) == off
    assert on.key() != off.key()
    with pytest.raises(KtriageError, match="enable_fp_fusion = 0 is not a bool"):
        _spec(kernel_file, enable_fp_fusion=0).validate()


def test_an_option_the_toolchain_lacks_is_refused_naming_it_and_the_version() -> None:
    from ktriage.insitu.worker import unknown_options

    fake_old_backend_fields = ["num_warps", "num_stages", "num_ctas", "maxnreg"]  # a fake Triton's CUDAOptions
    assert unknown_options({"num_warps": 4}, fake_old_backend_fields, "2.1.0") is None
    refusal = unknown_options({"num_warps": 4, "enable_fp_fusion": False}, fake_old_backend_fields, "2.1.0")
    assert refusal is not None and refusal.kind == "spec"
    assert str(refusal).startswith("Triton 2.1.0 has no compile option enable_fp_fusion")
    assert "fix: remove enable_fp_fusion from [kernel.options]" in str(refusal)
