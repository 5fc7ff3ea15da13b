"""Candidate lists from the real package index (``pip index versions``; marked network), git candidates and
pins, and source checks (the CLI's option errors: tests/cli/test_bisect.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ktriage.bisect.sources import (
    git_candidates,
    parse_source,
    pin_change,
    ptxas_candidates,
    pypi_candidates,
    read_pin,
    versions_between,
)
from ktriage.errors import KtriageError
from tests.bisect.repos import make_kernel_repo
from tests.conftest import RunCli


@pytest.mark.network  # pip index versions: the real package index
def test_triton_releases_between_two_versions() -> None:
    cands = pypi_candidates("triton", "3.2.0", "3.5.1")
    assert [c.id for c in cands] == ["3.2.0", "3.3.0", "3.3.1", "3.4.0", "3.5.0", "3.5.1"]
    assert [c.index for c in cands] == list(range(6))
    assert cands[2].meta["toolchain"] == "triton==3.3.1"
    kept = pypi_candidates("triton", "3.3.1", "3.4.0", toolchain="triton==3.3.1,ptxas==12.8.93")
    assert [c.meta["toolchain"] for c in kept] == ["triton==3.3.1,ptxas==12.8.93", "triton==3.4.0,ptxas==12.8.93"]


@pytest.mark.network  # pip index versions: the real package index
def test_kernel_package_releases_keep_the_toolchain_fixed() -> None:
    cands = pypi_candidates("liger-kernel", "0.5.8", "0.5.10", toolchain="triton==3.4.0")
    assert [c.id for c in cands] == ["0.5.8", "0.5.9", "0.5.10"]
    assert {c.meta["toolchain"] for c in cands} == {"triton==3.4.0"}
    assert cands[1].meta["requirement"] == "liger-kernel==0.5.9"
    with pytest.raises(KtriageError, match=r"needs toolchain \(--toolchain\)"):
        pypi_candidates("liger-kernel", "0.5.8", "0.5.10")


@pytest.mark.network  # pip index versions: the real package index
def test_ptxas_releases_across_cuda_majors_with_the_frontend_fixed() -> None:
    cands = ptxas_candidates("12.8.93", "13.0.88", toolchain="triton==3.4.0")
    ids = [c.id for c in cands]
    assert ids[0] == "12.8.93" and ids[-1] == "13.0.88"
    assert {"12.9.41", "12.9.86", "13.0.48"} <= set(ids)
    assert ids == sorted(ids, key=lambda v: tuple(int(x) for x in v.split(".")))
    assert cands[1].meta["toolchain"] == f"triton==3.4.0,ptxas=={ids[1]}"
    assert cands[-1].meta["package"] == "nvidia-cuda-nvcc" and cands[0].meta["package"] == "nvidia-cuda-nvcc-cu12"
    assert [c.id for c in ptxas_candidates("12.4.131", "12.6.20", toolchain="triton==3.4.0")] == [
        "12.4.131",
        "12.5.40",
        "12.5.82",
        "12.6.20",
    ]


@pytest.mark.network  # pip index versions: the real package index
def test_an_endpoint_missing_from_the_index_is_a_clear_error() -> None:
    with pytest.raises(KtriageError, match=r"good='3.3.7' \(--good 3.3.7\) is not a release") as info:
        pypi_candidates("triton", "3.3.7", "3.4.0")
    assert "3.4.0" in (info.value.fix or "")


def test_version_range_rules() -> None:
    listed = ["3.0.0", "3.1.0rc1", "3.1.0", "3.2.0", "3.3.0.dev1"]
    assert versions_between(listed, "3.0.0", "3.2.0") == ["3.0.0", "3.1.0", "3.2.0"]
    assert versions_between(listed, "3.0.0", "3.2.0", pre=True) == ["3.0.0", "3.1.0rc1", "3.1.0", "3.2.0"]
    with pytest.raises(KtriageError, match="not older"):
        versions_between(listed, "3.2.0", "3.0.0")
    # equal ends (3.2 is 3.2.0) are not a reversed range: swapping them would change nothing
    with pytest.raises(KtriageError) as info:
        versions_between(listed, "3.2", "3.2.0")
    assert (
        info.value.problem == "good='3.2' (--good 3.2) and bad='3.2.0' (--bad 3.2.0) are the same release: "
        "there is nothing between them to bisect"
    )
    assert "swap" not in (info.value.fix or "")
    # a --good that is no release is reported as such, not as "newer than --bad: swap them"
    with pytest.raises(
        KtriageError, match=r"good='9.9.9' \(--good 9.9.9\) is not a release of the package on the index"
    ):
        versions_between(listed, "9.9.9", "3.2.0")
    # a word where a version goes names its flag and the versions to pick from (it was packaging's bare
    # "Invalid version: 'latest'"); a list that is no index (a timed bisect's bundle) is named as such
    with pytest.raises(KtriageError, match=r"bad='latest' \(--bad latest\) is not a version number") as info:
        versions_between(listed, "3.0.0", "latest", what="triton")
    assert info.value.fix == "give a release of the triton on the index: 3.0.0, 3.1.0rc1, 3.1.0, 3.2.0, 3.3.0.dev1"
    with pytest.raises(KtriageError) as info:
        versions_between(listed, "2.9.0", "3.2.0", what="triton", where="in bundle b")
    assert info.value.problem == "good='2.9.0' (--good 2.9.0) is not a release of the triton in bundle b"


def test_git_candidates_and_pins(tmp_path: Path) -> None:
    repo = make_kernel_repo(tmp_path / "repo", n=5, culprit_at=2)
    cands = git_candidates(repo.path, repo.good, "main")
    assert [c.id for c in cands] == repo.commits
    assert cands[2].label.endswith("raise RBLOCK to 256")
    with pytest.raises(KtriageError, match="not an ancestor"):
        git_candidates(repo.path, repo.bad, repo.good)
    assert read_pin("# llvm\n0123456789abcdef0123456789abcdef01234567\n") == "0123456789abcdef0123456789abcdef01234567"
    assert pin_change(repo.path, repo.good, repo.bad, "spec.toml") is None  # no hash inside


def test_an_unknown_source_form_is_a_clear_error() -> None:
    with pytest.raises(KtriageError, match="known forms"):
        parse_source("triton")


@pytest.mark.slow
def test_latency_candidates_come_from_the_bundle_toolchains(
    tmp_path: Path, toolchain, shared_compiler, has_gpu: bool
) -> None:
    """The GPU host cannot reach the index: a latency bisect lists the bundle's toolchains instead.
    (The GPU measurement itself runs on the GPU host only; here it must refuse with a clear error.)"""
    from ktriage.bisect.run import BisectOptions, _Run, list_candidates
    from ktriage.workload.bundles.build import build_bundle

    tcs = [toolchain("triton==3.3.1"), toolchain("triton==3.4.0")]
    out = build_bundle(
        "layer_norm", "bwd", ["7"], tcs, tmp_path / "bundle", compiler=shared_compiler, backends=["liger_layer_norm"]
    )
    opts = BisectOptions(
        source="pypi:triton",
        good="3.3.1",
        bad="3.4.0",
        metric="latency",
        bundle=out,
        backend="liger_layer_norm",
        inputs=("7",),
        state=tmp_path / "s.json",
    )
    run = _Run(opts, lambda _m: None)
    cands = list_candidates(opts, run.source)
    assert [c.id for c in cands] == ["3.3.1", "3.4.0"]
    assert [c.meta["toolchain_id"] for c in cands] == [tcs[0].id, tcs[1].id]
    if not has_gpu:
        with pytest.raises(KtriageError, match="cannot measure here|GPU"):
            run._time_predicate()


@pytest.mark.slow
def test_a_timed_bisect_checks_backend_input_and_timing_before_measuring(
    tmp_path: Path, toolchain, shared_compiler, run_cli: RunCli
) -> None:
    """``--backend liger`` (the name the option's help and the hint gave) is no artifact backend: it
    failed only on the GPU host, when the good endpoint was prepared. Refused here, exit 2, with the
    backends the bundle holds; so are a backend of another op and an unknown --artifact-timing."""
    from ktriage.workload.bundles.build import build_bundle

    tcs = [toolchain("triton==3.3.1"), toolchain("triton==3.4.0")]
    out = build_bundle(
        "layer_norm", "bwd", ["7"], tcs, tmp_path / "bundle", compiler=shared_compiler, backends=["liger_layer_norm"]
    )
    base = ["bisect", "--source", "pypi:triton", "--good", "3.3.1", "--bad", "3.4.0", "--metric", "latency"]
    base += ["--bundle", str(out), "--state", str(tmp_path / "s.json")]
    for backend in ("liger", "liger_embedding"):
        r = run_cli([*base, "--backend", backend, "--input", "7"])
        assert r.exit_code == 2 and f"--backend {backend} is not an artifact backend of bundle" in r.problem, r.output
        assert r.fix == "use one it holds: liger_layer_norm"
    r = run_cli([*base, "--input", "7"])
    assert r.exit_code == 2 and r.fix == ("e.g. --backend liger_layer_norm and --input 7"), r.output
    r = run_cli([*base, "--backend", "liger_layer_norm", "--input", "7", "--artifact-timing", "kernels"])
    assert r.exit_code == 2 and "--artifact-timing kernels is not a timing target" in r.problem, r.output
    assert not (tmp_path / "s.json").exists()  # refused before the preflight: nothing was measured
