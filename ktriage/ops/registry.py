"""The registry of operators: one line per operator module, and every lookup by name.

Two kinds of names resolve here, to the same objects:
- an operator's TritonBench name (``layer_norm``: ``ktriage bench --op``, runs, results files);
- a catalog name of one library's kernels of it (``liger.layer_norm``, ``liger.layer_norm@0.8.5``,
  ``liger.layer_norm@latest``, ``tutorial.layer_norm``: explain, tune, bisect, ``catalog``).

Adding an operator: write ``ktriage/ops/<op>.py`` with ``OP = Operator(...)`` and add it to
``OPERATORS`` below (docs/architecture.md shows an example). The position in ``OPERATORS`` orders
``ktriage catalog list`` (library kernels by release, then ktriage's own, each in this order) and
``ktriage bench``'s op list.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ktriage.errors import KtriageError
from ktriage.ops import embedding, layer_norm, matmul, rms_norm, rope, softmax, vector_add
from ktriage.ops.inputs import InputCase
from ktriage.ops.operator import Kernels, Knob, Operator
from ktriage.spec.model import KernelSpec

OPERATORS: tuple[Operator, ...] = (
    vector_add.OP,
    softmax.OP,
    layer_norm.OP,
    rms_norm.OP,
    embedding.OP,
    matmul.OP,
    rope.OP,
)


@dataclass(frozen=True)
class CatalogEntry:
    """One catalog name: an operator's kernels from one library release."""

    name: str
    aliases: tuple[str, ...]
    operator: Operator
    kernels: Kernels
    version: str | None

    @property
    def description(self) -> str:
        package = self.kernels.package(self.version)
        return f"{self.kernels.description}, {package.replace('==', ' ')}" if package else self.kernels.description

    def inputs(self) -> list[InputCase]:
        return (self.kernels.inputs or self.operator.sweep)()


def _entries() -> Iterator[CatalogEntry]:
    kernels = [(op, k) for op in OPERATORS for k in op.kernels]
    depth = max(len(k.versions) for _, k in kernels)
    for own in (False, True):  # library kernels first, then this project's
        for i in range(depth):
            for op, k in kernels:
                if (k.requirement is None) != own or i >= len(k.versions):
                    continue
                version = k.versions[i]
                aliases: tuple[str, ...] = (f"{k.name}@{version}",) if i == 0 and version is not None else ()
                if version is not None and version == k.latest:
                    aliases += (f"{k.name}@latest",)
                yield CatalogEntry(k.catalog_name(version), aliases, op, k, version)


CATALOG: dict[str, CatalogEntry] = {e.name: e for e in _entries()}
_ALIASES: dict[str, str] = {a: e.name for e in CATALOG.values() for a in e.aliases}
_BY_NAME: dict[str, Operator] = {op.name: op for op in OPERATORS}


def catalog_entry(name: str) -> CatalogEntry | None:
    """The catalog entry ``name`` (or an alias of it) names, None if none."""
    return CATALOG.get(_ALIASES.get(name, name))


def catalog_names() -> list[str]:
    """Every catalog name and alias (for "did you mean")."""
    return list(CATALOG) + list(_ALIASES)


def operator(name: str) -> Operator | None:
    """The operator ``name`` names: its TritonBench name or any catalog name of its kernels."""
    if name in _BY_NAME:
        return _BY_NAME[name]
    entry = catalog_entry(name)
    return entry.operator if entry is not None else None


def bench_operators() -> list[Operator]:
    """Operators ``ktriage bench`` can run (those with native backends)."""
    return [op for op in OPERATORS if op.backends]


# TritonBench's registered baselines (``@register_benchmark(baseline=True)`` in
# tritonbench/operators/<op>/operator.py, snapshot db2155c) of operators that have no ``Operator``
# here: their results files come from TritonBench itself (or from a recorded workload), and compare
# and triage still need to know which backend is the machine's yardstick. An op with an ``Operator``
# (rms_norm, benched here or not) says its baseline there.
TRITONBENCH_BASELINES: dict[str, str] = {
    "cross_entropy": "cross_entropy_loss",
    "fused_linear_cross_entropy": "torch_lm_head_ce",
    "swiglu": "torch_swiglu",
    "geglu": "torch_geglu",
    "jsd": "torch_jsd",
    "kl_div": "torch_kl_div",
    "fused_linear_jsd": "torch_lm_head_jsd",
}


def default_baselines() -> dict[str, str]:
    """TritonBench's registered baseline backend of each operator (what ``compare`` checks when
    neither --baseline nor the run's settings name one): each ``Operator``'s own, then
    :data:`TRITONBENCH_BASELINES` for operators only TritonBench has."""
    return {**TRITONBENCH_BASELINES, **{op.name: op.baseline for op in OPERATORS if op.baseline}}


def backend_operators() -> dict[str, str]:
    """backend -> the operator it times, for every backend ktriage knows by name: the operators'
    native backends, the backends their catalog kernels stand for, and TritonBench's registered baselines (a TritonBench file's columns
    say which operator they measured even where its name says another)."""
    out = {backend: op for op, backend in default_baselines().items()}
    for op in OPERATORS:
        for backend in (*op.backends, *(k.backend for k in op.kernels if k.backend)):
            out[backend] = op.name
    return out


def by_backend(backend: str) -> tuple[Operator, Kernels] | None:
    """The operator and catalog kernels of an artifact backend (``liger_layer_norm``), None if none."""
    for op in OPERATORS:
        for k in op.kernels:
            if k.backend == backend and k.replay:
                return op, k
    return None


def replays() -> dict[str, Kernels]:
    """artifact backend -> the kernels it replays (``Kernels.replay`` names the class); library
    kernels first, then ktriage's own, as ``catalog list`` orders them."""
    kernels = [k for op in OPERATORS for k in op.kernels if k.backend and k.replay]
    return {k.backend: k for own in (False, True) for k in kernels if (k.requirement is None) == own and k.backend}


def bench_target(catalog_name: str) -> tuple[Operator, Kernels] | None:
    """The bench operator and artifact backend that time the kernels of ``catalog_name``, if any:
    the release the replay is written for (``versions[0]``) on the operator's own sweep."""
    entry = CATALOG.get(catalog_name)
    if entry is None or not entry.kernels.replay or entry.kernels.inputs is not None:
        return None
    if entry.version != entry.kernels.versions[0] or not entry.operator.backends:
        return None
    return entry.operator, entry.kernels


def knobs_for(spec: KernelSpec) -> dict[str, Knob]:
    """The block knobs an operator declares for ``spec``'s kernel (empty if none does)."""
    fn = spec.source_function()
    for op in OPERATORS:
        for k in op.kernels:
            if k.knobs is not None and fn in k.functions() and k.source_hint in spec.source:
                return k.knobs(spec)
    return {}


def unknown(name: str) -> KtriageError:
    """The error for an operator name nobody has."""
    return KtriageError(f"unknown operator {name!r}", f"use one of: {', '.join(_BY_NAME)}")
