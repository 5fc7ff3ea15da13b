"""The supported-Triton table: docs/toolchains.md and ktriage/toolchain/supported.toml agree, and no
newer final Triton release is on PyPI than the newest one in the table (the network test)."""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from ktriage.toolchain.supported import ARCHS, SUPPORTED_TRITON, supported_releases

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "toolchains.md"
SECTION = "## Supported Triton releases"
PYPI_URL = "https://pypi.org/pypi/triton/json"


# -- the docs table ---------------------------------------------------------------------------------


def doc_table(text: str) -> list[dict[str, str]]:
    """The rows of the first markdown table under SECTION, as header -> cell."""
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    section = text[start : end if end >= 0 else len(text)]
    lines = [ln.strip() for ln in section.splitlines()]
    first = next(i for i, ln in enumerate(lines) if ln.startswith("|"))
    table: list[str] = []
    for ln in lines[first:]:
        if not ln.startswith("|"):
            break
        table.append(ln)

    def cells(line: str) -> list[str]:
        return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]

    header = cells(table[0])
    assert re.fullmatch(r"[-:| ]+", table[1]), f"no separator row under the header in {DOC}"
    rows = [dict(zip(header, cells(ln), strict=True)) for ln in table[2:]]
    return rows


def test_doc_table_lists_exactly_the_supported_versions() -> None:
    rows = doc_table(DOC.read_text())
    listed = [r["Triton"] for r in rows]
    assert listed == list(SUPPORTED_TRITON), (
        f"{DOC.relative_to(REPO)} lists {listed}, ktriage/toolchain/supported.toml {list(SUPPORTED_TRITON)}: "
        "keep the table and the TOML file in step (same releases, oldest first)"
    )


def test_doc_table_rows_match_the_toml_data() -> None:
    rows = {r["Triton"]: r for r in doc_table(DOC.read_text())}
    for rel in supported_releases():
        row = rows[rel.version]
        for binary, version in rel.bundled_ptxas.items():
            assert f"`{binary}` {version}" in row["bundled ptxas"], (rel.version, binary, row["bundled ptxas"])
        assert row["sm_90"] == f"`{rel.ptxas_per_arch['sm_90']}`", rel.version
        assert row["sm_80"] == f"`{rel.ptxas_per_arch['sm_80']}`", rel.version
        assert row["sm_100 / sm_120"].startswith(f"`{rel.ptxas_per_arch['sm_100']}`"), rel.version
        assert row["PTX `.version` (sm_90)"] == rel.ptx_version_sm90, rel.version
        unconditional = re.sub(r"\[[^\]]*\]\s*", "", row["ptxas options (`make_cubin`, sm_90)"].strip("`")).split()
        assert unconditional == list(rel.options), (rel.version, unconditional, rel.options)


# -- the TOML data itself ---------------------------------------------------------------------------


def triton_ptx_isa(cuda_release: str) -> str:
    """Triton's ptx_get_version (backends/nvidia/compiler.py, 3.5+) for a ptxas release, as ``8.7``."""
    major, minor = (int(x) for x in cuda_release.split(".")[:2])
    if major == 12:
        isa = 80 + minor if minor < 6 else 80 + minor - 1
    elif major >= 13:
        isa = 90 + (major - 13) * 10 + minor
    else:
        isa = 70 + minor if major == 11 else 63 + minor
    return f"{isa // 10}.{isa % 10}"


def test_supported_toml_is_consistent() -> None:
    releases = supported_releases()
    versions = [Version(r.version) for r in releases]
    assert versions == sorted(set(versions)), "supported.toml: one entry per release"
    assert all(v.major == 3 and not v.is_prerelease and str(v) == r.version for v, r in zip(versions, releases))
    assert "3.4.0" in SUPPORTED_TRITON and "3.3.1" in SUPPORTED_TRITON  # the releases the main job uses
    for rel in releases:
        for arch in ARCHS:
            assert rel.ptxas_per_arch[arch] in rel.bundled_ptxas, (rel.version, arch)
            assert rel.bundled_ptxas_build[rel.ptxas_per_arch[arch]].startswith("cuda_"), (rel.version, arch)
            if rel.ptx_version[arch]:  # "": the bundled ptxas cannot assemble this arch
                assert rel.ptx_version[arch] == triton_ptx_isa(rel.ptxas_version_for(arch)), (rel.version, arch)
        assert rel.ptx_version_sm90 == triton_ptx_isa(rel.ptxas_version_for("sm_90")), rel.version
        assert rel.options[-1] == f"--gpu-name={rel.gpu_name['sm_90']}" == "--gpu-name=sm_90a", rel.version
        assert rel.options[:2] == ("-lineinfo", "-v"), rel.version
        assert rel.quirks, f"{rel.version}: state its quirks (or why there are none)"
    by_version = {r.version: r for r in releases}
    # The facts the compile and explain code rely on (see docs/toolchains.md, Quirks).
    assert by_version["3.9.0"].ptxas_per_arch["sm_90"] == "ptxas-blackwell"
    assert by_version["3.4.0"].bundled_ptxas == {"ptxas": "12.8.93"}
    assert any("nvptx-short-ptr" in q for q in by_version["3.3.1"].quirks)


