"""A user without a GPU on the committed recordings (benchmarks/corpus/h200/workloads): what goes wrong
offline says what is wrong and the way out in one error (exit 2, no traceback), and loses nothing.

- a workload cut short or corrupted in a copy is named so, with "copy it again" as the fix (the shared
  reader said "check the path" of a results file);
- a kernel whose function the snapshot lacks no longer refuses the whole workload: its inputs are failed
  compiles, the others are explained (real Triton 3.4.0);
- a near-miss ``--kernel``/``--input`` names the near one;
- ``--compile-only --bundle DIR`` refuses DIR when it holds another workload's bundle (that one was
  replaced without a word), and rebuilds its own;
- a recorded bundle is refused for another ``--arch`` before any GPU work, and a GPU that cannot load its
  cubins is named (the capability rule is pure logic: checked here with real GPUs' numbers).

The workloads are the real recordings, damaged or edited here as a copy or a hand edit would."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from ktriage.arch import cubin_runs_on
from ktriage.bench.worker import other_gpu_refusal
from ktriage.record.snapshot import snapshot_digest
from ktriage.record.workload import load_workload
from ktriage.schema.core import read_text_gz
from ktriage.workload.bundles.format import BundleArtifact
from ktriage.workload.recorded.bundle import load_recorded_bundle
from tests.conftest import RunCli

CORPUS = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "h200"
DYT = CORPUS / "workloads" / "liger_dyt.workload.json.gz"  # 4 kernels: _dyt_fwd_kernel K0, K2; _dyt_bwd_kernel K1, K3
SOFTMAX = CORPUS / "workloads" / "liger_softmax.workload.json.gz"
RESULTS = CORPUS / "profile" / "tb_cross_entropy_bwd.json.gz"  # a gzipped results file


def _refused(result: Any) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.err_text and result.err_text.count("error: ") == 1, result.err_text


# ------------------------------------------------------------------------------- damaged in a copy
def test_a_workload_cut_short_in_a_copy_says_so_and_to_copy_it_again(tmp_path: Path, run_cli: RunCli) -> None:
    data = DYT.read_bytes()
    cut = tmp_path / "liger_dyt.workload.json.gz"
    cut.write_bytes(data[: len(data) // 2])
    for argv in (["workload", "show", str(cut)], ["explain", str(cut), "-t", "triton==3.4.0"]):
        result = run_cli(argv)
        _refused(result)
        assert result.problem.startswith(f"workload file {cut} is damaged: its gzip data is cut short"), result.problem
        assert (result.fix or "").startswith("copy it again from the machine that wrote it"), result.fix
        assert "or record it again" in (result.fix or "")  # the workload's own way out follows


def test_a_corrupt_workload_is_named_corrupt(tmp_path: Path, run_cli: RunCli) -> None:
    data = bytearray(DYT.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one byte changed in transfer
    bad = tmp_path / "liger_dyt.workload.json.gz"
    bad.write_bytes(bytes(data))
    result = run_cli(["workload", "show", str(bad)])
    _refused(result)
    assert "its gzip data is corrupt" in result.problem and "sha256sum" in (result.fix or "")


def test_the_shared_reader_no_longer_says_check_the_path_of_a_cut_file(tmp_path: Path) -> None:
    """Results files (compare, runs import) go through the same reader with its default fix."""
    cut = tmp_path / "run.json.gz"
    cut.write_bytes(RESULTS.read_bytes()[:-40])
    with pytest.raises(Exception) as caught:
        read_text_gz(cut, what="results file", limit=1 << 30)
    assert "cut short" in str(getattr(caught.value, "problem", ""))
    assert getattr(caught.value, "fix", "") == (
        "copy it again from the machine that wrote it (the original is larger: compare the two sizes)"
    )


# ------------------------------------------------------------------ a kernel whose source is gone
def _edited(tmp_path: Path, edit: Any) -> Path:
    """The dyt workload with its snapshot's files edited by ``edit(files)``, re-hashed as a recorder
    would have hashed them (a snapshot whose digest does not match is refused as edited, rightly)."""
    doc = json.loads(gzip.decompress(DYT.read_bytes()))
    (old,) = doc["snapshots"]
    snap = doc["snapshots"].pop(old)
    edit(snap["files"])
    new = snapshot_digest(snap["files"])
    doc["snapshots"][new] = snap
    for kernel in doc["kernels"]:
        kernel["snapshot"] = new
        for inp in kernel["inputs"]:
            inp["spec"]["package"] = f"snapshot:{new}"
    path = tmp_path / "liger_dyt.workload.json"
    path.write_text(json.dumps(doc))
    return path


def _rename_fwd(files: dict[str, str]) -> None:
    files["liger_kernel/ops/dyt.py"] = files["liger_kernel/ops/dyt.py"].replace(
        "def _dyt_fwd_kernel(", "def _dyt_fwd_kernel_v2("
    )


def test_a_kernel_missing_from_its_snapshot_loses_only_its_own_inputs(
    toolchain: Any, tmp_path: Path, run_cli: RunCli
) -> None:
    toolchain("triton==3.4.0")
    path = _edited(tmp_path, _rename_fwd)
    workload = load_workload(path)  # was: "workload file ... is damaged: ... defines no function", all refused
    notes = {k.id: k.notes for k in workload.kernels}
    assert any("its source does not load from the snapshot" in n and "_dyt_fwd_kernel" in n for n in notes["K0"])
    assert notes["K1"] == [] and len(workload.kernels) == 4
    shown = run_cli(["workload", "show", str(path)])
    assert shown.exit_code == 0 and "note K0: its source does not load" in shown.output, shown.output
    result = run_cli(["explain", str(path), "-t", "triton==3.4.0", "-i", "K0", "-i", "K1", "-f", "json"])
    assert result.exit_code == 4, result.output  # incomplete: K0 failed, K1 explained
    assert "Traceback" not in result.err_text
    kernels = {k["name"].split("[")[0]: k for k in json.loads(result.stdout)["kernels"]}
    k0, k1 = kernels["_dyt_fwd_kernel.K0"], kernels["_dyt_bwd_kernel.K1"]
    assert k1["failures"] == [] and next(iter(k1["results"].values()))["registers"] > 0
    assert "defines no '_dyt_fwd_kernel'" in k0["failures"][0]["message"], k0["failures"]


# ------------------------------------------------------------------------------------ did you mean
def test_a_near_miss_kernel_or_input_names_the_near_one(tmp_path: Path, run_cli: RunCli) -> None:
    cases = [
        (
            ["--kernel", "_dyt_bwd_kernal"],
            "the workload has no kernel '_dyt_bwd_kernal' (did you mean '_dyt_bwd_kernel'?)",
        ),
        (["--input", "DY=4096x4069"], "(did you mean 'DY=4096x4096'?)"),
        (["--kernel", "K9"], "the workload has no kernel 'K9'"),  # nothing near: no guess
    ]
    for more, expected in cases:
        result = run_cli(
            ["bench", str(DYT), "-t", "triton==3.4.0", "--compile-only", "--bundle", str(tmp_path / "b"), *more]
        )
        _refused(result)
        assert expected in result.problem, result.problem
        assert ("did you mean" in result.problem) == ("did you mean" in expected)
        assert not (tmp_path / "b").exists()  # refused before any compile
    explained = run_cli(["explain", str(DYT), "-t", "triton==3.4.0", "-i", "_dyt_fwd_kernal"])
    _refused(explained)
    assert explained.problem.endswith("'_dyt_fwd_kernal' (did you mean '_dyt_fwd_kernel'?)"), explained.problem


# ------------------------------------------------------------------------ bundles: folder and arch
def test_a_bundle_folder_of_another_workload_is_kept_and_its_own_is_rebuilt(
    toolchain: Any, tmp_path: Path, run_cli: RunCli
) -> None:
    toolchain("triton==3.4.0")
    folder = tmp_path / "bundle"
    built = run_cli(
        ["bench", str(DYT), "-t", "triton==3.4.0", "--compile-only", "--bundle", str(folder), "--kernel", "K1"]
    )
    assert built.exit_code == 0, built.output
    before = (folder / "manifest.json").read_bytes()
    other = run_cli(["bench", str(SOFTMAX), "-t", "triton==3.4.0", "--compile-only", "--bundle", str(folder)])
    _refused(other)
    assert other.problem.endswith(
        "holds the bundle of liger_dyt (recorded), which the bundle of liger_softmax (recorded) would replace"
    )
    assert f"--bundle {folder}-bundle" in (other.fix or "") and f"remove {folder} first" in (other.fix or "")
    assert (folder / "manifest.json").read_bytes() == before  # nothing lost
    again = run_cli(
        ["bench", str(DYT), "-t", "triton==3.4.0", "--compile-only", "--bundle", str(folder), "--kernel", "K3"]
    )
    assert again.exit_code == 0, again.output  # its own bundle is rebuilt in place, as before
    recorded = load_recorded_bundle(folder)
    assert [e.kernel for e in recorded.entries] == ["K3"]
    assert recorded.workload_path() == str(DYT)  # the GPU host's offline fix names this file, not liger_dyt.json

    measured = run_cli(["bench", "--bundle", str(folder), "--arch", "sm_80"])  # before the no-GPU refusal
    _refused(measured)
    assert measured.problem == f"bundle {folder} holds cubins compiled for sm_90, not --arch sm_80"
    assert "measure it on an sm_90 GPU" in (measured.fix or "")


def test_rebuilding_a_bundle_in_its_folder_removes_the_cubins_it_no_longer_uses(
    toolchain: Any, tmp_path: Path, run_cli: RunCli
) -> None:
    """Rebuilding a bundle in its own folder (other kernels or toolchains the second time) left the old,
    unreferenced cubins in DIR/cubins, and the copy to the GPU host carried them. They are removed now,
    and the count is said; a file in cubins/ that is no builder's cubin stays."""
    toolchain("triton==3.4.0")
    folder = tmp_path / "bundle"
    build = ["bench", str(DYT), "-t", "triton==3.4.0", "--compile-only", "--bundle", str(folder)]
    first = run_cli([*build, "--kernel", "K1"])
    assert first.exit_code == 0, first.output
    assert "removed" not in first.output  # a new folder: nothing to remove
    old = {p.name for p in (folder / "cubins").iterdir()}
    assert old
    (folder / "cubins" / "notes.txt").write_text("the user's own")
    again = run_cli([*build, "--kernel", "K3"])
    assert again.exit_code == 0, again.output
    recorded = load_recorded_bundle(folder)  # loads: every cubin it references is there
    used = {a.cubin_path.name for a in recorded.bundle.artifacts.values() if isinstance(a, BundleArtifact)}
    left = {p.name for p in (folder / "cubins").iterdir()}
    assert left == used | {"notes.txt"}, sorted(left - used)
    gone = old - used
    assert gone  # K1's kernel is not K3's
    said = " ".join(again.output.split())
    assert f"removed {len(gone)} cubin{'s' if len(gone) != 1 else ''} of the bundle built there before" in said, said


