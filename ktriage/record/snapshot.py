"""A recorded kernel's source snapshot: the files it needs to compile on a machine with only a Triton wheel.

Why a snapshot and not the path or the pip pin: an inductor-generated module lives in a temporary
folder, a script's kernel in the user's checkout, and a library on the GPU host may be patched. The
hook (ktriage/insitu/launch_hook.py) reads the kernel's module and the modules it imports from the
same package (and @triton.jit helpers from others) while the program runs; the workload file carries
their text. Reading a workload writes each snapshot once under ``<home>/snapshots/<sha256>``, a
folder named by its content, which the specs name as their package ``snapshot:<sha256>``
(ktriage.spec.packages finds it there; the compile worker puts it on sys.path).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from ktriage.errors import FormatError
from ktriage.spec.packages import SNAPSHOT_PREFIX, snapshot_dir

_DONE = ".ktriage-complete"


def snapshot_digest(files: Mapping[str, str]) -> str:
    """The content hash of a file set (paths and texts), the snapshot's name."""
    blob = json.dumps(sorted(files.items()), ensure_ascii=False).encode()
    return hashlib.sha256(blob).hexdigest()


def requirement(digest: str) -> str:
    """The spec ``package`` that names a snapshot."""
    return SNAPSHOT_PREFIX + digest


def _safe_relpath(rel: str) -> PurePosixPath:
    path = PurePosixPath(rel)
    if path.is_absolute() or ".." in path.parts or not rel.endswith(".py"):
        raise FormatError(
            f"source snapshot file {rel!r} is not a relative .py path", "the workload file is damaged: record it again"
        )
    return path


def materialize(digest: str, files: Mapping[str, str]) -> Path:
    """Write the snapshot once (atomic rename) and return its root; refuse a digest its files do not have."""
    if snapshot_digest(files) != digest:
        raise FormatError(
            f"source snapshot {digest[:12]} does not match its files",
            "the workload file was edited or damaged: record it again",
        )
    root = snapshot_dir(requirement(digest))
    if (root / _DONE).is_file():
        return root
    staging = root.with_name(f"{root.name}.tmp-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    for rel, text in files.items():
        target = staging / _safe_relpath(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    staging.mkdir(parents=True, exist_ok=True)
    (staging / _DONE).write_text(digest + "\n")
    try:
        os.replace(staging, root)
    except OSError:  # another process published it first
        shutil.rmtree(staging, ignore_errors=True)
    return root


def module_file(root: Path, module: str) -> Path:
    """The file of ``module`` inside a materialized snapshot."""
    base = root.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    raise FormatError(f"the source snapshot has no module {module!r}", "the workload file is damaged: record it again")
