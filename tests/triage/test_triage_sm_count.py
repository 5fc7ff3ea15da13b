"""``triage`` takes the GPU's SM count (``sm_count`` / ``--sm-count``), as explain and bench do: the
flagged cells' compile-side predictions are priced for it, the GPU re-run's bundle is built for it,
and every form of the report says the count and why (given, the results' GPU, the target's usual
part). Real compiles with the test home's Triton 3.3.1/3.4.0 (constructed TritonBench CSVs of Liger
layer_norm bwd, and the repository's real ones); no fake of what is tested."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from ktriage import api as kt
from ktriage.cli.app import main
from ktriage.errors import KtriageError
from ktriage.measure.cells import RunInfo
from ktriage.triage.measure import MANIFEST
from ktriage.triage.pricing import choose
from ktriage.workload.bundles.format import load_bundle

DATA = Path(__file__).resolve().parents[1] / "data" / "tritonbench"
RUN1, RUN2 = DATA / "layer_norm_bwd_run1.csv", DATA / "layer_norm_bwd_run2.csv"
CROSS = ["--old-toolchain", "triton==3.3.1", "--new-toolchain", "triton==3.4.0", "--op", "layer_norm", "--mode", "bwd"]


def _csvs(d: Path) -> tuple[Path, Path]:
    """TritonBench CSVs of Liger layer_norm bwd where N=4608 (its kernel spills with 3.4.0) got 2.5x slower."""
    out = []
    for name, new in (("layer_norm_bwd_331.csv", False), ("layer_norm_bwd_340.csv", True)):
        lines = ["x_val;torch_layer_norm-latency;liger_layer_norm-latency"]
        for n in range(1024, 15872 + 1, 512):
            lines.append(f"{n};{0.1 + n / 50000};{(0.2 + n / 20000) * (2.5 if new and n == 4608 else 1.0)}")
        (d / name).write_text("\n".join([*lines, "average;;"]) + "\n")
        out.append(d / name)
    return out[0], out[1]


def _terminal(report: kt.TriageReport) -> str:
    console = Console(width=400, record=True, file=io.StringIO())
    report.print_table(console)
    return console.export_text()


@pytest.mark.slow
def test_sm_count_prices_the_flagged_cells_and_every_form_says_it(tmp_path: Path) -> None:
    """66 SMs (a MIG-sized GPU) against sm_90's 132: the spilling N=4608 cell's 16 CTAs/SM fill other
    waves, so its predicted slowdown differs; the report says the count and that it was given."""
    old, new = _csvs(tmp_path)
    common = dict(old=old, new=new, old_toolchain="triton==3.3.1", new_toolchain="triton==3.4.0", bisect=False)
    usual = kt.triage(**common, fixes=False)  # type: ignore[arg-type]
    small = kt.triage(**common, fixes=False, sm_count=66)  # type: ignore[arg-type]

    def predicted(report: kt.TriageReport) -> float:
        (cell,) = [c for c in report.cells if c.input_label.endswith("4608)")]
        assert cell.predicted is not None and cell.predicted.kind == "regression"
        return cell.predicted.ratio

    assert predicted(small) != pytest.approx(predicted(usual), rel=1e-4)
    doc, base = small.to_json(), usual.to_json()
    assert doc["sm_count"] == 66 and doc["options"]["sm_count"] == 66
    assert doc["pricing"]["source"] == "given" and doc["pricing"]["priced"] == [66]  # the kernels explain priced
    assert base["sm_count"] == 132 and base["pricing"]["source"] == "default" and base["options"]["sm_count"] is None
    said = "priced for 66 SMs, as given by --sm-count 66"  # what the command prints and writes: its flag
    assert said in small.to_markdown() and said in _terminal(small) and said in small.to_html()
    assert small.pricing is not None and "as given by sm_count=66 (--sm-count 66)" in small.pricing.text
    assert "priced for 132 SMs, sm_90's usual part, as the results do not say their GPU's SM count" in _terminal(usual)


def test_a_bad_sm_count_is_refused_as_explain_refuses_it() -> None:
    for bad in (0, -4, "66", True):
        with pytest.raises(KtriageError) as triaged:
            kt.triage(old=RUN1, new=RUN2, sm_count=bad)  # type: ignore[arg-type]
        with pytest.raises(KtriageError) as explained:
            kt.explain(target="layer_norm", toolchains=["triton==3.4.0"], sm_count=bad)  # type: ignore[arg-type]
        assert (triaged.value.problem, triaged.value.fix) == (explained.value.problem, explained.value.fix)
        assert "sm_count" in triaged.value.problem
        with pytest.raises(KtriageError) as ran:
            kt.triage_run(command="true", old_toolchain="a", new_toolchain="b", sm_count=bad)  # type: ignore[arg-type]
        assert ran.value.problem == explained.value.problem


def test_the_bundle_of_the_gpu_step_is_built_for_the_sm_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--sm-count 114 (an H100 PCIe): the Liger backward's grid is the SM count, so the bundle's kernels
    launch 114 programs and the bench on that GPU does not refuse it ("rebuild with --sm-count")."""
    out = tmp_path / "tri"
    argv = ["triage", str(RUN1), str(RUN2), *CROSS, "--no-bisect", "--no-fixes", "--limit", "1", "--bundle", str(out)]
    code = main([*argv, "--sm-count", "114", "--format", "json"])
    captured = capsys.readouterr()
    assert code in (0, 1), captured.err
    report = json.loads(captured.out)
    assert report["sm_count"] == 114 and report["pricing"]["source"] == "given"
    (entry,) = json.loads((out / MANIFEST).read_text())["bundles"]
    bundle = load_bundle(out / entry["dir"])
    assert bundle.sm_count == 114
    assert {s.grid for s in bundle.specs.values() if "bwd" in s.name and s.grid and s.grid[0] == 114}


def test_the_results_gpu_is_priced_for_unless_sm_count_is_given() -> None:
    """A ktriage results file keeps its GPU's SMs (``run.gpu.sm_count``): triage prices for it, says it
    was recorded there; an explicit count overrides it and the report says both."""
    pcie, sxm, csv = RunInfo(gpu={"sm_count": 114}), RunInfo(gpu={"sm_count": 132}), RunInfo()
    recorded = choose(None, "sm_90", pcie, pcie)
    recorded.explained([], "sm_90")
    assert (recorded.sm_count, recorded.source, recorded.override) == (114, "results", 114)
    assert recorded.text == "priced for 114 SMs, the GPU the results were recorded on (114)"
    given = choose(66, "sm_90", pcie, pcie)
    given.explained([], "sm_90")
    assert given.sm_count == 66 and given.text.endswith("(--sm-count 66); the results were recorded on 114")
    mixed = choose(None, "sm_90", sxm, pcie)
    mixed.explained([], "sm_90")
    assert mixed.sm_count == 114 and "the new side's GPU (the old side was recorded on 132)" in mixed.text
    usual = choose(None, "sm_100", csv, csv)
    assert (usual.source, usual.override) == ("default", None)
