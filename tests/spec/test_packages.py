"""Kernel packages: a real `uv pip install --no-deps --target` of liger-kernel, once, locked."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ktriage.errors import KtriageError
from ktriage.spec.model import KernelSpec
from ktriage.spec.packages import (
    ensure_package,
    is_installed,
    package_dir,
    package_module_file,
    parse_requirement,
)


def test_requirements_must_be_pinned() -> None:
    assert parse_requirement("Liger_Kernel == 0.5.10") == ("liger-kernel", "0.5.10")
    for bad in ("liger-kernel", "liger-kernel>=0.5", "liger-kernel==0.5.10; python_version>'3'"):
        with pytest.raises(KtriageError, match="not pinned") as info:
            parse_requirement(bad)
        assert "name==version" in info.value.fix


@pytest.mark.slow
def test_install_once_and_find_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KTRIAGE_HOME", str(tmp_path / "home"))
    req = "liger-kernel==0.5.10"
    assert not is_installed(req)
    with ThreadPoolExecutor(3) as pool:  # concurrent callers: one install, same answer
        dirs = list(pool.map(lambda _: ensure_package(req), range(3)))
    assert len(set(dirs)) == 1 and dirs[0] == package_dir(req) and is_installed(req)
    assert [p.name for p in dirs[0].parent.iterdir() if ".tmp-" in p.name] == []
    stamp = os.stat(dirs[0]).st_mtime_ns
    assert ensure_package(req) == dirs[0] and os.stat(dirs[0]).st_mtime_ns == stamp  # no reinstall
    path = package_module_file(req, "liger_kernel.ops.layer_norm")
    assert path == dirs[0] / "liger_kernel" / "ops" / "layer_norm.py"
    assert "def _layer_norm_backward_kernel(" in path.read_text()
    assert not (dirs[0] / "torch").exists()  # --no-deps: torch/triton are not pulled in
    spec = KernelSpec(
        name="x", source="liger_kernel.ops.layer_norm:_layer_norm_backward_kernel", package=req, signature={"a": "i32"}
    )
    with pytest.raises(KtriageError, match="signature lists 1 argument but _layer_norm_backward_kernel takes 18"):
        spec.validate()


@pytest.mark.slow
def test_unknown_version_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KTRIAGE_HOME", str(tmp_path / "home"))
    with pytest.raises(KtriageError, match="could not install liger-kernel==0.0.999") as info:
        ensure_package("liger-kernel==0.0.999")
    assert "check the version exists" in info.value.fix
    assert not package_dir("liger-kernel==0.0.999").exists()
