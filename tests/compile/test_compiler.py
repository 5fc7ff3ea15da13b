"""Compile stage: real Triton wheels in their own virtualenvs, real ptxas, the artifact cache."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from ktriage.analyze.resources import analyze
from ktriage.compile.compiler import Artifact, CompileFailure, Compiler
from ktriage.compile.pool import WorkerPool
from ktriage.spec.model import KernelSpec
from tests.triton_compile_for_tests import RED_SIGNATURE

pytestmark = pytest.mark.slow
KERNELS = Path(__file__).resolve().parents[1] / "kernels_for_tests.py"


def red_spec(xblock: int = 64, rblock: int = 64, name: str = "red") -> KernelSpec:
    return KernelSpec(
        name=f"{name}[{xblock}x{rblock}]",
        source=f"{KERNELS}:red_kernel",
        signature=dict(RED_SIGNATURE),
        constexprs={"XBLOCK": xblock, "RBLOCK": rblock},
        divisible_by_16=("in_ptr", "out_ptr", "xnumel", "rnumel"),
        meta={"input_label": f"R={rblock}"},
    )


def test_compile_produces_every_stage_and_the_launch_abi(toolchain, compiler: Compiler) -> None:
    for spec_text, hidden in (("triton==3.3.1", ["global_scratch"]), ("triton==3.4.0", ["global_scratch"])):
        tc = toolchain(spec_text)
        art = compiler.compile(red_spec(), tc)
        assert isinstance(art, Artifact), art
        for stage in ("ttir", "ttgir", "llir", "ptx"):
            assert art.frontend.text(stage).strip()
        assert art.cubin.cubin_path.read_bytes()[:4] == b"\x7fELF"
        assert "Used" in art.cubin.ptxas_log and "registers" in art.cubin.ptxas_log
        assert art.frontend.triton_version == tc.triton_version
        # non-constexpr args in order, then the hidden pointer(s) this Triton version appends
        assert [p.name for p in art.abi] == ["in_ptr", "out_ptr", "xnumel", "rnumel", *hidden]
        assert [p.ptx_type for p in art.abi[:4]] == ["u64", "u64", "u32", "u32"]
        assert art.abi[-1].hidden
        # divisibility reached the IR: the JIT's tt.divisibility hint is in the TTIR
        assert "tt.divisibility = 16" in art.frontend.text("ttir")


def test_assembled_cubin_matches_tritons_own(toolchain, compiler: Compiler) -> None:
    """ktriage re-assembles PTX with Triton's flags; with the bundled ptxas it must equal Triton's cubin."""
    tc = toolchain("triton==3.4.0")
    art = compiler.compile(red_spec(64, 256), tc)
    assert isinstance(art, Artifact)
    ours = analyze(
        art.cubin.cubin_path,
        cuobjdump=tc.cuobjdump,
        ptxas_log=None,
        ptx=None,
        kernel_name=art.kernel_name,
        triton_shared=None,
    )
    theirs = analyze(
        art.frontend.dir / "kernel.triton.cubin",
        cuobjdump=tc.cuobjdump,
        ptxas_log=None,
        ptx=None,
        kernel_name=art.kernel_name,
        triton_shared=None,
    )
    assert (ours.registers, ours.stack_bytes, ours.sass_opcodes) == (
        theirs.registers,
        theirs.stack_bytes,
        theirs.sass_opcodes,
    )


def test_cache_hit_needs_no_worker(toolchain, tmp_path: Path) -> None:
    tc = toolchain("triton==3.4.0")
    with Compiler(jobs=1, cache_dir=tmp_path) as first:
        art = first.compile(red_spec(), tc)
    assert isinstance(art, Artifact)

    class NoWorkersPool(WorkerPool):  # a fake: fails if anything tries to compile again
        def acquire(self, python, sys_path=()):  # type: ignore[override]
            raise AssertionError("cache miss: a worker was started")

    with Compiler(jobs=1, cache_dir=tmp_path) as second:
        second._pool = NoWorkersPool(1)
        again = second.compile(red_spec(), tc)
    assert isinstance(again, Artifact)
    assert again.frontend.dir == art.frontend.dir and again.cubin.dir == art.cubin.dir


def test_compile_many_keys_each_pair_once_and_sees_a_kernel_edited_between_calls(
    toolchain, compiler: Compiler, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The frontend key that orders a call's pairs is the key they compile under (computed once a pair:
    it reads the kernel's file), and only for that call: a later compile keys the file as it is then."""
    tc = toolchain("triton==3.4.0")
    kernels = tmp_path / "kernels.py"
    kernels.write_text(KERNELS.read_text())
    spec = replace(red_spec(), source=f"{kernels}:red_kernel")
    keyed: list[str] = []
    real_key = Compiler.frontend_key
    monkeypatch.setattr(Compiler, "frontend_key", lambda self, s, t: keyed.append(s.name) or real_key(self, s, t))
    (first,) = compiler.compile_many([spec], [tc])
    assert isinstance(first, Artifact) and keyed == [spec.name]
    kernels.write_text(kernels.read_text().replace("def red_kernel(", "def red_kernel(  # edited\n    "))
    second = compiler.compile(spec, tc)
    assert isinstance(second, Artifact) and len(keyed) == 2
    assert second.frontend.dir != first.frontend.dir and compiler.frontend_compiles == 2


