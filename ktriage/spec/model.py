"""KernelSpec: one @triton.jit function plus everything Triton's JIT decides for one launch.

Why a spec and not "the kernel": the same function compiles to different code per launch. Argument
types, constexpr values, which pointers and ints are divisible by 16, which ints equal 1 (turned
into the constant 1), num_warps/num_stages and the target all change the PTX. A spec pins all of
them, so that a compile on a CPU machine yields the exact kernel the JIT builds on the GPU host.

Conventions (shared with the compile worker, ktriage/insitu/worker.py):
- ``signature`` lists EVERY parameter in source order; each value is a Triton type string
  ("*fp32", "*bf16", "i32", "i64", "u64", "fp32", "u1", ...) or "constexpr".
- Ints the JIT specializes to 1 are stored the way the JIT stores them: ``signature[n] ==
  "constexpr"`` and ``constexprs[n] == 1``; ``equal_to_1`` names them (a spec built with an int type
  there is normalized on construction).
- A Triton dtype passed as a constexpr (``dtype=tl.float32``) is written as the string "tl.float32".
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, TypedDict

from ktriage.arch import SPEC_TARGETS
from ktriage.errors import SpecError
from ktriage.schema.jsontypes import JSONObject, JSONValue
from ktriage.wording import plural

ConstexprValue = int | float | bool | str | None

SCALAR_TYPES = (
    "i1",
    "u1",
    "i8",
    "i16",
    "i32",
    "i64",
    "u8",
    "u16",
    "u32",
    "u64",
    "fp8e4nv",
    "fp8e5",
    "fp8e4b15",
    "fp8e4b8",
    "fp8e5b16",
    "fp16",
    "bf16",
    "fp32",
    "fp64",
)
INT_TYPES = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
KNOWN_TARGETS = SPEC_TARGETS  # ktriage.arch holds the targets (one table of GPU-target facts)
_TENSORDESC = re.compile(r"^tensordesc<.+>$")


def is_pointer_type(ty: str) -> bool:
    """``*fp32`` / ``*kfp16`` (const pointer) are pointers."""
    return ty.startswith("*")


def is_int_type(ty: str) -> bool:
    """Integer scalars that the JIT can specialize (bools excluded)."""
    return ty in INT_TYPES


def is_valid_type(ty: str) -> bool:
    """A type string Triton's ``str_to_ty`` accepts (the subset ktriage supports)."""
    if ty == "constexpr" or ty == "nvTmaDesc" or _TENSORDESC.match(ty):
        return True
    if ty.startswith("*"):
        inner = ty[2:] if ty.startswith("*k") else ty[1:]
        return inner in SCALAR_TYPES
    return ty in SCALAR_TYPES


class LaunchRecord(TypedDict, total=False):
    """A spec written by values: the launch as the library makes it (spec/values.py)."""

    args: list[list[JSONValue]]  # [name, encoded value] pairs
    options: dict[str, int]  # num_warps, num_stages, num_ctas, maxnreg as the launch passes them
    grid: list[int]
    autotune_config: int | None
    overrides: dict[str, JSONValue]  # what tune or a fix changed (launch_overrides)