def test_which_gpu_loads_a_triton_cubin() -> None:
    """Triton assembles sm_90 and later for the arch-specific target (sm_90a): that GPU only; before
    sm_90, a cubin runs on its major at an equal or later minor (an A100's on an A10 or an L4)."""
    assert cubin_runs_on("sm_90", 9, 0) and not cubin_runs_on("sm_90", 8, 0) and not cubin_runs_on("sm_90", 10, 0)
    assert cubin_runs_on("sm_80", 8, 6) and cubin_runs_on("sm_80", 8, 9) and not cubin_runs_on("sm_86", 8, 0)
    assert not cubin_runs_on("sm_80", 9, 0) and not cubin_runs_on("sm_100", 12, 0)
    refusal = other_gpu_refusal("sm_90", (8, 0), "NVIDIA A100-SXM4-80GB", "B", "build it there")
    assert refusal is not None and refusal.problem == (
        "bundle B holds cubins compiled for sm_90, and this GPU (NVIDIA A100-SXM4-80GB, sm_80) cannot load them"
    )
    assert refusal.fix == "measure it on an sm_90 GPU (copy B there), or build it there"
    assert other_gpu_refusal("sm_90", (9, 0), "NVIDIA H200", "B", "") is None
    assert (
        other_gpu_refusal("sm_80,sm_90", (9, 0), "NVIDIA H200", "B", "") is None
    )  # some of it runs: its cells say the rest
