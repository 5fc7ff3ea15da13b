"""The operator: every fact ktriage knows about one op, in one object (``OP`` of ``ktriage/ops/<op>.py``).

An operator is what TritonBench calls an op (``layer_norm``): an input sweep, the backends that
compute it (their names, the baseline first), how many bytes and flops one call moves and does,
and the kernels of libraries that implement it. Each library's kernels are a catalog entry
(:class:`Kernels`, e.g. ``liger.layer_norm``): their recipes per library release (what the library's
host code passes to each launch), the replay that launches them from compiled artifacts in a bench,
and the block sizes ``ktriage tune`` may turn.

Pure facts, no torch and no GPU: the pieces that need torch (native backends, replays) live in
``ktriage.workload`` and are named here by module path, loaded only when a bench runs (``workload``
sits above ``measure`` in the layers; this package sits below the catalog, docs/architecture.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ktriage.ops.inputs import MODES as MODES  # its home: the selectors read a catalog kernel's name by it
from ktriage.ops.inputs import InputCase
from ktriage.schema.jsontypes import JSONObject
from ktriage.spec.launch import Launch
from ktriage.spec.model import KernelSpec

Recipe = Callable[..., Launch]
"""(case, *, op, mode, dtype, target, sm_count, version) -> the launch the library makes for ``case``."""
Metric = Callable[[Mapping[str, int], str, int], int]
"""(input facts, mode, element bytes) -> bytes moved, flops or the largest tensor's bytes of one call."""


def row_activation_bytes(f: Mapping[str, int], mode: str, e: int) -> int:
    """``largest_tensor`` of the row-wise ops over an (M, N) activation (layer_norm, rms_norm, softmax):
    x, dy, dx and y have that one shape, so M*N*e in every mode. One function, so the ops cannot drift."""
    return f["M"] * f["N"] * e


@dataclass(frozen=True)
class Knob:
    """One tunable block-size constexpr: its allowed values and why they are the allowed ones.

    ``grid_axis``: the grid axis this block tiles (None: it does not change the grid). The new
    grid along that axis is ``cdiv(numel, value)`` when ``numel`` is known, else the spec's grid
    scaled by ``old / value`` (rounded up).
    """

    name: str
    values: tuple[int, ...]
    why: str
    grid_axis: int | None = None
    numel: int | None = None
    reduction: bool = False  # a reduction-loop block (RBLOCK): what RBLOCK scaling may shrink

    def to_json(self) -> JSONObject:
        return {
            "name": self.name,
            "values": list(self.values),
            "why": self.why,
            "grid_axis": self.grid_axis,
            "numel": self.numel,
            "reduction": self.reduction,
        }


@dataclass(frozen=True)
class Kernels:
    """One library's kernels of an operator: one catalog name (``liger.layer_norm``), its releases.

    ``versions``: the library releases with a recipe, the default first (catalog name without
    ``@``); ``(None,)`` for this project's own kernels. ``latest``: the release ``@latest`` means.
    ``inputs``: a sweep of its own (None: the operator's). ``backend``: TritonBench's name of the
    backend these kernels are (``liger_layer_norm``, ``liger_rms``): what lets triage explain that
    backend's cells from them. ``replay``: the class (``module:Class``) that launches them from a
    toolchain's artifacts in a bench, written for release ``versions[0]``; None: no bench can time
    them (triage explains such a backend compile-side, its GPU step needs a recording). ``knobs``: the block sizes tune may turn, for kernels whose source
    function is in ``kernels`` and whose source contains ``source_hint``.
    """

    name: str
    description: str
    recipe: Recipe
    kernels: Mapping[str, str]  # mode -> "module:function" or "file.py:function"
    dtypes: tuple[str, ...]
    default_dtype: str
    modes: tuple[str, ...] = ("bwd", "fwd")
    default_mode: str = "bwd"
    versions: tuple[str | None, ...] = (None,)
    latest: str | None = None
    requirement: Callable[[str], str] | None = None  # release -> pip requirement (None: ktriage's own)
    inputs: Callable[[], list[InputCase]] | None = None
    backend: str | None = None
    replay: str | None = None
    knobs: Callable[[KernelSpec], dict[str, Knob]] | None = None
    source_hint: str = ""

    def package(self, version: str | None) -> str | None:
        return self.requirement(version) if self.requirement is not None and version is not None else None

    def catalog_name(self, version: str | None) -> str:
        return self.name if version == self.versions[0] else f"{self.name}@{version}"

    def functions(self) -> set[str]:
        return {src.rpartition(":")[2] for src in self.kernels.values()}


@dataclass(frozen=True)
class Operator:
    """One operator: TritonBench's name and facts, and the kernels that implement it (module doc).

    TritonBench's facts (``x_label``, ``x_keys``, ``baseline``) let its results files be read by input
    and baseline; they are set wherever TritonBench has the op, benched here or not (rms_norm). The
    bench fields (``backends``, ``module``) are empty for operators that only the catalog has (rms_norm,
    the tutorial kernels): ``ktriage bench`` runs operators with ``backends``.
    """

    name: str  # TritonBench's --op name
    sweep: Callable[[], list[InputCase]]
    kernels: tuple[Kernels, ...] = ()
    x_label: str = ""  # TritonBench's register_x_val label
    x_keys: tuple[str, ...] = ()  # facts that make the x_val, in order
    baseline: str = ""  # TritonBench's registered baseline backend ("" where TritonBench has no such op)
    backends: tuple[str, ...] = ()  # native backends, TritonBench's names, baseline first
    module: str | None = None  # the workload module with the native backends (imports torch when run)
    modes: tuple[str, ...] = MODES
    default_precision: str = "fp32"
    bytes_moved: Metric | None = None
    flops: Metric | None = None
    # bytes of the largest tensor one call reads or writes: what a streaming kernel's loop walks through,
    # so the cost model's trip count (ktriage.predict.facts) knows a catalog launch's data size as it
    # knows a recorded launch's from its shapes (None: unknown, the model's fitted trip count applies)
    largest_tensor: Metric | None = None

    def inputs(self) -> list[InputCase]:
        return self.sweep()

    @property
    def artifact_backends(self) -> tuple[str, ...]:
        """Backends that can also run as replayed artifacts (their kernels are in the catalog)."""
        return tuple(k.backend for k in self.kernels if k.backend and k.replay)

    @property
    def catalog_ops(self) -> dict[str, str]:
        """TritonBench backend -> the catalog op of the kernels it stands for, replay or not: what
        triage compiles to explain a cell of that backend. Naming the kernels is all an explanation
        needs; timing them needs a replay (:attr:`artifact_backends`)."""
        return {k.backend: k.name for k in self.kernels if k.backend}

    def x_val(self, case: InputCase) -> tuple[int, ...]:
        """TritonBench's x_val for this input (layer_norm (M, N), embedding (B, T, D, V), rope (H, T))."""
        return tuple(int(case.facts[k]) for k in self.x_keys)

    def x_val_text(self, case: InputCase) -> str:
        return "(" + ", ".join(str(v) for v in self.x_val(case)) + ")"

    def impl(self) -> ModuleType:
        """The workload module with the native backends (imports torch)."""
        if self.module is None:
            raise KeyError(self.name)
        return importlib.import_module(self.module)


def load(ref: str) -> Any:
    """The object a ``module:attribute`` reference names (replays, registered by path, see module doc)."""
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)
