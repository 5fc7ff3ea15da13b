"""``--bundle DIR`` writes ``manifest.json`` and ``cubins/`` into DIR: a DIR whose ``manifest.json`` is not
a ktriage bundle's (a web app's, a dataset's) had it replaced without a word. The bundle writer refuses
it now, before any compile, naming the file and another folder (``bench --compile-only`` of an op and
of a recorded workload, ``tune``, through the real ``main(argv)``); a ktriage bundle already in DIR is
still replaced when the compile is run again (a real compile, one kernel)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ktriage.cli import exit_codes
from ktriage.workload.bundles.format import check_bundle_folder, is_bundle_manifest, load_bundle
from tests.conftest import RunCli

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "benchmarks/profile/lines_h200/bundle"  # an H200 op bundle (layer_norm bwd, one input)
MANY = REPO / "benchmarks/record/h200/many_launches.workload.json.gz"
LN_BWD = ["--op", "layer_norm", "--bwd", "--only", "liger_layer_norm", "-i", "0", "-t", "triton==3.4.0"]
WEB_APP = '{\n  "name": "My web app",\n  "short_name": "app",\n  "start_url": "/"\n}\n'


def _web_app(tmp_path: Path) -> Path:
    folder = tmp_path / "webapp"
    folder.mkdir()
    (folder / "manifest.json").write_text(WEB_APP)
    return folder


@pytest.mark.parametrize(
    "argv",
    [
        [*LN_BWD, "--compile-only"],
        [str(MANY), "-t", "triton==3.3.1", "-t", "triton==3.4.0", "--compile-only"],
    ],
    ids=["op", "recorded"],
)
def test_bench_compile_only_keeps_a_manifest_that_is_not_a_bundles(
    argv: list[str], tmp_path: Path, run_cli: RunCli
) -> None:
    folder = _web_app(tmp_path)
    out = run_cli(["bench", *argv, "--bundle", str(folder)])
    assert out.exit_code == exit_codes.USAGE, out.output
    assert out.problem == (
        f"--bundle {folder}: {folder / 'manifest.json'} exists and is not a ktriage "
        "bundle's manifest: the bundle's manifest.json would replace it"
    )
    sibling = tmp_path / "webapp-bundle"
    assert out.fix == (
        f"write the bundle to a folder of its own (new, empty, or holding a ktriage bundle), e.g. --bundle {sibling}"
    )
    # refused before the compile: the file is intact and nothing was added beside it
    assert (folder / "manifest.json").read_text() == WEB_APP
    assert sorted(p.name for p in folder.iterdir()) == ["manifest.json"]
    assert "compiling" not in out.output


def test_tune_keeps_a_manifest_that_is_not_a_bundles(tmp_path: Path, run_cli: RunCli) -> None:
    """tune's bundle is written after the screen compiled every candidate: refused before the screen."""
    folder = _web_app(tmp_path)
    out = run_cli(["tune", "liger.layer_norm", "-t", "triton==3.4.0", "-i", "N=4608", "--bundle", str(folder)])
    assert out.exit_code == exit_codes.USAGE, out.output
    assert out.problem is not None and f"{folder / 'manifest.json'} exists and is not a ktriage bundle's" in out.problem
    assert (folder / "manifest.json").read_text() == WEB_APP
    assert sorted(p.name for p in folder.iterdir()) == ["manifest.json"]


def test_which_manifests_are_a_bundles(tmp_path: Path) -> None:
    """The check itself, on real files: a committed bundle's manifest is one (rebuilding there goes on), a
    web app's, a damaged one, a folder named manifest.json or a binary are not; no manifest is no question."""
    check_bundle_folder(tmp_path / "new")  # a folder yet to be made
    bundle = tmp_path / "bundle"
    shutil.copytree(COMMITTED, bundle)
    assert is_bundle_manifest(bundle / "manifest.json")
    check_bundle_folder(bundle)
    not_ones = {
        "web": WEB_APP,
        "list": "[1, 2, 3]",
        "cut": (COMMITTED / "manifest.json").read_text()[:300],
        "binary": "\x00\x01\x02",
    }
    for name, text in not_ones.items():
        folder = tmp_path / name
        folder.mkdir()
        (folder / "manifest.json").write_text(text)
        assert not is_bundle_manifest(folder / "manifest.json"), name
        with pytest.raises(Exception, match="is not a ktriage bundle's manifest"):
            check_bundle_folder(folder)
    odd = tmp_path / "odd"
    (odd / "manifest.json").mkdir(parents=True)
    with pytest.raises(Exception, match="is not a ktriage bundle's manifest"):
        check_bundle_folder(odd)


@pytest.mark.slow
def test_an_existing_bundle_is_still_replaced(tmp_path: Path, run_cli: RunCli) -> None:
    """Compiling again into a ktriage bundle's folder replaces its manifest, as before: the committed H200
    bundle (layer_norm bwd, M=4096) is rebuilt for input 0 by triton 3.4.0."""
    bundle = tmp_path / "b"
    shutil.copytree(COMMITTED, bundle)
    before = json.loads((bundle / "manifest.json").read_text())
    out = run_cli(["bench", *LN_BWD, "--compile-only", "--bundle", str(bundle)])
    assert out.exit_code == exit_codes.OK, out.output
    loaded = load_bundle(bundle)
    assert [c.id for c in loaded.input_cases()] == [0]
    assert json.loads((bundle / "manifest.json").read_text())["created"] != before["created"]
