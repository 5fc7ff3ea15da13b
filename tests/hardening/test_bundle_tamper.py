"""Tampered bundles are refused at load (issue 27): a real bundle is built with real compiles
(Triton 3.3.1 and 3.4.0, layer_norm bwd), copied, edited the way an attacker or a bad copy would,
and loaded through the real ``ktriage bench --bundle`` command line (and ``load_bundle``). Each
edit must end as exit 2 with an ``error:`` line naming the entry (kernel and toolchain) and a
``fix:`` line, never a load that would time the wrong kernel under the right label.

The edits that keep the manifest's own hashes right (a cubin swapped with its sha256 fixed up, an
entry re-pointed at the other toolchain's cubin) are caught by reading the cubin's ELF against
the entry (``ktriage.workload.bundles.verify``); a forgery that fixes every claim is caught by the
keyed signature (``KTRIAGE_BUNDLE_KEY``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ktriage.cli import exit_codes
from ktriage.cli.app import main
from ktriage.errors import KtriageError
from ktriage.workload.bundles.build import build_bundle
from ktriage.workload.bundles.format import MANIFEST, load_bundle, write_manifest
from ktriage.workload.bundles.verify import KEY_ENV

pytestmark = pytest.mark.slow
KEY = "s3cret-bundle-key"

Manifest = dict[str, Any]


@pytest.fixture(scope="module")
def built(
    toolchain: Callable[[str], Any], shared_compiler: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Path]]:
    """Two real bundles of one compile: unsigned, and built with ``KTRIAGE_BUNDLE_KEY`` set (signed)."""
    tcs = [toolchain("triton==3.3.1"), toolchain("triton==3.4.0")]
    root = tmp_path_factory.mktemp("tamper")
    plain = build_bundle(
        "layer_norm", "bwd", ["6"], tcs, root / "plain", target="sm_90", sm_count=132, compiler=shared_compiler
    )
    saved = os.environ.get(KEY_ENV)
    os.environ[KEY_ENV] = KEY
    try:
        signed = build_bundle(
            "layer_norm", "bwd", ["6"], tcs, root / "signed", target="sm_90", sm_count=132, compiler=shared_compiler
        )
    finally:
        if saved is None:
            os.environ.pop(KEY_ENV, None)
        else:
            os.environ[KEY_ENV] = saved
    yield {"plain": plain, "signed": signed}


WHICH = {"entry": 0}  # which ok entry an edit takes (the test runs each edit on each entry)


def _entries(m: Manifest) -> list[tuple[str, str, dict[str, Any]]]:
    """The ok entries, the one under edit first."""
    ok = [(k, tc, e) for k, per in m["artifacts"].items() for tc, e in per.items() if e.get("status") == "ok"]
    return ok[WHICH["entry"] :] + ok[: WHICH["entry"]]


def _copy(src: Path, dst: Path) -> tuple[Path, Manifest]:
    shutil.copytree(src, dst)
    return dst, json.loads((dst / MANIFEST).read_text())


def _save(folder: Path, m: Manifest) -> None:
    (folder / MANIFEST).write_text(json.dumps(m, indent=1))


def _refused(folder: Path, capsys: pytest.CaptureFixture[str], *words: str) -> str:
    """Through the real CLI: exit 2, an error: line with ``words``, a fix: line, no traceback."""
    code = main(["bench", "--op", "layer_norm", "--bundle", str(folder)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert code == exit_codes.USAGE, err
    error = re.sub(r"\s+", " ", err.split("\nfix:")[0])  # the console wraps long lines
    assert any(line.startswith("error:") for line in err.splitlines()), err
    assert any(line.startswith("fix:") for line in err.splitlines()), err
    for w in words:
        assert w in error, f"{w!r} not in the error:\n{err}"
    with pytest.raises(KtriageError):
        load_bundle(folder)
    return err


# ---------------------------------------------------------------------------------- the edits
def swap_cubin_fix_sha(folder: Path, m: Manifest) -> tuple[str, str]:
    """The first entry's cubin file overwritten with the other toolchain's cubin, its sha256 fixed up."""
    (k, tc, e), (_, _, other) = (
        _entries(m)[0],
        next(x for x in _entries(m)[1:] if x[2]["cubin"] != _entries(m)[0][2]["cubin"]),
    )
    data = (folder / other["cubin"]).read_bytes()
    (folder / e["cubin"]).write_bytes(data)
    e["cubin_sha256"] = hashlib.sha256(data).hexdigest()
    return k, tc


def repoint_at_other_toolchain(folder: Path, m: Manifest) -> tuple[str, str]:
    """The first entry's cubin and sha256 re-pointed at the other toolchain's cubin (a consistent manifest edit)."""
    first = _entries(m)[0]
    k, tc, e = first
    other = next(x[2] for x in _entries(m)[1:] if x[2]["cubin"] != e["cubin"])
    e["cubin"], e["cubin_sha256"] = other["cubin"], other["cubin_sha256"]
    return k, tc


def edit_kernel_name(folder: Path, m: Manifest) -> tuple[str, str]:
    k, tc, e = _entries(m)[0]
    e["kernel_name"] = "some_other_kernel"
    return k, tc


def edit_abi_width(folder: Path, m: Manifest) -> tuple[str, str]:
    k, tc, e = _entries(m)[0]
    p = next(p for p in e["abi"] if p["ptx_type"] == "u32")
    p["ptx_type"] = "u64"
    return k, tc


def edit_abi_dtype(folder: Path, m: Manifest) -> tuple[str, str]:
    k, tc, e = _entries(m)[0]
    p = next(p for p in e["abi"] if p["triton_type"] == "i32" and not p["hidden"])
    p["triton_type"] = "fp32"
    return k, tc


def edit_launch_warps(folder: Path, m: Manifest) -> tuple[str, str]:
    k, tc, e = _entries(m)[0]
    e["launch"]["num_warps"] = e["launch"]["num_warps"] * 2
    return k, tc


def edit_target(folder: Path, m: Manifest) -> tuple[str, str]:
    """The whole bundle's target: the loader names the first entry in the manifest's order."""
    k, tc = next((k, tc) for k, per in m["artifacts"].items() for tc, e in per.items() if e.get("status") == "ok")
    m["target"] = "sm_80"
    for spec in m["specs"].values():
        spec["target"] = "sm_80"
    return k, tc


def edit_assembler(folder: Path, m: Manifest) -> tuple[str, str]:
    k, tc, e = _entries(m)[0]
    e["ptxas_version"] = "13.0.88"
    return k, tc


def garbage_cubin_fix_sha(folder: Path, m: Manifest) -> tuple[str, str]:
    k, tc, e = _entries(m)[0]
    data = b"\x7fELF" + bytes(200)
    (folder / e["cubin"]).write_bytes(data)
    e["cubin_sha256"] = hashlib.sha256(data).hexdigest()
    return k, tc


EDITS: dict[str, tuple[Callable[[Path, Manifest], tuple[str, str]], str]] = {
    "swapped-cubin-sha-fixed": (swap_cubin_fix_sha, "registers"),
    "entry-repointed-other-toolchain": (repoint_at_other_toolchain, "registers"),
    "kernel-name": (edit_kernel_name, "no kernel 'some_other_kernel'"),
    "abi-width": (edit_abi_width, "parameters of"),
    "abi-dtype": (edit_abi_dtype, "in the spec"),
    "launch-num-warps": (edit_launch_warps, "threads per CTA"),
    "target": (edit_target, "sm_90"),
    "assembler": (edit_assembler, "ELF ABI version"),
    "garbage-cubin-sha-fixed": (garbage_cubin_fix_sha, "not a valid cubin"),
}


def test_the_built_bundle_loads(built: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    assert len(load_bundle(built["plain"]).artifacts) == 2
    monkeypatch.setenv(KEY_ENV, KEY)
    assert len(load_bundle(built["signed"]).artifacts) == 2


@pytest.mark.parametrize("entry", [0, 1])
@pytest.mark.parametrize("name", list(EDITS))
def test_a_tampered_bundle_is_refused_naming_the_entry(
    name: str,
    entry: int,
    built: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.setitem(WHICH, "entry", entry)
    edit, words = EDITS[name]
    folder, m = _copy(built["plain"], tmp_path / "b")
    key, tc = edit(folder, m)
    _save(folder, m)
    _refused(folder, capsys, f"entry {key} / {tc}", words)


def test_a_signed_bundle_edited_consistently_is_refused(
    built: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A forgery that keeps every claim consistent (the entry's resources follow the cubin it now
    names) passes the ELF checks; the signature does not."""
    monkeypatch.setenv(KEY_ENV, KEY)
    folder, m = _copy(built["signed"], tmp_path / "b")
    (_k, _tc, e), (_, _, other) = _entries(m)[0], _entries(m)[1]
    for field in ("cubin", "cubin_sha256", "resources", "ptxas_version", "triton_version", "launch", "metadata", "abi"):
        e[field] = other[field]
    _save(folder, m)
    _refused(folder, capsys, "signature does not match")
    monkeypatch.delenv(KEY_ENV)
    assert load_bundle(folder).artifacts  # without the key the consistent forgery is not detectable: why the key exists


def test_with_the_key_set_an_unsigned_or_foreign_signed_bundle_is_refused(
    built: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    _refused(built["plain"], capsys, "is not signed", KEY_ENV)
    monkeypatch.setenv(KEY_ENV, "another key")
    _refused(built["signed"], capsys, "signature does not match")


def test_the_writer_signs_every_manifest_it_rewrites(
    built: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every bundle writer goes through write_manifest: with the key set, a rewritten manifest
    (a merge, a variant) is signed again and loads; without the key its signature is dropped."""
    folder, m = _copy(built["plain"], tmp_path / "b")
    monkeypatch.setenv(KEY_ENV, KEY)
    write_manifest(folder, m)
    assert json.loads((folder / MANIFEST).read_text())["signature"]["alg"] == "hmac-sha256"
    assert load_bundle(folder).artifacts
    monkeypatch.delenv(KEY_ENV)
    write_manifest(folder, json.loads((folder / MANIFEST).read_text()))
    assert "signature" not in json.loads((folder / MANIFEST).read_text())