# -- PyPI -------------------------------------------------------------------------------------------


def newest_final_linux_x86_64(pypi: dict[str, Any]) -> Version | None:
    """The newest final (no pre/dev) Triton 3.x release of a PyPI JSON document with a non-yanked
    linux x86_64 wheel, or None."""
    best: Version | None = None
    for key, files in pypi.get("releases", {}).items():
        try:
            version = Version(key)
        except InvalidVersion:
            continue
        if version.major != 3 or version.is_prerelease or version.is_devrelease:
            continue
        if not any(_is_linux_x86_64_wheel(f) for f in files or []):
            continue
        if best is None or version > best:
            best = version
    return best


def _is_linux_x86_64_wheel(file: dict[str, Any]) -> bool:
    name = str(file.get("filename", ""))
    if file.get("yanked") or not name.endswith(".whl"):
        return False
    try:
        tags = parse_wheel_filename(name)[3]
    except InvalidWheelFilename:
        return False
    return any("linux" in t.platform and t.platform.endswith("x86_64") for t in tags)


def unsupported_release_message(newest: Version, supported: tuple[str, ...]) -> str | None:
    """The CI failure text when PyPI's newest release is newer than the table's newest, else None."""
    if newest <= max(Version(v) for v in supported):
        return None
    return (
        f"Triton {newest} is on PyPI but not in ktriage/toolchain/supported.toml: add it to the table "
        "(docs/toolchains.md) after checking its ptxas selection and options"
    )


def _wheel(version: str, platform: str, yanked: bool = False) -> dict[str, Any]:
    return {"filename": f"triton-{version}-cp311-cp311-{platform}.whl", "packagetype": "bdist_wheel", "yanked": yanked}


def test_newest_release_selection_ignores_prereleases_other_platforms_and_yanked() -> None:
    linux = "manylinux_2_27_x86_64.manylinux_2_28_x86_64"
    pypi = {
        "releases": {
            "2.3.1": [_wheel("2.3.1", linux)],
            "3.2.0": [_wheel("3.2.0", "manylinux_2_17_x86_64.manylinux2014_x86_64")],
            "3.9.0": [_wheel("3.9.0", linux), _wheel("3.9.0", "manylinux_2_27_aarch64.manylinux_2_28_aarch64")],
            "3.10.0rc1": [_wheel("3.10.0rc1", linux)],
            "3.10.0.dev20260101": [_wheel("3.10.0.dev20260101", linux)],
            "3.10.0": [
                _wheel("3.10.0", "macosx_11_0_arm64"),
                {"filename": "triton-3.10.0.tar.gz", "packagetype": "sdist"},
            ],
            "3.9.1": [_wheel("3.9.1", linux, yanked=True)],
            "4.0.0": [_wheel("4.0.0", linux)],
            "not-a-version": [_wheel("0", linux)],
            "3.8.5": [],
        }
    }
    assert newest_final_linux_x86_64(pypi) == Version("3.9.0")
    pypi["releases"]["3.10.0"].append(_wheel("3.10.0", "manylinux_2_27_x86_64.manylinux_2_28_x86_64"))
    assert newest_final_linux_x86_64(pypi) == Version("3.10.0")
    assert newest_final_linux_x86_64({"releases": {}}) is None


def test_unsupported_release_message() -> None:
    supported = ("3.4.0", "3.9.0", "3.10.0")  # compared as versions: 3.10.0 is the newest
    assert unsupported_release_message(Version("3.10.0"), supported) is None
    assert unsupported_release_message(Version("3.9.0"), supported) is None
    msg = unsupported_release_message(Version("3.11.0"), supported)
    assert msg is not None and msg.startswith("Triton 3.11.0 is on PyPI but not in ktriage/toolchain/supported.toml")
    assert "docs/toolchains.md" in msg


@pytest.mark.network
def test_newest_triton_on_pypi_is_supported() -> None:
    request = urllib.request.Request(PYPI_URL, headers={"Accept": "application/json", "User-Agent": "ktriage-tests"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            pypi = json.load(response)
    except (urllib.error.URLError, OSError, TimeoutError, ValueError) as exc:
        reason = f"cannot read {PYPI_URL}: {exc}"
        if os.environ.get("CI"):
            pytest.fail(reason + " (CI is set, so this check must run)")
        pytest.skip(reason)
    newest = newest_final_linux_x86_64(pypi)
    assert newest is not None, f"{PYPI_URL} lists no final Triton 3.x release with a linux x86_64 wheel"
    message = unsupported_release_message(newest, SUPPORTED_TRITON)
    if message is not None:
        pytest.fail(message)
