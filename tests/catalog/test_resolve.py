"""Turning what the user typed into specs (ktriage.catalog.resolve): the input-range selection's errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from ktriage.catalog.resolve import resolve_specs, select_input_range, spec_input_id
from ktriage.errors import KtriageError


def test_an_empty_input_range_names_the_ops_ids() -> None:
    specs = resolve_specs("tutorial.matmul")
    with pytest.raises(KtriageError, match=r"input_id=99 \(--input-id 99\) selects no input") as info:
        select_input_range(specs, 99, None, spec_input_id)
    assert info.value.fix == "input ids: 0..3"


def test_an_input_range_on_a_spec_file_says_to_select_by_name() -> None:
    """`explain my.toml --input-id 1` (TritonBench's spelling, as a user coming from it types) was refused
    with `fix: this target has no input ids`, which said what is missing but not what to type instead: a
    spec file's kernels are selected by name, and the fix now says so and lists them."""
    spec_file = Path(__file__).resolve().parents[2] / "examples/specs/scaled_rows.toml"
    specs = resolve_specs(str(spec_file))
    with pytest.raises(KtriageError, match=r"input_id=1 \(--input-id 1\) selects no input") as info:
        select_input_range(specs, 1, None, spec_input_id)
    assert info.value.fix == (
        "this target's kernels have no input ids: select them by name with inputs (--input) "
        "(one of: scaled_rows[M=N=4096,bf16])"
    ), info.value.fix


def test_an_input_range_after_input_says_input_already_narrowed() -> None:
    """`-i 0 --input-id 99`: the ids named are the op's (0..3), with the one -i kept, not "input ids: 0..0"."""
    specs = resolve_specs("tutorial.matmul", inputs=["0"])
    with pytest.raises(KtriageError, match=r"input_id=99 \(--input-id 99\) selects no input") as info:
        select_input_range(specs, 99, None, spec_input_id)
    assert info.value.fix is not None
    assert info.value.fix.startswith("inputs (--input) already chose input id 0 of tutorial.matmul's 0..3")
    specs = resolve_specs("tutorial.matmul", inputs=["0", "2"])
    with pytest.raises(KtriageError) as info:
        select_input_range(specs, 3, None, spec_input_id)
    assert info.value.fix is not None and "input ids 0, 2 of tutorial.matmul's 0..3" in info.value.fix


def test_an_existing_path_that_is_no_spec_file_is_not_called_an_unknown_op(tmp_path: Path) -> None:
    notes = tmp_path / "notoml.txt"
    notes.write_text("x\n")
    for target, kind in ((notes, "file"), (tmp_path, "folder")):
        with pytest.raises(KtriageError) as info:
            resolve_specs(str(target))
        assert info.value.problem == f"{target} is a {kind}, not a spec file (.toml) or a recorded workload " + (
            "(.json from `ktriage record`)"
        )
        assert info.value.fix is not None and "*.toml" in info.value.fix
    with pytest.raises(KtriageError, match="unknown catalog op 'no.such.op'"):
        resolve_specs("no.such.op")


def test_a_kernel_named_as_its_source_says_how_to_write_its_spec_file(tmp_path: Path) -> None:
    """`explain pkg/k.py:fn` (or `pkg.k:fn`, or `pkg/k.py`) was "unknown catalog op ... did you mean
    liger.rms_norm?": a kernel alone is no launch; the fix is a spec file naming it, with its arguments."""
    kernel = tmp_path / "k.py"
    kernel.write_text("import triton\n\n\n@triton.jit\ndef my_kernel(x_ptr, n, BLOCK):\n    pass\n")
    with pytest.raises(KtriageError) as info:
        resolve_specs(f"{kernel}:my_kernel")
    assert info.value.problem.startswith(f"{kernel}:my_kernel names a kernel function; explain compiles a launch")
    assert info.value.fix is not None
    assert f'source = "{kernel}:my_kernel"' in info.value.fix
    assert "the launch's values of x_ptr, n, BLOCK" in info.value.fix
    for target in (str(kernel), "mypkg.ops.norm:rms_norm_fwd"):
        with pytest.raises(KtriageError) as info:
            resolve_specs(target)
        assert "names a kernel" in info.value.problem and "unknown catalog op" not in info.value.problem
        assert info.value.fix is not None and "write a spec file (docs/specs.md)" in info.value.fix
    with pytest.raises(KtriageError, match="unknown catalog op"):  # not a source: still the catalog's message
        resolve_specs("liger.rms_nrom")


def test_a_kernels_file_alone_gets_the_spec_file_of_its_kernel(tmp_path: Path) -> None:
    """`explain k.py`: the fix said `source = "k.py:<function>"` with "its launch's argument values", though
    the file names its kernel: one @triton.jit function is named, with its arguments; of several, each is
    offered; a helper that is no kernel is not."""
    one = tmp_path / "one.py"
    one.write_text(
        "import triton\nimport triton.language as tl\n\n\ndef helper(x):\n    return x\n\n\n"
        "@triton.jit(do_not_specialize=['n'])\ndef my_kernel(x_ptr, n, BLOCK: tl.constexpr):\n    pass\n"
    )
    with pytest.raises(KtriageError) as info:
        resolve_specs(str(one))
    assert info.value.problem.startswith(f"{one} names a kernel's source file")
    assert info.value.fix is not None
    assert f'source = "{one}:my_kernel"' in info.value.fix
    assert "the launch's values of x_ptr, n, BLOCK" in info.value.fix
    two = tmp_path / "two.py"
    two.write_text("from triton import jit\n\n\n@jit\ndef a(x):\n    pass\n\n\n@jit\ndef b(y):\n    pass\n")
    with pytest.raises(KtriageError) as info:
        resolve_specs(str(two))
    assert info.value.fix is not None and f'source = "{two}:<function: a or b>"' in info.value.fix


def test_a_range_as_explain_prints_it_selects_its_inputs() -> None:
    """explain names a run of inputs ``N=4608..8192`` (a catalog op, the main job's layer_norm) or
    ``kernel[X_ptr=4096x{4608..6144}]`` (a recorded workload); copied into ``-i`` it was refused ("neither
    an id nor K=V facts", "no kernel ... matches"). It selects the inputs from its first to its last now,
    for every verb that resolves specs (explain, tune, bisect)."""
    from ktriage.explain.labels import input_names
    from ktriage.spec.model import input_label
    from ktriage.spec.ranges import input_place

    specs = resolve_specs("liger.layer_norm", mode="bwd", inputs=["N=4608..8192"])
    assert [input_label(s.meta, s.name) for s in specs] == [f"N={n}" for n in range(4608, 8193, 512)]
    embedding = resolve_specs("liger.embedding", mode="bwd")
    printed = input_place("", [input_label(s.meta, s.name) for s in (embedding[0], embedding[-1])])
    assert printed == "B=32,T=512,D=768,V=1024 .. B=8,T=2048,D=4096,V=131072"
    assert len(resolve_specs("liger.embedding", mode="bwd", inputs=[printed])) == len(embedding)
    with pytest.raises(KtriageError, match="'N=4608' is not after 'N=8192'"):
        resolve_specs("liger.layer_norm", mode="bwd", inputs=["N=8192..4608"])
    with pytest.raises(KtriageError, match="its end: no input of liger.layer_norm matches 'N=8193'"):
        resolve_specs("liger.layer_norm", mode="bwd", inputs=["N=4608..8193"])
    workload = str(Path(__file__).resolve().parents[2] / "benchmarks/record/h200/tb_layer_norm_bwd.workload.json.gz")
    names = input_names(resolve_specs(workload))
    kernel = names[22][0]
    printed = input_place(kernel, [short for k, short in names if k == kernel][1:5])
    assert printed == "_layer_norm_backward_kernel.K7[X_ptr=4096x{5120..6656}]"
    assert [s.name for s in resolve_specs(workload, inputs=[printed])] == [
        s.name for s in resolve_specs(workload) if s.meta.get("workload_kernel") == "K7"
    ][1:5]


def test_a_catalog_kernels_name_alone_selects_its_inputs_and_another_kernels_is_refused() -> None:
    """A catalog op's kernel as a report of several kernels names it (``liger.layer_norm.bwd``, the
    findings' ``kernel``) selects every input, as a workload's ``K7`` does; a name before ``[...]`` that is
    not the op's kernel was "neither an id nor K=V facts", and now says which names the op's inputs."""
    every = resolve_specs("liger.layer_norm", mode="bwd")
    assert [s.name for s in resolve_specs("liger.layer_norm", mode="bwd", inputs=["liger.layer_norm.bwd"])] == [
        s.name for s in every
    ]
    with pytest.raises(KtriageError, match=r"names the kernel 'K7', which is not liger.layer_norm's") as info:
        resolve_specs("liger.layer_norm", mode="bwd", inputs=["K7[N=4608]"])
    assert info.value.fix is not None and "liger.layer_norm.bwd[N=4608]" in info.value.fix


def test_a_kernel_as_the_reports_print_it_selects_its_inputs() -> None:
    """``explain W.json -i K7:_layer_norm_backward_kernel`` (the kernel column of bench's, compare's and
    triage's reports, which ``--kernel`` takes) was refused as 'no kernel matches', and ``-i K1`` of a
    workload of ten kernels picked K1 only because no other name held 'K1' (with K10 it would have been
    'part of 2 kernel names'). A kernel in any form the reports print selects all its inputs; before a
    short label's ``[...]`` too; an id with another kernel's function is refused naming both."""
    workload = str(Path(__file__).resolve().parents[2] / "benchmarks/record/h200/tb_layer_norm_bwd.workload.json.gz")
    specs = resolve_specs(workload)
    k7 = [s.name for s in specs if s.meta.get("workload_kernel") == "K7"]
    for form in ("K7", "K7:_layer_norm_backward_kernel", "_layer_norm_backward_kernel.K7"):
        assert [s.name for s in resolve_specs(workload, inputs=[form])] == k7, form
    backward = [s.name for s in specs if s.meta.get("function") == "_layer_norm_backward_kernel"]
    assert [s.name for s in resolve_specs(workload, inputs=["_layer_norm_backward_kernel"])] == backward
    picked = resolve_specs(workload, inputs=["K7:_layer_norm_backward_kernel[X_ptr=4096x{4608..5120}]"])
    assert [s.name for s in picked] == k7[:2]
    with pytest.raises(
        KtriageError, match="K7 in .* is the function _layer_norm_backward_kernel, not _layer_norm_f"
    ) as e:
        resolve_specs(workload, inputs=["K7:_layer_norm_forward_kernel"])
    assert (
        e.value.fix is not None
        and "give inputs (--input) the kernel as the report prints it, K7:_layer_norm_backward_kernel" in e.value.fix
    )


def test_a_kernel_of_another_function_before_a_short_label_is_refused_naming_both() -> None:
    """``-i K6:_layer_norm_backward_kernel[X_ptr=4096x4608]`` (K6 is the forward kernel) was refused as
    'no kernel matches', while the bare ``K6:_layer_norm_backward_kernel`` named both halves: one error
    for both forms, explain's and bench's, its fix keeping the label and selecting what it names."""
    from ktriage.record.workload import load_workload
    from ktriage.workload.recorded.bundle import select_kernels

    workload = str(Path(__file__).resolve().parents[2] / "benchmarks/record/h200/tb_layer_norm_bwd.workload.json.gz")
    problem = "K6 in .* is the function _layer_norm_forward_kernel, not _layer_norm_backward_kernel"
    for selector in ("K6:_layer_norm_backward_kernel[X_ptr=4096x4608]", "K6:_layer_norm_backward_kernel"):
        label = selector.partition("[")[1] + selector.partition("[")[2]
        with pytest.raises(KtriageError, match=problem) as explain:
            resolve_specs(workload, inputs=[selector])
        with pytest.raises(KtriageError, match=problem) as bench:
            select_kernels(load_workload(workload), None, [selector])
        fix = f"inputs (--input) the kernel as the report prints it, K6:_layer_norm_forward_kernel{label} (or K6{label} alone)"
        assert explain.value.fix is not None and fix in explain.value.fix
        assert bench.value.fix is not None and fix in bench.value.fix
    picked = resolve_specs(workload, inputs=["K6:_layer_norm_forward_kernel[X_ptr=4096x4608]"])
    assert [(s.meta["workload_kernel"], s.meta["input_id"]) for s in picked] == [("K6", 0)]


def test_a_selector_naming_no_recorded_input_lists_the_ids_per_kernel() -> None:
    """The fix of ``explain W.json -i TYPO`` listed ``0, 1, 10, 11, ..., 2, 3`` among the names: every
    kernel's input ids pooled and sorted as text, so ``0`` read as one input, while ``-i 0`` selects input
    0 of every kernel (``bench_workloads_h200.sh``'s ``--input 0 --input 3`` relies on it: kept). The fix
    lists the ids per kernel and says what an id selects, for explain and bench alike; its example of a
    label inside its kernel's name selects one input."""
    from ktriage.record.workload import load_workload
    from ktriage.workload.recorded.bundle import select_kernels

    workload = str(Path(__file__).resolve().parents[2] / "benchmarks/record/h200/tb_layer_norm_bwd.workload.json.gz")
    ids = "an input id, which selects that input of every kernel that has it (K0: 0, K1: 0, K2: 0..1, K3: 0..1, "
    with pytest.raises(
        KtriageError, match=r"no input of .*tb_layer_norm_bwd.* matches inputs \(--input\) 'typo'"
    ) as explain:
        resolve_specs(workload, inputs=["typo"])
    with pytest.raises(KtriageError, match=r"no input of the workload matches inputs \(--input\) 'typo'") as bench:
        select_kernels(load_workload(workload), None, ["typo"])
    for fix in (explain.value.fix or "", bench.value.fix or ""):
        assert ids in fix and "K8: 0..14, K9: 0..14)" in fix, fix
        assert "0, 1, 10" not in fix
        assert "(e.g. K0[Y_ptr=4096x1024])" in fix
    assert [s.meta["workload_kernel"] for s in resolve_specs(workload, inputs=["K0[Y_ptr=4096x1024]"])] == ["K0"]
    assert len(resolve_specs(workload, inputs=["0"])) == 10  # input 0 of each of the ten kernels, as documented


def test_the_range_hint_shows_a_range_of_the_targets_own_inputs(tmp_path: Path) -> None:
    """The fix of a refused selector always gave the example ``N=4608..8192``, a catalog op's range: on a
    workload, whose ranges read ``K7[X_ptr=4096x{4608..6144}]``, on an op with no fact N (liger.embedding)
    and on a spec file it named inputs the target does not have. Its example is now a range of the
    target's own inputs as its reports print them, and copied back into ``-i`` it selects a run of them."""
    import re

    from ktriage.api import catalog_show

    spec_file = tmp_path / "layer_norm.toml"
    spec_file.write_text(catalog_show(op="liger.layer_norm", mode="bwd", target="sm_90").to_toml())
    workload = str(Path(__file__).resolve().parents[2] / "benchmarks/record/h200/tb_layer_norm_bwd.workload.json.gz")
    targets = {
        "liger.layer_norm": (r"N=1024\.\.\d+", {"mode": "bwd"}),
        "liger.embedding": (r"B=\d+,T=\d+,D=\d+,V=\d+ \.\. B=\d+,T=\d+,D=\d+,V=\d+", {"mode": "bwd"}),
        str(spec_file): (r"N=1024\.\.\d+", {}),
        workload: (r"K\d+\[Y_ptr=4096x\{\d+\.\.\d+\}\]", {}),
    }
    for target, (form, options) in targets.items():
        with pytest.raises(KtriageError) as refused:
            resolve_specs(target, inputs=["typo typo"], **options)
        example = re.search(r"from its first input to its last \(e\.g\. (.+)\)$", refused.value.fix or "")
        assert example and re.fullmatch(form, example.group(1)), (target, refused.value.fix)
        assert len(resolve_specs(target, inputs=[example.group(1)], **options)) > 1, example.group(1)


def test_a_refusal_lists_input_ids_in_numeric_order_with_runs_collapsed(tmp_path: Path) -> None:
    """A spec file's "use one of" list pooled ids, labels and names sorted as text: ``0, 1, 10, 11, 12,
    ...`` filled all twelve places and read 10 before 2. Its ids are now one numeric list with runs
    collapsed, as a workload's are (``spec.ranges.id_runs``), then each kernel by its label in file order.
    A catalog op's refusals said ``ids 0..N-1`` from the count of its inputs, wrong for inputs that are
    not those ids (a bundle of inputs 7 and 9 read ``0..1``); they list the ids the inputs have."""
    from ktriage.api import catalog_show
    from ktriage.ops.inputs import InputCase, select_inputs

    spec_file = tmp_path / "layer_norm.toml"
    chosen = ["0", "1", "2", "5", "10", "11", "12"]
    spec_file.write_text(catalog_show(op="liger.layer_norm", mode="bwd", target="sm_90", inputs=chosen).to_toml())
    with pytest.raises(KtriageError, match=r"no kernel in .* matches inputs \(--input\) 'typo'") as refused:
        resolve_specs(str(spec_file), inputs=["typo"])
    fix = refused.value.fix or ""
    assert fix.startswith("use an input id (0..2, 5, 10..12) or one of: N=1024, N=1536, N=2048, N=3584, "), fix
    cases = [InputCase(7, {"N": 4096}), InputCase(9, {"N": 8192})]
    for typo, said in (("typo", "write an input id (7, 9)"), ("N=1", "valid inputs: ids 7, 9;")):
        with pytest.raises(KtriageError) as refused:
            select_inputs("op", cases, [typo])
        assert said in (refused.value.fix or ""), refused.value.fix
