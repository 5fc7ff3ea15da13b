"""Remove the cubins a bundle's manifest no longer references, each time a bundle's manifest is replaced.

Why: rebuilding a bundle in its own folder (``ktriage bench W.json -t A -t B --compile-only --bundle
DIR``, again with other toolchains or inputs; ``ktriage tune`` again with other configs; a variant
added again with another kernel; a merge into the folder of an earlier merge) wrote the new manifest
and cubins next to the old cubins, which nothing referenced any more; the copy to the GPU host carried
them all. Every writer replaces the manifest through ``format.write_manifest``, which calls
:func:`remove_unreferenced_cubins` when the folder held a ktriage bundle's manifest until then: the
refusal of foreign folders (``format.check_bundle_folder``) is unchanged, and a folder that held no
bundle keeps whatever its ``cubins/`` had.

Imports nothing of ktriage: ``format`` imports it.
"""

from __future__ import annotations

import re
from pathlib import Path

# the names ``format.artifact_entry`` gives cubins (the first 20 hex digits of their sha256): nothing
# else in cubins/ is removed
_CUBIN_NAME = re.compile(r"[0-9a-f]{20}\.cubin")


def _referenced(doc: object) -> set[str]:
    """Every ``cubin`` path a manifest names, at any depth (variants and merged bundles nest entries)."""
    if isinstance(doc, dict):
        found = {v for k, v in doc.items() if k == "cubin" and isinstance(v, str)}
        for v in doc.values():
            found |= _referenced(v)
        return found
    if isinstance(doc, list):
        return set().union(*(_referenced(v) for v in doc)) if doc else set()
    return set()


def bundle_cubins(out_dir: Path) -> set[str]:
    """The names of the files in ``out_dir/cubins`` that are named as the builders name cubins."""
    cubins = Path(out_dir) / "cubins"
    if not cubins.is_dir():
        return set()
    return {p.name for p in cubins.iterdir() if _CUBIN_NAME.fullmatch(p.name)}


def remove_unreferenced_cubins(out_dir: Path, manifest: object) -> int:
    """Remove the cubins in ``out_dir/cubins`` that ``manifest`` (the bundle's manifest, just written)
    does not reference; returns how many were removed. Only regular files named as the builders name
    cubins are removed."""
    cubins = Path(out_dir) / "cubins"
    keep = {Path(rel).name for rel in _referenced(manifest)}
    removed = 0
    for name in sorted(bundle_cubins(out_dir) - keep):
        path = cubins / name
        if path.is_file() and not path.is_symlink():
            path.unlink(missing_ok=True)
            removed += 1
    return removed
