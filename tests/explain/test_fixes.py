"""Fix suggestions of `ktriage explain --fixes`: real Triton wheels, real ptxas, real cuobjdump (no GPU).
The ``--fixes`` flag of the command: tests/cli/test_explain.py."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from ktriage.catalog import expand_op
from ktriage.explain.engine import Explainer
from ktriage.explain.findings import collect_findings
from ktriage.explain.fixes import (
    atomic_lines,
    plan_relaxed_atomics,
    rank_fixes,
    relax_source,
    site_words,
    suggest_fixes,
)
from ktriage.report.explain import NOT_RECOMMENDED_TITLE, fixes_markdown, print_fixes
from ktriage.spec.model import KernelSpec
from ktriage.spec.toml_file import loads_spec

KERNELS = Path(__file__).resolve().parents[1] / "kernels_for_tests.py"
KERNEL = textwrap.dedent("""
    @triton.jit
    def k(x_ptr, out_ptr, lock_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        v = tl.load(x_ptr + offs)
        tl.atomic_add(
            out_ptr + offs,
            v,
            mask=offs < n,
        )
        tl.atomic_add(out_ptr + offs, v, mask=offs < n)
        old = tl.atomic_add(out_ptr, 1.0)
        tl.atomic_add(out_ptr + 1, v, sem="release")
""")


def test_plan_and_rewrite_only_unused_results_without_sem() -> None:
    plan = plan_relaxed_atomics(KERNEL, "k")
    assert [(s.line, s.result_used, s.has_sem) for s in plan.sites] == [
        (6, False, False),
        (11, False, False),
        (12, True, False),
        (13, False, True),
    ]
    assert [s.line for s in plan.rewritable] == [6, 11]
    assert any("result of the atomic at line 12 is used" in h for h in plan.ordering_hazards)
    new = relax_source(KERNEL, plan)
    ast.parse(new)
    assert new.count('sem="relaxed"') == 2 and ", ," not in new and ",," not in new  # trailing comma kept once
    assert 'tl.atomic_add(out_ptr + offs, v, mask=offs < n, sem="relaxed")' in new
    assert "old = tl.atomic_add(out_ptr, 1.0)\n" in new and 'sem="release")' in new


def test_a_multi_line_call_names_its_span_and_the_line_its_atomics_are_compiled_at() -> None:
    """The fix names the call's first line (where sem= goes); a call over several lines also names its
    span and, where the line table puts its atomics on another of its lines (FAKE_... lines: the real
    ones need a compile, tested below), that line, which the line evidence cites."""
    multi, single = plan_relaxed_atomics(KERNEL, "k").rewritable
    assert (multi.line, multi.end[0], single.line, single.end[0]) == (6, 10, 11, 11)
    fake_compiled_at_argument = {8}
    assert site_words(multi, fake_compiled_at_argument) == (
        "6 (the call on lines 6-10; the line table puts its atomics at :8, an argument's line, as the line evidence says)"
    )
    assert site_words(multi, {6, 42}) == "6 (the call on lines 6-10)"  # at its first line, or outside the call
    assert site_words(single, {11}) == "11"


def test_ordering_hazards_are_named() -> None:
    src = textwrap.dedent("""
        @triton.jit
        def k(acc_ptr, flag_ptr):
            tl.atomic_add(acc_ptr, 1.0)
            while tl.atomic_cas(flag_ptr, 0, 1) == 1:
                pass
            s = tl.load(acc_ptr)
    """)
    hazards = plan_relaxed_atomics(src, "k").ordering_hazards
    assert any("atomic_cas" in h for h in hazards)
    assert any("loads from acc_ptr" in h for h in hazards)


@pytest.mark.slow
def test_embedding_backward_relaxed_atomic_brings_redg_back(toolchain, shared_compiler) -> None:
    """Liger 0.5.10 embedding bwd on Triton 3.4.0: ptxas 12.8.93 lowers the unused-result atomic to
    ATOMG (12.4 gave REDG); sem="relaxed" compiled with the same spec and toolchain gives REDG back."""
    specs = expand_op("liger.embedding", mode="bwd", target="sm_90", inputs=["0"])
    tcs = [toolchain("triton==3.4.0,ptxas==12.4.131"), toolchain("triton==3.4.0")]
    result = Explainer(shared_compiler).run(specs, tcs)
    new = result.specs[0].comparisons[0].new
    atomg = new.resources.sass_opcodes.get("ATOMG", 0)
    assert atomg > 0 and new.resources.sass_opcodes.get("REDG", 0) == 0
    fixes = suggest_fixes(result, collect_findings(result), shared_compiler, neighbours=[toolchain("triton==3.3.1")])
    relaxed = [f for f in fixes if f.kind == "relaxed-atomic"]
    assert len(relaxed) == 1 and relaxed[0].verified
    assert relaxed[0].effect.startswith(f"REDG returns: ATOMG {atomg} -> 0, REDG 0 -> {atomg}")
    assert relaxed[0].change["argument"] == 'sem="relaxed"' and relaxed[0].caveats
    # The fix edits the call where it opens (line 69); the line evidence cites where the line table puts
    # the atomics (:71, the argument `grad_output,`): the fix's text names both, so they read as one call.
    assert relaxed[0].change["lines"] == [69]
    evidence = atomic_lines(new, "embedding.py")
    assert evidence == {71}, evidence
    assert "line 69 (the call on lines 69-73; the line table puts its atomics at :71" in relaxed[0].description
    neighbour = [f for f in fixes if f.kind == "toolchain"]
    assert neighbour and neighbour[0].change["toolchain"] == "triton==3.3.1"
    assert "relaxed-atomic" in fixes_markdown(fixes)


@pytest.mark.slow
def test_layer_norm_backward_spills_get_config_and_ptxas_option_fixes(toolchain, shared_compiler) -> None:
    """Liger layer_norm bwd N=4608 on 3.4.0 spills (3.3.1 far less): a spill-free config is suggested when
    the tuner's suggest.py is present, and --register-usage-level is compiled and compared either way."""
    specs = expand_op("liger.layer_norm", mode="bwd", target="sm_90", inputs=["7"])
    tcs = [toolchain("triton==3.3.1"), toolchain("triton==3.4.0")]
    result = Explainer(shared_compiler).run(specs, tcs)
    new = result.specs[0].comparisons[0].new
    spills = new.resources.spill_store_bytes
    assert spills and spills > 0
    fixes = suggest_fixes(result, collect_findings(result), shared_compiler)
    options = {f.change["ptxas_options"]: f for f in fixes if f.kind == "ptxas-option"}
    assert set(options) == {"--register-usage-level=0", "--register-usage-level=10"}
    for fix in options.values():
        assert fix.effect.startswith(f"{new.resources.registers} regs, spill {spills} B")
        assert "->" in fix.effect and " spill " in fix.effect.split("->")[1]
    config = [f for f in fixes if f.kind == "spill-free-config"]
    assert len(config) == 1
    try:
        import ktriage.tune.suggest  # noqa: F401
    except ImportError:
        assert not config[0].verified and "not available" in config[0].effect
    else:
        assert config[0].verified and "-> 0 B" in config[0].effect


@pytest.mark.slow
def test_fixes_only_for_bullets_the_model_predicts_regressions(toolchain, shared_compiler) -> None:
    """Liger layer_norm bwd 3.3.1 -> 3.4.0 at N=2560 (registers 200 -> 232, predicted neutral) and
    N=4608 (spills, predicted +400 %): only the regression gets fixes. Registers rising on a kernel the
    report calls neutral got maxnreg and ptxas-option "fixes" before (on a recorded layer_norm workload,
    5 of 6 kernels fixed were neutral or predicted faster)."""
    specs = expand_op("liger.layer_norm", mode="bwd", target="sm_90", inputs=["N=2560", "N=4608"])
    result = Explainer(shared_compiler).run(specs, [toolchain("triton==3.3.1"), toolchain("triton==3.4.0")])
    fixes = suggest_fixes(result, collect_findings(result), shared_compiler)
    assert fixes and {f.kernel for f in fixes} == {"liger.layer_norm.bwd[N=4608]"}


# the test kernels' scatter-add (tl.atomic_add, its result unused): a kernel a relaxed-atomic fix applies to
ATOMIC_SPEC = KernelSpec(
    "atomic",
    f"{KERNELS}:atomic_kernel",
    {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
    {"BLOCK": 1024},
    divisible_by_16=("x_ptr", "out_ptr", "n"),
    grid=(1024,),
)


def test_relaxed_atomic_fix_is_priced_and_ranked_with_the_others(toolchain, shared_compiler) -> None:
    """The relaxed-atomic fix compiles a kernel (the rewritten copy) but had no cost-model prediction,
    so a list ranked "by predicted gain, largest first" put the one fix that edits the kernel after
    every priced one (after "use triton==3.3.1" on Liger's embedding and on a scatter-add of ours)."""
    spec = ATOMIC_SPEC
    tcs = [toolchain("triton==3.4.0,ptxas==12.4.131"), toolchain("triton==3.4.0")]
    result = Explainer(shared_compiler).run([spec], tcs)
    fixes = suggest_fixes(result, collect_findings(result), shared_compiler, neighbours=[toolchain("triton==3.3.1")])
    relaxed = next(f for f in fixes if f.kind == "relaxed-atomic")
    assert relaxed.verified and relaxed.prediction is not None, relaxed
    assert relaxed.prediction.gain < 1 and "predicted -" in relaxed.effect, relaxed.effect
    gains = [f.prediction.gain for f in fixes if f.prediction is not None]
    assert gains == sorted(gains) and fixes.index(relaxed) < len(gains), [(f.kind, f.effect) for f in fixes]


@pytest.mark.slow
def test_spill_free_config_search_prices_waves_for_the_sm_count_given(toolchain, shared_compiler) -> None:
    """`explain --fixes --sm-count 8` ran the nearest spill-free config search for the target's
    default 132 SMs: FixFinder never passed the SM count on. The suggestion now records the SM count
    its ranking used, and is the search's own answer at that count."""
    from ktriage.explain.fixes import FixFinder
    from ktriage.tune.suggest import nearest_spill_free
    from tests.red_spec import red_spec

    spec = red_spec("red[64x256]", divisible_by_16=("in_ptr", "out_ptr", "xnumel", "rnumel"))  # spills at 4 warps
    tc = toolchain("triton==3.4.0")
    finder = FixFinder(shared_compiler, sm_count=8)
    new = finder._result(spec, tc)
    assert not isinstance(new, str), new
    [fix] = finder.spill_free_config(spec, new)
    expected = nearest_spill_free(spec, tc, shared_compiler, sm_count=8)
    assert expected is not None and fix.verified
    assert fix.change["suggestion"]["sm_count"] == 8
    assert fix.change["suggestion"] == expected.to_json()
    assert nearest_spill_free(spec, tc, shared_compiler).sm_count == 132  # type: ignore[union-attr]


@pytest.mark.slow
def test_the_spill_free_search_is_ranked_by_the_model_given(toolchain, shared_compiler, tmp_path: Path) -> None:
    """``explain --fixes --model FILE`` priced the fixes with the file, but the nearest spill-free config
    search (tune.suggest -> tune.screen) ranked its candidates with the default model. Now FixFinder passes
    its model on: the suggestion's estimate is the one the file's parameters give (a round of global loads
    10x the shipped fit's), not the shipped fit's."""
    import json

    from ktriage.explain.fixes import FixFinder
    from ktriage.predict.model import PARAMS_FILE, load_params
    from ktriage.tune.suggest import nearest_spill_free
    from tests.red_spec import red_spec

    data = json.loads(PARAMS_FILE.read_text())
    data["params"]["lambda_global"] *= 10
    heavy_file = tmp_path / "heavy-model.json"
    heavy_file.write_text(json.dumps(data))
    shipped, heavy = load_params(PARAMS_FILE), load_params(heavy_file)
    spec = red_spec("red[64x256]", divisible_by_16=("in_ptr", "out_ptr", "xnumel", "rnumel"))  # spills at 4 warps
    tc = toolchain("triton==3.4.0")
    suggested = {}
    for name, params in (("shipped", shipped), ("heavy", heavy)):
        finder = FixFinder(shared_compiler, params=params)
        new = finder._result(spec, tc)
        assert not isinstance(new, str), new
        [fix] = finder.spill_free_config(spec, new)
        expected = nearest_spill_free(spec, tc, shared_compiler, params=params)
        assert expected is not None and fix.change["suggestion"] == expected.to_json()
        suggested[name] = fix.change["suggestion"]["estimate_us"]
    assert suggested["heavy"] > suggested["shipped"] * 1.03, suggested


# A user's online softmax at N=32768, as their spec file gives it (by values).
ONLINE_SOFTMAX = Path(__file__).resolve().parent / "online_softmax_kernel.py"
ONLINE_SOFTMAX_SPEC = f"""
[kernel]
name = "osm[N=32768]"
source = "{ONLINE_SOFTMAX}:online_softmax_kernel"
target = "sm_90"
grid = [4096]
[kernel.args]
x_ptr = {{ dtype = "bf16", shape = [4096, 32768], strides = [32768, 1] }}
y_ptr = {{ dtype = "bf16", shape = [4096, 32768], strides = [32768, 1] }}
n_cols = 32768
stride_xm = 32768
stride_ym = 32768
BLOCK = 16384
NUM_STAGES = 3
[kernel.options]
num_warps = 4
"""


@pytest.mark.slow
def test_a_fix_predicted_slower_is_ranked_last_and_said_not_recommended(toolchain, shared_compiler) -> None:
    """The user's online softmax at N=32768, Triton 3.3.1 against 3.6.0: maxnreg=168 buys a third CTA per
    SM for 1.2 KB more spills, predicted +111 % [+104 %, +118 %]; ptxas --register-usage-level=0 adds
    spills too. They were listed among the fixes like the spill-free config predicted -83 %, the ptxas
    options unpriced. Now every one is priced, and those predicted slower over their whole interval
    come last, apart ("Tried, not recommended"), said so in their text and as recommended: false."""
    from rich.console import Console

    from ktriage.explain.fixes import FixFinder

    (spec,) = loads_spec(ONLINE_SOFTMAX_SPEC, base_dir=ONLINE_SOFTMAX.parent)
    finder = FixFinder(shared_compiler)
    ref, new = finder._result(spec, toolchain("triton==3.6.0")), finder._result(spec, toolchain("triton==3.3.1"))
    assert not isinstance(ref, str) and not isinstance(new, str), (ref, new)
    tried = finder._dispatch("maxnreg", spec, ref, new) + finder._dispatch("ptxas-option", spec, ref, new)
    fixes = rank_fixes(tried)
    (maxnreg,) = [f for f in fixes if f.kind == "maxnreg"]
    assert maxnreg.prediction is not None and maxnreg.prediction.vs_current.low > 1.0, maxnreg.effect
    assert not maxnreg.recommended and maxnreg.to_json()["recommended"] is False
    assert "predicted slower: +" in maxnreg.effect and maxnreg.effect.endswith("; not recommended"), maxnreg.effect
    assert all(f.prediction is not None for f in fixes), [f.effect for f in fixes]  # ptxas options priced too
    flags = [f.recommended for f in fixes]
    assert flags == sorted(flags, reverse=True), [(f.kind, f.effect) for f in fixes]  # recommended first
    slower = [f.prediction.gain for f in fixes if not f.recommended]  # type: ignore[union-attr]
    assert slower == sorted(slower) and fixes[-1] is maxnreg
    for text in (fixes_markdown(fixes), _printed(print_fixes, fixes, Console)):
        assert NOT_RECOMMENDED_TITLE in text
        head, apart = text.split(NOT_RECOMMENDED_TITLE)
        assert "maxnreg=168" in apart and "maxnreg=168" not in head, text
        for f in fixes:
            assert (f.description in apart) != f.recommended, (f.description, text)
    # triage's fix column offers the recommended ones and counts the rest
    from ktriage.report.triage import _fix_text
    from ktriage.triage.model import CellTriage

    cell = CellTriage("osm", "fwd", 0, "N=32768", "triton", 1.0, 1.2, 1.2, "unexplained", "regression", False)
    cell.fixes = fixes
    column = _fix_text(cell)
    assert "maxnreg" not in column and column.endswith("2 fixes tried, predicted slower: not recommended"), column


def _printed(print_fixes, fixes, console_type) -> str:  # type: ignore[no-untyped-def]
    console = console_type(record=True, width=400)
    print_fixes(fixes, console)
    return str(console.export_text())


def test_fixes_are_priced_by_the_model_given(toolchain, tmp_path: Path) -> None:
    """``--model FILE`` priced the findings, but the fixes (and so which is recommended) with $KTRIAGE_MODEL
    or the shipped fit: the fix finder built its own explainer with the default parameters. A model file
    with a wider interval (as another calibration writes one) widens every fix's predicted interval."""
    import json

    from ktriage.explain.session import explain_specs
    from ktriage.predict.model import PARAMS_FILE

    data = json.loads(PARAMS_FILE.read_text())
    data["params"]["interval_a"] = 0.05
    wide = tmp_path / "wide-model.json"
    wide.write_text(json.dumps(data))
    spec = ATOMIC_SPEC
    tcs = [toolchain("triton==3.4.0,ptxas==12.4.131"), toolchain("triton==3.4.0")]
    widths = []
    for model in (None, wide):
        fixes = explain_specs([spec], tcs, fixes=True, model=model).fixes or []
        widths.append([f.prediction.vs_current.high - f.prediction.vs_current.low for f in fixes if f.prediction])
    assert widths[0] and len(widths[0]) == len(widths[1]), widths
    assert all(w > s for s, w in zip(widths[0], widths[1], strict=True)), widths


def test_fixes_are_judged_at_the_gate_given(toolchain) -> None:
    """explain --threshold 0.025 judged the findings at +-2.5 %, but the fixes' predictions at the default 5 %:
    their JSON said ``threshold: 0.05``, a second gate in one report."""
    from ktriage.explain.session import explain_specs

    tcs = [toolchain("triton==3.4.0,ptxas==12.4.131"), toolchain("triton==3.4.0")]
    fixes = explain_specs([ATOMIC_SPEC], tcs, fixes=True, threshold=0.025).fixes or []
    priced = [f.prediction for f in fixes if f.prediction]
    assert priced, fixes
    assert {p.vs_current.threshold for p in priced} == {0.025} and {p.vs_reference.threshold for p in priced} == {0.025}
