"""``enable_fp_fusion`` in ``[kernel.options]`` and dtype constexprs, through real Triton wheels and ptxas.

Why: unsloth passes ``enable_fp_fusion=False`` at its launches, which changes the code (a*b+c as FMUL
and FADD, not FFMA); a spec that could not say it compiled another kernel. A constexpr written as a torch
dtype ("torch.float32") compiled as the string constant; it is refused with the Triton dtype to write.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ktriage.analyze.resources import analyze
from ktriage.compile.compiler import Artifact, Compiler
from ktriage.errors import KtriageError
from ktriage.spec.toml_file import dump_spec_toml, loads_spec

pytestmark = pytest.mark.slow
KERNELS = Path(__file__).resolve().parents[1] / "kernels_fusion_dtype.py"
TOOLCHAINS = ("triton==3.4.0", "triton==3.6.0")


def _fma_by_types(options: str) -> str:
    return textwrap.dedent(f"""
        [kernel]
        source = "{KERNELS}:fma_kernel"
        [kernel.signature]
        a_ptr = "*fp32"
        b_ptr = "*fp32"
        c_ptr = "*fp32"
        out_ptr = "*fp32"
        n = "i32"
        BLOCK = "constexpr"
        [kernel.constexprs]
        BLOCK = 256
        [kernel.options]
        {options}
        """)


def _fma_by_values(options: str) -> str:
    return textwrap.dedent(f"""
        [kernel]
        source = "{KERNELS}:fma_kernel"
        grid = [16]
        [kernel.args]
        a_ptr = {{ dtype = "fp32", shape = [4096] }}
        b_ptr = {{ dtype = "fp32", shape = [4096] }}
        c_ptr = {{ dtype = "fp32", shape = [4096] }}
        out_ptr = {{ dtype = "fp32", shape = [4096] }}
        n = 4096
        BLOCK = 256
        [kernel.options]
        {options}
        """)


def _opcodes(art: Artifact) -> dict[str, int]:
    res = analyze(
        art.cubin.cubin_path,
        cuobjdump=art.toolchain.cuobjdump,
        ptxas_log=None,
        ptx=None,
        kernel_name=art.kernel_name,
        triton_shared=None,
    )
    return dict(res.sass_opcodes)


@pytest.mark.parametrize("form", [_fma_by_types, _fma_by_values], ids=["by-types", "by-values"])
def test_fp_fusion_off_compiles_fmul_and_fadd_where_on_compiles_ffma(
    toolchain, compiler: Compiler, tmp_path: Path, form
) -> None:
    (on,) = loads_spec(form("num_warps = 4"), base_dir=tmp_path)
    (off,) = loads_spec(form("enable_fp_fusion = false"), base_dir=tmp_path)
    (said_on,) = loads_spec(form("enable_fp_fusion = true"), base_dir=tmp_path)
    assert off.key() != on.key()  # part of what determines the code: two artifacts
    assert said_on.key() == loads_spec(form(""), base_dir=tmp_path)[0].key()  # on is Triton's default
    for text in TOOLCHAINS:
        tc = toolchain(text)
        fused, unfused = compiler.compile(on, tc), compiler.compile(off, tc)
        assert isinstance(fused, Artifact) and isinstance(unfused, Artifact), (fused, unfused)
        assert unfused.spec.enable_fp_fusion is False  # by values: what the toolchain's JIT passed on
        ops_on, ops_off = _opcodes(fused), _opcodes(unfused)
        assert ops_on.get("FFMA", 0) > 0 and ops_on.get("FMUL", 0) == 0, (text, ops_on)
        assert ops_off.get("FFMA", 0) == 0, (text, ops_off)
        assert ops_off.get("FMUL", 0) > 0 and ops_off.get("FADD", 0) > 0, (text, ops_off)
        assert "mul.rn.f32" in unfused.frontend.text("ptx")  # the frontend's no-contract form too
    # the file written back says it again
    assert "enable_fp_fusion = false" in dump_spec_toml(off)
    (again,) = loads_spec(dump_spec_toml(off), base_dir=tmp_path)
    assert again.key() == off.key()


def test_fp_fusion_must_be_a_bool(tmp_path: Path) -> None:
    with pytest.raises(KtriageError) as err:
        loads_spec(_fma_by_types("enable_fp_fusion = 0"), base_dir=tmp_path)
    assert "enable_fp_fusion" in str(err.value) and "true" in (err.value.fix or "")


def _cast(form: str, out: str) -> str:
    if form == "by-values":
        return textwrap.dedent(f"""
            [kernel]
            source = "{KERNELS}:cast_kernel"
            grid = [16]
            [kernel.args]
            x_ptr = {{ dtype = "fp16", shape = [4096] }}
            out_ptr = {{ dtype = "fp32", shape = [4096] }}
            n = 4096
            OUT = "{out}"
            BLOCK = 256
            """)
    return textwrap.dedent(f"""
        [kernel]
        source = "{KERNELS}:cast_kernel"
        [kernel.signature]
        x_ptr = "*fp16"
        out_ptr = "*fp32"
        n = "i32"
        OUT = "constexpr"
        BLOCK = "constexpr"
        [kernel.constexprs]
        OUT = "{out}"
        BLOCK = 256
        """)


@pytest.mark.parametrize("form", ["by-types", "by-values"])
@pytest.mark.parametrize(("written", "tl_name"), [("torch.float32", "float32"), ("torch.half", "float16")])
def test_a_torch_dtype_constexpr_is_refused_naming_the_triton_dtype(
    tmp_path: Path, form: str, written: str, tl_name: str
) -> None:
    with pytest.raises(KtriageError) as err:
        loads_spec(_cast(form, written), base_dir=tmp_path)
    assert f"OUT = '{written}' is a torch dtype" in str(err.value)
    assert f'OUT = "tl.{tl_name}"' in (err.value.fix or "")


@pytest.mark.parametrize("form", ["by-types", "by-values"])
def test_the_triton_dtype_the_refusal_names_compiles_as_that_dtype(
    toolchain, compiler: Compiler, tmp_path: Path, form: str
) -> None:
    (spec,) = loads_spec(_cast(form, "tl.float32"), base_dir=tmp_path)
    for text in TOOLCHAINS:
        art = compiler.compile(spec, toolchain(text))
        assert isinstance(art, Artifact), art
        assert "cvt.f32.f16" in art.frontend.text("ptx")  # x.to(tl.float32): a real conversion
