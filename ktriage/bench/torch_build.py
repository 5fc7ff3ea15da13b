"""Which torch a measuring run will use: its version and the CUDA it was built for (:class:`TorchBuild`).

Two readers, one fact. The measuring worker imports torch anyway and reads ``torch.__version__`` and
``torch.version.cuda``. The parent of a bench with ``-t`` must know before it compiles (minutes on a
cold cache) whether that torch can use a GPU at all, but must not import torch (seconds, and the parent
stays light): :func:`installed_torch_build` reads the same two values from torch's ``version.py`` as
text, without importing it.
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TorchBuild:
    """The facts of the worker's torch that its refusal names: ``version`` (``torch.__version__``),
    ``cuda`` (``torch.version.cuda``: the CUDA it was built for, None for a CPU-only or a ROCm build) and
    ``hip`` (``torch.version.hip``: the HIP of a ROCm build, else None). Why ``hip``: ``cuda`` alone
    cannot tell a ROCm build from a CPU-only one, and calling a ROCm torch "CPU-only" sends its user
    looking for the wrong problem."""

    version: str
    cuda: str | None
    hip: str | None = None

    @property
    def rocm(self) -> bool:
        """A ROCm build: torch for AMD GPUs, which cannot drive the CUDA GPUs ktriage measures on."""
        return self.cuda is None and self.hip is not None


def parse_torch_version_py(text: str) -> TorchBuild | None:
    """The build that torch's ``version.py`` (``text``) states, or None when it cannot be told.

    Why this file and not the distribution's version (``importlib.metadata.version("torch")`` ending in
    ``+cpu``): ``version.py`` is written by torch's build and is what ``torch.version.cuda`` itself
    returns, the very fact the measuring worker judges; ``+cpu`` is only the local tag of the CPU wheels
    of download.pytorch.org: conda builds and builds from source (``2.6.0a0+git1234abc``) carry no tag
    even when CPU-only, so the tag would miss them. Read with :mod:`ast` (literals only, nothing run).

    None (the caller lets the bench through, as the driver probe does when it cannot tell) when the text
    does not parse, lacks ``__version__`` or ``cuda``, assigns them anything but a literal, or names a
    ROCm build (``hip`` set: ``cuda`` is None there, yet it is no CPU-only build)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    values: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant):
            values[target.id] = value.value
    version, cuda = values.get("__version__"), values.get("cuda", ...)
    if not isinstance(version, str) or not (cuda is None or isinstance(cuda, str)) or values.get("hip") is not None:
        return None
    return TorchBuild(version, cuda)


def installed_torch_build() -> TorchBuild | None:
    """The build of the torch this interpreter would import (the measuring worker is spawned from this
    same interpreter), read from its ``version.py`` without importing torch; None when there is no
    torch or its file cannot be read or told (:func:`parse_torch_version_py`). ``find_spec`` of the
    top-level package only locates it: nothing of torch runs."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    try:
        text = (Path(spec.origin).parent / "version.py").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return parse_torch_version_py(text)
