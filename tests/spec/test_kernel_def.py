"""A spec's ``source`` may name a kernel the way real code exposes one (spec/source.kernel_def): a def in
a class body (``RMSNorm.fwd_kernel``), a module-level name bound to a factory's result
(``scale2_kernel = make_scale_kernel(2.0)``), ``k = triton.jit(f)`` or an alias. Before, the loader
refused the first with "does not name a function" and the second with "defines no function
'scale2_kernel' — fix: did you mean make_scale_kernel?" (the factory, which is no kernel). A kernel
only a running function can make (a def in a function body that reads the function's values) is
refused with what to point at instead. Fast: the real TOML loader, no toolchain (compiled for real in
tests/spec/test_factory_kernels.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ktriage.errors import KtriageError
from ktriage.spec.toml_file import loads_spec

FACTORY = """\
import triton
import triton.language as tl


def make_scale_kernel(factor):
    FACTOR = tl.constexpr(factor)

    @triton.jit
    def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(y_ptr + offs, x * FACTOR, mask=offs < n)

    return scale_kernel


class RMSNorm:
    @staticmethod
    @triton.jit
    def fwd_kernel(x_ptr, w_ptr, y_ptr, N, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * N + offs, mask=offs < N, other=0.0).to(tl.float32)
        r = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
        w = tl.load(w_ptr + offs, mask=offs < N)
        tl.store(y_ptr + row * N + offs, (x * r * w).to(y_ptr.dtype.element_ty), mask=offs < N)


def _copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))


scale2_kernel = make_scale_kernel(2.0)
copy_kernel = triton.jit(_copy)
copy_alias = copy_kernel


def rebound(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    tl.store(y_ptr, tl.load(x_ptr))


rebound = triton.jit(rebound)


def heuristic_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    tl.store(y_ptr, tl.load(x_ptr))


heuristic_kernel = triton.jit(heuristic_kernel)
heuristic_kernel = triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})(heuristic_kernel)


def _tuned(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    tl.store(y_ptr, tl.load(x_ptr))


tuned_kernel = triton.autotune(configs=[triton.Config({"BLOCK": 64})], key=["n"])(
    triton.jit(do_not_specialize=["n"])(_tuned)
)
"""

SCALE_ARGS = (
    'x_ptr = { dtype = "fp32", shape = [4096] }\ny_ptr = { dtype = "fp32", shape = [4096] }\nn = 4096\nBLOCK = 1024\n'
)
RMS_ARGS = (
    'x_ptr = { dtype = "bf16", shape = [64, 1024] }\nw_ptr = { dtype = "bf16", shape = [1024] }\n'
    'y_ptr = { dtype = "bf16", shape = [64, 1024] }\nN = 1024\neps = 1e-6\nBLOCK = 1024\n'
)


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    (tmp_path / "factory.py").write_text(FACTORY)
    return tmp_path


def _load(folder: Path, function: str, args: str = SCALE_ARGS) -> list:
    text = f'[kernel]\nsource = "factory.py:{function}"\ngrid = [4]\n[kernel.args]\n{args}'
    return loads_spec(text, base_dir=folder, origin="spec.toml")


@pytest.mark.parametrize(
    ("function", "args", "params"),
    [
        ("scale2_kernel", SCALE_ARGS, ["x_ptr", "y_ptr", "n", "BLOCK"]),  # the def the factory returns
        ("RMSNorm.fwd_kernel", RMS_ARGS, ["x_ptr", "w_ptr", "y_ptr", "N", "eps", "BLOCK"]),  # a class body's
        ("copy_kernel", SCALE_ARGS, ["x_ptr", "y_ptr", "n", "BLOCK"]),  # triton.jit(f)
        ("copy_alias", SCALE_ARGS, ["x_ptr", "y_ptr", "n", "BLOCK"]),  # another name for it
        ("rebound", SCALE_ARGS, ["x_ptr", "y_ptr", "n", "BLOCK"]),  # def k, then k = triton.jit(k)
        # k = triton.jit(k), then k = triton.heuristics({...})(k) (unsloth's cross entropy); before, refused
        # with "ktriage cannot tell from the source which @triton.jit def that makes" and a fix to name the
        # def, which has no other name
        ("heuristic_kernel", SCALE_ARGS, ["x_ptr", "y_ptr", "n", "BLOCK"]),
        ("tuned_kernel", SCALE_ARGS, ["x_ptr", "y_ptr", "n", "BLOCK"]),  # triton.autotune(...)(triton.jit(...)(f))
    ],
)
def test_kernels_real_code_exposes_load(folder: Path, function: str, args: str, params: list[str]) -> None:
    (spec,) = _load(folder, function, args)
    assert spec.source == f"{(folder / 'factory.py').resolve()}:{function}" and spec.name == function
    assert [name for name, _ in spec.launch["args"]] == params
    assert spec.signature["BLOCK"] == "constexpr" and spec.constexprs["BLOCK"] == 1024


def test_a_misspelled_kernel_is_offered_kernels_never_the_factory(folder: Path) -> None:
    with pytest.raises(KtriageError, match="defines no function 'scale_kernel'") as info:
        _load(folder, "scale_kernel")
    assert info.value.fix.startswith("did you mean scale2_kernel") and "make_scale_kernel" not in info.value.fix
    with pytest.raises(KtriageError, match="defines no function 'RMSNorm.fwd'") as info:
        _load(folder, "RMSNorm.fwd", RMS_ARGS)
    assert info.value.fix == "did you mean RMSNorm.fwd_kernel?"
    with pytest.raises(KtriageError, match="RMSNorm is a class, not a function") as info:
        _load(folder, "RMSNorm", RMS_ARGS)
    assert info.value.fix == "name a @triton.jit function in it: RMSNorm.fwd_kernel"


def test_a_kernel_only_a_running_function_makes_is_refused_with_what_to_name(folder: Path) -> None:
    """``make_scale_kernel.scale_kernel`` reads FACTOR, which exists only while the factory runs: no
    spec can give it. The fix names the module-level result of the factory, which the worker takes."""
    with pytest.raises(KtriageError) as info:
        _load(folder, "make_scale_kernel.scale_kernel")
    assert "is defined inside the function make_scale_kernel and reads FACTOR from it" in info.value.problem
    assert "a spec cannot give them" in info.value.problem
    assert info.value.fix.startswith("point source at scale2_kernel, the module-level name that holds a kernel")
    assert "FACTOR as a tl.constexpr parameter" in info.value.fix


def test_a_factory_the_source_does_not_show_is_refused_with_what_to_name(tmp_path: Path) -> None:
    """A kernel made by a call ktriage cannot follow (a method of a registry object) has no def to read
    the parameters from: the error says so and what to point at, and names no unrelated function."""
    (tmp_path / "factory.py").write_text(
        "import triton\nREGISTRY = {}\n\n\ndef helper():\n    pass\n\n\nk = REGISTRY.make_kernel(2)\n"
    )
    with pytest.raises(KtriageError) as info:
        loads_spec('[kernel]\nsource = "factory.py:k"\n[kernel.args]\nn = 1\n', base_dir=tmp_path, origin="spec.toml")
    assert "k is bound by `k = REGISTRY.make_kernel(2)` (line 9)" in info.value.problem
    assert "cannot tell from the source which @triton.jit def that makes" in info.value.problem
    assert "helper" not in info.value.fix and info.value.fix.startswith("point source at the @triton.jit def itself")
