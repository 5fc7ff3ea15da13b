"""No message flattens a :class:`ktriage.errors.Worded` into one spelling.

Why: ``errors.option`` (and ``run_as``, ``worded``, ``joined``) return a ``Worded``, a ``str`` that names an
option both ways (``limit=20 (--limit 20)``) and carries the flag alone for the command line. An f-string
or ``str.join`` around it makes a plain ``str`` of the first spelling, and the command printed
``threshold=5 (--threshold 5)`` where it takes ``--threshold 5``. This scan of ktriage's source finds each
such place: a call of those functions, of a function annotated ``-> Worded``, a module's ``Worded``
constant, or an error's ``.problem``/``.fix``, inside an f-string or a ``str.join`` (``errors.separated`` keeps both). Inside
``worded(lambda o: ...)`` the options are ``o(...)`` and the other parts ``spelled(part, o)``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import ktriage

MAKERS = {"option", "run_as", "worded", "joined", "separated", "failure_line", "Worded"}
ERROR_PARTS: set[str] = set()
SOURCES = sorted(Path(ktriage.__file__).parent.rglob("*.py"))


def _worded_functions(trees: dict[Path, ast.Module]) -> set[str]:
    """The makers and every function annotated ``-> Worded``."""
    functions = set(MAKERS)
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.returns is not None and "Worded" in ast.unparse(node.returns):
                functions.add(node.name)
    return functions


def _assigned(scope: ast.AST, functions: set[str]) -> set[str]:
    """Names that ``scope`` assigns a Worded maker's result."""
    names: set[str] = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple):  # a, b = option(...), option(...)
            for target in node.targets:
                if isinstance(target, ast.Tuple):
                    pairs = zip(target.elts, node.value.elts, strict=False)
                    names |= {t.id for t, v in pairs if isinstance(t, ast.Name) and _makes_worded(v, functions, set())}
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            if _makes_worded(node.value, functions, set()):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def _constants(trees: dict[Path, ast.Module], functions: set[str]) -> set[str]:
    """Module constants (UPPER_CASE) holding a Worded: imported across modules, so named globally."""
    names: set[str] = set()
    for tree in trees.values():
        for node in tree.body:
            names |= {n for n in _assigned(node, functions) if n.isupper()}
    return names


def _makes_worded(expr: ast.expr, functions: set[str], names: set[str]) -> bool:
    if isinstance(expr, ast.ListComp | ast.GeneratorExp):  # [option(...) for ...]: joined later
        return _makes_worded(expr.elt, functions, names)
    if isinstance(expr, ast.IfExp):
        return _makes_worded(expr.body, functions, names) or _makes_worded(expr.orelse, functions, names)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):  # Worded.__add__ keeps both
        return _makes_worded(expr.left, functions, names) or _makes_worded(expr.right, functions, names)
    if isinstance(expr, ast.Call):
        func = expr.func
        return isinstance(func, ast.Name) and func.id in functions
    if isinstance(expr, ast.Attribute):
        return expr.attr in ERROR_PARTS
    return isinstance(expr, ast.Name) and expr.id in names


def _flattened(tree: ast.Module, functions: set[str], names: set[str]) -> list[int]:
    """Lines where a Worded value is a part of an f-string or of ``str.join``'s argument (``+`` keeps both:
    ``Worded.__add__``)."""
    lines = []
    for node in ast.walk(tree):
        parts: list[ast.expr] = []
        if isinstance(node, ast.JoinedStr):
            parts = [v.value for v in node.values if isinstance(v, ast.FormattedValue)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join":
            parts = [a.elt if isinstance(a, ast.GeneratorExp | ast.ListComp) else a for a in node.args]
        lines += [p.lineno for p in parts if _makes_worded(p, functions, names)]
    return lines


def test_no_message_flattens_a_worded_option() -> None:
    trees = {path: ast.parse(path.read_text(), str(path)) for path in SOURCES}
    functions = _worded_functions(trees)
    constants = _constants(trees, functions)
    root = Path(ktriage.__file__).parent.parent
    found = set()
    for path, tree in trees.items():
        scopes = [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))]
        for scope in scopes:  # a function's own Worded names, in it (a nested one's lines are found twice: a set)
            names = constants | (_assigned(scope, functions) if scope is not tree else set())
            found |= {f"{path.relative_to(root)}:{line}" for line in _flattened(scope, functions, names)}
    assert not found, "a Worded flattened to one spelling (use worded/joined/spelled):\n" + "\n".join(sorted(found))