def test_a_failing_spec_does_not_stop_the_others(toolchain, compiler: Compiler) -> None:
    tc = toolchain("triton==3.4.0")
    bad = red_spec(64, 96, name="bad")  # tl.arange needs a power of two: a compile error
    outcomes = compiler.compile_many([red_spec(), bad, red_spec(32, 32)], [tc])
    kinds = [type(o).__name__ for o in outcomes]
    assert kinds == ["Artifact", "CompileFailure", "Artifact"]
    failure = outcomes[1]
    assert isinstance(failure, CompileFailure) and failure.stage == "frontend" and failure.kind == "compile"
    assert "power of 2" in failure.message or "arange" in failure.message


def test_wrong_signature_is_reported_with_names(toolchain, compiler: Compiler) -> None:
    tc = toolchain("triton==3.4.0")
    spec = red_spec()
    broken = KernelSpec(
        name="broken",
        source=spec.source,
        signature={k: v for k, v in spec.signature.items() if k != "rnumel"},
        constexprs=spec.constexprs,
    )
    outcome = compiler.compile(broken, tc)
    assert isinstance(outcome, CompileFailure)
    assert "rnumel" in outcome.message


def test_older_ptxas_gets_a_lowered_ptx_header(toolchain, compiler: Compiler) -> None:
    tc = toolchain("triton==3.4.0,ptxas==12.4.131")
    art = compiler.compile(red_spec(), tc)
    assert isinstance(art, Artifact), art
    assert art.cubin.ptxas_version == "12.4.131"
    assert art.cubin.lowered_ptx_version == ("8.7", "8.4")
    record = json.loads((art.cubin.dir / "result.json").read_text())
    assert record["lowered_ptx_version"] == ["8.7", "8.4"]


def test_two_versions_of_a_kernel_package_never_share_a_worker(toolchain, tmp_path: Path) -> None:
    """liger-kernel 0.5.10 and 0.8.5 define layer_norm forward with the same parameters: a worker that
    cached the 0.5.10 module would silently compile the wrong kernel for 0.8.5."""
    from ktriage.catalog import expand_op

    tc = toolchain("triton==3.4.0")
    old = expand_op("liger.layer_norm", mode="fwd", inputs=["7"])[0]
    new = expand_op("liger.layer_norm@0.8.5", mode="fwd", inputs=["7"])[0]
    with Compiler(jobs=1, cache_dir=tmp_path) as compiler:  # one worker per key: the bug would show
        a, b = compiler.compile_many([old, new], [tc])
    assert isinstance(a, Artifact) and isinstance(b, Artifact)
    assert a.frontend.text("ttir") != b.frontend.text("ttir")


def test_triton_3_2_specialization_and_abi(toolchain, compiler: Compiler) -> None:
    """Triton 3.2 takes constants by name and an AttrsDescriptor; its kernels have no hidden scratch
    pointer. The tutorial matmul has unit strides, which the JIT specializes to the constant 1."""
    from ktriage.catalog import expand_op

    tc = toolchain("triton==3.2.0")
    spec = expand_op("tutorial.matmul", inputs=["0"])[0]
    assert spec.equal_to_1  # the unit strides
    art = compiler.compile(spec, tc)
    assert isinstance(art, Artifact), art
    names = [p.name for p in art.abi]
    assert not any(p.hidden for p in art.abi)
    assert not set(spec.equal_to_1) & set(names)  # specialized away, as the JIT does
    assert "tt.divisibility = 16" in art.frontend.text("ttir")
    same = compiler.compile(spec, toolchain("triton==3.3.1"))
    assert isinstance(same, Artifact) and [p.name for p in same.abi] == names + ["global_scratch"]
