"""Issue 23, point 4: a spec file written by VALUES compiles, with every supported Triton release, the
kernel that release's own JIT compiles for the same launch. Checked through the fidelity harness:
the launch goes through Triton's real launch path with only the driver faked (insitu/jitrun.py), and
ktriage's artifact of the spec must carry the same compile inputs (signature, constants, divisibility
and equal-to-1 attributes) and a byte-identical cubin. No copy of any release's rules is consulted.

The test home holds 3.3.1 and 3.4.0 (Python ``specialize_impl``; 3.4 writes bools u1): those run
unmarked; the other releases build their toolchain first and are marked slow (scripts/test.sh runs
slow tests too, so CI checks every release).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ktriage.compile.compiler import Artifact, Compiler
from ktriage.errors import KtriageError
from ktriage.fidelity.by_value import case_of, check_spec
from ktriage.fidelity.harness import compare_artifact, run_jit
from ktriage.spec.toml_file import load_spec_file, loads_spec
from ktriage.toolchain.supported import SUPPORTED_TRITON
from tests.conftest import RunCli

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "specs" / "scaled_rows.toml"
MIXED = Path(__file__).resolve().parent / "mixed_by_value.toml"
IN_TEST_HOME = ("3.3.1", "3.4.0")
RELEASES = [v if v in IN_TEST_HOME else pytest.param(v, marks=pytest.mark.slow) for v in SUPPORTED_TRITON]


@pytest.mark.parametrize("version", RELEASES)
def test_strides_of_1_specialize_as_the_release_jit_does(version: str, toolchain, tmp_path: Path) -> None:
    (spec,) = load_spec_file(EXAMPLE)
    assert spec.launch is not None and dict(spec.launch["args"])["stride_xn"] == 1
    tc = toolchain(f"triton=={version}")
    with Compiler(jobs=1, cache_dir=tmp_path / "artifacts") as compiler:
        row = check_spec(spec, tc, compiler, tmp_path / "jit")
        artifact = compiler.compile(spec, tc)
    (tmp_path / "row.json").write_text(json.dumps(row.to_json()))
    assert row.status == "identical", f"Triton {version}: {row.detail}"
    assert row.heuristics == ("EVEN_N",) and row.cubin_bytes > 1000
    assert isinstance(artifact, Artifact) and artifact.spec.launch is None
    # the artifact's spec is the one that release's JIT built: its heuristic value and the launch kept
    assert artifact.spec.constexprs["EVEN_N"] is True and artifact.spec.meta["launch"] == spec.launch
    assert dict(artifact.spec.meta["jit_args"])["EVEN_N"] is True
    # the rest of the rules: None to a pointer, bool, float, dtype, 1 to a plain and to a constexpr
    # parameter, a misaligned tensor, do_not_specialize_on_alignment
    (mixed,) = load_spec_file(MIXED)
    with Compiler(jobs=1, cache_dir=tmp_path / "artifacts") as compiler:
        row = check_spec(mixed, tc, compiler, tmp_path / "jit-mixed")
    assert row.status == "identical", f"Triton {version}: {row.detail}"


def test_types_only_spec_is_not_the_jit_kernel_and_is_warned(toolchain, tmp_path: Path, caplog) -> None:
    """The motivating case (sglang's fused_moe_kernel): the same launch written by types, the way the
    docs used to show, leaves the strides of 1 unspecialized; the harness sees another kernel than
    the JIT's, and loading the file warns for each int given only a type."""
    typed = f"""
[kernel]
name = "scaled_rows_typed"
source = "{EXAMPLE.parent / "scaled_rows.py"}:scaled_rows_kernel"
[kernel.signature]
x_ptr = "*bf16"
y_ptr = "*bf16"
M = "i32"
N = "i32"
stride_xm = "i32"
stride_xn = "i32"
stride_ym = "i32"
stride_yn = "i32"
scale = "fp32"
seed = "i32"
BLOCK_N = "constexpr"
EVEN_N = "constexpr"
[kernel.constexprs]
BLOCK_N = 1024
EVEN_N = true
"""
    with caplog.at_level("WARNING", logger="ktriage"):
        (typed_spec,) = loads_spec(typed, base_dir=tmp_path, origin="typed.toml")
    warned = {line.split(": ")[1] for line in caplog.messages}
    assert {"stride_xn", "stride_yn", "M", "stride_xm"} <= warned and "seed" not in warned  # do_not_specialize
    assert any("stride_xn: i32 given without a value: not specialized for ==1" in m for m in caplog.messages)
    (by_value,) = load_spec_file(EXAMPLE)
    tc = toolchain("triton==3.4.0")
    jit = run_jit(tc, [case_of(by_value)], "sm_90", tmp_path / "jit")[by_value.name]
    launch = next(x for x in jit["launches"] if x["compiles"])
    record = jit["compiles"][launch["compiles"][-1]]
    with Compiler(jobs=1, cache_dir=tmp_path / "artifacts") as compiler:
        wrong = compiler.compile(typed_spec, tc)
        right = compiler.compile(by_value, tc)
    assert isinstance(wrong, Artifact) and isinstance(right, Artifact)
    assert compare_artifact("typed", right, record, {}).status == "identical"
    row = compare_artifact("typed", wrong, record, {})
    assert row.status == "differs" and "signature" in row.detail


def test_autotune_config_is_chosen_and_the_config_list_kept(toolchain, tmp_path: Path) -> None:
    """@triton.autotune on the spec path: the config named by autotune_config is the one compiled (its
    tiles, warps and stages), as the JIT compiles it, and the list is kept like record keeps it."""
    kernel = REPO / "ktriage" / "fidelity" / "kernels" / "autotuned_matmul.py"
    text = f"""
[kernel]
source = "{kernel}:matmul_kernel"
grid = [1024]
autotune_config = 1
[kernel.args]
a_ptr = {{ dtype = "fp16", shape = [4096, 4096] }}
b_ptr = {{ dtype = "fp16", shape = [4096, 4096] }}
c_ptr = {{ dtype = "fp16", shape = [4096, 4096] }}
M = 4096
N = 4096
K = 4096
stride_am = 4096
stride_ak = 1
stride_bk = 4096
stride_bn = 1
stride_cm = 4096
stride_cn = 1
"""
    (spec,) = loads_spec(text, base_dir=tmp_path)
    assert set(spec.meta["decided_at_compile"]) == {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"}
    tc = toolchain("triton==3.4.0")
    with Compiler(jobs=1, cache_dir=tmp_path / "artifacts") as compiler:
        row = check_spec(spec, tc, compiler, tmp_path / "jit")
        artifact = compiler.compile(spec, tc)
    assert row.status == "identical", row.detail
    assert row.autotuned and isinstance(artifact, Artifact)
    assert artifact.spec.constexprs["BLOCK_N"] == 128 and artifact.spec.num_stages == 4  # config 1
    assert len(artifact.spec.meta["autotune_configs"]) == 3 and artifact.spec.meta["autotune_config"] == 1


def test_a_changed_config_of_a_by_value_spec_is_what_the_jit_compiles_for_it(toolchain, tmp_path: Path) -> None:
    """tune's configs and explain's fixes change a spec with ``replace``: on a by-value spec the change
    reaches the launch (a constexpr the launch passes is passed changed, so the heuristics see it) and
    the compile is the JIT's for that launch."""
    (spec,) = load_spec_file(EXAMPLE)
    changed = spec.replace(num_warps=8, constexprs={**spec.constexprs, "BLOCK_N": 8192})
    assert changed.launch is not None and changed.launch["overrides"] == {
        "num_warps": 8,
        "constexprs": {"BLOCK_N": 8192},
    }
    assert changed.key() != spec.key()
    tc = toolchain("triton==3.4.0")
    with Compiler(jobs=1, cache_dir=tmp_path / "artifacts") as compiler:
        row = check_spec(changed, tc, compiler, tmp_path / "jit")
        artifact = compiler.compile(changed, tc)
    assert row.status == "identical", row.detail
    assert isinstance(artifact, Artifact) and artifact.spec.num_warps == 8
    assert artifact.spec.constexprs["BLOCK_N"] == 8192 and artifact.spec.constexprs["EVEN_N"] is False  # 4096 % 8192


def test_fidelity_verb_checks_a_spec_file_by_values(toolchain, run_cli, tmp_path: Path) -> None:
    """`ktriage fidelity --spec FILE`: the same check from the command line, one row per kernel and
    release; a spec file written by types is refused with the fix."""
    toolchain("triton==3.4.0")
    result = run_cli(["fidelity", "--spec", str(EXAMPLE), "-t", "triton==3.4.0", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)["rows"]
    assert [(r["case"], r["triton_version"], r["status"]) for r in rows] == [
        ("scaled_rows[M=N=4096,bf16]", "3.4.0", "identical")
    ]
    typed = tmp_path / "typed.toml"
    typed.write_text(
        f'[kernel]\nsource = "{EXAMPLE.parent / "scaled_rows.py"}:scaled_rows_kernel"\n[kernel.signature]\n'
        + "".join(
            f'{n} = "{t}"\n'
            for n, t in (
                ("x_ptr", "*bf16"),
                ("y_ptr", "*bf16"),
                ("M", "i32"),
                ("N", "i32"),
                ("stride_xm", "i32"),
                ("stride_xn", "i32"),
                ("stride_ym", "i32"),
                ("stride_yn", "i32"),
                ("scale", "fp32"),
                ("seed", "i32"),
                ("BLOCK_N", "constexpr"),
                ("EVEN_N", "constexpr"),
            )
        )
        + "[kernel.constexprs]\nBLOCK_N = 64\nEVEN_N = true\n"
    )
    refused = run_cli(["fidelity", "--spec", str(typed), "-t", "triton==3.4.0"])
    assert refused.exit_code == 2 and "written by types" in refused.stderr and "[kernel.args]" in refused.stderr


def test_explain_json_names_each_toolchains_specialization(toolchain, run_cli) -> None:
    """explain on a by-value spec file: each toolchain's result says what that release's JIT decided."""
    for version in IN_TEST_HOME:
        toolchain(f"triton=={version}")
    result = run_cli(["explain", str(EXAMPLE), "-t", "triton==3.3.1", "-t", "triton==3.4.0", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    (kernel,) = json.loads(result.stdout)["kernels"]
    assert kernel["spec"]["launch"]["args"][5] == ["stride_xn", 1]
    decided = [r["artifact"]["specialization"] for r in kernel["results"].values()]
    assert len(decided) == 2
    for spec in decided:
        assert spec["constexprs"]["EVEN_N"] is True and spec["signature"]["N"] == "i32"  # heuristic; N: tl.int32
        assert set(spec["equal_to_1"]) == set(spec["constexprs"]) - {"BLOCK_N", "EVEN_N"}


@pytest.mark.slow
def test_sglang_fused_moe_by_values_is_the_jit_kernel_and_does_not_spill(toolchain, tmp_path: Path) -> None:
    """Issue 23's motivating case: sglang's fused_moe_kernel (the real 0.5.23 wheel) at sglang's own
    H200 config. By values it is the JIT's kernel (the harness) and does not spill; the same launch
    written by types (its three strides of 1 typed i32, the docs' old form) runs out of registers."""
    from ktriage.spec.model import is_int_type, is_pointer_type

    (spec,) = load_spec_file(REPO / "examples" / "specs" / "sglang_fused_moe.toml")
    tc = toolchain("triton==3.4.0")
    with Compiler(jobs=1, cache_dir=tmp_path / "artifacts") as compiler:
        row = check_spec(spec, tc, compiler, tmp_path / "jit")
        by_values = compiler.compile(spec, tc)
        assert isinstance(by_values, Artifact)
        decided = by_values.spec
        signature = {n: "i32" if n in decided.equal_to_1 else t for n, t in decided.signature.items()}
        typed = decided.replace(
            signature=signature,
            equal_to_1=(),
            meta={},
            constexprs={k: v for k, v in decided.constexprs.items() if k not in decided.equal_to_1},
            divisible_by_16=tuple(n for n, t in signature.items() if is_pointer_type(t) or is_int_type(t)),
        )
        by_types = compiler.compile(typed, tc)
    assert row.status == "identical", row.detail
    assert set(decided.equal_to_1) == {"stride_ak", "stride_bk", "stride_cn"}
    assert isinstance(by_types, Artifact)
    from ktriage.analyze.ptxas_log import parse_ptxas_log

    values = parse_ptxas_log(by_values.cubin.ptxas_log).function(by_values.kernel_name)
    types = parse_ptxas_log(by_types.cubin.ptxas_log).function(by_types.kernel_name)
    assert values.spill_store_bytes == 0 and (types.spill_store_bytes or 0) > 0
    assert (values.registers or 0) < (types.registers or 0) == 255


def test_a_toolchain_with_its_own_ptxas_is_refused_before_the_jit_runs(toolchain, run_cli) -> None:  # type: ignore[no-untyped-def]
    """Triton's JIT assembles with its bundled ptxas: a toolchain with another ptxas would read "cubin bytes
    differ" on every case, for no drift of ktriage's. Refused with the release alone as the fix."""
    toolchain("triton==3.4.0,ptxas==12.4.131")
    res = run_cli(["fidelity", "--case", "vector_add", "-t", "triton==3.4.0,ptxas==12.4.131"])
    assert res.exit_code == 2, res.output
    assert "which the JIT cannot match" in res.err_text and "-t triton==3.4.0" in res.err_text


def test_a_case_selector_that_matches_nothing_names_the_flag_and_the_cases(run_cli) -> None:  # type: ignore[no-untyped-def]
    """``fidelity -k`` that matches nothing: with ``--spec`` the error named ``--input``, an option
    fidelity does not have; without, its fix pointed at benchmarks/fidelity/README.md, a file of the
    repository an installed ktriage does not have. Both are refused before any toolchain is built, the
    flag named as typed and the names to choose from listed."""
    by_spec = run_cli(["fidelity", "--spec", str(EXAMPLE), "-k", "nomatch", "-t", "triton==3.4.0"])
    assert by_spec.exit_code == 2, by_spec.output
    assert by_spec.problem == f"no kernel in {EXAMPLE} matches -k/--case 'nomatch'", by_spec.err_text
    assert by_spec.fix is not None and "use one of: M=N=4096,bf16" in by_spec.fix, (
        by_spec.err_text
    )  # its label selects it
    built_in = run_cli(["fidelity", "-k", "nomatch", "--case", "zzz", "-t", "triton==3.4.0"])
    assert built_in.exit_code == 2, built_in.output
    assert built_in.problem == "no fidelity case name contains 'nomatch' or 'zzz'", built_in.err_text
    assert built_in.fix is not None and "README" not in built_in.fix, built_in.err_text
    for family in ("liger.layer_norm.bwd", "tutorial.vector_add.fwd", "ktriage.descriptor_matmul"):
        assert family in built_in.fix, built_in.err_text


def test_a_toolchain_given_twice_is_refused(toolchain, run_cli) -> None:  # type: ignore[no-untyped-def]
    """fidelity built each -t on its own: a toolchain given twice was checked twice and its rows
    counted twice ("2 identical" for one case); it is refused as every other verb refuses it."""
    toolchain("triton==3.4.0")
    for argv in (["-k", "vector_add"], ["--spec", str(EXAMPLE)]):
        r = run_cli(["fidelity", "-t", "triton==3.4.0", "-t", "triton==3.4.0", *argv])
        assert r.exit_code == 2, r.output
        assert r.problem == "toolchain triton==3.4.0 is given twice" and r.fix == "give each toolchain once"


def test_a_kernel_that_does_not_load_is_an_error_row_and_the_others_are_checked(
    toolchain: Any, run_cli: RunCli, tmp_path: Path
) -> None:
    """``fidelity --spec`` with a file of two kernels, the first ("typo") naming a function its file does
    not define: before, the typo refused the whole file (exit 2, no row at all); now it is an error row
    per release, in the file's order, with its error and fix (as explain shows a kernel that did not
    load), the other kernel is checked as usual, and the exit is INCOMPLETE. The markdown says the
    error once for both releases."""
    from ktriage.cli import exit_codes

    for release in ("triton==3.3.1", "triton==3.4.0"):
        toolchain(release)
    good = EXAMPLE.read_text().replace("[kernel]\n", "[[kernel]]\n", 1)
    good = good.replace('source = "scaled_rows.py:', f'source = "{EXAMPLE.parent / "scaled_rows.py"}:')
    table = good[good.index("[[kernel]]") :]
    typo = table.replace('name = "scaled_rows[M=N=4096,bf16]"', 'name = "typo"').replace(
        ":scaled_rows_kernel", ":scaled_row_kernel"
    )
    spec = tmp_path / "typo_first.toml"
    spec.write_text(typo + "\n" + good)
    md = tmp_path / "fidelity.md"
    argv = ["fidelity", "--spec", str(spec), "-t", "triton==3.3.1", "-t", "triton==3.4.0", "--format", "json"]
    result = run_cli([*argv, "-o", str(md)])
    assert result.exit_code == exit_codes.INCOMPLETE, result.output
    rows = json.loads(result.stdout)["rows"]
    assert [(r["case"], r["triton_version"], r["status"]) for r in rows] == [
        ("typo", "3.3.1", "error"),
        ("scaled_rows[M=N=4096,bf16]", "3.3.1", "identical"),
        ("typo", "3.4.0", "error"),
        ("scaled_rows[M=N=4096,bf16]", "3.4.0", "identical"),
    ]
    said = (
        f"not loaded: {spec}: [[kernel]] #1: {EXAMPLE.parent / 'scaled_rows.py'} defines no function "
        "'scaled_row_kernel' — fix: did you mean scaled_rows_kernel?"
    )
    assert rows[0]["detail"] == rows[2]["detail"] == said
    assert md.read_text().count(said) == 1 and f"- `typo` on 3.3.1, 3.4.0: error: {said}" in md.read_text()


TYPED_ROW = (
    "written by types: the check compares a launch's values — fix: write it by values under [kernel.args] "
    "(docs/specs.md)"
)


def test_a_kernel_written_by_types_is_an_error_row_and_the_others_are_checked(
    toolchain: Any, run_cli: RunCli, tmp_path: Path
) -> None:
    """``fidelity --spec`` with a file of two kernels, the first ("typed") written by types: before, it
    refused the whole file (exit 2, no row for the kernel written by values); now it is an error row per
    release, in the file's order, saying why and the fix, the other kernel is checked, and the exit is
    INCOMPLETE. A selection (-k) of only the typed kernel, which leaves nothing to check, is refused."""
    from ktriage.cli import exit_codes

    toolchain("triton==3.4.0")
    good = EXAMPLE.read_text().replace("[kernel]\n", "[[kernel]]\n", 1)
    good = good.replace('source = "scaled_rows.py:', f'source = "{EXAMPLE.parent / "scaled_rows.py"}:')
    typed = (
        f'[[kernel]]\nname = "typed"\nsource = "{EXAMPLE.parent / "scaled_rows.py"}:scaled_rows_kernel"\n'
        '[kernel.signature]\nx_ptr = "*bf16"\ny_ptr = "*bf16"\nM = "i32"\nN = "i32"\nstride_xm = "i32"\n'
        'stride_xn = "i32"\nstride_ym = "i32"\nstride_yn = "i32"\nscale = "fp32"\nseed = "i32"\n'
        'BLOCK_N = "constexpr"\nEVEN_N = "constexpr"\n[kernel.constexprs]\nBLOCK_N = 64\nEVEN_N = true\n'
    )
    spec = tmp_path / "typed_first.toml"
    spec.write_text(typed + "\n" + good[good.index("[[kernel]]") :])
    md = tmp_path / "fidelity.md"
    result = run_cli(["fidelity", "--spec", str(spec), "-t", "triton==3.4.0", "--format", "json", "-o", str(md)])
    assert result.exit_code == exit_codes.INCOMPLETE, result.output
    rows = json.loads(result.stdout)["rows"]
    assert [(r["case"], r["triton_version"], r["status"]) for r in rows] == [
        ("typed", "3.4.0", "error"),
        ("scaled_rows[M=N=4096,bf16]", "3.4.0", "identical"),
    ]
    assert rows[0]["detail"] == TYPED_ROW
    assert f"- `typed` on 3.4.0: error: {TYPED_ROW}" in md.read_text()
    refused = run_cli(["fidelity", "--spec", str(spec), "-k", "typed", "-t", "triton==3.4.0"])
    assert refused.exit_code == exit_codes.USAGE, refused.output
    assert refused.problem == f"{spec}: typed written by types: the check compares a launch's values"
    assert refused.fix == "write it by values under [kernel.args] (docs/specs.md)"


def test_a_refusal_for_kernels_written_by_types_groups_the_others_errors(tmp_path: Path) -> None:
    """``fidelity --spec`` on a file whose one loading kernel is written by types, the others not loading:
    the refusal joined every other kernel's whole error on one line with '; ', each with the spec file's
    path, its table and the same fix again. They are now worded as a file none of whose kernels loads
    words them (one helper, ``grouped_errors``): one line per error, the same ones grouped, the file
    never on a line, a fix they share said once. Refused before any toolchain is built."""
    from ktriage.api import fidelity

    source = EXAMPLE.parent / "scaled_rows.py"
    typed = (
        f'[[kernel]]\nname = "typed"\nsource = "{source}:scaled_rows_kernel"\n'
        '[kernel.signature]\nx_ptr = "*bf16"\ny_ptr = "*bf16"\nM = "i32"\nN = "i32"\nstride_xm = "i32"\n'
        'stride_xn = "i32"\nstride_ym = "i32"\nstride_yn = "i32"\nscale = "fp32"\nseed = "i32"\n'
        'BLOCK_N = "constexpr"\nEVEN_N = "constexpr"\n[kernel.constexprs]\nBLOCK_N = 64\nEVEN_N = true\n'
    )
    typos = "".join(
        typed.replace('name = "typed"', f'name = "typo{i}"').replace(":scaled_rows_kernel", ":scaled_row_kernel")
        for i in (1, 2)
    )
    spec = tmp_path / "typed_and_typos.toml"
    spec.write_text(typed + "\n" + typos)
    with pytest.raises(KtriageError) as info:
        fidelity(spec=spec, toolchains=["triton==3.4.0"])
    exc = info.value
    assert exc.problem == f"{spec}: typed written by types: the check compares a launch's values"
    assert exc.details == (
        "no selected kernel can be checked: the others do not load (fix: did you mean scaled_rows_kernel?):\n"
        f"2 kernels (typo1, typo2): {source} defines no function 'scaled_row_kernel'"
    ), exc.details
    assert str(exc).count(str(spec)) == 1
