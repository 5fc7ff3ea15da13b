"""What a kernel engineer without a GPU hits when triaging TritonBench output after a Triton upgrade, on the
real H200 A/A layer_norm bwd pair (tests/data/tritonbench, = shared/data/tritonbench_outputs): a copy
re-saved with commas, and where the report sends them for the GPU re-run."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from tests.conftest import RunCli

DATA = Path(__file__).resolve().parents[1] / "data" / "tritonbench"
RUN1, RUN2 = DATA / "layer_norm_bwd_run1.csv", DATA / "layer_norm_bwd_run2.csv"


def test_a_tritonbench_csv_resaved_with_commas_is_named_and_the_fix_works(tmp_path: Path, run_cli: RunCli) -> None:
    """TritonBench writes ';'; the same file re-saved with ',' (pandas' and spreadsheets' default) is refused
    as ktriage bench's median table. The message said only "ktriage bench -o F.csv writes one" and "compare the
    results files": a TritonBench user had none. It says now that TritonBench's own copy re-saved looks so,
    and the fix it gives (';' between columns again) reads."""
    rows = list(csv.reader(RUN2.read_text().splitlines(), delimiter=";"))
    comma = tmp_path / "layer_norm_bwd_run2.csv"
    with comma.open("w", newline="") as f:
        csv.writer(f).writerows(rows)
    r = run_cli(["triage", str(RUN1), str(comma)])
    out = " ".join(r.output.split())
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert "is a comma-separated results table" in out and "re-saved by pandas or a spreadsheet" in out, out
    assert "save the copy with ';' between columns" in out, out
    semi = tmp_path / "semi" / "layer_norm_bwd_run2.csv"
    semi.parent.mkdir()
    with semi.open("w", newline="") as f:
        csv.writer(f, delimiter=";").writerows(rows)
    r = run_cli(["triage", str(RUN1), str(semi), "--format", "json"])
    assert r.exit_code == 4, r.output  # read: toolchains unknown (no --old/--new-toolchain), nothing failed to read
    assert "12 cells of 60 past the ±10% gate" in json.loads(r.stdout)["headline"]


CROSS = ["--old-toolchain", "triton==3.3.1", "--new-toolchain", "triton==3.4.0", "--no-bisect", "--no-fixes"]


def test_needs_a_gpu_names_the_triages_own_gpu_step(tmp_path: Path, run_cli: RunCli) -> None:
    """12 cells of the pair stay unsure without a GPU. The report's next step said "a side-by-side re-run
    (`ktriage bench` with both toolchains in one GPU process)": a bench by hand, with no word of --bundle,
    which plans those cells and whose results --measured turns into these verdicts. It names the triage's
    step now; with --bundle given, the line after it gives the bundle's own command, so it does not repeat."""
    md = tmp_path / "r.md"
    r = run_cli(["triage", str(RUN1), str(RUN2), *CROSS, "-o", str(md)])
    assert r.exit_code == 0, r.output
    needs = md.read_text().split("### What this triage could not decide without a GPU")[1]
    first = needs.strip().splitlines()[0]
    assert first.startswith("- TritonBench files give one number per cell"), needs
    assert "ktriage bench" not in first and "--bundle DIR" in first and "--measured DIR" in first, first
    assert "or with --measure on a GPU host" in first and "measure=" not in first, first
    bundle = tmp_path / "tri"
    r = run_cli(["triage", str(RUN1), str(RUN2), *CROSS, "--bundle", str(bundle), "-o", str(md)])
    assert r.exit_code == 0, r.output
    needs = md.read_text().split("### What this triage could not decide without a GPU")[1]
    assert "--bundle DIR" not in needs and f"`bash {bundle / 'measure.sh'}`" in needs, needs
