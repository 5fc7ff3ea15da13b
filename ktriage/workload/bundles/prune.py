"""Remove the cubins a rebuilt bundle no longer references.

Why: rebuilding a bench bundle in its own folder (``ktriage bench W.json -t A -t B --compile-only --bundle
DIR``, again with other toolchains or inputs) wrote the new manifest and cubins next to the old cubins,
which nothing referenced any more; the copy to the GPU host carried them all. Only a folder that held a
ktriage bundle of the same op or workload before the build is pruned (``held_identity``, read before the
build): the refusal of foreign folders (``format.check_bundle_folder``) is unchanged, and a folder that
held no bundle keeps whatever its ``cubins/`` had."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ktriage.workload.bundles.format import MANIFEST, bundle_identity

# the names ``format.artifact_entry`` gives cubins (the first 20 hex digits of their sha256): nothing
# else in cubins/ is removed
_CUBIN_NAME = re.compile(r"[0-9a-f]{20}\.cubin")


def held_identity(out_dir: Path) -> tuple[str, str] | None:
    """The (op, mode) of the bundle ``out_dir`` holds now, or None (no bundle there): read before a build."""
    return bundle_identity(Path(out_dir) / MANIFEST)


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


def remove_unreferenced_cubins(out_dir: Path) -> int:
    """Remove the cubins in ``out_dir/cubins`` that the bundle's manifest does not reference, after a
    rebuild of the same bundle; returns how many were removed. Only regular files named as the builders
    name cubins are removed. A manifest that cannot be read removes nothing."""
    cubins = Path(out_dir) / "cubins"
    try:
        doc = json.loads((Path(out_dir) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return 0
    keep = {Path(rel).name for rel in _referenced(doc)}
    if not cubins.is_dir():
        return 0
    removed = 0
    for path in cubins.iterdir():
        if _CUBIN_NAME.fullmatch(path.name) and path.name not in keep and path.is_file() and not path.is_symlink():
            path.unlink(missing_ok=True)
            removed += 1
    return removed
