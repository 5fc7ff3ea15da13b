"""Spec TOML files: the issue's format, defaults, round trip, and errors that name file, key and fix."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ktriage.errors import KtriageError
from ktriage.spec.toml_file import dump_spec_toml, dump_specs_toml, load_spec_file

KERNEL = textwrap.dedent(
    """
    import triton
    import triton.language as tl

    @triton.jit
    def my_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr = True):
        pass
    """
)
ISSUE_EXAMPLE = textwrap.dedent(
    """
    [kernel]
    source = "kernels/k.py:my_kernel"   # a file path relative to the spec file
    target = "sm_90"
    [kernel.signature]
    x_ptr = "*fp32"
    out_ptr = "*fp32"
    n = "i32"
    BLOCK = "constexpr"
    EVEN = "constexpr"
    [kernel.constexprs]
    BLOCK = 1024
    [kernel.options]
    num_warps = 4
    num_stages = 3
    """
)


@pytest.fixture()
def spec_dir(tmp_path: Path) -> Path:
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "k.py").write_text(KERNEL)
    return tmp_path


def _write(spec_dir: Path, text: str) -> Path:
    path = spec_dir / "spec.toml"
    path.write_text(text)
    return path


def test_issue_format_loads_with_defaults(spec_dir: Path) -> None:
    (spec,) = load_spec_file(_write(spec_dir, ISSUE_EXAMPLE))
    assert spec.source == f"{(spec_dir / 'kernels' / 'k.py').resolve()}:my_kernel"
    assert spec.name == "my_kernel"
    assert spec.constexprs == {"BLOCK": 1024, "EVEN": True}  # EVEN from the source default
    assert spec.divisible_by_16 == ("x_ptr", "out_ptr", "n")  # default: every pointer and int
    assert (spec.num_warps, spec.num_stages, spec.target) == (4, 3, "sm_90")


def test_explicit_specialize_and_round_trip(spec_dir: Path) -> None:
    text = ISSUE_EXAMPLE + '[kernel.specialize]\ndivisible_by_16 = ["x_ptr"]\nequal_to_1 = ["n"]\n'
    (spec,) = load_spec_file(_write(spec_dir, text))
    assert spec.divisible_by_16 == ("x_ptr",)
    assert spec.signature["n"] == "constexpr" and spec.constexprs["n"] == 1 and spec.equal_to_1 == ("n",)
    spec = spec.replace(
        grid=(8, 2),
        maxnreg=128,
        meta={"op": "x", "shape": {"M": 4, "N": 8}},
        constexprs={**spec.constexprs, "BLOCK": None},
    )
    again = spec_dir / "again.toml"
    again.write_text(dump_spec_toml(spec, relative_to=spec_dir))
    assert 'source = "kernels/k.py:my_kernel"' in again.read_text()
    assert load_spec_file(again) == [spec]


def test_several_kernels(spec_dir: Path) -> None:
    (one,) = load_spec_file(_write(spec_dir, ISSUE_EXAMPLE))
    two = one.replace(name="second", num_warps=8)
    path = spec_dir / "many.toml"
    path.write_text(dump_specs_toml([one, two]))
    assert load_spec_file(path) == [one, two]


@pytest.mark.parametrize(
    ("edit", "problem", "fix"),
    [
        (
            lambda t: t.replace("num_stages = 3", "num_stage = 3"),
            "[kernel] options: unknown key 'num_stage'",
            "num_stages",
        ),
        (
            lambda t: t.replace('n = "i32"\n', ""),
            "signature lists 4 arguments but my_kernel takes 5",
            "add `n` (type i32)",
        ),
        (lambda t: t.replace("BLOCK = 1024", ""), "constexpr parameter 'BLOCK' has no value", "BLOCK = <value>"),
        (lambda t: t.replace('"sm_90"', '"sm_9"'), "unknown target 'sm_9'", "sm_90"),
        (lambda t: t.replace("k.py:my_kernel", "missing.py:my_kernel"), "missing.py does not exist", "relative"),
        (lambda t: t.replace("[kernel.options]", "[kernel.option]"), "[kernel] table: unknown key 'option'", "options"),
        (
            lambda t: t.replace("num_warps = 4", 'num_warps = "4"'),
            "options.num_warps: expected int, got str",
            "num_warps = 4",
        ),
        (
            lambda t: t + '[kernel.specialize]\ndivisible_by_16 = "x_ptr"\n',
            "specialize.divisible_by_16: expected array, got str",
            '["x_ptr", "n"]',
        ),
        (lambda t: t.replace("[kernel]", "[kernal]"), "top level: unknown key 'kernal'", "under [kernel]"),
        (  # a value of a table of names (msgspec's path constexprs[...]): its table's fix, not [kernel]'s
            lambda t: t.replace("BLOCK = 1024", "BLOCK = 99999999999999999999"),
            "constexprs[...]: expected int <= 9223372036854775807",
            "write [kernel.constexprs] with a number",
        ),
        (lambda t: "x = 1\n", "no [kernel] table", "[[kernel]]"),
        (lambda t: t.replace("BLOCK = 1024", "BLOCK = "), "not valid TOML", "TOML syntax"),
    ],
)
def test_errors_name_file_key_and_fix(spec_dir: Path, edit, problem, fix) -> None:
    path = _write(spec_dir, edit(ISSUE_EXAMPLE))
    with pytest.raises(KtriageError) as info:
        load_spec_file(path)
    assert str(path) in info.value.problem
    assert problem in info.value.problem
    assert fix in (info.value.fix or "")
