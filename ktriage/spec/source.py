"""Find a kernel's source file and read its parameter list with ``ast``, without importing anything.

Why ``ast``: the host has no Triton (and kernel libraries import torch at module level), yet a
spec whose signature does not match the function must be caught before a worker is started, with
a message that says which argument to add or remove.
"""

from __future__ import annotations

import ast
import difflib
import functools
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ktriage.errors import SpecError
from ktriage.spec.imports import imported_name, module_file, package_root
from ktriage.wording import plural

_INT_ANNOTATIONS = {
    "int1": "i1",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "bool": "u1",
}


class Unresolved:
    """A default value ``ast`` cannot evaluate (the JIT would, at import time)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"<unresolved {self.text}>"


@dataclass(frozen=True)
class ParamInfo:
    """One parameter of a @triton.jit function, as far as its source text tells."""

    name: str
    annotation: str = ""
    is_constexpr: bool = False
    has_default: bool = False
    default: Any = None
    annotation_type: str = ""
    do_not_specialize: bool = False
    do_not_specialize_on_alignment: bool = False


def split_source(source: str) -> tuple[str, str]:
    """``'a/b.py:fn'`` -> ``('a/b.py', 'fn')``; ``'pkg.mod:fn'`` -> ``('pkg.mod', 'fn')``; a kernel in a
    class body: ``'a/b.py:Norm.fwd'`` -> ``('a/b.py', 'Norm.fwd')`` (the worker takes ``Norm.fwd`` off the
    imported module)."""
    where, sep, fn = source.rpartition(":")
    if not sep or not where or not fn or not all(p.isidentifier() or p == "<locals>" for p in fn.split(".")):
        raise SpecError(
            f"kernel source {source!r} does not name a function",
            "write it as 'path/to/file.py:function', 'package.module:function', or "
            "'path/to/file.py:Class.function' for a kernel in a class body",
        )
    return where, fn


def resolve_source_file(source: str, package: str | None = None) -> Path:
    """The file that defines the kernel. ``package`` is installed first (once) if it is given."""
    where, _ = split_source(source)
    if where.endswith(".py"):
        path = Path(where)
        if not path.is_file():
            raise SpecError(
                f"kernel source file {where} does not exist",
                "fix the path (relative paths are taken from the spec file's folder)",
            )
        return path
    from ktriage.spec.packages import ensure_package, find_module_file

    if package:
        roots = [ensure_package(package)]
    else:
        roots = [Path(p) for p in sys.path if p and Path(p).is_dir()]
        if where.split(".")[0] == "ktriage":  # ktriage's own kernels (catalog show --format toml names them
            # by module) are where this ktriage is: an editable install (scripts/setup.sh) is on no sys.path root
            roots.append(Path(__file__).resolve().parents[2])
    found = find_module_file(where, roots)
    if found is None:
        hint = (
            f"check the module path inside {package}"
            if package
            else 'give the pip requirement that provides it as package (e.g. package = "liger-kernel==0.5.10"); '
            f'for a module of your own project, name its file: source = "path/to/{where.rpartition(".")[2]}.py:'
            f"{source.rpartition(':')[2]}\" (relative to the spec file; its package's relative imports work), "
            "or put the folder that holds its top package on PYTHONPATH"
        )
        raise SpecError(f"cannot find module {where!r} of kernel source {source!r}", hint)
    return found


_KTRIAGE_DIR = Path(__file__).resolve().parents[1]


def local_module_files(path: Path, limit: int = 256) -> list[Path]:
    """The files of the project's own modules that the kernel's file imports, transitively: its relative
    imports and the imports of its top package (for a file outside a package: of the modules beside
    it). The compile worker imports them from that folder (``insitu/worker.file_module``), so a
    @triton.jit helper there is compiled into the kernel: its text is part of the spec's key
    (``KernelSpec.key``), or an edited helper would be served the artifact of the old one."""
    start = path.resolve()
    directory, parts = package_root(start)
    top = parts[0] if len(parts) > 1 else None
    if top is None and directory.name.endswith("-packages"):
        return []  # an installed flat module: what it imports is installed too
    if start.is_relative_to(_KTRIAGE_DIR):
        # ktriage's own kernels (the catalog's, the workload bundles'): their modules import much of ktriage,
        # and every edit of ktriage would otherwise change their keys and compile them again
        return []
    seen, found, todo = {start}, list[Path](), [start]
    while todo and len(found) < limit:
        for name in _imported_modules(*_stat(todo.pop()), directory):
            if top is not None and name[0] != top:
                continue
            file = module_file(directory, name)
            if file is not None and file not in seen:
                seen.add(file)
                found.append(file)
                todo.append(file)
    return sorted(found)


def _stat(path: Path) -> tuple[Path, int, int]:
    try:
        st = path.stat()
    except OSError:
        return path, -1, -1
    return path, st.st_mtime_ns, st.st_size


@functools.lru_cache(maxsize=1024)
def _imported_modules(path: Path, mtime_ns: int, size: int, root: Path) -> tuple[tuple[str, ...], ...]:
    """Every module name ``path`` imports, as parts (``from .a import b``: ``pkg.a`` and ``pkg.a.b``)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        package = list(path.relative_to(root).parts[:-1])
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return ()
    return tuple(dict.fromkeys(_names(tree, package)))


