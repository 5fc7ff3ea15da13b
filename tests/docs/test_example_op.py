"""docs/architecture.md "Adding an operator" shows one complete op module and its registry line: this
runs the page's code blocks, so the example cannot rot. The module must build the operator that
ktriage registers (same facts, same launches for every input and dtype), register in a throwaway copy
of the registry under a new name, and the registry line and the field names the page names must be
the real ones."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import pytest

from ktriage.ops import registry
from ktriage.ops.operator import Kernels, Operator

DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
if not DOC.exists():  # the test may live one folder deeper (tests/<package>/)
    DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


def _section() -> str:
    text = DOC.read_text()
    start = text.index("## Adding an operator")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", _section(), re.S)


def _example_op() -> Operator:
    namespace: dict[str, object] = {}
    exec(compile(_python_blocks()[0], f"{DOC}:Adding an operator", "exec"), namespace)
    op = namespace["OP"]
    assert isinstance(op, Operator)
    return op


def test_the_section_has_the_module_and_the_registry_line() -> None:
    blocks = _python_blocks()
    assert len(blocks) == 2, "one op module and one registry line"
    assert "OP = Operator(" in blocks[0] and blocks[1].lstrip().startswith("OPERATORS = (")


def test_the_example_module_builds_the_registered_operator() -> None:
    doc_op = _example_op()
    real = registry.operator(doc_op.name)
    assert real is not None
    functions = ("sweep", "recipe")
    metrics = ("largest_tensor",)  # functions too: compared by their values over the sweep below
    for f in dataclasses.fields(Operator):
        if f.name not in functions + metrics and f.name != "kernels":
            assert getattr(doc_op, f.name) == getattr(real, f.name), f.name
    for case in real.inputs():
        for name in metrics:
            doc_m, real_m = getattr(doc_op, name), getattr(real, name)
            assert (doc_m is None) == (real_m is None), name
            if doc_m is not None and real_m is not None:
                assert doc_m(case.facts, "fwd", 2) == real_m(case.facts, "fwd", 2), (name, case)
    assert len(doc_op.kernels) == len(real.kernels)
    for doc_k, real_k in zip(doc_op.kernels, real.kernels):
        for f in dataclasses.fields(Kernels):
            if f.name not in functions:
                assert getattr(doc_k, f.name) == getattr(real_k, f.name), f.name
        assert doc_op.inputs() == real.inputs()
        for case in real.inputs():
            for dtype in real_k.dtypes:
                kw = dict(op=real_k.name, mode="fwd", dtype=dtype, target="sm_90", sm_count=132, version=None)
                assert doc_k.recipe(case, **kw) == real_k.recipe(case, **kw), (case, dtype)


def test_the_example_registers_as_a_new_operator(monkeypatch: pytest.MonkeyPatch) -> None:
    """One new module plus one registry line: a renamed copy of the example, added to a copy of
    OPERATORS, is a catalog entry and an operator by both names."""
    doc_op = _example_op()
    kernels = dataclasses.replace(doc_op.kernels[0], name="doc.softmax")
    new = dataclasses.replace(doc_op, name="doc_softmax", kernels=(kernels,))
    monkeypatch.setattr(registry, "OPERATORS", (*registry.OPERATORS, new))
    catalog = {e.name: e for e in registry._entries()}
    monkeypatch.setattr(registry, "CATALOG", catalog)
    monkeypatch.setattr(registry, "_BY_NAME", {op.name: op for op in registry.OPERATORS})
    entry = registry.catalog_entry("doc.softmax")
    assert entry is not None and entry.operator is new and entry.version is None
    assert [c.id for c in entry.inputs()] == [0, 1, 2, 3]
    assert registry.operator("doc_softmax") is new and registry.operator("doc.softmax") is new
    assert list(catalog)[-1] == "doc.softmax", "the registry position orders catalog list"
    launch = kernels.recipe(
        entry.inputs()[1], op="doc.softmax", mode="fwd", dtype="fp16", target="sm_90", sm_count=132, version=None
    )
    spec = launch.to_spec()
    assert spec.name == "doc.softmax.fwd[M=4096,N=1000]" and spec.source.endswith("softmax.py:softmax_kernel")


def test_the_registry_line_is_the_real_one() -> None:
    line = _python_blocks()[1]
    modules = re.findall(r"(\w+)\.OP", line)
    real = [op.name for op in registry.OPERATORS]
    assert modules == real, f"update the registry line in docs/architecture.md to {real}"


def test_the_fields_the_section_names_exist() -> None:
    """Every ``field=`` the prose names (outside the code blocks) is a field of Operator or Kernels, or a
    keyword the recipe is called with (``version=``, ktriage/ops/operator.py ``Recipe``)."""
    prose = re.sub(r"```.*?```", "", _section(), flags=re.S)
    named = set(re.findall(r"`(\w+)=", prose))
    fields = {f.name for cls in (Operator, Kernels) for f in dataclasses.fields(cls)}
    fields |= set(inspect.signature(registry.CATALOG["tutorial.softmax"].kernels.recipe).parameters)
    assert named, "the section names fields as `name=`"
    assert named <= fields, f"not fields of Operator/Kernels nor recipe keywords: {sorted(named - fields)}"
