"""Which names a kernel's module imports from a library are Triton's own ``triton`` / ``triton.language``.

Why: vLLM writes every kernel with ``from vllm.triton_utils import tl, triton``, a library module that
re-exports Triton (and a placeholder when Triton is missing); importing it imports all of vllm (torch,
its package metadata, a platform probe), which a compile worker cannot do. When the kernel is
compiled from its own source (``kernel_source.extract``), such a statement binds the names to the
toolchain's own modules instead (``import triton; import triton.language as tl``): the kernel then
compiles against exactly what the library would have handed it, the toolchain's Triton.

Why the re-exporting module's source is read rather than the names trusted: ``tl`` or ``triton`` from
another module could be something else (a wrapper that patches ``triton.jit``, a shim of the
library's own), and binding the real Triton in its place would compile another kernel than the
program runs, silently. A name counts only where that module's text (found on ``sys.path``, never
run) binds it by importing Triton's module itself (``import triton``, ``import triton.language as
tl``, ``from triton import language as tl``, or a further ``from M import tl`` that does), and any
other binding of it is the fallback for a missing Triton (the ``else:``/``except:`` beside that
import, vLLM's ``TritonPlaceholder()``), which a toolchain with Triton never takes.

Runs inside a toolchain's interpreter: stdlib only, never ``ktriage``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

TRITON_MODULES = ("triton", "triton.language")
# module name -> (its source text, its package), or None when not found (never imported)
SourceReader = Callable[[str], "tuple[str, str | None] | None"]


def triton_module(module: str, name: str, read: SourceReader, depth: int = 0) -> str | None:
    """``"triton"`` or ``"triton.language"`` when ``module``'s own source binds ``name`` to that module of
    Triton's (see the module docstring), else None."""
    if depth > 4 or module.split(".")[0] == "triton":
        return None
    found = read(module)
    if found is None:
        return None
    text, package = found
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    bound: set[str] = set()
    guarded: list[tuple[ast.stmt, list[ast.stmt]]] = []  # (a binding that is no import, its enclosing statements)
    imports: list[tuple[ast.stmt, list[ast.stmt]]] = []
    for stmt, parents in _statements(tree.body, []):
        target = _import_target(stmt, name, package, read, depth)
        if target is not None:
            bound.add(target)
            imports.append((stmt, parents))
        elif name in _binds(stmt):
            guarded.append((stmt, parents))
    if len(bound) != 1 or not imports:
        return None
    if all(_fallback(stmt, parents, imports) for stmt, parents in guarded):
        return bound.pop()
    return None


def _statements(body: list[ast.stmt], parents: list[ast.stmt]) -> list[tuple[ast.stmt, list[ast.stmt]]]:
    """The module's statements outside defs and classes, with the if/try/with blocks around each."""
    out: list[tuple[ast.stmt, list[ast.stmt]]] = []
    for stmt in body:
        if isinstance(stmt, (ast.If, ast.Try, ast.With)) or type(stmt).__name__ == "TryStar":
            inner = [*parents, stmt]
            blocks = [getattr(stmt, f, []) or [] for f in ("body", "orelse", "finalbody")]
            blocks += [h.body for h in getattr(stmt, "handlers", []) or []]
            for block in blocks:
                out += _statements(block, inner)
        else:
            out.append((stmt, parents))
    return out


def _import_target(stmt: ast.stmt, name: str, package: str | None, read: SourceReader, depth: int) -> str | None:
    """The Triton module that ``stmt`` binds ``name`` to by importing, or None."""
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.asname == name and alias.name in TRITON_MODULES:
                return alias.name
            if alias.asname is None and alias.name.split(".")[0] == name == "triton":
                return "triton"  # `import triton.language` binds triton too
        return None
    if not isinstance(stmt, ast.ImportFrom):
        return None
    source = _absolute_module(stmt, package)
    for alias in stmt.names:
        if (alias.asname or alias.name) != name:
            continue
        if source is not None and f"{source}.{alias.name}" in TRITON_MODULES:
            return f"{source}.{alias.name}"  # `from triton import language as tl`
        if source is not None:
            return triton_module(source, alias.name, read, depth + 1)
    return None


def _absolute_module(stmt: ast.ImportFrom, package: str | None) -> str | None:
    if not stmt.level:
        return stmt.module
    parts = package.split(".") if package else []
    if stmt.level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (stmt.level - 1)]
    return ".".join([*base, *([stmt.module] if stmt.module else [])]) or None


def _binds(stmt: ast.stmt) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(stmt):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update(a.asname or a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
    return out


def _fallback(stmt: ast.stmt, parents: list[ast.stmt], imports: list[tuple[ast.stmt, list[ast.stmt]]]) -> bool:
    """Whether ``stmt`` lies in the ``else:``/``except:`` of an if/try whose body holds one of ``imports``
    (the binding a module makes when Triton is missing)."""
    for block in reversed(parents):
        if isinstance(block, ast.With):
            continue
        body = {id(n) for s in getattr(block, "body", []) for n in ast.walk(s)}
        if id(stmt) in body:
            continue  # in the body, as the import is: not its alternative
        if isinstance(block, ast.If):
            alternatives: list[ast.stmt] = block.orelse
        else:  # try (or try*): its except blocks
            alternatives = [s for h in getattr(block, "handlers", []) for s in h.body]
        return any(id(stmt) in {id(n) for n in ast.walk(s)} for s in alternatives) and any(
            id(imp) in body for imp, _ in imports
        )
    return False
