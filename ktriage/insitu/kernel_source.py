"""A kernel's own source as a module of its own: the ``@triton.jit`` function and only what it needs.

Why: a kernel's module is written for the program, not for a compiler. It imports what its host code
needs (tabulate, numpy, transformers, vllm ...), runs code at import time (a script that launches its
kernels at module level) or defines its kernel inside a method or a function. A compile worker has
only a Triton wheel, so importing the module can fail where the kernel itself needs none of it. This
module reads the module's text with ``ast`` (nothing is executed) and writes a module that holds the
kernel's ``def`` (dedented when it was nested) and, transitively, the top-level statements that
define the names it reads: its ``@triton.jit`` callees, the globals it reads (constexpr values,
dtypes), the helpers and imports those need. Everything else is left out. Statements keep their
original line numbers (blank lines pad the gaps), so the kernel's line info is the one the JIT saw.

Used by the compile worker when importing the kernel's module fails or the kernel is not a module
attribute, and by ``ktriage record`` for a kernel defined in a class or function body (its
closed-over values become assignments: see ``record_hook.closure_lines``).

Runs inside a toolchain's interpreter and inside the user's program: stdlib only, never ``ktriage``.
"""

from __future__ import annotations

import ast
import builtins
import textwrap
from collections.abc import Iterable, Sequence


_BUILTINS = set(dir(builtins))


class ExtractError(Exception):
    """The kernel's own source cannot be cut out of its module (no such function, unparsable file)."""


def find_function(tree: ast.Module, qualname: str) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, bool]:
    """The ``def`` of ``qualname`` (``Operator.softmax_kernel``, ``make.<locals>.kernel``) and whether
    it is a top-level statement of the module."""
    parts = [p for p in qualname.split(".") if p != "<locals>"]
    if not parts:
        raise ExtractError(f"empty function name {qualname!r}")
    scope: Sequence[ast.stmt] = tree.body
    node: ast.AST | None = None
    for depth, part in enumerate(parts):
        node = _named(scope, part, nested=depth > 0)
        if node is None:
            raise ExtractError(f"the module defines no {'.'.join(parts[:depth + 1])!r}")
        scope = getattr(node, "body", [])
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise ExtractError(f"{qualname!r} is not a function in its module")
    return node, len(parts) == 1


def _named(body: Sequence[ast.stmt], name: str, *, nested: bool) -> ast.AST | None:
    """The (last) def or class called ``name`` in ``body``; inside a function also in its if/with/for
    blocks (a kernel made under a condition)."""
    found: ast.AST | None = None
    stack: list[ast.AST] = list(body)
    while stack:
        stmt = stack.pop(0)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if stmt.name == name:
                found = stmt
            continue
        if nested:
            for field in ("body", "orelse", "finalbody", "handlers"):
                stack.extend(x for x in getattr(stmt, field, []) or [] if isinstance(x, (ast.stmt, ast.excepthandler)))
    return found


def _start(node: ast.AST) -> int:
    decorators = getattr(node, "decorator_list", None) or []
    first: int = getattr(node, "lineno", 1)
    return min([first, *(int(d.lineno) for d in decorators)])


def _is_main_guard(stmt: ast.stmt) -> bool:
    """``if __name__ == "__main__":``: the program's entry point, never a kernel's need."""
    if not isinstance(stmt, ast.If) or not isinstance(stmt.test, ast.Compare):
        return False
    names = [stmt.test.left, *stmt.test.comparators]
    return any(isinstance(n, ast.Name) and n.id == "__name__" for n in names) and any(
        isinstance(n, ast.Constant) and n.value == "__main__" for n in names)


def defined_names(stmt: ast.stmt) -> set[str]:
    """The module-level names a top-level statement binds (imports, assignments, defs, classes;
    inside if/try/with/for blocks too, never inside a def or class body)."""
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    out.add(alias.asname or alias.name.split(".")[0])
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(stmt)
    return out