@dataclass(frozen=True)
class KernelSpec:
    """One launch of one Triton kernel, as the JIT sees it. See the module docstring for conventions."""

    name: str
    source: str
    signature: dict[str, str]
    constexprs: dict[str, ConstexprValue] = field(default_factory=dict)
    divisible_by_16: tuple[str, ...] = ()
    equal_to_1: tuple[str, ...] = ()
    num_warps: int = 4
    num_stages: int = 3
    num_ctas: int = 1
    maxnreg: int | None = None
    # Triton's compile option (a launch keyword, as unsloth passes it): False compiles a*b+c as FMUL and
    # FADD (no FFMA; ptxas --fmad=false). True is Triton's default, so a spec that leaves it on has the
    # JSON and key() it had before the field existed (to_json, key leave it out).
    enable_fp_fusion: bool = True
    target: str = "sm_90"
    grid: tuple[int, ...] | None = None
    package: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    # A spec written by VALUES (docs/specs.md): the launch as the library makes it, {"args": [[name,
    # encoded value]], "options": {...}, "grid": [...], "autotune_config": int | None}. Each toolchain's
    # own JIT then decides the fields above for its compile (spec/values.py, compile/compiler.py); the
    # fields here are the preview by ktriage's rules (spec/specialize.py), shown before any compile.
    launch: LaunchRecord | None = None
    # Where a spec file listed this kernel (0 = its first [[kernel]]), None for a spec not read from a
    # file. Why: explain merges a finding's inputs into a printed range only over kernels that follow each
    # other in the file (explain/findings.continues), and a file narrowed by --input skips some; a spec
    # file's kernels have no input id to tell that. Read-side only: neither in to_json (reports, bundles,
    # the compile worker) nor in meta (which a spec file's [kernel.meta] writes), nor in equality or key().
    file_position: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        # Normalize containers (JSON gives lists) and put equal_to_1 ints in the JIT's constexpr form.
        sig = dict(self.signature)
        consts = dict(self.constexprs)
        eq1 = tuple(self.equal_to_1)
        for n in eq1:
            if n in sig and is_int_type(sig[n]):
                sig[n] = "constexpr"
            if n in sig and sig[n] == "constexpr":
                consts.setdefault(n, 1)
        object.__setattr__(self, "signature", sig)
        object.__setattr__(self, "constexprs", consts)
        object.__setattr__(self, "equal_to_1", eq1)
        object.__setattr__(self, "divisible_by_16", tuple(self.divisible_by_16))
        if self.grid is not None:
            object.__setattr__(self, "grid", tuple(int(g) for g in self.grid))
        object.__setattr__(self, "meta", dict(self.meta))

    # ----------------------------------------------------------------- serialization
    def to_json(self) -> JSONObject:
        """A JSON-ready dict (flat field names; the compile worker reads this)."""
        data = asdict(self)
        data["divisible_by_16"] = list(self.divisible_by_16)
        data["equal_to_1"] = list(self.equal_to_1)
        data["grid"] = list(self.grid) if self.grid is not None else None
        if self.launch is None:  # a spec by types: the JSON of before by-value specs existed
            del data["launch"]
        del data["file_position"]  # where a file listed it is the reader's, not the spec's
        if self.enable_fp_fusion is True:  # Triton's default: the JSON of before the option was carried
            del data["enable_fp_fusion"]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | str) -> KernelSpec:
        """Inverse of :meth:`to_json`; also accepts the JSON text."""
        obj = json.loads(data) if isinstance(data, str) else dict(data)
        known = set(cls.__dataclass_fields__) - {"file_position"}
        unknown = sorted(set(obj) - known)
        if unknown:
            raise SpecError(
                f"kernel spec JSON has {plural(len(unknown), 'unknown field')} {unknown}",
                f"use only {sorted(known)}",
            )
        for required in ("name", "source", "signature"):
            if required not in obj:
                raise SpecError(f"kernel spec JSON lacks {required!r}", f"add {required!r}")
        return cls(**obj)

    def replace(self, **changes: Any) -> KernelSpec:
        """A copy with some fields changed (e.g. another target or num_warps).

        A spec written by values compiles what each toolchain's JIT decides from its launch, so a
        change of what is compiled (tune's configs, explain's fixes: a constexpr, num_warps, maxnreg)
        is kept as an override of that decision, in ``launch["overrides"]`` (spec/values.py applies it)."""
        if self.launch is not None and "launch" not in changes:
            overrides = launch_overrides(self, changes)
            if overrides != (self.launch.get("overrides") or {}):
                changes["launch"] = {**self.launch, "overrides": overrides}
        return replace(self, **changes)

    # ----------------------------------------------------------------- identity
    def source_function(self) -> str:
        """The function name after the last ':' of ``source``."""
        return self.source.rpartition(":")[2]

    def key(self) -> str:
        """Content hash of what determines the compiled code: the source file text and the fields.

        The absolute path is left out (the same kernel file on two machines has one key) and so are
        ``name``, ``grid`` and ``meta`` (they describe the launch, not the code): launches that
        compile to the same kernel share one key and one artifact.
        """
        from ktriage.spec.source import resolve_source_file

        path = resolve_source_file(self.source, self.package)
        payload: dict[str, object] = {
            "source_text_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "function": self.source_function(),
            "module": self.source.rpartition(":")[0] if not _is_file_source(self.source) else None,
            "package": self.package,
            "signature": list(self.signature.items()),
            "constexprs": sorted((k, repr(v)) for k, v in self.constexprs.items()),
            "divisible_by_16": sorted(self.divisible_by_16),
            "equal_to_1": sorted(self.equal_to_1),
            "num_warps": self.num_warps,
            "num_stages": self.num_stages,
            "num_ctas": self.num_ctas,
            "maxnreg": self.maxnreg,
            "target": self.target,
        }
        if self.enable_fp_fusion is not True:  # off changes the code; on (the default) keeps the old keys
            payload["enable_fp_fusion"] = self.enable_fp_fusion
        if not self.package:  # a project's own helpers (a pinned package's are covered by its version)
            from ktriage.spec.source import local_module_files

            helpers = local_module_files(path)
            if helpers:
                root = path.resolve().parent
                payload["local_modules"] = [
                    [os.path.relpath(f, root), hashlib.sha256(f.read_bytes()).hexdigest()] for f in helpers
                ]
        if self.launch is not None:  # by values: each toolchain's JIT decides from them
            payload["launch"] = json.dumps(self.launch, sort_keys=True)
        blob = json.dumps(payload, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:24]

    # ----------------------------------------------------------------- checks
    def validate(self, *, check_source: bool = True) -> KernelSpec:
        """Raise KtriageError naming the bad field and the fix; return self when all is well.

        With ``check_source`` the signature is also compared with the function's real parameter
        list, read from the source file with ``ast`` (no Triton import needed).
        """
        where = f"spec {self.name!r}"
        if ":" not in self.source:
            raise SpecError(
                f"{where}: source {self.source!r} names no function",
                "write it as '/path/to/file.py:function' or 'package.module:function'",
            )
        if not isinstance(self.signature, dict) or not self.signature:
            raise SpecError(f"{where}: signature is empty", "list every kernel parameter with its Triton type")
        for pname, ty in self.signature.items():
            if not isinstance(ty, str) or not is_valid_type(ty):
                raise SpecError(
                    f"{where}: signature[{pname!r}] = {ty!r} is not a Triton type",
                    'use a pointer like "*fp32"/"*bf16", a scalar like "i32"/"i64"/"fp32"/"u1", or "constexpr"',
                )
        for pname, ty in self.signature.items():
            if ty == "constexpr" and pname not in self.constexprs:
                raise SpecError(
                    f"{where}: constexpr parameter {pname!r} has no value",
                    f"add {pname} = <value> under constexprs",
                )
        for pname, value in self.constexprs.items():
            if pname not in self.signature:
                if check_source:  # most often a parameter the signature left out: say that, with its type
                    self._check_source(where)
                raise SpecError(
                    f"{where}: constexprs has {pname!r}, which is not a parameter",
                    f"remove it or add {pname!r} to the signature (parameters: {list(self.signature)})",
                )
            if self.signature[pname] != "constexpr":
                raise SpecError(
                    f"{where}: {pname!r} has a constexpr value but its type is {self.signature[pname]!r}",
                    f'set signature[{pname!r}] = "constexpr" or drop its constexpr value',
                )
            if value is not None and not isinstance(value, (bool, int, float, str)):
                raise SpecError(
                    f"{where}: constexpr {pname!r} = {value!r} is not a number, bool, string or None",
                    'write Triton dtypes as strings like "tl.float32"',
                )
            if isinstance(value, str) and value.startswith("torch."):
                raise torch_dtype_refusal(where, pname, value)
        for pname in self.divisible_by_16:
            maybe_ty = self.signature.get(pname)
            if maybe_ty is None:
                if check_source:
                    self._check_source(where)
                raise SpecError(
                    f"{where}: divisible_by_16 names {pname!r}, which is not a parameter",
                    f"use parameter names from the signature: {list(self.signature)}",
                )
            if not (is_pointer_type(maybe_ty) or is_int_type(maybe_ty)):
                raise SpecError(
                    f"{where}: divisible_by_16 names {pname!r} of type {maybe_ty!r}",
                    "only pointers and integers can be divisible by 16: remove it from the list",
                )
        for pname in self.equal_to_1:
            if pname not in self.signature:
                if check_source:
                    self._check_source(where)
                raise SpecError(
                    f"{where}: equal_to_1 names {pname!r}, which is not a parameter",
                    f"use parameter names from the signature: {list(self.signature)}",
                )
            if self.constexprs.get(pname) != 1 or isinstance(self.constexprs.get(pname), bool):
                raise SpecError(
                    f"{where}: equal_to_1 names {pname!r} but its value is {self.constexprs.get(pname)!r}",
                    "only integer parameters whose value is 1 belong in equal_to_1",
                )
            if pname in self.divisible_by_16:
                raise SpecError(
                    f"{where}: {pname!r} is both equal to 1 and divisible by 16",
                    "remove it from divisible_by_16 (1 is not divisible by 16)",
                )
        if self.target not in KNOWN_TARGETS:
            raise SpecError(
                f"{where}: unknown target {self.target!r}",
                f"use one of {', '.join(KNOWN_TARGETS)}",
            )
        for opt in ("num_warps", "num_stages", "num_ctas"):
            val = getattr(self, opt)
            if not isinstance(val, int) or isinstance(val, bool) or val < 1:
                raise SpecError(f"{where}: {opt} = {val!r} must be a positive integer", f"set {opt} to e.g. 4")
        if self.num_warps & (self.num_warps - 1):
            raise SpecError(f"{where}: num_warps = {self.num_warps} is not a power of two", "use 1, 2, 4, 8, 16 or 32")
        if self.maxnreg is not None and not (isinstance(self.maxnreg, int) and 16 <= self.maxnreg <= 255):
            raise SpecError(
                f"{where}: maxnreg = {self.maxnreg!r} is out of range", "use an integer in 16..255 or leave it out"
            )
        if not isinstance(self.enable_fp_fusion, bool):
            raise SpecError(
                f"{where}: enable_fp_fusion = {self.enable_fp_fusion!r} is not a bool",
                "write enable_fp_fusion = false (or true, Triton's default)",
            )
        if self.grid is not None and (len(self.grid) not in (1, 2, 3) or any(g < 1 for g in self.grid)):
            raise SpecError(f"{where}: grid {self.grid} must be 1 to 3 positive integers", "e.g. grid = [132]")
        if check_source:
            self._check_source(where)
        return self

    def _check_source(self, where: str) -> None:
        """The signature against the function's parameter list, read from its source with ``ast``."""
        from ktriage.spec.source import check_signature, read_params, resolve_source_file

        path = resolve_source_file(self.source, self.package)
        params = read_params(path, self.source_function())
        check_signature(self.signature, params, self.source_function(), where=where)


