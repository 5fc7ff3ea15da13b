"""Specialization: the JIT's rules on argument values, checked case by case and against the real
Triton binder (create_function_from_signature + specialize_impl) of real Triton wheels."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from ktriage.errors import KtriageError
from ktriage.spec.source import read_params
from ktriage.spec.specialize import Constexpr, Ptr, specialize_args, specialize_launch


def _one(value, **kw):
    sp = specialize_args([("a", value)], **kw)
    return sp.signature["a"], sp.constexprs.get("a", "-"), "a" in sp.divisible_by_16, "a" in sp.equal_to_1


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1, ("constexpr", 1, False, True)),  # ==1 becomes the constant
        (0, ("i32", "-", True, False)),  # 0 is a multiple of 16
        (16, ("i32", "-", True, False)),
        (17, ("i32", "-", False, False)),
        (-32, ("i32", "-", True, False)),
        (2**31 - 1, ("i32", "-", False, False)),  # last i32
        (2**31, ("i64", "-", True, False)),  # first i64 (and a multiple of 16)
        (-(2**31), ("i32", "-", True, False)),
        (-(2**31) - 1, ("i64", "-", False, False)),
        (2**63 - 1, ("i64", "-", False, False)),
        (2**63, ("u64", "-", True, False)),
        (2**64 - 1, ("u64", "-", False, False)),
        (1.0, ("fp32", "-", False, False)),  # floats are never specialized, not even 1.0
        (16.0, ("fp32", "-", False, False)),
        (True, ("u1", "-", False, False)),  # bools are not ints here
        (None, ("constexpr", None, False, False)),
        (Ptr("float32"), ("*fp32", "-", True, False)),
        (Ptr("bf16", aligned=False), ("*bf16", "-", False, False)),
        (Ptr("torch.float16", const=True), ("*kfp16", "-", True, False)),
        (Constexpr(1024), ("constexpr", 1024, False, False)),
        (Constexpr("tl.float32"), ("constexpr", "tl.float32", False, False)),
    ],
)
def test_value_rules(value, expected) -> None:
    assert _one(value) == expected


def test_do_not_specialize_and_alignment() -> None:
    assert _one(1, do_not_specialize=["a"]) == ("i32", "-", False, False)
    assert _one(32, do_not_specialize=["a"]) == ("i32", "-", False, False)
    assert _one(32, do_not_specialize_on_alignment=["a"]) == ("i32", "-", False, False)
    assert _one(1, do_not_specialize_on_alignment=["a"]) == ("constexpr", 1, False, True)
    assert _one(Ptr("fp32"), do_not_specialize_on_alignment=["a"]) == ("*fp32", "-", False, False)


def test_annotated_int_keeps_its_type_and_is_never_the_constant_1() -> None:
    assert _one(1, annotation_types={"a": "i64"}) == ("i64", "-", False, False)
    assert _one(32, annotation_types={"a": "i64"}) == ("i64", "-", True, False)


def test_out_of_range_and_unknown_values_are_errors() -> None:
    with pytest.raises(KtriageError, match="does not fit in 64 bits"):
        specialize_args([("a", 2**64)])
    with pytest.raises(KtriageError, match="no Triton specialization rule"):
        specialize_args([("a", object())])


KERNEL = textwrap.dedent(
    """
    import triton
    import triton.language as tl

    @triton.jit(do_not_specialize=["nds"])
    def probe(p_al, p_un, p_bf, one, zero, s16, s17, neg, i32max, i64min, big, u64v, f, flag, nothing,
              nds, n64: tl.int64, n64one: tl.int64, BLOCK: tl.constexpr, DT: tl.constexpr = tl.float16):
        pass
    """
)
ARGS = {
    "p_al": {"ptr": 4096, "dtype": "float32"},
    "p_un": {"ptr": 4100, "dtype": "float32"},
    "p_bf": {"ptr": 8192, "dtype": "bfloat16"},
    "one": 1,
    "zero": 0,
    "s16": 16,
    "s17": 17,
    "neg": -48,
    "i32max": 2**31 - 1,
    "i64min": 2**31,
    "big": 2**40 + 16,
    "u64v": 2**63 + 16,
    "f": 1.0,
    "flag": True,
    "nothing": None,
    "nds": 1,
    "n64": 32,
    "n64one": 1,
    "BLOCK": 128,
}

# Runs inside a toolchain's venv: the real JIT binder on stand-in tensors (data_ptr + dtype).
BINDER = textwrap.dedent(
    """
    import importlib.util, json, sys
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend
    from triton.runtime import jit as J

    path, args = sys.argv[1], json.loads(sys.argv[2])
    spec = importlib.util.spec_from_file_location("k", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fn = mod.probe

    class DType:
        def __init__(self, n): self.n = n
        def __str__(self): return "torch." + self.n
        def __hash__(self): return hash(self.n)
        def __eq__(self, o): return str(self) == str(o)

    class Tensor:
        def __init__(self, d): self.dtype = DType(d["dtype"]); self._p = d["ptr"]
        def data_ptr(self): return self._p

    vals = {k: Tensor(v) if isinstance(v, dict) else v for k, v in args.items()}
    binder = J.create_function_from_signature(fn.signature, fn.params, make_backend(GPUTarget("cuda", 90, 32)))
    bound, specialization, _ = binder(**vals)
    out = []
    for name, value, (ty, key) in zip(bound, bound.values(), specialization):
        const = value if ty == "constexpr" else "-"
        out.append([name, str(ty), str(const) if const is not None else None, key == "D"])
    print(json.dumps({"version": triton.__version__, "spec": out}))
    """
)


def _ours(path: Path) -> list[list]:
    params = read_params(path, "probe")
    values = {k: (Ptr(v["dtype"], aligned=v["ptr"] % 16 == 0) if isinstance(v, dict) else v) for k, v in ARGS.items()}
    sp = specialize_launch(params, values)
    out = []
    for name, ty in sp.signature.items():
        const = sp.constexprs[name] if ty == "constexpr" else "-"
        # The JIT passes tl dtypes as objects; they print as their short name ("fp16").
        if isinstance(const, str) and const.startswith("tl."):
            const = {"tl.float16": "fp16"}[const]
        out.append(
            [name, "i1" if ty == "u1" else ty, str(const) if const is not None else None, name in sp.divisible_by_16]
        )
    return out


@pytest.mark.slow
@pytest.mark.parametrize("triton_spec", ["triton==3.3.1", "triton==3.4.0"])
def test_matches_real_jit_binder(triton_spec: str, tmp_path: Path) -> None:
    from ktriage.toolchain.manager import ensure_toolchain

    tc = ensure_toolchain(triton_spec)
    kernel = tmp_path / "probe_kernel.py"
    kernel.write_text(KERNEL)
    script = tmp_path / "binder.py"
    script.write_text(BINDER)
    proc = subprocess.run(
        [str(tc.python), str(script), str(kernel), json.dumps(ARGS)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    jit = json.loads(proc.stdout.strip().splitlines()[-1])
    assert jit["version"] == tc.triton_version
    theirs = [[n, "i1" if t == "u1" else t, c, d] for n, t, c, d in jit["spec"]]
    assert _ours(kernel) == theirs
    # Spot checks that make the expectation explicit (and fail loudly if the JIT changes).
    by_name = {row[0]: row for row in theirs}
    assert by_name["one"][1:] == ["constexpr", "1", False]
    assert by_name["i64min"][1:] == ["i64", "-", True]
    assert by_name["u64v"][1:] == ["u64", "-", True]
    assert by_name["p_un"][1:] == ["*fp32", "-", False]
    assert by_name["nds"][1:] == ["i32", "-", False]  # do_not_specialize: 1 stays an i32
    assert by_name["n64one"][1:] == ["i64", "-", False]  # annotated: 1 stays an i64
