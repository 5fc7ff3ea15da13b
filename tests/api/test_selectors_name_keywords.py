"""The input and kernel selectors' refusals (spec.select) name the keyword as well as the flag: kt.explain,
kt.tune and kt.bench_recorded callers were told "no kernel in X matches --input 'typo'", "choose --kernel
from: ...", "(or narrow with --kernel K6 or K7)", flags they do not pass. Through kt.*, on a spec file
and a recorded workload of the repository; each refusal comes before anything compiles."""

from __future__ import annotations

from pathlib import Path

import pytest

import ktriage.api as kt
from ktriage.errors import KtriageError

ROOT = Path(__file__).parents[2]
SPEC = ROOT / "examples/specs/scaled_rows.toml"
LN_BWD = ROOT / "benchmarks/record/h200/tb_layer_norm_bwd.workload.json.gz"
TOOLCHAINS = ["triton==3.3.1", "triton==3.4.0"]


def test_explain_and_tune_name_inputs_as_a_keyword() -> None:
    for verb in (kt.explain, kt.tune):
        with pytest.raises(KtriageError) as refused:
            verb(target=SPEC, toolchains=["triton==3.4.0"], inputs="typo")
        assert refused.value.problem == f"no kernel in {SPEC} matches inputs (--input) 'typo'", verb
    with pytest.raises(KtriageError) as halves:
        kt.explain(target=LN_BWD, toolchains=["triton==3.4.0"], inputs=["K6:_layer_norm_backward_kernel"])
    assert halves.value.problem.startswith("inputs (--input) 'K6:_layer_norm_backward_kernel': K6 in ")
    assert halves.value.fix == (
        "give inputs (--input) the kernel as the report prints it, K6:_layer_norm_forward_kernel (or K6 alone)"
    )


def test_bench_recorded_names_kernels_and_inputs_as_keywords(tmp_path: Path) -> None:
    def refusal(**kwargs) -> KtriageError:  # type: ignore[no-untyped-def]
        with pytest.raises(KtriageError) as refused:
            kt.bench_recorded(
                workload=LN_BWD, toolchains=TOOLCHAINS, compile_only=True, bundle=tmp_path / "b", **kwargs
            )
        return refused.value

    halves = refusal(kernels=["K7:_layer_norm_forward_kernel"])
    assert halves.problem == (
        "kernels (--kernel) 'K7:_layer_norm_forward_kernel': K7 in the workload is the function "
        "_layer_norm_backward_kernel, not _layer_norm_forward_kernel"
    )
    assert halves.fix == (
        "give kernels (--kernel) the kernel as the report prints it, K7:_layer_norm_backward_kernel (or K7 alone)"
    )
    assert (refusal(kernels=["K99"]).fix or "").startswith("choose kernels (--kernel) from: K0 (")
    short = refusal(inputs=["X_ptr=4096x4608"])
    assert short.problem == (
        "inputs (--input) 'X_ptr=4096x4608' is the short label of 2 recorded inputs in the workload, not of one"
    )
    assert (short.fix or "").endswith("(or narrow with kernels=['K6'] (--kernel K6) or kernels=['K7'] (--kernel K7))")
    typo = refusal(inputs=["typo"])
    assert typo.problem == "no input of the workload matches inputs (--input) 'typo'"
    assert not (tmp_path / "b").exists()


def test_profile_names_input_as_a_keyword_on_an_op_bundle(tmp_path: Path) -> None:
    """profile.run.select_input on an op bundle said "--input 'M=4096' matches 2 inputs ...". The committed
    H200 bundle of one input (layer_norm, M=4096,N=4608), given a second input in its manifest here; the
    selection comes before ncu runs (ncu: /bin/true, never started)."""
    import json
    import shutil

    bundle = tmp_path / "bundle"
    shutil.copytree(ROOT / "benchmarks/profile/lines_h200/bundle", bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["inputs"].append(manifest["inputs"][0] | {"id": 8, "facts": {"M": 4096, "N": 8192}})
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(KtriageError) as several:
        kt.profile(bundle=bundle, input="M=4096", ncu="/bin/true")
    assert several.value.problem == (
        f"input='M=4096' (--input M=4096) matches 2 inputs of bundle {bundle}: profile runs one"
    )
    for entry in manifest["inputs"]:
        entry["facts"] = {}
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(KtriageError) as no_facts:
        kt.profile(bundle=bundle, input="M=4096", ncu="/bin/true")
    assert no_facts.value.problem == (
        f"input='M=4096' (--input M=4096): bundle {bundle} records no shape facts for its inputs"
    )
    assert no_facts.value.fix == "give one of its input ids as input (--input) or input_id (--input-id): [7, 8]"
