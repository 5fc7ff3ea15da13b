"""No import cycles anywhere in ktriage, a package's ``__init__`` with its own modules included.

The import-linter contract ``acyclic_siblings`` (pyproject.toml) keeps the siblings of every package
from importing each other around a loop; it does not see a package's ``__init__`` and one of its own
modules importing each other (the parent is no sibling). This test looks at the whole module graph
(grimp's, the one import-linter builds, TYPE_CHECKING imports included) for any cycle at all, less the
imports the pipeline's layers contract ignores (``ignore_imports``), each of which must be a TYPE_CHECKING
import: no import at run time (``ktriage``'s typed names of ``ktriage.api``, which ``ktriage/__init__.py`` explains).
"""

from __future__ import annotations

import sys
from pathlib import Path

import grimp

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]


def _ignored_imports() -> set[tuple[str, str]]:
    """The (importer, imported) pairs that the pipeline's layers contract (pyproject.toml) ignores."""
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (layers,) = [c for c in contracts if c["type"] == "layers" and c.get("containers") == ["ktriage"]]
    pairs = [line.split(" -> ") for line in layers.get("ignore_imports", [])]
    return {(a.strip(), b.strip()) for a, b in pairs}


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_loop_and_only_a_loop() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(edges) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_ktriage_has_no_import_cycle() -> None:
    graph = grimp.build_graph("ktriage", cache_dir=None)
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    for importer, imported in _ignored_imports():
        edges[importer].discard(imported)
    cycles = _cycles(edges)
    details = [
        f"{a} -> {b} (line {d['line_number']}: {d['line_contents']})"
        for cycle in cycles
        for a in cycle
        for b in sorted(edges[a] & set(cycle))
        for d in graph.get_import_details(importer=a, imported=b)[:1]
    ]
    assert not cycles, "import cycles (move the piece both need into a module below them):\n" + "\n".join(details)


def test_every_ignored_import_is_a_type_checking_import() -> None:
    """An ignored import is left out of the contracts and of the cycle search above: it may only be one
    that never runs (under ``if TYPE_CHECKING:``). A run-time import there would break the layers
    unseen, and ``import ktriage`` would import the whole api."""
    ignored = _ignored_imports()
    assert ignored, "the layers contract ignores no import: drop this test and the exception above"
    everything = grimp.build_graph("ktriage", cache_dir=None)
    at_run_time = grimp.build_graph("ktriage", cache_dir=None, exclude_type_checking_imports=True)
    for importer, imported in sorted(ignored):
        assert everything.direct_import_exists(importer=importer, imported=imported), (
            f"{importer} -> {imported} is ignored but not imported: drop it from ignore_imports"
        )
        assert not at_run_time.direct_import_exists(importer=importer, imported=imported), (
            f"{importer} imports {imported} at run time: import it under `if TYPE_CHECKING:` or lazily"
        )