COMPILE_FIELDS = (
    "signature",
    "constexprs",
    "divisible_by_16",
    "equal_to_1",
    "num_warps",
    "num_stages",
    "num_ctas",
    "maxnreg",
    "enable_fp_fusion",
)

# torch dtype names whose triton.language attribute is spelled otherwise (the rest are alike: float16).
_TORCH_TO_TL = {
    "float": "float32",
    "half": "float16",
    "double": "float64",
    "int": "int32",
    "long": "int64",
    "bool": "int1",
    "float8_e4m3fn": "float8e4nv",
    "float8_e5m2": "float8e5",
    "float8_e4m3fnuz": "float8e4b8",
    "float8_e5m2fnuz": "float8e5b16",
}


def torch_dtype_refusal(where: str, name: str, value: str) -> SpecError:
    """The error for a constexpr written as a torch dtype (``"torch.float32"``).

    Why refused: Triton's JIT (3.3 through 3.6) passes a torch dtype given to a ``tl.constexpr``
    unconverted, and a toolchain has no torch to make one, so the string compiled as the string
    constant "torch.float32" (``x.to(OUT)`` then failed with "'str' object has no attribute 'scalar'",
    and an unused one compiled silently). Converting it to ``tl.float32`` would compile what no launch
    compiles either: a torch dtype used as a Triton type fails in Triton itself. The Triton dtype is
    what a spec can say, so the fix names it."""
    torch_name = value.removeprefix("torch.")
    tl_name = _TORCH_TO_TL.get(torch_name, torch_name)
    return SpecError(
        f"{where}: constexpr {name} = {value!r} is a torch dtype written as a string; Triton passes a torch "
        f"dtype to a tl.constexpr as it is (it does not convert it to a Triton dtype) and a spec cannot make "
        f"one, so it would compile as the string {value!r}",
        f'write the Triton dtype, {name} = "tl.{tl_name}" (what the kernel compiles with if the library passes '
        f"tl.{tl_name}; a torch dtype used as a type, as in x.to({name}), fails in Triton too)",
    )


