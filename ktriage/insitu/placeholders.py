"""Inert stand-ins for modules that kernel libraries import at module level but no kernel needs.

Why: a toolchain does not install torch (gigabytes). Liger, flash-linear-attention and the like import
it for their host-side wrappers (autograd functions, device queries); their @triton.jit functions do not
need it. When torch is missing, a placeholder takes its place so that the library module imports and
its kernels compile. The JIT-equivalence harness and the GPU check (real torch there) verify that the
kernels are the ones the library runs.

A placeholder must answer truthfully where a library's import-time decisions read it, or the module
would pick another code path than on the GPU host:
- ``torch.version.hip`` is None (CUDA, not ROCm: an inert object there made Triton look for libamdhip64);
- ``torch.cuda`` describes the fake driver's device (insitu/fakedriver.py): available, one device, its
  compute capability and an NVIDIA name, H100/H200-like properties (fla-core picks Hopper configs from
  ``get_device_capability()[0] >= 9`` and the name at import);
- a class derived from a placeholder (``class F(torch.autograd.Function)``) is a real class whose
  unknown attributes are inert (``F.apply`` at module level works).

Runs inside a toolchain's interpreter: stdlib only, never ``ktriage``.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
import types
from typing import Any

PLACEHOLDER_MODULES = ("torch",)
_used: list[str] = []
# Top-level modules found missing while a kernel's module was imported (``add``): numpy, tabulate,
# transformers ... A host-side import of a kernel library; a kernel that reads one is named by the worker.
_missing: set[str] = set()


class _Inert:
    """Stands for any attribute, call result or base class of a placeholder module."""

    __version__ = "0.0.0"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> _Inert:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Inert()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # Used as a decorator: keep the decorated function.
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return _Inert()

    def __getitem__(self, item: Any) -> _Inert:
        return _Inert()

    def __iter__(self) -> Any:
        return iter(())

    def __bool__(self) -> bool:
        return False

    def __or__(self, other: Any) -> _Inert:
        return self

    __ror__ = __or__

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        return (_InertBase,)


class _InertMeta(type):
    """Class-level attribute access of a class derived from a placeholder: inert, like the instances'."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Inert()


class _InertBase(metaclass=_InertMeta):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Inert()


def _capability() -> tuple[int, int]:
    from_driver = None
    if __package__:
        from ktriage.insitu import fakedriver
    else:
        import fakedriver  # type: ignore[import-not-found,no-redef]
    fake = fakedriver.installed()
    if fake is not None:
        from_driver = divmod(int(fake.target.arch), 10)
    return from_driver or divmod(int(os.environ.get("KTRIAGE_TARGET_CC", "90")), 10)


_NAMES = {7: "NVIDIA V100", 8: "NVIDIA A100", 9: "NVIDIA H200", 10: "NVIDIA B200", 12: "NVIDIA RTX PRO 6000"}


class _FakeCuda(_Inert):
    """``torch.cuda`` answering for the fake driver's one device."""

    def is_available(self) -> bool:
        return True

    def device_count(self) -> int:
        return 1

    def current_device(self) -> int:
        return 0

    def get_device_capability(self, device: Any = None) -> tuple[int, int]:
        return _capability()

    def get_device_name(self, device: Any = None) -> str:
        return _NAMES.get(_capability()[0], "NVIDIA GPU")

    def get_device_properties(self, device: Any = None) -> types.SimpleNamespace:
        major, minor = _capability()
        return types.SimpleNamespace(
            name=self.get_device_name(),
            major=major,
            minor=minor,
            multi_processor_count=132,
            total_memory=141 * 2**30,
            warp_size=32,
            max_shared_memory_per_block_optin=232448,
        )

    def __bool__(self) -> bool:
        return True


_CUDA = _FakeCuda()
_VERSION = types.SimpleNamespace(hip=None, cuda=None, git_version="placeholder", __version__="0.0.0")
_FIXED_ATTRIBUTES: dict[str, dict[str, object]] = {
    "torch": {"version": _VERSION, "cuda": _CUDA},
    "torch.version": {"hip": None, "cuda": None, "git_version": "placeholder"},
    "torch.cuda": {
        name: getattr(_CUDA, name)
        for name in (
            "is_available",
            "device_count",
            "current_device",
            "get_device_capability",
            "get_device_name",
            "get_device_properties",
        )
    },
}


_MARK = "__ktriage_placeholder__"


