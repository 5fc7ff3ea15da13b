"""ktriage.profile.run against a stand-in ncu (a shell script): the command line it builds, the
retry without explicit metrics, the one-line permission message, and the CSV export it parses
(the committed real H200 export). No GPU, no ncu."""

from __future__ import annotations

import stat
from pathlib import Path

from ktriage.profile.run import profile_toolchain

H200 = Path(__file__).resolve().parents[2] / "benchmarks" / "profile" / "h200" / "layer_norm_bwd_N4608"
TC = "triton-3.4.0.ptxas-12.8.93.da4345e0"


def fake_ncu(tmp_path: Path, *, profile_part: str) -> str:
    script = tmp_path / "ncu"
    script.write_text(f"""#!/bin/bash
echo "$@" >> {tmp_path}/calls
if [ "$1" = "--import" ]; then cat "{H200}/{TC}.raw.csv"; exit 0; fi
{profile_part}
for ((i=1;i<=$#;i++)); do if [ "${{!i}}" = "-o" ]; then j=$((i+1)); touch "${{!j}}"; fi; done
echo "==PROF== Disconnected"
""")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_profiles_and_parses(tmp_path: Path) -> None:
    ncu = fake_ncu(tmp_path, profile_part="")
    out = tmp_path / "out"
    out.mkdir()
    result = profile_toolchain(ncu, Path("bundle"), TC, 7, "liger_layer_norm", out)
    assert result.error is None and [x.kernel_name for x in result.launches] == ["_layer_norm_backward_kernel"]
    assert result.launches[0].number("launch__registers_per_thread") == 32.0
    first = (tmp_path / "calls").read_text().splitlines()[0].split()
    assert first[:6] == ["--clock-control", "none", "--profile-from-start", "off", "--target-processes", "all"]
    assert (
        "--metrics" in first
        and "ktriage.profile.target" in first
        and first[-5:-1] == ["bundle", TC, "7", "liger_layer_norm"]
    )
    assert set(result.files) == {"log", "report", "raw_csv", "details_csv", "source_csv"}
    # the SourceCounters per SASS instruction, for the per-line stalls (profile/source.py)
    last = (tmp_path / "calls").read_text().splitlines()[-1].split()
    assert last[0] == "--import" and last[-4:] == ["--page", "source", "--print-source", "sass"]


def test_unknown_metric_retries_with_sections_only(tmp_path: Path) -> None:
    ncu = fake_ncu(
        tmp_path, profile_part='if [[ "$*" == *--metrics* ]]; then echo "==ERROR== Failed to find metric x"; exit 1; fi'
    )
    result = profile_toolchain(ncu, Path("bundle"), TC, 7, "liger_layer_norm", tmp_path)
    assert result.error is None and result.launches
    assert "--metrics" not in result.command


def test_no_permission_is_one_line_and_no_retry(tmp_path: Path) -> None:
    ncu = fake_ncu(
        tmp_path, profile_part='echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission"; exit 1'
    )
    result = profile_toolchain(ncu, Path("bundle"), TC, 7, "liger_layer_norm", tmp_path)
    assert (
        result.error is not None
        and result.error.startswith("ncu could not run: no permission")
        and "\n" not in result.error
    )
    assert len((tmp_path / "calls").read_text().splitlines()) == 1 and not result.launches


def test_ncu_that_exits_0_without_a_report_is_not_called_failed_with_exit_0(tmp_path: Path) -> None:
    """ncu exits 0 and writes no report when the profiled call launched nothing in the range; the reason read
    "ncu failed (exit 0): ==WARNING== No kernels were profiled.", a failure with a success code."""
    ncu = fake_ncu(tmp_path, profile_part='echo "==WARNING== No kernels were profiled."; exit 0')
    result = profile_toolchain(ncu, Path("bundle"), TC, 7, "liger_layer_norm", tmp_path)
    assert result.error == "ncu exited 0 but wrote no report: ==WARNING== No kernels were profiled.", result.error
    assert not result.launches
