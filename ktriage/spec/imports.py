"""Which file of the user's project an ``import`` in a kernel's module names, found without importing.

Why: a kernel is often made in another module of the user's package (``from .common import
make_kernel``, then ``kernel = make_kernel(...)``). The compile worker imports the kernel's file as
its package's module, with the folder above the top package on ``sys.path`` (``insitu/worker.file_module``),
so that import works there; the spec loader, which reads the kernel's parameters with ``ast`` before
any toolchain runs, must find the same file to read the def the factory returns. Imports are resolved
the way the worker's ``sys.path`` resolves them: relative ones against the file's package, absolute
ones against the folder above its top package (for a file outside a package: its own folder, where
``python file.py`` finds the modules beside it). Nothing else (installed libraries) is searched: a
spec reads the user's own kernels.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from ktriage.errors import SpecError


def package_root(path: Path) -> tuple[Path, list[str]]:
    """(the folder the compile worker imports ``path`` from, the dotted parts of its module there):
    ``root/pkg/ops/norm.py`` -> ``(root, ["pkg", "ops", "norm"])``; a file outside a package ->
    ``(its folder, [its stem])``. The host's twin of ``insitu/worker.file_module``."""
    start = path.resolve()
    directory, parts = start.parent, [start.stem]
    while (directory / "__init__.py").is_file():
        parts.insert(0, directory.name)
        directory = directory.parent
    return directory, parts


def module_file(root: Path, name: tuple[str, ...] | list[str]) -> Path | None:
    """The file of module ``name`` under ``root`` (``a/b.py`` or ``a/b/__init__.py``), or None."""
    if not name:
        return None
    base = root.joinpath(*name)
    for file in (base.with_name(base.name + ".py"), base / "__init__.py"):
        if file.is_file():
            return file.resolve()
    return None


@dataclass(frozen=True)
class ImportedName:
    """What a name an import binds refers to: the module ``module`` (its file ``file``) when
    ``attribute`` is None, else the name ``attribute`` in it, or its submodule of that name."""

    module: tuple[str, ...]
    file: Path
    attribute: str | None


def imported_name(path: Path, stmt: ast.Import | ast.ImportFrom, name: str) -> ImportedName:
    """What ``name``, bound by the module-level ``stmt`` of the file ``path``, refers to in the user's
    project. Refused (naming the module and the fix) when the module is not there: a library's module,
    a typo, or a relative import past the top package."""
    root, parts = package_root(path)
    package = parts[:-1]  # an __init__.py's parts end in "__init__": its package is its folder's
    for alias in stmt.names:
        bound = alias.asname or (alias.name.split(".")[0] if isinstance(stmt, ast.Import) else alias.name)
        if bound != name:
            continue
        if isinstance(stmt, ast.Import):
            # `import a.b.c` binds a; `import a.b as m` binds m to a.b
            module = tuple(alias.name.split(".")) if alias.asname else (alias.name.split(".")[0],)
            return ImportedName(module, _find(path, root, stmt, module), None)
        if stmt.level > len(package):  # `from ... import x` in pkg/ops/k.py, `from . import x` outside a package
            raise _not_found(path, root, stmt, "." * stmt.level + (stmt.module or ""), past_top=True)
        base = tuple(package[: len(package) - (stmt.level - 1)]) if stmt.level else ()
        module = (*base, *(stmt.module.split(".") if stmt.module else ()))
        return ImportedName(module, _find(path, root, stmt, module), alias.name)
    raise SpecError(f"{path}: `{ast.unparse(stmt)}` binds no {name!r}", "report this: it is a ktriage bug")


def _find(path: Path, root: Path, stmt: ast.Import | ast.ImportFrom, module: tuple[str, ...]) -> Path:
    found = module_file(root, module)
    if found is None:
        raise _not_found(path, root, stmt, ".".join(module), past_top=False)
    return found


def _not_found(path: Path, root: Path, stmt: ast.stmt, module: str, *, past_top: bool) -> SpecError:
    text = ast.unparse(stmt)
    where = f"{path}: `{text if len(text) <= 80 else text[:79] + '…'}` (line {stmt.lineno})"
    if past_top:
        return SpecError(
            f"{where} imports {module!r}, which reaches above the top package of {path.name}",
            "fix the relative import, or add __init__.py to the folders of the package so that it reaches a module",
        )
    missing = module.replace(".", "/")
    return SpecError(
        f"{where}: cannot find module {module!r} in the kernel's project (looked under {root}); ktriage "
        "follows a kernel made in another module only within the project, to read the def it makes",
        f"if {module} is your module, put it at {root / missing}.py (or {root / missing}/__init__.py) and fix the "
        "import; a kernel that an installed library's function makes has no def ktriage can read: point source "
        "at a module-level @triton.jit def",
    )
