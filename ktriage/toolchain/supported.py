"""The Triton releases ktriage supports, and what each does when it assembles PTX: ``supported.toml``.

Why a data file: the table in docs/toolchains.md ("Supported Triton releases") and the CI check
(tests/toolchain/test_supported.py: the docs list the same releases, and PyPI has no newer final
release) must agree, so both read one file instead of each keeping its own list. Adding a Triton
release means adding one ``[triton."X.Y.Z"]`` entry, after checking the wheel's ptxas selection and
ptxas options (how: the comment at the top of the TOML file).

``SUPPORTED_TRITON`` is the versions, oldest first; ``supported_releases()`` the full records.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DATA_FILE = "supported.toml"
ARCHS = ("sm_80", "sm_90", "sm_100", "sm_120")
"""The archs every release records its ptxas choice, --gpu-name and PTX version for."""


@dataclass(frozen=True)
class SupportedRelease:
    """One supported Triton release, as its PyPI wheel behaves (see supported.toml for the sources)."""

    version: str
    bundled_ptxas: Mapping[str, str]
    """Bundled binary name (``ptxas``, ``ptxas-blackwell``) -> its release, e.g. ``12.8.93``."""
    bundled_ptxas_build: Mapping[str, str]
    """Bundled binary name -> the ``Build ...`` line of its ``--version``."""
    ptxas_per_arch: Mapping[str, str]
    """Arch (``sm_90``) -> the bundled binary Triton's make_cubin runs for it."""
    gpu_name: Mapping[str, str]
    """Arch -> the ``--gpu-name`` value Triton passes (``sm_90a``)."""
    options: tuple[str, ...]
    """make_cubin's ptxas arguments for sm_90 with default settings, in order, without in/out files."""
    conditional_options: Mapping[str, str]
    """Flag -> the condition under which make_cubin adds it."""
    ptx_version_sm90: str
    """The PTX ISA ``.version`` Triton writes for sm_90 (``8.7``)."""
    ptx_version: Mapping[str, str]
    """Arch -> PTX ``.version`` ("" where the bundled ptxas cannot assemble that arch)."""
    quirks: tuple[str, ...]

    def ptxas_version_for(self, arch: str) -> str:
        """The release of the bundled ptxas that Triton uses for ``arch`` (e.g. ``13.4.59``)."""
        return self.bundled_ptxas[self.ptxas_per_arch[arch]]


def _str_map(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ValueError(f"{DATA_FILE}: {where} must be a table of strings")
    return dict(value)


def _str_list(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{DATA_FILE}: {where} must be a list of strings")
    return tuple(value)


def _release(version: str, raw: Any) -> SupportedRelease:
    if not isinstance(raw, dict):
        raise ValueError(f"{DATA_FILE}: triton.{version!r} must be a table")
    where = f"triton.{version!r}"
    ptx_sm90 = raw.get("ptx_version_sm90")
    if not isinstance(ptx_sm90, str):
        raise ValueError(f"{DATA_FILE}: {where}.ptx_version_sm90 must be a string")
    rel = SupportedRelease(
        version=version,
        bundled_ptxas=_str_map(raw.get("bundled_ptxas"), f"{where}.bundled_ptxas"),
        bundled_ptxas_build=_str_map(raw.get("bundled_ptxas_build"), f"{where}.bundled_ptxas_build"),
        ptxas_per_arch=_str_map(raw.get("ptxas_per_arch"), f"{where}.ptxas_per_arch"),
        gpu_name=_str_map(raw.get("gpu_name"), f"{where}.gpu_name"),
        options=_str_list(raw.get("options"), f"{where}.options"),
        conditional_options=_str_map(raw.get("conditional_options", {}), f"{where}.conditional_options"),
        ptx_version_sm90=ptx_sm90,
        ptx_version=_str_map(raw.get("ptx_version"), f"{where}.ptx_version"),
        quirks=_str_list(raw.get("quirks", []), f"{where}.quirks"),
    )
    for arch in ARCHS:
        binary = rel.ptxas_per_arch.get(arch)
        if binary not in rel.bundled_ptxas:
            raise ValueError(f"{DATA_FILE}: {where}.ptxas_per_arch.{arch} = {binary!r} is not a bundled binary")
        if arch not in rel.gpu_name or arch not in rel.ptx_version:
            raise ValueError(f"{DATA_FILE}: {where} lacks {arch} in gpu_name or ptx_version")
    if rel.ptx_version["sm_90"] != rel.ptx_version_sm90:
        raise ValueError(f"{DATA_FILE}: {where}.ptx_version_sm90 differs from ptx_version.sm_90")
    return rel


@lru_cache(maxsize=1)
def _load() -> tuple[SupportedRelease, ...]:
    text = resources.files("ktriage.toolchain").joinpath(DATA_FILE).read_text(encoding="utf-8")
    data = tomllib.loads(text)
    table = data.get("triton")
    if not isinstance(table, dict) or not table:
        raise ValueError(f'{DATA_FILE}: no [triton."X.Y.Z"] tables')
    releases = [_release(version, raw) for version, raw in table.items()]
    return tuple(sorted(releases, key=lambda r: Version(r.version)))


def supported_releases() -> list[SupportedRelease]:
    """Every supported Triton release, oldest first."""
    return list(_load())


SUPPORTED_TRITON: tuple[str, ...] = tuple(r.version for r in _load())
"""The supported Triton versions, oldest first (``("3.2.0", ..., "3.9.0")``)."""
