"""Toolchain spec strings: parsing, canonical form, and the errors a user sees for typos (pure)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ktriage.errors import KtriageError
from ktriage.toolchain.spec import ToolchainSpec, parse_toolchain


def test_pypi_triton_uses_bundled_ptxas() -> None:
    spec = parse_toolchain("triton==3.4.0")
    assert spec == ToolchainSpec(triton_version="3.4.0")
    assert spec.frontend_kind == "pypi" and spec.ptxas_kind == "bundled"
    assert str(spec) == "triton==3.4.0"


def test_ptxas_release_and_canonical_order() -> None:
    spec = parse_toolchain(" ptxas==12.8.93 , triton==3.3.1 ")
    assert spec.triton_version == "3.3.1" and spec.ptxas_version == "12.8.93"
    assert spec.ptxas_kind == "release"
    assert str(spec) == "triton==3.3.1,ptxas==12.8.93"


def test_ptxas_options_with_spaces_several_flags_and_a_quoted_comma() -> None:
    spec = parse_toolchain("triton==3.4.0,ptxas-options=--register-usage-level=4 -O3 '-Xfoo=a,b',ptxas==12.4.131")
    assert spec.ptxas_options == ("--register-usage-level=4", "-O3", "-Xfoo=a,b")
    assert spec.ptxas_version == "12.4.131"
    text = str(spec)
    assert text == "triton==3.4.0,ptxas==12.4.131,ptxas-options=--register-usage-level=4 -O3 '-Xfoo=a,b'"
    assert parse_toolchain(text) == spec  # the canonical form parses back to the same spec


def test_local_wheel_and_local_ptxas_resolve_to_absolute_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = tmp_path / "dist" / "triton-3.4.0+gitabc-cp311-cp311-linux_x86_64.whl"
    wheel.parent.mkdir()
    wheel.write_bytes(b"not really a wheel, parsing only checks it exists")
    ptxas = tmp_path / "ptxas"
    ptxas.write_text("#!/bin/sh\n")
    ptxas.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    spec = parse_toolchain("triton=./dist/" + wheel.name + ",ptxas=./ptxas")
    assert spec.triton_wheel == wheel and spec.ptxas_path == ptxas
    assert spec.frontend_kind == "wheel" and spec.ptxas_kind == "path"
    assert str(spec) == f"triton={wheel},ptxas={ptxas}"


def test_versions_are_normalized() -> None:
    assert parse_toolchain("triton==3.5.0RC1").triton_version == "3.5.0rc1"


def test_a_release_written_short_is_its_three_number_release() -> None:
    """``triton==3.6`` is ``3.6.0`` to pip; it was kept as ``3.6`` and built a second virtualenv
    (``envs/triton-3.6``) for the toolchain of ``triton==3.6.0``, whose record then followed
    whichever spelling ran last. One release, one spelling, one frontend folder."""
    from ktriage.toolchain.frontend import frontend_key

    full = parse_toolchain("triton==3.6.0")
    for short in ("triton==3.6", "triton==03.6", "triton==3.6.0"):
        spec = parse_toolchain(short)
        assert (spec.triton_version, str(spec)) == ("3.6.0", "triton==3.6.0")
        assert frontend_key(spec) == frontend_key(full) == ("triton-3.6.0", None)
    # only the release is padded; what follows it is kept
    assert parse_toolchain("triton==3.6rc1").triton_version == "3.6.0rc1"
    assert parse_toolchain("triton==3.6.post1").triton_version == "3.6.0.post1"


@pytest.mark.parametrize(
    ("text", "problem", "fix"),
    [
        ("", "empty toolchain spec", "triton==3.4.0"),
        ("triton==3.4.0,ptxs==12.8.93", "unknown toolchain spec key 'ptxs'", "did you mean 'ptxas'"),
        ("triton==3.4.0,cuda==12.8", "unknown toolchain spec key 'cuda'", "known keys: triton, ptxas, ptxas-options"),
        ("triton==three", "triton==three is not a version", "triton==3.4.0"),
        ("triton==3.4.*", "is not a version", "exact release"),
        ("triton==3.4.0,ptxas==12.8", "ptxas==12.8 is not a ptxas release number", "ptxas==12.8.93"),
        ("triton=3.4.0", "looks like a version", "triton==3.4.0"),
        ("ptxas==12.8.93", "names no Triton frontend", "add triton==VERSION"),
        ("triton==3.4.0,triton==3.4.0", "key 'triton' given twice", "give each key once"),
        ("triton==3.4.0,ptxas-options=-O3,ptxas-options=-v", "key 'ptxas-options' given twice", "once"),
        ("triton==3.4.0,ptxas-options=", "ptxas-options= is empty", "--register-usage-level=4"),
        ("triton==3.4.0,ptxas-options='-O3", "No closing quotation", "close the quote"),
        ("triton==3.4.0,just-words", "is not KEY==VERSION or KEY=VALUE", "triton==3.4.0"),
        ("triton=/nonexistent/triton-3.4.0-cp311-cp311-linux_x86_64.whl", "does not exist", "check the path"),
        ("triton=/etc/hostname", "must be a wheel file", "pip wheel"),
        ("triton==3.4.0,ptxas=/nonexistent/ptxas", "ptxas binary /nonexistent/ptxas does not exist", "ptxas="),
    ],
)
def test_errors_name_the_problem_and_the_fix(text: str, problem: str, fix: str) -> None:
    with pytest.raises(KtriageError) as info:
        parse_toolchain(text)
    assert problem in info.value.problem
    assert info.value.fix is not None and fix in info.value.fix


def test_non_executable_ptxas_is_refused(tmp_path: Path) -> None:
    ptxas = tmp_path / "ptxas"
    ptxas.write_text("")
    ptxas.chmod(0o644)
    if os.access(ptxas, os.X_OK):  # root may execute anything with an x bit only; 0o644 has none
        pytest.skip("file is executable for this user")
    with pytest.raises(KtriageError, match="not executable") as info:
        parse_toolchain(f"triton==3.4.0,ptxas={ptxas}")
    assert info.value.fix == f"chmod +x {ptxas}"


def test_ptxas_directory_is_called_a_directory_and_the_binary_inside_suggested(tmp_path: Path) -> None:
    with pytest.raises(KtriageError) as info:
        parse_toolchain(f"triton==3.4.0,ptxas={tmp_path}")
    assert info.value.problem == f"ptxas={tmp_path} is a directory, not a ptxas binary"
    assert info.value.fix is not None and "ptxas=/usr/local/cuda/bin/ptxas" in info.value.fix
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "ptxas").write_text("")
    with pytest.raises(KtriageError) as info:
        parse_toolchain(f"triton==3.4.0,ptxas={tmp_path}")
    assert info.value.fix == f"give the binary: ptxas={tmp_path / 'bin' / 'ptxas'}"


def test_a_file_that_is_not_a_ptxas_gets_no_chmod_advice(tmp_path: Path) -> None:
    passwd = tmp_path / "passwd"
    passwd.write_text("root:x:0:0::/root:/bin/sh\n")
    passwd.chmod(0o644)
    if os.access(passwd, os.X_OK):
        pytest.skip("file is executable for this user")
    with pytest.raises(KtriageError) as info:
        parse_toolchain(f"triton==3.4.0,ptxas={passwd}")
    assert info.value.problem == f"ptxas={passwd} is not an executable ptxas"
    assert info.value.fix is not None and "chmod" not in info.value.fix and "bin/ptxas" in info.value.fix


def test_check_files_false_reloads_a_spec_whose_wheel_is_gone() -> None:
    spec = parse_toolchain("triton=/gone/triton-3.4.0-cp311-cp311-linux_x86_64.whl", check_files=False)
    assert spec.triton_wheel == Path("/gone/triton-3.4.0-cp311-cp311-linux_x86_64.whl")


@pytest.mark.parametrize(
    ("text", "key", "split"),
    [
        ("triton==3.3.1,triton==3.4.0", "triton", ["triton==3.3.1", "triton==3.4.0"]),
        (
            "triton==3.3.1,ptxas==12.4.131,triton==3.4.0,ptxas==12.8.93",
            "triton",
            ["triton==3.3.1,ptxas==12.4.131", "triton==3.4.0,ptxas==12.8.93"],
        ),
        (  # one Triton, two ptxas: a ptxas comparison, each ptxas with the Triton
            "triton==3.4.0,ptxas==12.4.131,ptxas==12.8.93",
            "ptxas",
            ["triton==3.4.0,ptxas==12.4.131", "triton==3.4.0,ptxas==12.8.93"],
        ),
    ],
)
def test_two_toolchains_in_one_spec_are_told_to_be_a_list(text: str, key: str, split: list[str]) -> None:
    """toolchains="triton==3.3.1,triton==3.4.0" was "key 'triton' given twice", fix "give each key once":
    the user was sent to drop one of the toolchains meant. A spec is one toolchain; several are a list."""
    with pytest.raises(KtriageError) as info:
        parse_toolchain(text)
    assert info.value.problem == f"toolchain spec {text!r} names 2 toolchains ({key} twice): a spec is one toolchain"
    assert info.value.fix == f"give several as a list: toolchains={split!r} (-t {split[0]} -t {split[1]})"


def test_the_split_quotes_a_toolchain_the_shell_would_cut() -> None:
    """Options with a space stay one ``-t`` word in the split's command (the quoting is ktriage.errors.option's)."""
    text = "triton==3.3.1,ptxas-options='-O3 -v',triton==3.4.0"
    with pytest.raises(KtriageError) as info:
        parse_toolchain(text)
    first = "triton==3.3.1,ptxas-options='-O3 -v'"
    assert info.value.fix == (
        f"give several as a list: toolchains={[first, 'triton==3.4.0']!r} "
        f"(-t 'triton==3.3.1,ptxas-options='\"'\"'-O3 -v'\"'\"'' -t triton==3.4.0)"
    )