def loaded_names(node: ast.AST) -> set[str]:
    """Every name a statement reads, its function bodies included (a helper's body runs when it is
    called; a jit callee's body is compiled)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _absolute(stmt: ast.stmt, package: str | None) -> ast.stmt:
    """``from .x import y`` as ``from pkg.x import y``: the extracted module is top-level."""
    if not isinstance(stmt, ast.ImportFrom) or not stmt.level:
        return stmt
    parts = package.split(".") if package else []
    if stmt.level - 1 > len(parts):
        return stmt
    base = parts[: len(parts) - (stmt.level - 1)]
    module = ".".join([*base, *([stmt.module] if stmt.module else [])])
    return ast.ImportFrom(module=module, names=stmt.names, level=0)


def extract(text: str, qualname: str, *, package: str | None, extra_lines: Iterable[str] = (),
            extra_needs: Iterable[str] = ()) -> tuple[str, list[str]]:
    """The module text that defines ``qualname`` with only what it needs (see the module docstring),
    and the names of the module-level statements kept. ``package``: the original module's package
    (relative imports become absolute). ``extra_lines`` go at the end (closed-over values), and
    ``extra_needs`` are names they read from the module."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as exc:
        raise ExtractError(f"cannot parse the kernel's module: {exc}") from exc
    fn, top_level = find_function(tree, qualname)
    lines = text.splitlines()
    units = [s for s in tree.body if not _is_main_guard(s)]
    defines = {id(s): defined_names(s) for s in units}
    root_start, root_end = _start(fn), fn.end_lineno or fn.lineno
    needed: set[str] = set(loaded_names(fn)) | set(extra_needs)
    for default in [*fn.args.defaults, *fn.args.kw_defaults]:
        if default is not None:
            needed |= loaded_names(default)
    kept: set[int] = {id(fn)} if top_level else set()
    done: set[str] = set()
    while needed - done:
        name = sorted(needed - done)[0]
        done.add(name)
        for stmt in units:
            if id(stmt) in kept or name not in defines[id(stmt)]:
                continue
            if not top_level and _start(stmt) <= root_start and (stmt.end_lineno or 0) >= root_end:
                continue  # the class or function the kernel is nested in: never executed
            kept.add(id(stmt))
            needed |= loaded_names(stmt)
    defined = set().union(*defines.values()) if defines else set()
    local = {a.arg for a in ast.walk(fn) if isinstance(a, ast.arg)} | {
        n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    if needed - defined - local - _BUILTINS:  # a name no statement binds may come from a star import: keep those
        for stmt in units:
            if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
                kept.add(id(stmt))
    futures = [s for s in units if isinstance(s, ast.ImportFrom) and s.module == "__future__"]
    out: list[str] = []
    names: list[str] = []

    def emit(start: int, body: list[str]) -> None:
        if len(out) < start - 1:
            out.extend([""] * (start - 1 - len(out)))
        out.extend(body)

    pieces: list[tuple[int, list[str], str]] = []
    for stmt in units:
        if id(stmt) not in kept and stmt not in futures:
            continue
        start, end = _start(stmt), stmt.end_lineno or stmt.lineno
        fixed = _absolute(stmt, package)
        body = lines[start - 1:end] if fixed is stmt else [ast.unparse(fixed)]
        pieces.append((start, body, ", ".join(sorted(defined_names(stmt)))))
    if not top_level:
        pieces.append((root_start, textwrap.dedent("\n".join(lines[root_start - 1:root_end])).splitlines(), fn.name))
    for start, body, label in sorted(pieces, key=lambda p: p[0]):
        emit(start, body)
        if label:
            names.append(label)
    extra = list(extra_lines)
    if extra:
        out.append("")
        out.append("# values the kernel closed over, as recorded (`ktriage record`)")
        out.extend(extra)
    return "\n".join(out) + "\n", names
