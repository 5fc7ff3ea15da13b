"""`ktriage profile` where a toolchain cannot run the input (found on the H200, 2026-12-04: vLLM's
``kernel_unified_attention`` does not compile with Triton 3.3.1, which has no ``make_tensor_descriptor``).
It used to start ncu three times for that toolchain and report ncu's first note, "==WARNING== Note:
Running with unmodified GPU clocks", as the reason. Now the bundle's own record of the failure is the
reason and ncu is not started; a program that fails under ncu anyway is reported by its own error,
without the retries meant for sections ncu rejects."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))

from test_profile import fake_ncu

from ktriage.profile.run import _one_line, profile_toolchain
from ktriage.profile.target import TARGET_ERROR

ROOT = Path(__file__).resolve().parents[2]
NCU_LOG = ROOT / "tests" / "data" / "profile" / "ncu_target_compile_failure.log"  # the H200's ncu log, verbatim
SERVING = ROOT / "benchmarks" / "corpus" / "h200" / "workloads" / "serving_kernels_rerecorded.workload.json.gz"


def test_the_reason_in_a_real_ncu_log_is_the_programs_error_not_a_warning() -> None:
    reason = _one_line(NCU_LOG.read_text())
    assert "did not compile with triton-3.3.1" in reason and "make_tensor_descriptor" in reason
    assert "WARNING" not in reason and "unmodified GPU clocks" not in reason


def test_the_programs_own_error_stops_the_retries(tmp_path: Path) -> None:
    """A stand-in ncu (a shell script, named as such) whose profiled program reports a ktriage error."""
    script = tmp_path / "ncu"
    script.write_text(f"""#!/bin/bash
echo "$@" >> {tmp_path}/calls
echo "==WARNING== Note: Running with unmodified GPU clocks."
echo "{TARGET_ERROR}kernel abc did not compile with triton-3.3.1: no attribute 'make_tensor_descriptor'"
echo "==ERROR== The application returned an error code (3)."
exit 1
""")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    result = profile_toolchain(str(script), Path("bundle"), "triton-3.3.1", 7, "K4:k", tmp_path)
    assert result.error == (
        "the profiled program failed: kernel abc did not compile with triton-3.3.1: no attribute 'make_tensor_descriptor'"
    )
    assert len((tmp_path / "calls").read_text().splitlines()) == 1  # no retry with fewer sections


def test_a_toolchain_the_bundle_could_not_compile_is_not_run(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bundle = tmp_path / "serving"
    res = run_cli(
        ["bench", str(SERVING), "-t", "triton==3.3.1", "-t", "triton==3.4.0", "--kernel", "K4"]
        + ["--compile-only", "--bundle", str(bundle)]
    )
    assert res.exit_code == 0, res.stderr
    ncu = fake_ncu(tmp_path)
    calls = tmp_path / "calls"
    Path(ncu).write_text(Path(ncu).read_text().replace("#!/bin/bash\n", f'#!/bin/bash\necho "$@" >> {calls}\n', 1))
    res = run_cli(["profile", "--bundle", str(bundle), "--ncu", ncu, "-f", "json"])
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    old = next(tc for tc in doc["toolchains"] if tc.startswith("triton-3.3.1"))
    new = next(tc for tc in doc["toolchains"] if tc.startswith("triton-3.4.0"))
    error = doc["toolchains"][old]["error"]
    assert error.startswith("not run: triton==3.3.1 could not compile kernel_unified_attention") and (
        "make_tensor_descriptor" in error
    )
    assert doc["toolchains"][new]["launches"]  # the other toolchain is profiled
    profiled = [ln for ln in calls.read_text().splitlines() if not ln.startswith(("--version", "--import"))]
    assert profiled and not any("triton-3.3.1" in ln for ln in profiled)  # ncu never started for 3.3.1


def test_no_ncu_on_a_machine_without_a_gpu_says_to_profile_on_the_gpu_machine(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`ktriage profile` on the machine a bundle was compiled on said only "ncu (Nsight Compute) is not on
    PATH": installing ncu there would not help. The CUDA driver is asked for real (CUDA_VISIBLE_DEVICES=""
    hides any GPU, so the answer is the same on the GPU host)."""
    from ktriage.profile.run import _no_ncu_reason

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    reason = _no_ncu_reason()
    assert reason.startswith("ncu (Nsight Compute) is not on PATH: nothing profiled; this machine cannot run kernels")
    assert reason.endswith("profile the bundle on the GPU machine")
