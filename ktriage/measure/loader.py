"""Load a bundle's cubins into the CUDA launcher: the GPU side of ``ktriage.workload.bundles.format``.

The bundle format knows nothing of the GPU (a CPU machine writes it, merges it and reads it back);
this module turns one of its artifacts into a :class:`ktriage.measure.launch.LoadedKernel`. Pass
:func:`runner_loader` as the ``load`` of ``ktriage.workload.bundles.launch.make_launcher``. The artifact is
read through :class:`CubinEntry` (the fields of ``BundleArtifact`` this needs) rather than by
importing the bundle module, because measure sits below workload (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ktriage.compile.abi import AbiParam
from ktriage.schema.jsontypes import JSONValue

if TYPE_CHECKING:
    from ktriage.measure.launch import LoadedKernel


class CubinEntry(Protocol):
    """What loading needs of a bundle artifact (``ktriage.workload.bundles.format.BundleArtifact``)."""

    @property
    def kernel_name(self) -> str: ...

    @property
    def metadata(self) -> Mapping[str, Any]: ...

    @property
    def abi(self) -> Sequence[Mapping[str, JSONValue]]: ...  # AbiParam.to_json() each

    def cubin_bytes(self) -> bytes: ...


def load_for_runner(art: CubinEntry, device: int = 0) -> LoadedKernel:
    """Load a bundle artifact into the measurement runner (ktriage.measure.launch.LoadedKernel)."""
    from ktriage.measure.launch import LoadedKernel

    abi = [AbiParam.from_json(p) for p in art.abi]
    return LoadedKernel(art.cubin_bytes(), art.kernel_name, art.metadata, abi, device=device)


def runner_loader(device: int = 0) -> Callable[[CubinEntry], LoadedKernel]:
    """``load`` for ``ktriage.workload.bundles.launch.make_launcher`` backed by the measurement runner."""
    return lambda art: load_for_runner(art, device)
