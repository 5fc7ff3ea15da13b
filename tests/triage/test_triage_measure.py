"""The GPU step of `ktriage triage` (issue 12 step 3): a bench bundle of the flagged cells for the GPU
host, the results read back into measured verdicts, and the bad inputs of that path.

The bundle is built for real (the test home's Triton 3.3.1/3.4.0, the real A/A TritonBench CSVs, cut to
one cell). The read-back tests write results files with the real writer (``write_results``) from
synthetic samples (``ktriage.testing.lognormal``, a fake: nothing here is a GPU measurement), named
for the bundle the triage plans, and read them through the CLI; the GPU test runs ``--measure``."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ktriage.cli.app import main
from ktriage.errors import KtriageError
from ktriage.measure.cells import Cell, CellKey, RunInfo
from ktriage.measure.results_file import write_results
from ktriage.testing import lognormal
from ktriage.triage import TriageOptions, triage
from ktriage.triage.measure import MANIFEST, SCRIPT, plan_measurement
from ktriage.wording import fmt_pct
from ktriage.workload.bundles.format import load_bundle
from tests.conftest import RunCli

DATA = Path(__file__).resolve().parents[1] / "data" / "tritonbench"
RUN1, RUN2 = DATA / "layer_norm_bwd_run1.csv", DATA / "layer_norm_bwd_run2.csv"
AA = ["--old-toolchain", "triton==3.4.0", "--new-toolchain", "triton==3.4.0", "--op", "layer_norm", "--mode", "bwd"]
CROSS = [
    "--old-toolchain",
    "triton==3.3.1",
    "--new-toolchain",
    "triton==3.4.0",
    "--op",
    "layer_norm",
    "--mode",
    "bwd",
    "--no-bisect",
    "--no-fixes",
]


def _fake_results(
    path: Path,
    options: TriageOptions,
    *,
    slower: dict[int, float] | None = None,
    seed: int = 0,
    token: str | None = None,
    fix: float | None = None,
) -> Path:
    """A results file shaped as `ktriage bench --bundle <the triage's bundle>` writes it, with FAKE
    samples: per planned input the baseline and the Liger backend once per toolchain variant (the new
    one ``slower[input_id]`` times slower; with ``fix``, a ``+fix`` variant of the new one that is
    ``fix`` times the old toolchain's time)."""
    report = triage(RUN1, RUN2, options)
    plan = plan_measurement(report, options)
    (group,) = plan.groups
    rng = np.random.default_rng(seed)
    ids = ["triton-3.3.1", "triton-3.4.0"] if not plan.same_toolchain else ["triton-3.4.0", "triton-3.4.0+aa"]
    if fix is not None:
        ids.append("triton-3.4.0+fix")
    run = RunInfo(
        command="FAKE: synthetic samples",
        host="synthetic",
        gpu={"name": "FAKE-GPU"},
        toolchains=[
            {"id": t, "spec": t, **({"variant": "proposed fix: num_warps 8"} if t.endswith("+fix") else {})}
            for t in ids
        ],
        settings={
            "plan": {
                "op": group.op,
                "mode": group.mode,
                "input_ids": group.input_ids,
                "bundle": f"/gpu/host/tri/{group.dirname if token is None else 'layer_norm-bwd-' + token}",
            }
        },
    )
    cells = []
    for i in group.input_ids:
        label = f"(4096, {1024 + 512 * i})"
        cells.append(
            Cell(CellKey("layer_norm", "bwd", i, label, "torch_layer_norm"), "ok", lognormal(rng, 60, 0.1, 0.01))
        )
        for k, tc in enumerate(ids):
            factor = (slower or {}).get(i, 1.0) if k == 1 else (fix or 1.0) if k == 2 else 1.0
            cells.append(
                Cell(
                    CellKey("layer_norm", "bwd", i, label, "liger_layer_norm", tc),
                    "ok",
                    lognormal(rng, 60, 0.3 * factor, 0.01),
                )
            )
    return write_results(path, run, cells)


def test_bundle_of_the_flagged_cells_and_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "tri"
    code = main(["triage", str(RUN1), str(RUN2), *CROSS, "--limit", "1", "--bundle", str(out), "--format", "json"])
    captured = capsys.readouterr()
    assert code in (0, 1)
    manifest = json.loads((out / MANIFEST).read_text())
    (cell,) = manifest["cells"]  # --limit 1: the worst flagged cell only
    report = json.loads(captured.out)
    worst = max(
        (c for c in report["cells"] if c["backend"] == "liger_layer_norm"), key=lambda c: abs(np.log(c["ratio"]))
    )
    assert (cell["input_id"], cell["backend"]) == (worst["input_id"], "liger_layer_norm")
    assert len(manifest["not_bundled"]) == len(report["cells"]) - 1
    (entry,) = manifest["bundles"]
    bundle = load_bundle(out / entry["dir"])  # a real bench bundle: what `ktriage bench --bundle` reads
    assert (bundle.op, bundle.mode, [c.id for c in bundle.input_cases()]) == ("layer_norm", "bwd", [cell["input_id"]])
    assert [t["spec"] for t in bundle.toolchains.values()] == ["triton==3.3.1", "triton==3.4.0"]
    assert all(hasattr(a, "cubin_path") for a in bundle.artifacts.values()), "every kernel compiled"
    script = (out / SCRIPT).read_text()
    assert f"bench --bundle {entry['dir']} --only torch_layer_norm,liger_layer_norm --precision" in script
    assert f"on the GPU host: bash {out / SCRIPT}" in captured.err.replace("\n", "")
    assert report["measured"]["commands"] == [f"bash {out / SCRIPT}"]
    # --measure on a machine without a GPU (CUDA_VISIBLE_DEVICES="": the same on the GPU host): refused with the way
    # out before the explain, bisect and bundle steps (minutes with a cold cache), no longer after them
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    code = main(["triage", str(RUN1), str(RUN2), *CROSS, "--limit", "1", "--measure", "--bundle", str(out)])
    err = " ".join(capsys.readouterr().err.split())
    # the command's words: its flags, not the keywords of kt.triage (bundle='DIR' (--bundle DIR))
    assert code == 2 and "error: --measure needs an NVIDIA GPU on this machine" in err, err
    assert "fix: on a CPU machine use --bundle DIR," in err and "bundle=" not in err and "measure=" not in err, err
    assert "reusing the bundle" not in err and "explain " not in err


def test_the_aa_pair_measured_side_by_side_is_noise(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    options = TriageOptions(old_toolchain="triton==3.4.0", new_toolchain="triton==3.4.0", op="layer_norm", mode="bwd")
    results = _fake_results(tmp_path / "r.json", options)
    out = tmp_path / "report.json"
    code = main(
        [
            "triage",
            str(RUN1),
            str(RUN2),
            *AA,
            "--measured",
            str(results),
            "-o",
            str(out),
            "-o",
            str(tmp_path / "r.md"),
            "-o",
            str(tmp_path / "r.html"),
        ]
    )
    capsys.readouterr()
    assert code == 0
    report = json.loads(out.read_text())
    assert report["cells"] and {c["verdict"] for c in report["cells"]} == {"noise"}
    liger = [c for c in report["cells"] if c["backend"] == "liger_layer_norm"]
    assert liger and all(c["measured"]["how"] == "side_by_side" and c["measured"]["verdict"] == "same" for c in liger)
    m = liger[0]["measured"]
    assert m["ci_low"] <= 1.0 <= m["ci_high"] and m["confidence"] == 0.99 and m["n_old"] == m["n_new"] == 60
    base = [c for c in report["cells"] if c["backend"] == "torch_layer_norm"]
    assert base and all(
        c["measured"]["how"] == "baseline" and "moved in the original files" in c["measured"]["text"] for c in base
    )
    assert report["measured"]["baseline"] and "one host copy for both toolchains" in report["measured"]["baseline"][0]
    assert " after the GPU re-run; " in report["headline"] and report["counts"]["noise"] == len(report["cells"])
    md = (tmp_path / "r.md").read_text()
    assert "measured side by side |" in md and "noise (same)" in md and "### The GPU re-run" in md
    assert "measured side by side" in (tmp_path / "r.html").read_text()


def test_a_measured_slowdown_is_a_regression_and_fails_ci(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    options = TriageOptions(old_toolchain="triton==3.4.0", new_toolchain="triton==3.4.0", op="layer_norm", mode="bwd")
    plan = plan_measurement(triage(RUN1, RUN2, options), options)
    slow = plan.groups[0].input_ids[-1]
    results = _fake_results(tmp_path / "r.json", options, slower={slow: 1.5})
    code = main(["triage", str(RUN1), str(RUN2), *AA, "--measured", str(results), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["exit_code"] == 1
    (reg,) = [c for c in report["cells"] if c["verdict"] == "measured_regression"]
    assert reg["input_id"] == slow and reg["measured"]["verdict"] == "regression"
    assert reg["measured"]["ratio"] == pytest.approx(1.5, rel=0.02) and reg["measured"]["ci_low"] > 1.4
    assert report["cells"][0] == reg  # the regressions come first


def test_a_compile_side_change_measured_as_no_difference_is_noise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """3.3.1 vs 3.4.0: the compile side finds changes at the flagged inputs (registers 200 -> 232 at
    N=2560..4096, opcodes below) that the cost model predicts neutral (docs/model.md: same occupancy,
    +4 main-loop instructions), so without a GPU they are no compile-side regression, and the slower
    cells say that no compile-side change predicts their slowdown; measured side by side with no
    difference they are noise, each noting that its change costs no measurable time, exit code 0."""
    options = TriageOptions(
        old_toolchain="triton==3.3.1",
        new_toolchain="triton==3.4.0",
        op="layer_norm",
        mode="bwd",
        bisect=False,
        fixes=False,
    )
    results = _fake_results(tmp_path / "r.json", options)
    assert main(["triage", str(RUN1), str(RUN2), *CROSS, "--format", "json"]) == 0  # without the GPU step
    report = json.loads(capsys.readouterr().out)
    assert report["counts"]["regression"] == 0
    changed = [c for c in report["cells"] if c["compile_change"]]
    assert changed and all(c["cause"] is None and c["predicted"]["kind"] == "neutral" for c in changed)
    # the compile-side changes are the cell's "changes" (the report says the sentence once), not among its notes
    assert any("registers 200 -> 232" in c["changes"] and "change predicted neutral" in c["changes"] for c in changed)
    slower = [c for c in changed if c["ratio"] > 1.1]
    assert slower and all(
        any("no compile-side change predicts the measured slowdown" in n for n in c["notes"]) for c in slower
    )
    code = main(["triage", str(RUN1), str(RUN2), *CROSS, "--measured", str(results), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["counts"]["regression"] == 0
    changed = [c for c in report["cells"] if c["compile_change"]]
    assert changed and all(
        c["verdict"] == "noise" and any("costs no measurable time" in n for n in c["notes"]) for c in changed
    )


def test_results_of_another_bundle_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    options = TriageOptions(old_toolchain="triton==3.4.0", new_toolchain="triton==3.4.0", op="layer_norm", mode="bwd")
    other = _fake_results(tmp_path / "other.json", options, token="0123456789")
    code = main(["triage", str(RUN1), str(RUN2), *AA, "--measured", str(other)])
    err = capsys.readouterr().err
    assert code == 2
    assert "measured bundle layer_norm-bwd-0123456789 (token 0123456789), not this triage's" in err
    assert "fix:" in err and "--bundle DIR" in err


def test_bad_gpu_step_options_are_refused_before_compiling(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["triage", str(RUN1), str(RUN2), *AA, "--measured", str(tmp_path / "missing.json")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert main(["triage", str(RUN1), str(RUN2), *AA, "--measure", "--measured", str(RUN1)]) == 2
    assert "not both" in capsys.readouterr().err
    plain = tmp_path / "plain.json"
    write_results(
        plain,
        RunInfo(command="FAKE"),
        [Cell(CellKey("layer_norm", "bwd", 0, "(4096, 1024)", "torch_layer_norm"), "ok", [0.1] * 20)],
    )
    assert main(["triage", str(RUN1), str(RUN2), *AA, "--measured", str(plain)]) == 2
    assert "not the results of a bundle" in capsys.readouterr().err
    real = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu" / "issue3" / "run2_layer_norm_aa" / "ln_bwd.json"
    assert (
        main(["triage", str(RUN1), str(RUN2), *AA, "--measured", str(real)]) == 2
    )  # a real H200 bench run, not of a triage
    assert "the results of bundle ln-bwd-all, which no triage wrote" in capsys.readouterr().err
    assert main(["triage", str(RUN1), str(RUN2), *AA, "--limit", "0"]) == 2
    assert "error: --limit 0 bundles no cell" in capsys.readouterr().err


def test_limit_without_a_gpu_step_or_workload_is_refused(run_cli: RunCli) -> None:
    """--limit caps the GPU re-run's cells and the recorded workloads' search; with neither it was
    dropped without a word (a full triage, exit 0)."""
    r = run_cli(["triage", str(RUN1), str(RUN2), *AA, "--limit", "3"])
    assert r.exit_code == 2
    assert "--limit 3 applies to the GPU re-run (--bundle, --measure, --measured)" in r.problem
    assert r.fix is not None and "add --bundle DIR" in r.fix and "drop --limit" in r.fix


def test_max_time_without_a_gpu_run_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    """--max-time caps the sampling of the GPU re-run (written into the bundle's bench commands, or
    given to the bench under --measure); without either it was dropped without a word (a full triage,
    exit 0), and with --measured the results were sampled already."""
    r = run_cli(["triage", str(RUN1), str(RUN2), *CROSS, "--max-time", "3"])
    assert r.exit_code == 2
    assert r.problem == (
        "--max-time 3 sets the sampling of the GPU re-run (--bundle, --measure); "
        "no GPU step is asked, so it would change nothing"
    )
    assert r.fix is not None and "drop --max-time; or add --bundle DIR" in r.fix
    r = run_cli(["triage", str(RUN1), str(RUN2), *CROSS, "--measured", str(RUN1), "--max-time", "3"])
    assert r.exit_code == 2 and "--measured reads results sampled on the GPU host already" in r.problem
    # given with the bundle it is the bench's: written into measure.sh
    out = tmp_path / "tri"
    args = [*AA, "--no-bisect", "--no-fixes", "--limit", "1", "--bundle", str(out), "--max-time", "3"]
    r = run_cli(["triage", str(RUN1), str(RUN2), *args])
    assert r.exit_code in (0, 1), r.err_text
    assert "--max-time 3 -o results/" in (out / SCRIPT).read_text()


def test_cells_without_a_replay_stay_unsure_with_the_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rms = [tmp_path / "rms_norm_bwd_run1.csv", tmp_path / "rms_norm_bwd_run2.csv"]
    for p, slow in zip(rms, (1.0, 1.5), strict=True):
        p.write_text("(M, H);llama_rms-latency;liger_rms-latency\n(2048, 1024);0.1;" + f"{0.2 * slow}\naverage;;\n")
    code = main(
        [
            "triage",
            str(rms[0]),
            str(rms[1]),
            "--old-toolchain",
            "triton==3.4.0",
            "--new-toolchain",
            "triton==3.4.0",
            "--bundle",
            str(tmp_path / "tri"),
            "--format",
            "json",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and not (tmp_path / "tri").exists()
    (cell,) = report["cells"]
    assert cell["backend"] == "liger_rms" and cell["verdict"] == "unsure_no_replay"
    assert cell["measured"]["verdict"] == "not_measured" and cell["measured"]["text"].startswith(
        "no replay for rms_norm"
    )
    assert "no flagged cell can be re-measured" in report["measured"]["note"]


def _flagged_cell_bundle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, TriageOptions]:
    """The GPU bundle `triage --bundle` writes for the one flagged layer_norm bwd cell (3.3.1 -> 3.4.0), and
    the options of a triage that reads the same pair without bisect or fixes (the fix tests add their own)."""
    out = tmp_path / "tri"
    assert main(["triage", str(RUN1), str(RUN2), *CROSS, "--limit", "1", "--bundle", str(out)]) in (0, 1)
    capsys.readouterr()
    options = TriageOptions(
        old_toolchain="triton==3.3.1",
        new_toolchain="triton==3.4.0",
        op="layer_norm",
        mode="bwd",
        bisect=False,
        fixes=False,
        limit=1,
    )
    (entry,) = json.loads((out / MANIFEST).read_text())["bundles"]
    return out / entry["dir"], options


@pytest.mark.gpu
def test_measure_end_to_end_on_one_layer_norm_cell(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On the GPU host: the A/A pair's worst layer_norm cell re-measured in-process. The bundle is
    built here when the toolchain is available, or given: KTRIAGE_TRIAGE_BUNDLE=DIR, a folder the
    CPU machine wrote with `ktriage triage RUN1 RUN2 <AA> --limit 1 --bundle DIR` (reused, no compile)."""
    import os
    import shutil

    out = tmp_path / "tri"
    given = os.environ.get("KTRIAGE_TRIAGE_BUNDLE")
    if given:
        shutil.copytree(given, out)
    code = main(
        [
            "triage",
            str(RUN1),
            str(RUN2),
            *AA,
            "--limit",
            "1",
            "--measure",
            "--bundle",
            str(out),
            "--max-time",
            "3",
            "--format",
            "json",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads(captured.out)
    assert report["measured"]["results"]
    (cell,) = [c for c in report["cells"] if c["measured"]["verdict"] != "not_measured"]
    assert cell["measured"]["n_old"] >= 20 and cell["measured"]["n_new"] >= 20
    assert cell["verdict"] == "noise", cell["measured"]  # two copies of the same kernels, timed side by side
    assert list((out / "results").glob("*.json"))


def test_a_verified_fix_is_bundled_as_a_variant_and_measured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fix step's GPU half: a verified config fix of a flagged cell becomes the bundle's
    ``<new>+fix`` variant (its kernel compiled with the fixed config), and read back it is compared
    with both toolchains: here a FAKE 1.5x regression that the fix brings back to the old time."""
    from ktriage.compile.compiler import Compiler
    from ktriage.explain.fixes import Fix
    from ktriage.toolchain.manager import ensure_toolchains
    from ktriage.triage.measure import _fix_variant
    from ktriage.triage.measure_plan import FIX_VARIANT

    path, options = _flagged_cell_bundle(tmp_path, capsys)
    report = triage(RUN1, RUN2, options)
    ((key, spec),) = load_bundle(path).specs.items()
    cell = next(c for c in report.cells if (c.op, c.mode, c.backend) == ("layer_norm", "bwd", "liger_layer_norm"))
    cell.fixes = [
        Fix(
            kind="spill-free-config",
            kernel=spec.name,
            toolchain="triton==3.4.0",
            description="num_warps 8",
            verified=True,
            effect="",
            change={"config": {"num_warps": 8, "num_stages": spec.num_stages, "constexprs": {}}},
        ),
        Fix(
            kind="relaxed-atomic",
            kernel=spec.name,
            toolchain="triton==3.4.0",
            description="a source rewrite",
            verified=True,
            effect="",
            change={"source": "..."},
        ),
    ]  # not a change a bundle carries: left out
    (tc,) = ensure_toolchains(["triton==3.4.0"])
    said: list[str] = []
    with Compiler(jobs=1) as compiler:
        _fix_variant(path, report, "layer_norm", "bwd", tc, compiler, said.append)
    bundle = load_bundle(path)
    fix_id = tc.id + FIX_VARIANT
    assert list(bundle.toolchains)[-1] == fix_id and "num_warps 8" in bundle.toolchains[fix_id]["variant"]
    manifest = json.loads((path / "manifest.json").read_text())
    fixed, library = manifest["artifacts"][key][fix_id], manifest["artifacts"][key][tc.id]
    assert fixed["status"] == "ok" and fixed["metadata"]["num_warps"] == 8 != library["metadata"]["num_warps"]
    assert fixed["cubin_sha256"] != library["cubin_sha256"]  # the fixed config's own kernel, not a copy
    assert any("+fix" in line for line in said)
    # read back: the fix variant measured against both toolchains
    results = _fake_results(
        tmp_path / "r.json",
        TriageOptions(
            old_toolchain="triton==3.3.1",
            new_toolchain="triton==3.4.0",
            op="layer_norm",
            mode="bwd",
            bisect=False,
            fixes=False,
        ),
        slower={i: 1.5 for i in range(40)},
        fix=1.0,
    )
    code = main(["triage", str(RUN1), str(RUN2), *CROSS, "--measured", str(results), "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    measured = [c["measured"] for c in data["cells"] if c["backend"] == "liger_layer_norm" and c["measured"].get("fix")]
    assert measured, "the fix variant is read back"
    fix = measured[0]["fix"]
    assert fix["description"] == "proposed fix: num_warps 8"
    assert fix["vs_old"]["verdict"] == "same" and fix["vs_old"]["ratio"] == pytest.approx(1.0, abs=0.03)
    assert fix["vs_new"]["verdict"] == "improvement" and fix["vs_new"]["ratio"] == pytest.approx(1 / 1.5, rel=0.03)
    # each side's change as compare writes it (fmt_pct), not a ratio ("vs the old toolchain 1.003x")
    assert (
        f"with proposed fix: num_warps 8: vs the old toolchain {fmt_pct(fix['vs_old']['ratio'])} (same), "
        f"vs the new toolchain {fmt_pct(fix['vs_new']['ratio'])} (improvement)"
    ) in measured[0]["text"]
    main(["triage", str(RUN1), str(RUN2), *CROSS, "--measured", str(results), "--format", "markdown"])
    assert "with proposed fix: num_warps 8: vs the old toolchain" in capsys.readouterr().out  # the measured column


def test_a_relaxed_atomic_fix_is_bundled_from_its_rewritten_source() -> None:
    """The embedding case's fix is a source rewrite (``sem="relaxed"`` on the unused-result
    ``tl.atomic_add``): the bundle carries the rewritten copy's kernel, so the GPU host times it
    without the source. Real: Liger 0.5.10's embedding backward, compiled with the test home's
    Triton 3.4.0 and its own ptxas (12.8.93, which lowers the strong atomic to ATOMG)."""
    from ktriage.catalog.registry import expand_op
    from ktriage.compile.compiler import Artifact, Compiler
    from ktriage.explain.fixes import RELAXED_ARGUMENT
    from ktriage.toolchain.manager import ensure_toolchains
    from ktriage.triage.measure import fixed_spec

    (spec,) = expand_op("liger.embedding", mode="bwd", target="sm_90", inputs=["0"])
    relaxed = fixed_spec(
        spec,
        {
            "source": "embedding.py",
            "function": "embedding_backward_kernel",
            "lines": [69],
            "argument": RELAXED_ARGUMENT,
        },
    )
    assert relaxed is not None and relaxed.source != spec.source and "[relaxed]" in relaxed.name
    assert fixed_spec(spec, {"ptxas_options": ["--register-usage-level=0"]}) is None  # not a change a bundle carries
    (tc,) = ensure_toolchains(["triton==3.4.0"])
    with Compiler(jobs=1) as compiler:
        before, after = compiler.compile_many([spec, relaxed], [tc])
    assert isinstance(before, Artifact) and isinstance(after, Artifact)
    assert after.cubin != before.cubin  # its own kernel: the rewritten atomic, not a copy


def test_measured_that_is_no_results_file_is_refused_with_nothing_flagged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only the path of --measured was checked up front and its files were read for flagged cells only: an
    A/A pair with none past the gate (--threshold 20), given an explain report (or an empty file) as --measured, said "no
    flagged cell: nothing to re-measure", exit 0, the wrong file never named. Each file is read first now."""
    aa = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu" / "issue3" / "run2_layer_norm_aa"
    report = tmp_path / "explain.json"
    report.write_text(json.dumps({"tool": "ktriage explain", "findings": []}))
    empty = tmp_path / "empty.json"
    empty.write_text("")
    # (an empty file is named as one since the seventeenth session: "results file F is empty")
    for given, said in ((report, f"{report} is not a ktriage results file"), (empty, f"results file {empty} is empty")):
        argv = ["triage", str(aa / "aa_1.json"), str(aa / "aa_2.json"), "--threshold", "20"]
        code = main([*argv, "--measured", str(given)])
        err = " ".join(capsys.readouterr().err.split())
        assert code == 2 and f"error: {said}" in err and "fix:" in err, err


def test_the_fix_variant_times_a_predicted_slower_fix_only_when_no_recommended_one_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fix the cost model predicts slower (``recommended`` False) was bundled like any verified fix and
    read back as "the proposed fix". Beside a recommended fix of the same kernel it is not timed; alone it
    is, and the cell's notes and the variant's label (which the measured column quotes) say why."""
    from ktriage.compile.compiler import Compiler
    from ktriage.explain.fixes import Fix, FixPrediction
    from ktriage.predict.model import Prediction
    from ktriage.toolchain.manager import ensure_toolchains
    from ktriage.triage.measure import _fix_variant
    from ktriage.triage.measure_plan import FIX_VARIANT, SLOWER_LABEL, SLOWER_TIMED

    path, options = _flagged_cell_bundle(tmp_path, capsys)
    ((_key, spec),) = load_bundle(path).specs.items()
    slower = Prediction(2.11, 2.04, 2.18, "regression", False, 0.1)
    config = {"num_stages": spec.num_stages, "constexprs": {}}

    def fix(warps: int, prediction: FixPrediction | None) -> Fix:
        return Fix(
            kind="spill-free-config",
            kernel=spec.name,
            toolchain="triton==3.4.0",
            description=f"num_warps {warps}",
            verified=True,
            effect="",
            change={"config": {"num_warps": warps, **config}},
            prediction=prediction,
        )

    predicted_slower = fix(2, FixPrediction(slower, slower, "predicted slower: +111 %; not recommended"))
    (tc,) = ensure_toolchains(["triton==3.4.0"])
    labels = []
    for fixes in ([predicted_slower, fix(8, None)], [predicted_slower]):
        report = triage(RUN1, RUN2, options)
        cell = next(c for c in report.cells if (c.op, c.mode, c.backend) == ("layer_norm", "bwd", "liger_layer_norm"))
        cell.fixes = fixes
        copy = tmp_path / f"b{len(fixes)}"
        shutil.copytree(path, copy)
        with Compiler(jobs=1) as compiler:
            _fix_variant(copy, report, "layer_norm", "bwd", tc, compiler, lambda _m: None)
        labels.append((load_bundle(copy).toolchains[tc.id + FIX_VARIANT]["variant"], cell.notes))
    (beside, beside_notes), (alone, alone_notes) = labels
    assert "num_warps 8" in beside and "num_warps 2" not in beside and not any(SLOWER_TIMED in n for n in beside_notes)
    assert f"num_warps 2{SLOWER_LABEL}" in alone
    assert f"{SLOWER_TIMED} (num_warps 2)" in alone_notes


def test_measured_of_no_triage_bundle_is_refused_before_the_explain_step_compiles() -> None:
    """Two toolchains (3.3.1 -> 3.4.0) flag liger_layer_norm cells that the explain step compiles with both;
    a --measured file that no triage's bundle wrote (a real H200 bench run, or a TritonBench CSV) was refused
    only after that compile ("explain liger.layer_norm bwd inputs [...]" said first): minutes of compiling
    for an error the file alone gives. It is refused now before anything is compiled."""
    real = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu" / "issue3" / "run2_layer_norm_aa" / "ln_bwd.json"
    options = TriageOptions(
        old_toolchain="triton==3.3.1", new_toolchain="triton==3.4.0", op="layer_norm", mode="bwd", bisect=False
    )
    for given, said in (
        (real, "the results of bundle ln-bwd-all, which no triage wrote"),
        (RUN2, "not the results of a bundle"),
    ):
        steps: list[str] = []
        with pytest.raises(KtriageError, match=said):
            triage(RUN1, RUN2, replace(options, measured=[str(given)]), say=steps.append)
        assert steps == []  # no explain, no bundle: nothing ran
    # the same triage without --measured does compile its flagged cells: the check above is not vacuous
    steps = []
    triage(RUN1, RUN2, options, say=steps.append)
    assert any(s.startswith("explain liger.layer_norm bwd") for s in steps), steps
