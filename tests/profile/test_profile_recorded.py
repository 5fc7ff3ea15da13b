"""`ktriage profile` on a recorded bundle (issue 23, point 3; it stopped with "internal error:
KeyError: 'facts'"): the H200's recorded TritonBench rms_norm forward, compiled here into a recorded
bundle with Triton 3.3.1 and 3.4.0, profiled through the real CLI with a stand-in ncu (no GPU
here: the stand-in answers with the H200's committed raw export, as in tests/cli/test_profile.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))

from test_profile import fake_ncu

import ktriage.api as kt
from ktriage.profile.run import default_input, input_backends
from ktriage.workload.bundles.format import load_bundle

WORKLOAD = Path(__file__).resolve().parents[2] / "benchmarks" / "record" / "h200" / "tb_rms_norm_fwd.workload.json.gz"


def test_profile_of_a_recorded_bundle(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bundle = tmp_path / "rms"
    res = run_cli(
        [
            "bench",
            str(WORKLOAD),
            "-t",
            "triton==3.3.1",
            "-t",
            "triton==3.4.0",
            "--kernel",
            "K0",
            "--compile-only",
            "--bundle",
            str(bundle),
        ]
    )
    assert res.exit_code == 0, res.stderr
    loaded = load_bundle(bundle)
    first = default_input(loaded)
    (backend,) = input_backends(loaded, first)
    assert backend.startswith("K0:")
    res = run_cli(["profile", "--bundle", str(bundle), "--ncu", fake_ncu(tmp_path), "-f", "json"])
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["mode"] == "recorded" and doc["input_id"] == first and doc["backend"] == backend
    assert set(doc["toolchains"]) == set(loaded.toolchain_ids())
    for info in doc["toolchains"].values():
        assert info["launches"], info  # the stand-in's counters were read for each toolchain
    # the profiled program is the recorded replay: its command names the bundle, toolchain, entry, backend
    target = next(iter(doc["toolchains"].values()))["command"]
    assert "ktriage.profile.target" in target and str(first) in target and backend in target
    # a name that is no entry is an error naming the entries, not a traceback
    res = run_cli(["profile", "--bundle", str(bundle), "--ncu", fake_ncu(tmp_path), "--input-id", "999"])
    assert res.exit_code == 2 and "no recorded entry 999" in res.err_text


def test_a_recorded_bundles_input_is_chosen_as_bench_chooses_it(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``profile -i`` on a recorded bundle took an entry number only: every other selector, ``K1`` and
    ``K1:_rms_norm_forward_kernel`` as the reports print a kernel, the label bench's report prints, a short
    label inside its kernel's name as explain prints it, was refused as "chosen by entry id, not by shape
    facts", though ``bench --bundle -i`` takes them all. They select the one entry now (a number is still
    the entry's); one that names several entries is refused naming them, with profile's own fix."""
    from ktriage.errors import KtriageError
    from ktriage.profile.run import select_input

    bundle = tmp_path / "rms"
    args = ["bench", str(WORKLOAD), "-t", "triton==3.3.1", "-t", "triton==3.4.0", "--kernel", "K0", "--kernel", "K1"]
    res = run_cli([*args, "--compile-only", "--bundle", str(bundle)])
    assert res.exit_code == 0, res.stderr
    loaded = load_bundle(bundle)
    (k1,) = [i for i in json.loads((bundle / "manifest.json").read_text())["inputs"] if i["kernel"] == "K1"]
    res = run_cli(["profile", "--bundle", str(bundle), "--ncu", fake_ncu(tmp_path), "-i", "K1", "-f", "json"])
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["input_id"] == k1["id"]
    for selector in ("K1:_rms_norm_forward_kernel", k1["label"], "K1[n_cols=2048]", str(k1["id"])):
        assert select_input(loaded, selector) == k1["id"], selector
    with pytest.raises(KtriageError) as info:  # kt.profile's keyword is input (one), not bench's inputs
        kt.profile(bundle=bundle, ncu=fake_ncu(tmp_path), input="_rms_norm_forward_kernel")
    assert info.value.problem == (
        "input='_rms_norm_forward_kernel' (--input _rms_norm_forward_kernel) names 2 entries of bundle "
        f"{bundle}, and profile runs one"
    )
    assert (info.value.fix or "").startswith(
        "give one entry: its entry number (input='0' (--input 0) or input_id=0 (--input-id 0)), "
    )
    assert "kernels" not in (info.value.fix or "") and "--kernel" not in (info.value.fix or "")
    with pytest.raises(KtriageError) as typo:
        kt.profile(bundle=bundle, ncu=fake_ncu(tmp_path), input="typo")
    assert typo.value.problem == f"no input of bundle {bundle} matches input (--input) 'typo'"
    res = run_cli(["profile", "--bundle", str(bundle), "--ncu", fake_ncu(tmp_path), "-i", "typo"])
    assert res.exit_code == 2 and "no input of bundle" in res.err_text and "matches --input 'typo'" in res.err_text
    assert res.fix is not None and f"1: K1:_rms_norm_forward_kernel {k1['label']}" in res.fix