def launch_overrides(spec: KernelSpec, changes: Mapping[str, Any]) -> JSONObject:
    """The overrides of a by-value spec after ``changes``: what differs from the spec as it is (a
    constexpr by name; another field as a whole), on top of the overrides it already has."""
    overrides: JSONObject = json.loads(json.dumps((spec.launch or {}).get("overrides") or {}))
    for name in COMPILE_FIELDS:
        if name not in changes:
            continue
        new, old = changes[name], getattr(spec, name)
        if name == "constexprs":
            diff = {k: v for k, v in dict(new).items() if k not in old or old[k] != v or type(old[k]) is not type(v)}
            if diff:
                earlier = overrides.get("constexprs")
                overrides["constexprs"] = {**(earlier if isinstance(earlier, Mapping) else {}), **diff}
        elif isinstance(old, tuple):
            if tuple(new) != old:
                overrides[name] = list(new)
        elif new != old:
            overrides[name] = dict(new) if isinstance(new, Mapping) else new
    return overrides


def _is_file_source(source: str) -> bool:
    return source.rpartition(":")[0].endswith(".py")


def input_label(meta: Mapping[str, Any], name: str) -> str:
    """How a spec is named among the inputs of its sweep: its input label, else the ``[...]`` part
    of its name (catalog specs are named ``op.mode[N=4608]``), else the whole name. Every report
    (explain, tune) labels inputs this way."""
    label = meta.get("input_label") or meta.get("label")
    if label:
        return str(label)
    if name.endswith("]") and "[" in name:
        return name[name.index("[") + 1 : -1]
    return name
