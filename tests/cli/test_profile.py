"""`ktriage profile --bundle B --results R.json`: the counters go into the results file and compare
quotes them. A real bundle (compiled here with triton 3.3.1 and 3.4.0) and the real CLI; ncu is a
stand-in script (``fake_ncu``: no GPU here) that answers with the H200's committed raw export of the
toolchain it is asked about, or with ERR_NVGPUCTRPERM for the toolchains named in ``deny``."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import numpy as np

from ktriage.cli import exit_codes
from ktriage.measure.cells import Cell, CellKey, RunInfo
from ktriage.measure.results_file import cell_profile, read_results, run_profile_notes, write_results
from ktriage.testing import lognormal
from tests.conftest import RunCli

H200 = Path(__file__).resolve().parents[2] / "benchmarks" / "profile" / "h200" / "layer_norm_bwd_N4608"


def fake_ncu(tmp_path: Path, deny: str = "") -> str:
    """A stand-in for ncu: profiling touches the -o report; --import prints the committed CSV of that toolchain."""
    script = tmp_path / "ncu"
    script.write_text(f"""#!/bin/bash
if [ "$1" = "--version" ]; then echo "NVIDIA (R) Nsight Compute Command Line Profiler (fake)"; echo "Version 2025.3.1.0 (fake)"; exit 0; fi
if [ "$1" = "--import" ]; then
  tc=$(basename "$2" .ncu-rep)
  f="{H200}/$tc.$5.csv"; [ -f "$f" ] || f=$(ls {H200}/${{tc%%.ptxas*}}*.$5.csv | head -1)
  cat "$f"; exit 0