def _placeholder_module(name: str) -> types.ModuleType:
    """A placeholder module: a plain ``types.ModuleType`` (never a subclass) whose missing attributes
    come from a module-level ``__getattr__`` (PEP 562), fixed ones first (``torch.version.hip``).

    Why a plain module: Triton treats a global of type exactly ``ModuleType`` as a module, both where
    its code generator allows a kernel to read a non-constexpr global and where its JIT (3.4 and later)
    tracks the globals a kernel reads to see them change (``copy.deepcopy`` of each value that is no
    module). A kernel that reads ``torch.version.hip`` in a constexpr branch (torchao's hqq kernels)
    then sees the placeholder as it sees real torch; a subclass of ModuleType was deep-copied and
    failed (``cannot pickle``). It is marked by ``__ktriage_placeholder__`` (:func:`is_placeholder`)."""
    module = types.ModuleType(name)
    fixed = _FIXED_ATTRIBUTES.get(name, {})

    def __getattr__(attribute: str) -> Any:
        if attribute in fixed:
            return fixed[attribute]
        if attribute.startswith("__") and attribute.endswith("__"):
            raise AttributeError(attribute)
        return _Inert()

    module.__dict__.update({"__getattr__": __getattr__, "__version__": "0.0.0", _MARK: True})
    return module


def _is_placeholder_module(value: Any) -> bool:
    return isinstance(value, types.ModuleType) and value.__dict__.get(_MARK) is True


class _PlaceholderFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Supplies a placeholder for PLACEHOLDER_MODULES (and their submodules) when they are not installed."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        top = fullname.split(".")[0]
        if top not in PLACEHOLDER_MODULES and top not in _missing:
            return None
        search: list[str] = []
        for finder in sys.meta_path:
            if finder is self:
                continue
            found = getattr(finder, "find_spec", None)
            spec = found(fullname, path, target) if found is not None else None
            if spec is None:
                continue
            # the real module exists: use it (below the top level a snapshot's folders are the modules:
            # a placeholder there would answer `from torch._inductor.runtime import triton_helpers` inertly)
            if path is not None or not _snapshot_stub(spec):
                return None
            search = list(spec.submodule_search_locations or [])
            # a stub folder on sys.path: an installed torch further on still wins
            stub_dirs = {os.path.dirname(os.path.abspath(loc)) for loc in search}
            real = importlib.machinery.PathFinder.find_spec(
                fullname, [p for p in sys.path if os.path.abspath(p or ".") not in stub_dirs]
            )
            if real is not None and not _snapshot_stub(real):
                return real
            break
        if top not in _used:
            _used.append(top)
        placeholder = importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        placeholder.submodule_search_locations = search
        return placeholder

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _placeholder_module(spec.name)
        # a recorded snapshot's torch/ folder (inductor's runtime helpers under torch/_inductor/runtime)
        # stays importable below the placeholder
        module.__path__ = list(spec.submodule_search_locations or [])
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def _snapshot_stub(spec: importlib.machinery.ModuleSpec) -> bool:
    """Whether ``spec`` is a recorded snapshot's package folder (``torch/__init__.py`` empty, as
    ``ktriage record`` writes it around inductor's runtime helpers) rather than the real package: a
    real torch's ``__init__`` is never empty. Then the placeholder answers for it (``torch.cuda``,
    ``torch.version``: inductor's helpers read them at import) and the folder serves its submodules."""
    origin = spec.origin
    if not spec.submodule_search_locations or not origin or not origin.endswith("__init__.py"):
        return False
    try:
        return os.path.getsize(origin) == 0
    except OSError:
        return False


def install() -> None:
    """Put the finder at the front of ``sys.meta_path`` (idempotent). Real modules still win: it asks
    the other finders first and steps aside when one finds the real package; it goes first so that a
    snapshot's stub ``torch/`` folder, which the path finder would take for torch, gets the placeholder."""
    if not any(isinstance(f, _PlaceholderFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _PlaceholderFinder())


def add(name: str) -> None:
    """Stand in for the top-level module ``name`` too (it is not installed in this interpreter)."""
    _missing.add(name.split(".")[0])


def forget(names: list[str]) -> None:
    """Stop standing in for ``names`` (added by :func:`add` for one kernel's module) and drop their
    placeholder modules from ``sys.modules``: the module that needed them keeps its references, and
    the next kernel's module that guards ``import numpy`` with ``try/except ImportError`` still sees
    numpy missing, as it would on its own."""
    for name in names:
        _missing.discard(name)
        for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
            if _is_placeholder_module(sys.modules[key]):
                del sys.modules[key]


def is_placeholder(value: Any) -> bool:
    """Whether ``value`` is a placeholder module or one of its inert objects (or a class made from one)."""
    return (
        _is_placeholder_module(value)
        or isinstance(value, _Inert)
        or (isinstance(value, type) and issubclass(value, _InertBase))
    )


def stands_for(name: str) -> bool:
    """Whether a placeholder answers (or would answer) for the top-level module ``name``."""
    return name.split(".")[0] in PLACEHOLDER_MODULES or name.split(".")[0] in _missing


def used() -> list[str]:
    """The placeholder modules made so far in this interpreter, each once: a compile reports its own
    kernel's (``worker.needed_by``), as a later kernel's module may import one an earlier one made."""
    return list(_used)
