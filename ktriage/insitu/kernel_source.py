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
closed-over values become assignments: see ``launch_hook.closure_lines``).

Runs inside a toolchain's interpreter and inside the user's program: stdlib only, never ``ktriage``.
"""

from __future__ import annotations

import ast
import builtins
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

_BUILTINS = set(dir(builtins))
# The snapshot file in which ``ktriage record`` keeps the module-level values the kernels read
# (launch_hook.GLOBALS_FILE, launch_hook.globals_file_text): Python literals, read, never run.
GLOBALS_FILE = "_ktriage_globals.py"


class ExtractError(Exception):
    """The kernel's own source cannot be cut out of its module (no such function, unparsable file)."""


class MadeAtImport(ExtractError):
    """The kernel is a module-level name bound when the module runs (``scale2 = make_scale_kernel(2.0)``,
    a factory's result): no ``def`` of that name exists to cut out, only the imported module has it."""

    def __init__(self, name: str, statement: ast.stmt) -> None:
        text = ast.unparse(statement)
        self.statement = f"line {statement.lineno} `{text if len(text) <= 80 else text[:79] + '…'}`"
        super().__init__(f"{name!r} is made when the module runs ({self.statement}), not written as a def")


def find_function(tree: ast.Module, qualname: str) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, bool]:
    """The ``def`` of ``qualname`` (``Operator.softmax_kernel``, ``make.<locals>.kernel``) and whether
    it is a top-level statement of the module."""
    chain = find_chain(tree, qualname)
    node = chain[-1]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise ExtractError(f"{qualname!r} is not a function in its module")
    return node, len(chain) == 1


def find_chain(tree: ast.Module, qualname: str) -> list[ast.AST]:
    """The defs and classes ``qualname`` walks through, outermost first (``RMSNorm.fwd_kernel``: the
    class, then the def): a spec's loader tells a kernel in a class body (an attribute the worker
    takes) from one in a function body (its closed-over values exist only when the function runs)."""
    parts = [p for p in qualname.split(".") if p != "<locals>"]
    if not parts:
        raise ExtractError(f"empty function name {qualname!r}")
    scope: Sequence[ast.stmt] = tree.body
    chain: list[ast.AST] = []
    for depth, part in enumerate(parts):
        node = _named(scope, part, nested=depth > 0)
        if node is None:
            made = _assigned(tree, part) if depth == 0 else None
            if made is not None:  # `scale2 = make_scale_kernel(2.0)`: only the imported module has it
                raise MadeAtImport(part, made)
            raise ExtractError(f"the module defines no {'.'.join(parts[: depth + 1])!r}")
        chain.append(node)
        scope = getattr(node, "body", [])
    return chain


def _assigned(tree: ast.Module, name: str) -> ast.stmt | None:
    """The last top-level ``name = ...`` statement, if any."""
    found = None
    for stmt in tree.body:
        targets = (
            stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            found = stmt
    return found


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
        isinstance(n, ast.Constant) and n.value == "__main__" for n in names
    )


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