fi
for ((i=1;i<=$#;i++)); do if [ "${{!i}}" = "-o" ]; then j=$((i+1)); rep="${{!j}}"; fi; done
if [ -n "{deny}" ] && [[ "$rep" == *{deny}* ]]; then echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission"; exit 1; fi
touch "$rep"; echo "==PROF== Disconnected"
""")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def bundle_and_results(run_cli, tmp_path: Path) -> tuple[Path, Path, list[str]]:  # type: ignore[no-untyped-def]
    bundle = tmp_path / "ln-bwd"
    res = run_cli(
        [
            "bench",
            "--op",
            "layer_norm",
            "--bwd",
            "--only",
            "liger_layer_norm,torch_layer_norm",
            "-i",
            "N=4608",
            "-t",
            "triton==3.3.1",
            "-t",
            "triton==3.4.0",
            "--compile-only",
            "--bundle",
            str(bundle),
        ]
    )
    assert res.exit_code == 0, res.stderr
    manifest = json.loads((bundle / "manifest.json").read_text())
    tcs = list(manifest["toolchains"])
    (input_id,) = [i["id"] for i in manifest["inputs"]]
    rng = np.random.default_rng(0)  # fake timings: the GPU would measure them
    cells = [
        Cell(
            CellKey("layer_norm", "bwd", input_id, "(4096, 4608)", "torch_layer_norm"),
            "ok",
            lognormal(rng, 40, 0.3, 0.01),
        )
    ]
    cells += [
        Cell(
            CellKey("layer_norm", "bwd", input_id, "(4096, 4608)", "liger_layer_norm", tc),
            "ok",
            lognormal(rng, 40, m, 0.01),
        )
        for tc, m in zip(tcs, (0.16, 0.8))
    ]
    run = RunInfo(run_id="cli-profile-run", toolchains=[{"id": tc} for tc in tcs], status="finished")
    return bundle, write_results(tmp_path / "results.json", run, cells), tcs


def test_profile_results_then_compare(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bundle, results, tcs = bundle_and_results(run_cli, tmp_path)
    db = f"sqlite:///{tmp_path / 'store.db'}"
    res = run_cli(
        ["profile", "--bundle", str(bundle), "--ncu", fake_ncu(tmp_path), "--results", str(results), "--db", db]
    )
    assert res.exit_code == 0, res.stderr
    assert "counters written into" in res.err_text and "is not in the store" in res.err_text
    _, cells = read_results(results)
    new = cell_profile(next(c for c in cells if c.key.toolchain == tcs[1]))
    assert new is not None and new["status"] == "ok" and new["launches"][0]["registers_per_thread"] == 32.0
    assert new["compile_side"]["spill_store_bytes"] > 0  # the bundle's own resources of this compile
    res = run_cli(["compare", str(results), "--toolchains", "--format", "markdown"])
    assert res.exit_code == 1  # the regression
    (line,) = [ln for ln in res.stdout.splitlines() if "registers/thread" in ln]
    assert line.startswith("- **regression +") and "local-memory (spill) traffic is 91% of L1 sectors (ref 53%)" in line
    assert "stall 'long_scoreboard' +13 points" in line
    res = run_cli(["compare", str(results), "--toolchains"])  # the terminal table, then the counters under it
    (line,) = [ln for ln in res.stdout.splitlines() if "registers/thread" in ln]
    assert line.startswith("counters regression +") and "local-memory (spill) traffic is 91% of L1 sectors" in line


def test_ncu_without_permission_is_one_line(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bundle, results, tcs = bundle_and_results(run_cli, tmp_path)
    res = run_cli(
        [
            "profile",
            "--bundle",
            str(bundle),
            "--ncu",
            fake_ncu(tmp_path, deny="triton-3.4.0"),
            "--results",
            str(results),
            "--db",
            f"sqlite:///{tmp_path / 'store.db'}",
        ]
    )
    assert res.exit_code == 0, res.stderr
    run, cells = read_results(results)
    (note,) = run_profile_notes(run)
    assert "ERR_NVGPUCTRPERM" in note and "\n" not in note
    assert all(c.samples_ms for c in cells)  # the timings are intact
    res = run_cli(["compare", str(results), "--toolchains", "--format", "markdown"])
    lines = [ln for ln in res.stdout.splitlines() if "ERR_NVGPUCTRPERM" in ln]
    assert len(lines) == 1 and lines[0].startswith("- **regression +") and "counters: new triton-3.4.0" in lines[0]


def test_bench_profile_flow_after_the_timing(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """What `bench --profile` does once run_bench has returned (ktriage.cli.bench_cmd._profile), minus the GPU:
    profile every (input, artifact backend) of the bundle, attach to the cells, update the stored run."""
    from ktriage.profile.attach import attach_to_store, profile_measured
    from ktriage.store import open_store

    bundle, results, tcs = bundle_and_results(run_cli, tmp_path)
    run, cells = read_results(results)
    db = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(db) as store:
        store.import_run(run, cells)  # as run_bench stored it
    said: list[str] = []
    docs = profile_measured(
        run,
        cells,
        bundle,
        backends=["liger_layer_norm"],
        input_ids=[cells[0].key.input_id],
        ncu=fake_ncu(tmp_path, deny="triton-3.3.1"),
        say=said.append,
    )
    assert (
        len(docs) == 1 and (bundle / f"profile-input{cells[0].key.input_id}-liger_layer_norm" / "profile.json").exists()
    )
    assert any("ERR_NVGPUCTRPERM" in s for s in said)
    assert "counters of 2 cells stored" in attach_to_store(db, run, cells)
    with open_store(db) as store:
        stored_run, stored = store.load_run(run.run_id)
    status = {c.key.toolchain: (cell_profile(c) or {}).get("status") for c in stored}
    assert status == {None: None, tcs[0]: "unavailable", tcs[1]: "ok"}
    assert len(run_profile_notes(stored_run)) == 1 and all(c.samples_ms for c in stored)


def test_a_store_set_in_the_environment_is_not_an_error_without_results(tmp_path: Path, run_cli: RunCli) -> None:
    """docs/ci.md has the nightly export KTRIAGE_DB for every verb: profile without --results then has nothing to
    store and goes on (here to the missing bundle); an explicit --db without --results is still refused."""
    db = f"sqlite:///{tmp_path / 's.db'}"
    bundle = str(tmp_path / "nowhere")
    out = run_cli(["profile", "--bundle", bundle], env={"KTRIAGE_DB": db})
    assert out.exit_code == exit_codes.USAGE and f"no bundle at {bundle}" in out.err_text, out.output
    out = run_cli(["profile", "--bundle", bundle, "--db", db])
    assert (
        out.exit_code == exit_codes.USAGE
        and "error: --db is the store where the run of --results is updated, and no --results was given" in out.err_text
    )


def test_the_input_is_chosen_by_id_or_shape_facts(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``-i`` is every other verb's ``--input`` (an id or shape facts); profile's took only an int, so
    ``profile -i N=4608`` (as bench and explain write it) stopped with "'N=4608' is not a valid int"."""
    bundle, _, _ = bundle_and_results(run_cli, tmp_path)
    (input_id,) = [i["id"] for i in json.loads((bundle / "manifest.json").read_text())["inputs"]]
    for selector in ("N=4608", "M=4096,N=4608", str(input_id)):
        res = run_cli(["profile", "--bundle", str(bundle), "--ncu", fake_ncu(tmp_path), "-i", selector, "-f", "json"])
        assert res.exit_code == 0, res.stderr
        assert json.loads(res.stdout)["input_id"] == input_id
    res = run_cli(["profile", "--bundle", str(bundle), "--ncu", fake_ncu(tmp_path), "-i", "N=1024"])
    assert res.exit_code == exit_codes.USAGE and "no input of layer_norm matches 'N=1024'" in res.err_text, res.output
    assert "N in {4608}" in res.err_text  # the fix names what the bundle has
    res = run_cli(["profile", "--bundle", str(bundle), "--ncu", fake_ncu(tmp_path), "-i", "N=4608", "--input-id", "7"])
    assert res.exit_code == exit_codes.USAGE and "give one of them" in res.err_text, res.output