def _names(tree: ast.Module, package: list[str]) -> Iterator[tuple[str, ...]]:
    """The module-level imports (an import in a function body is host code run at a call)."""
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            todo.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Import):
            yield from (tuple(alias.name.split(".")) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level and node.level - 1 > len(package):
                continue
            base = package[: len(package) - (node.level - 1)] if node.level else []
            module = (*base, *(node.module.split(".") if node.module else []))
            if module:
                yield module
            yield from ((*module, alias.name) for alias in node.names if alias.name != "*")


def _jit_options(fn: ast.FunctionDef) -> dict[str, list[Any]]:
    """do_not_specialize / do_not_specialize_on_alignment from ``@triton.jit(...)``."""
    out: dict[str, list[Any]] = {}
    for deco in fn.decorator_list:
        if isinstance(deco, ast.Call):
            for kw in deco.keywords:
                if kw.arg in ("do_not_specialize", "do_not_specialize_on_alignment"):
                    try:
                        out[kw.arg] = list(ast.literal_eval(kw.value))
                    except ValueError:
                        pass
    return out


def _default(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        text = ast.unparse(node)
        if text.startswith("tl.") and text[3:].isidentifier():
            return text  # a Triton dtype default, in the spec's "tl.float32" convention
        return Unresolved(text)


def _parse(path: Path) -> ast.Module:
    from ktriage.schema.core import read_text

    text = read_text(path, what="kernel file", limit=16 << 20, error=SpecError)
    try:
        return ast.parse(text, filename=str(path))
    except (SyntaxError, ValueError) as exc:  # ValueError: a NUL byte
        raise SpecError(f"cannot parse {path}: {exc}", "fix the syntax error in the kernel file") from exc
    except RecursionError:
        raise SpecError(
            f"cannot parse {path}: nested too deeply for Python's parser", "simplify the kernel file"
        ) from None


def jit_functions(path: Path) -> list[str]:
    """The top-level functions of ``path`` decorated with a ``jit`` (``@triton.jit``, ``@triton.jit(...)``,
    ``@jit``), in file order: the kernels a spec's ``source`` can name in it, for a fix that names them."""
    out = []
    for node in _parse(path).body:
        if isinstance(node, ast.FunctionDef):
            decorators = (d.func if isinstance(d, ast.Call) else d for d in node.decorator_list)
            if any(ast.unparse(d).split(".")[-1] == "jit" for d in decorators):
                out.append(node.name)
    return out


_MAX_ALIASES = 8


def kernel_def(tree: ast.Module, function: str, where: str, path: Path | None = None) -> ast.FunctionDef:
    """The ``def`` whose parameters are the kernel ``function``'s, the way the compile worker finds the
    kernel (an attribute of the imported module, ``insitu/worker._attribute``): a top-level def; a def
    in a class body (``Norm.fwd``); or a module-level name bound to a kernel made at import time,
    ``scale2 = make_scale_kernel(2.0)`` (the def the factory returns, which the worker gets with its
    closed-over values), ``k = triton.jit(_k)`` or ``k = other_kernel``. ``where`` names the file in errors.
    With the file's ``path``, names imported from the user's own modules are followed too (``from .common
    import make_kernel``, ``common.make_kernel(...)``, a kernel imported from another module:
    ``spec/imports.py``); without it (a text alone), such a name is one the source does not explain.

    Why here: the spec is checked against these parameters before any worker starts, and a kernel
    that only a running function can make (a def in a function body that reads the function's
    values) cannot be compiled from a spec at all; that is said here, with what to point at instead."""
    if "." in function:
        return _qualified_def(tree, function, where)
    return _bound_def(_Module(tree, where, path), function, depth=0)


@dataclass(frozen=True)
class _Module:
    """A module's parsed text, the name its errors give it, and its file (None: imports are not followed)."""

    tree: ast.Module
    where: str
    path: Path | None = None


_Found = tuple[_Module, str, "ast.stmt | None"]
"""A name's binding statement (None: unbound) in the module that holds it, imports followed."""


def _module_at(file: Path) -> _Module:
    return _Module(_parse(file), str(file), file)


def _resolved(mod: _Module, name: str, depth: int, before: int | None = None) -> _Module | _Found:
    """``name``'s binding in ``mod`` (the last one before line ``before``), an import followed into the
    project's module it names (``spec/imports.py``, which refuses a module it cannot find): a module when
    the name is one (``from . import common``), else the binding in the module that holds it."""
    stmt = _bindings(mod.tree, before).get(name)
    if not isinstance(stmt, (ast.Import, ast.ImportFrom)) or mod.path is None or depth > _MAX_ALIASES:
        return mod, name, stmt
    target = imported_name(mod.path, stmt, name)
    other = _module_at(target.file)
    return other if target.attribute is None else _member(other, target.attribute, depth + 1)


def _member(mod: _Module, name: str, depth: int) -> _Module | _Found:
    """``mod.name``: a name the module binds, else its submodule (a package's ``__init__.py``)."""
    if name in _bindings(mod.tree) or mod.path is None or mod.path.name != "__init__.py":
        return _resolved(mod, name, depth)
    sub = module_file(mod.path.parent, [name])
    return _module_at(sub) if sub is not None else (mod, name, None)


def _expr_target(mod: _Module, expr: ast.expr, depth: int, line: int) -> _Module | _Found | None:
    """What a name or a dotted name (``common.make_kernel``, ``pkg.common.make_kernel``) is, in ``mod``
    at line ``line``; None for any other expression."""
    if isinstance(expr, ast.Name):
        return _resolved(mod, expr.id, depth + 1, line)
    if isinstance(expr, ast.Attribute) and depth <= _MAX_ALIASES:
        base = _expr_target(mod, expr.value, depth + 1, line)
        if isinstance(base, _Module):
            return _member(base, expr.attr, depth + 1)
    return None


def _qualified_def(tree: ast.Module, function: str, where: str) -> ast.FunctionDef:
    from ktriage.insitu.kernel_source import ExtractError, find_chain

    try:
        chain = find_chain(tree, function)
    except ExtractError:
        raise SpecError(f"{where} defines no function {function!r}", _candidates_hint(tree, function)) from None
    node = chain[-1]
    if not isinstance(node, ast.FunctionDef):
        inside = _class_kernels(node, function) if isinstance(node, ast.ClassDef) else []
        raise SpecError(
            f"{where}: {function} is {'a class' if isinstance(node, ast.ClassDef) else 'an async def'}, not a function",
            f"name a @triton.jit function in it: {', '.join(inside)}" if inside else "name a @triton.jit function",
        )
    outer = [n for n in chain[:-1] if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    closed = sorted(_closed_over(node, outer))
    if closed:
        maker = outer[-1].name
        made = [name for name, stmt in _bindings(tree).items() if _calls(stmt, maker)]
        point = (
            f"point source at {' or '.join(made)}, the module-level name that holds a kernel {maker} made, "
            if made
            else f"bind a kernel {maker} makes to a module-level name (`k = {maker}(...)`) and point source at it, "
        )
        as_params = "as a tl.constexpr parameter" if len(closed) == 1 else "as tl.constexpr parameters"
        raise SpecError(
            f"{where}: {function} is defined inside the function {maker} and reads {', '.join(closed)} from it: "
            f"those values exist only when {maker} runs, and a spec cannot give them",
            point + f"or write the kernel at module level with {', '.join(closed)} {as_params}",
        )
    return node


def _closed_over(fn: ast.FunctionDef, outer: list[ast.FunctionDef | ast.AsyncFunctionDef]) -> set[str]:
    """The names ``fn`` reads that an enclosing function binds (its parameters, assignments, imports, defs)."""
    local = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)} | {
        n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    reads = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - local
    bound: set[str] = set()
    for scope in outer:
        bound |= {a.arg for a in ast.walk(scope.args) if isinstance(a, ast.arg)}
        for node in ast.walk(scope):
            if node is fn:
                continue
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                bound.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not scope:
                bound.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                bound |= {a.asname or a.name.split(".")[0] for a in node.names}
    return reads & bound


def _bindings(tree: ast.Module, before: int | None = None) -> dict[str, ast.stmt]:
    """Each module-level name's last binding statement among the top-level defs, imports and plain
    assignments (``name = ...``, ``name: T = ...``): the one the imported module holds (``before``: the
    one a statement at that line sees, as in ``k = triton.jit(k)``)."""
    out: dict[str, ast.stmt] = {}
    for stmt in tree.body:
        if before is not None and stmt.lineno >= before:
            break
        if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            out[stmt.name] = stmt
        elif isinstance(stmt, ast.Import):
            out.update({alias.asname or alias.name.split(".")[0]: stmt for alias in stmt.names})
        elif isinstance(stmt, ast.ImportFrom):
            out.update({alias.asname or alias.name: stmt for alias in stmt.names if alias.name != "*"})
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = stmt
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            out[stmt.target.id] = stmt
    return out


def _calls(stmt: ast.stmt, function: str) -> bool:
    value = getattr(stmt, "value", None) if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == function


def _is_jit(call: ast.expr) -> bool:
    """``triton.jit``, ``jit``, ``triton.jit(...)`` (the decorator or the call that makes a kernel)."""
    target = call.func if isinstance(call, ast.Call) else call
    return ast.unparse(target).split(".")[-1] == "jit"


_DECORATORS = {"jit", "heuristics", "autotune"}


def _decorated(call: ast.Call) -> ast.expr | None:
    """The function a Triton decorator is applied to by a call rather than with ``@``: ``triton.jit(f)``
    (``f``), ``triton.jit(do_not_specialize=[...])(f)``, ``triton.heuristics({...})(f)`` and
    ``triton.autotune(configs, key)(f)`` (``f``, itself maybe such a call); None for any other call.
    Why: libraries write ``k = triton.jit(k)`` then ``k = triton.heuristics({...})(k)`` (unsloth's cross
    entropy), and the def behind it is the kernel whose parameters the spec gives."""
    if _is_jit(call) and call.args:
        return call.args[0]
    inner = call.func
    if (
        isinstance(inner, ast.Call)
        and len(call.args) == 1
        and not call.keywords
        and ast.unparse(inner.func).split(".")[-1] in _DECORATORS
    ):
        return call.args[0]
    return None


def called_decorators(tree: ast.Module, function: str, path: Path | None = None) -> list[ast.expr]:
    """The decorators applied to the kernel ``function`` by calls on the way from its name to its def
    (``k = triton.heuristics({...})(k)`` gives ``triton.heuristics({...})``), outermost first: what
    ``@`` decorators would say, for the readers of the def's ``decorator_list`` (the constexprs a
    heuristic computes may be left out of ``[kernel.args]``: spec/values.decorator_params)."""
    out: list[ast.expr] = []
    if "." in function:
        return out
    try:
        return _called_decorators(_resolved(_Module(tree, "", path), function, 0))
    except SpecError:  # an import kernel_def refuses with its own error
        return out


def _called_decorators(found: _Module | _Found) -> list[ast.expr]:
    out: list[ast.expr] = []
    for depth in range(_MAX_ALIASES):
        if not isinstance(found, tuple):
            break
        mod, _, stmt = found
        value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
        while isinstance(value, ast.Call) and (inner := _decorated(value)) is not None:
            out.append(value.func if isinstance(value.func, ast.Call) else value)
            value = inner
        if not isinstance(value, ast.Name) or stmt is None:
            break
        found = _resolved(mod, value.id, depth + 1, stmt.lineno)
    return out


def _bound_def(mod: _Module, name: str, depth: int, before: int | None = None) -> ast.FunctionDef:
    """The def behind the module-level name ``name`` (see :func:`kernel_def`)."""
    found = _resolved(mod, name, depth, before)
    if isinstance(found, _Module):
        inside = kernel_names(found.tree)  # its own kernels (imports not followed: two modules may import each other)
        raise SpecError(
            f"{mod.where}: {name} is the module {found.where}, not a function",
            f"name a kernel in it: {', '.join(inside)}" if inside else "name a @triton.jit function",
        )
    mod, name, stmt = found
    tree, where = mod.tree, mod.where
    if isinstance(stmt, ast.FunctionDef):
        return stmt
    if isinstance(stmt, ast.ClassDef):
        inside = _class_kernels(stmt)
        raise SpecError(
            f"{where}: {name} is a class, not a function",
            f"name a @triton.jit function in it: {', '.join(inside)}" if inside else "name a @triton.jit function",
        )
    if stmt is None:
        raise SpecError(f"{where} defines no function {name!r}", _candidates_hint(tree, name))
    value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
    made = None if depth > _MAX_ALIASES else _made_by(mod, value, depth, stmt.lineno)
    if made is None:
        text = ast.unparse(stmt)
        raise SpecError(
            f"{where}: {name} is bound by `{text if len(text) <= 80 else text[:79] + '…'}` (line {stmt.lineno}), "
            "and ktriage cannot tell from the source which @triton.jit def that makes (it reads a kernel's "
            "parameters from its def before any toolchain runs)",
            "point source at the @triton.jit def itself (a module-level def, or Class.kernel for one in a class "
            "body), or have a function of your project return the kernel it defines (`k = make_kernel(...)`)",
        )
    return made


def _made_by(mod: _Module, value: ast.expr | None, depth: int, line: int) -> ast.FunctionDef | None:
    """The def an assigned value is: another name's (an alias, ``common.kernel`` too), ``triton.jit(f)``'s
    ``f``, or the def a function of the project returns (a factory: ``make_kernel(2.0)``, or one imported
    from another of its modules: ``common.make_kernel(2.0)``); None when the source does not say."""
    if isinstance(value, ast.Name):
        return _bound_def(mod, value.id, depth + 1, line)
    if isinstance(value, ast.Attribute):
        target = _expr_target(mod, value, depth, line)
        return _bound_def(target[0], target[1], depth + 1) if isinstance(target, tuple) else None
    if not isinstance(value, ast.Call):
        return None
    wrapped = _decorated(value)
    if wrapped is not None:
        return _made_by(mod, wrapped, depth + 1, line)
    factory = _expr_target(mod, value.func, depth, line)
    if not isinstance(factory, tuple) or not isinstance(factory[2], ast.FunctionDef):
        return None
    return _returned_def(factory[2])


def _returned_def(factory: ast.FunctionDef) -> ast.FunctionDef | None:
    """The def every ``return`` of ``factory`` returns (``return kernel`` or ``return triton.jit(kernel)``,
    ``kernel`` a def in its body), or None when they return anything else or different defs."""
    defs = {n.name: n for n in ast.walk(factory) if isinstance(n, ast.FunctionDef) and n is not factory}
    found: set[str] = set()
    todo: list[ast.AST] = list(factory.body)
    while todo:  # its own returns, not those of the defs inside it
        node = todo.pop()
        if isinstance(node, ast.Return):
            value = node.value
            if isinstance(value, ast.Call) and _is_jit(value) and value.args:
                value = value.args[0]
            if not isinstance(value, ast.Name) or value.id not in defs:
                return None
            found.add(value.id)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return defs[found.pop()] if len(found) == 1 else None


def kernel_names(tree: ast.Module, path: Path | None = None) -> list[str]:
    """What a spec's ``source`` can name in a module, in file order: its @triton.jit defs, those in its
    classes' bodies (``Class.kernel``) and the module-level names bound to a kernel made at import time
    (with the module's ``path``: a kernel imported from another module of the project too)."""
    out: list[str] = []
    for name, stmt in _bindings(tree).items():
        if isinstance(stmt, ast.FunctionDef):
            if any(_is_jit(d) for d in stmt.decorator_list):
                out.append(name)
        elif isinstance(stmt, ast.ClassDef):
            out += _class_kernels(stmt)
        else:
            try:
                made = _bound_def(_Module(tree, "", path), name, depth=0)
            except SpecError:
                continue
            if any(_is_jit(d) for d in made.decorator_list) or _jit_call(tree, stmt):
                out.append(name)
    return out


def _jit_call(tree: ast.Module, stmt: ast.stmt) -> bool:
    """``k = triton.jit(_k)``, or a name for such a ``k`` (the def itself is no kernel then)."""
    for _ in range(_MAX_ALIASES):
        value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
        if isinstance(value, ast.Call):
            return _decorated(value) is not None
        if not isinstance(value, ast.Name) or value.id not in (bindings := _bindings(tree)):
            return False
        stmt = bindings[value.id]
    return False


def _class_kernels(cls: ast.ClassDef, qualname: str = "") -> list[str]:
    """``Class.kernel`` for each @triton.jit def of a class body."""
    return [
        f"{qualname or cls.name}.{n.name}"
        for n in cls.body
        if isinstance(n, ast.FunctionDef) and any(_is_jit(d) for d in n.decorator_list)
    ]


def _candidates_hint(tree: ast.Module, function: str) -> str:
    """The kernels the file has that a misspelled ``function`` may mean (never a plain host function,
    such as the factory that made one, while the file has kernels)."""
    kernels = kernel_names(tree)
    if kernels:
        close = difflib.get_close_matches(function, kernels, n=3)
        return f"did you mean {', '.join(close)}?" if close else f"kernels in the file: {', '.join(kernels)}"
    funcs = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    close = difflib.get_close_matches(function, funcs, n=3)
    return f"did you mean {', '.join(close)}?" if close else f"functions in the file: {', '.join(funcs) or 'none'}"


def read_params(path: Path, function: str) -> list[ParamInfo]:
    """Parameters of the kernel ``function`` in ``path``, in order (:func:`kernel_def` finds its def)."""
    fn = kernel_def(_parse(path), function, str(path), path)
    a = fn.args
    if a.vararg or a.kwarg:
        raise SpecError(f"{function} takes *args/**kwargs", "Triton kernels need named parameters only")
    positional = [*a.posonlyargs, *a.args]
    defaults: dict[str, ast.expr] = {}
    for arg, d in zip(positional[len(positional) - len(a.defaults) :], a.defaults):
        defaults[arg.arg] = d
    for arg, kd in zip(a.kwonlyargs, a.kw_defaults):
        if kd is not None:
            defaults[arg.arg] = kd
    opts = _jit_options(fn)
    all_args = [*positional, *a.kwonlyargs]
    dns = {all_args[i].arg if isinstance(i, int) else i for i in opts.get("do_not_specialize", [])}
    dnsa = {all_args[i].arg if isinstance(i, int) else i for i in opts.get("do_not_specialize_on_alignment", [])}
    params: list[ParamInfo] = []
    for arg in all_args:
        ann = ast.unparse(arg.annotation) if arg.annotation is not None else ""
        is_cx = "constexpr" in ann
        ann_type = "" if is_cx else _INT_ANNOTATIONS.get(ann.split(".")[-1], "")
        has_default = arg.arg in defaults
        params.append(
            ParamInfo(
                name=arg.arg,
                annotation=ann,
                is_constexpr=is_cx,
                has_default=has_default,
                default=_default(defaults[arg.arg]) if has_default else None,
                annotation_type=ann_type,
                do_not_specialize=arg.arg in dns,
                do_not_specialize_on_alignment=arg.arg in dnsa,
            )
        )
    return params


def guess_type(p: ParamInfo) -> str:
    """A plausible type for an error message ("add `n` (type i32)")."""
    if p.is_constexpr:
        return "constexpr"
    if p.annotation_type:
        return p.annotation_type
    low = p.name.lower()
    if "ptr" in low or low.endswith("_p"):
        return "*fp32"
    if low in ("eps", "scale", "alpha", "beta") or "eps" in low:
        return "fp32"
    return "i32"


def check_signature(
    signature: Mapping[str, str], params: list[ParamInfo], function: str, *, where: str = "spec"
) -> None:
    """Names and order of ``signature`` must equal the function's parameters; constexprs must agree."""
    names = [p.name for p in params]
    given = list(signature)
    if given != names:
        missing = [p for p in params if p.name not in signature]
        extra = [n for n in given if n not in names]
        parts: list[str] = []
        if missing:
            parts.append("add " + ", ".join(f"`{p.name}` (type {guess_type(p)})" for p in missing))
        if extra:
            parts.append("remove " + ", ".join(f"`{n}`" for n in extra))
        if not missing and not extra:
            parts.append(f"list them in source order: {', '.join(names)}")
        raise SpecError(
            f"{where}: signature lists {plural(len(given), 'argument')} "
            f"but {function} takes {len(names)}" + ("" if missing or extra else " in another order"),
            "; ".join(parts),
        )
    for p in params:
        ty = signature[p.name]
        if p.is_constexpr and ty != "constexpr":
            raise SpecError(
                f"{where}: {p.name} is declared `{p.annotation}` in {function} but the signature gives {ty!r}",
                f'set {p.name} = "constexpr" and give its value under constexprs',
            )