def extract(
    text: str,
    qualname: str,
    *,
    package: str | None,
    extra_lines: Iterable[str] = (),
    extra_needs: Iterable[str] = (),
    values: Mapping[str, str] | None = None,
    defaults: Mapping[str, str] | None = None,
    triton_module: Callable[[str, str], str | None] | None = None,
) -> tuple[str, list[str]]:
    """The module text that defines ``qualname`` with only what it needs (see the module docstring),
    and the names of the module-level statements kept. ``package``: the original module's package
    (relative imports become absolute). ``extra_lines`` go at the end (closed-over values), and
    ``extra_needs`` are names they read from the module.

    ``values`` (global name -> Python source of its recorded value) and ``defaults`` (the kernel's
    parameter -> source of its recorded default), from a recorded workload (:data:`GLOBALS_FILE`):
    a needed name with a recorded value is assigned that value where its statement stood (the
    statement and what only it needed are left out: ``is_hip_ = current_platform.is_rocm()`` becomes
    ``is_hip_ = False``), and a default that is no literal becomes its recorded value (on its own
    lines: the kernel's line numbers stay). Without them (a workload recorded before, a spec file)
    the statements are kept, as they are.

    ``triton_module(module, name)``: ``"triton"`` or ``"triton.language"`` when ``from module import
    name`` re-exports that module of Triton's (``reexports.triton_module``, vLLM's ``from
    vllm.triton_utils import tl, triton``), else None. A kept statement that imports such names binds
    them to Triton's own modules instead, and keeps of the rest only what the kernel needs: importing
    the library would import all of it (:func:`_triton_imports`)."""
    values = dict(values or {})
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as exc:
        raise ExtractError(f"cannot parse the kernel's module: {exc}") from exc
    fn, top_level = find_function(tree, qualname)
    lines = text.splitlines()
    replaced = _replace_defaults(fn, lines, dict(defaults or {}))
    units = [s for s in tree.body if not _is_main_guard(s)]
    defines = {id(s): defined_names(s) for s in units}
    root_start, root_end = _start(fn), fn.end_lineno or fn.lineno
    skip = {id(n) for d in replaced for n in ast.walk(d)}
    # the kernel's own names (its parameters and what it assigns) are no module names: a top-level
    # `for n in sizes: x, y, o = xs[n]; add[grid](x, y, o, n)` binds the kernel's parameter names too,
    # and keeping it ran the recorded program's own loop when the kernel was compiled
    declared_global = {g for n in ast.walk(fn) if isinstance(n, ast.Global) for g in n.names}
    local = (
        {a.arg for a in ast.walk(fn) if isinstance(a, ast.arg)}
        | {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    ) - declared_global
    needed: set[str] = {
        n.id
        for n in ast.walk(fn)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in skip and n.id not in local
    } | set(extra_needs)
    kept: set[int] = {id(fn)} if top_level else set()
    done: set[str] = set()
    recorded: list[str] = []
    while needed - done:
        name = sorted(needed - done)[0]
        done.add(name)
        if name in values:
            recorded.append(name)
            continue
        for stmt in units:
            if id(stmt) in kept or name not in defines[id(stmt)]:
                continue
            if not top_level and _start(stmt) <= root_start and (stmt.end_lineno or 0) >= root_end:
                continue  # the class or function the kernel is nested in: never executed
            kept.add(id(stmt))
            needed |= loaded_names(stmt)
    defined = set().union(*defines.values()) if defines else set()
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
        own = _triton_imports(fixed, triton_module, needed) if triton_module is not None else None
        body = [own] if own is not None else lines[start - 1 : end] if fixed is stmt else [ast.unparse(fixed)]
        pieces.append((start, body, ", ".join(sorted(defined_names(stmt)))))
    if not top_level:
        pieces.append((root_start, textwrap.dedent("\n".join(lines[root_start - 1 : root_end])).splitlines(), fn.name))
    # a recorded value where the first statement that bound it stood (one line: the numbering stays)
    at: dict[int, list[str]] = {}
    trailing: list[str] = []
    for name in sorted(recorded):
        home = next(
            (
                s
                for s in units
                if name in defines[id(s)]
                and (top_level or not (_start(s) <= root_start and (s.end_lineno or 0) >= root_end))
            ),
            None,
        )
        if home is None or id(home) in kept:
            trailing.append(name)
        else:
            at.setdefault(_start(home), []).append(name)
    for start, group in at.items():
        pieces.append(
            (start, ["; ".join(f"{n} = {values[n]}" for n in group)], ", ".join(f"{n} (recorded)" for n in group))
        )
    for start, body, label in sorted(pieces, key=lambda p: p[0]):
        emit(start, body)
        if label:
            names.append(label)
    if trailing:
        out.append("")
        out.append("# module-level values as the recorded program had them (`ktriage record`)")
        out.extend(f"{n} = {values[n]}" for n in trailing)
        names.extend(f"{n} (recorded)" for n in trailing)
    extra = list(extra_lines)
    if extra:
        out.append("")
        out.append("# values the kernel closed over, as recorded (`ktriage record`)")
        out.extend(extra)
    return "\n".join(out) + "\n", names


def _triton_imports(stmt: ast.stmt, triton_module: Callable[[str, str], str | None], needed: set[str]) -> str | None:
    """``from lib import tl, triton, X`` (``lib`` re-exporting Triton's modules) as ``import triton.language as
    tl; import triton; from lib import X`` on one line (the line numbers stay), ``X`` only where the
    kernel needs it; None when the statement imports no re-exported Triton module."""
    if not isinstance(stmt, ast.ImportFrom) or stmt.level or not stmt.module or stmt.module == "__future__":
        return None
    own: list[str] = []
    rest: list[ast.alias] = []
    for alias in stmt.names:
        target = triton_module(stmt.module, alias.name) if alias.name != "*" else None
        bound = alias.asname or alias.name
        if target is None:
            rest.append(alias)
        elif target == bound:
            own.append(f"import {target}")
        else:
            own.append(f"import {target} as {bound}")
    if not own:
        return None
    kept = [a for a in rest if (a.asname or a.name) in needed or a.name == "*"]
    if kept:
        own.append(ast.unparse(ast.ImportFrom(module=stmt.module, names=kept, level=0)))
    return "; ".join(own)


def with_recorded(text: str, values: Mapping[str, str]) -> str:
    """A whole module's text with each top-level statement whose names all have a recorded value
    replaced by their assignments (one line; the lines it spanned stay, blank), everything else as
    written. For the modules a kernel's module imports from its snapshot (vLLM's
    ``triton_attention_helpers`` re-exports ``tl`` and ``triton`` from ``vllm.triton_utils``): the
    compile machine runs their other statements, never the host code that computed those values.
    Unparsable text is returned as it is (the import then says why)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return text
    lines = text.splitlines()
    shared = {
        line
        for line in (s.lineno for s in tree.body)
        if sum(1 for t in tree.body if t.lineno == line or (t.end_lineno or t.lineno) == line) > 1
    }
    for stmt in reversed(tree.body):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or stmt.lineno in shared:
            continue
        names = defined_names(stmt)
        if not names or not names <= set(values) or (isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"):
            continue
        start, end = stmt.lineno, stmt.end_lineno or stmt.lineno
        lines[start - 1 : end] = ["; ".join(f"{n} = {values[n]}" for n in sorted(names))] + [""] * (end - start)
    return "\n".join(lines) + "\n"


def _replace_defaults(
    fn: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str], defaults: Mapping[str, str]
) -> list[ast.expr]:
    """Write each recorded default that is no literal (nor ``tl.<dtype>``) over its expression in ``lines`` (in place;
    lines it spanned become blank lines inside the parameter list), and return the nodes replaced."""
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    pairs = [
        *zip(positional[len(positional) - len(a.defaults) :], a.defaults),
        *((arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None),
    ]
    replaced: list[ast.expr] = []
    for arg, node in sorted(pairs, key=lambda p: (p[1].lineno, p[1].col_offset), reverse=True):
        source = defaults.get(arg.arg)
        if source is None or node.end_lineno is None or node.end_col_offset is None:
            continue
        text = ast.unparse(node)
        if text.startswith("tl.") and text[3:].isidentifier():
            continue  # a Triton dtype, as written (the kernel reads tl anyway)
        try:
            ast.literal_eval(node)
            continue  # a literal says its value itself
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
        first, last = lines[node.lineno - 1].encode(), lines[node.end_lineno - 1].encode()  # offsets are UTF-8 bytes
        joined = (
            first[: node.col_offset].decode(errors="replace")
            + source
            + last[node.end_col_offset :].decode(errors="replace")
        )
        lines[node.lineno - 1 : node.end_lineno] = [joined] + [""] * (node.end_lineno - node.lineno)
        replaced.append(node)
    return replaced


def read_globals(text: str) -> dict[str, object]:
    """The ``GLOBALS`` literal of a snapshot's :data:`GLOBALS_FILE` (module -> {"values", "defaults"}),
    or {} when the file is not one (read with ``ast.literal_eval``: nothing in it runs)."""
    try:
        tree = ast.parse(text)
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and [getattr(t, "id", None) for t in stmt.targets] == ["GLOBALS"]:
                found = ast.literal_eval(stmt.value)
                return found if isinstance(found, dict) else {}
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return {}
    return {}


def _dotted(name: Any) -> bool:
    return isinstance(name, str) and bool(name) and all(part.isidentifier() for part in name.split("."))


def value_source(encoded: Any) -> str | None:
    """Python source that makes a recorded value again (launch_hook.encode_global's encoding), or None
    for one it does not know. Built from checked names and ``repr`` of plain values only."""
    if encoded is None or type(encoded) in (bool, int, float, str):
        return repr(encoded)
    if not isinstance(encoded, dict) or len(encoded) != 1:
        return None
    ((kind, value),) = encoded.items()
    language = "__import__('triton.language').language"
    if kind == "float" and value in ("inf", "-inf", "nan"):
        return f"float({value!r})"
    if kind == "constexpr":
        inner = value_source(value)
        return None if inner is None else f"{language}.constexpr({inner})"
    if kind == "tl" and isinstance(value, str) and value.isidentifier():
        return f"{language}.{value}"
    if kind == "module" and _dotted(value):
        return f"__import__('importlib').import_module({value!r})"
    if kind == "import" and isinstance(value, str):
        owner, _, name = value.partition(":")
        if _dotted(owner) and name.isidentifier():
            return f"__import__('importlib').import_module({owner!r}).{name}"
    return None


def is_reference(encoded: Any) -> bool:
    """A recorded module or importable function (not a value computed by the module's host code)."""
    return isinstance(encoded, dict) and bool({"module", "import"} & set(encoded))


def recorded_sources(entry: Any) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """One module's entry of :func:`read_globals` as (name -> source, function -> parameter -> source)."""
    if not isinstance(entry, dict):
        return {}, {}
    values = {
        str(n): src
        for n, v in dict(entry.get("values") or {}).items()
        if isinstance(n, str) and n.isidentifier() and (src := value_source(v)) is not None
    }
    defaults: dict[str, dict[str, str]] = {}
    for function, params in dict(entry.get("defaults") or {}).items():
        if isinstance(params, dict):
            own = {str(p): src for p, v in params.items() if (src := value_source(v)) is not None}
            if own:
                defaults[str(function)] = own
    return values, defaults
