"""The kernel file's path is part of what a compile produces: Triton writes it into the PTX's ``.file``
table and the cubin's line table. The same kernel text in two folders (two clones sharing a test home,
a moved project) compiled into one artifact cache must give each folder an artifact that names its own
file, as the JIT at that path would; the cache once served the first folder's PTX and cubin to both."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from ktriage.compile.compiler import Artifact, Compiler, source_location
from ktriage.home import HOME_VAR, ktriage_home
from ktriage.spec.model import KernelSpec
from ktriage.spec.toml_file import load_spec_file
from tests.triton_compile_for_tests import RED_SIGNATURE

pytestmark = pytest.mark.slow
TESTS = Path(__file__).resolve().parents[1]
EXAMPLES = TESTS.parent / "examples" / "specs"


def ptx_files(art: Artifact) -> list[str]:
    return re.findall(r'^\s*\.file\s+\d+\s+"([^"]+)"', art.frontend.text("ptx"), re.M)


def red_spec(path: Path) -> KernelSpec:
    return KernelSpec(
        name="red",
        source=f"{path}:red_kernel",
        signature=dict(RED_SIGNATURE),
        constexprs={"XBLOCK": 64, "RBLOCK": 64},
        divisible_by_16=("in_ptr", "out_ptr", "xnumel", "rnumel"),
    )


def checkouts(tmp_path: Path, *files: Path) -> tuple[Path, Path]:
    """The same files in two folders, ``a`` and ``b``."""
    folders = (tmp_path / "clone-a", tmp_path / "clone-b")
    for folder in folders:
        folder.mkdir()
        for file in files:
            shutil.copy(file, folder / file.name)
    return folders


def assert_names_own_folder(art: Artifact, own: Path, other: Path) -> None:
    files = ptx_files(art)
    assert any(f.startswith(f"{own}/") for f in files), files
    assert not any(f.startswith(f"{other}/") for f in files), files
    cubin = art.cubin.cubin_path.read_bytes()  # the line table keeps the folder and the file name apart
    assert str(own).encode() in cubin and str(other).encode() not in cubin


def test_two_folders_one_cache_each_artifact_names_its_own_file(toolchain, tmp_path: Path) -> None:
    tc = toolchain("triton==3.4.0")
    a, b = checkouts(tmp_path, TESTS / "kernels_for_tests.py")
    cache = tmp_path / "artifacts"
    spec_a, spec_b = red_spec(a / "kernels_for_tests.py"), red_spec(b / "kernels_for_tests.py")
    assert spec_a.key() == spec_b.key()  # one kernel: the spec's identity leaves the path out
    # one compiler per folder, as two clones' runs: only the cache on disk is shared
    with Compiler(jobs=1, cache_dir=cache) as compiler:
        art_a = compiler.compile(spec_a, tc)
    with Compiler(jobs=1, cache_dir=cache) as compiler:
        art_b = compiler.compile(spec_b, tc)
        assert compiler.frontend_compiles == 1  # not served folder a's entry
        again = compiler.compile(spec_a, tc)  # and a's entry is still a's
    assert isinstance(art_a, Artifact) and isinstance(art_b, Artifact) and isinstance(again, Artifact)
    assert art_a.frontend.dir != art_b.frontend.dir and again.frontend.dir == art_a.frontend.dir
    assert_names_own_folder(art_a, a, b)
    assert_names_own_folder(art_b, b, a)


def test_a_spec_by_values_in_two_folders_resolves_and_compiles_each_at_its_own_path(toolchain, tmp_path: Path) -> None:
    """A spec written by values is first specialized by the toolchain's JIT (``Compiler.resolve``, memoized
    per compiler): the spec it hands on must keep its own source path, not the first folder's."""
    tc = toolchain("triton==3.4.0")
    a, b = checkouts(tmp_path, EXAMPLES / "scaled_rows.toml", EXAMPLES / "scaled_rows.py")
    ((spec_a,), (spec_b,)) = (load_spec_file(a / "scaled_rows.toml"), load_spec_file(b / "scaled_rows.toml"))
    with Compiler(jobs=1, cache_dir=tmp_path / "artifacts") as compiler:
        art_a = compiler.compile(spec_a, tc)
        art_b = compiler.compile(spec_b, tc)
    assert isinstance(art_a, Artifact) and isinstance(art_b, Artifact)
    assert art_a.spec.source.startswith(f"{a}/") and art_b.spec.source.startswith(f"{b}/")
    assert_names_own_folder(art_a, a, b)
    assert_names_own_folder(art_b, b, a)


def test_source_location_names_a_file_under_the_home_relative_to_it(tmp_path: Path, monkeypatch) -> None:
    """A kernel package or a recorded snapshot lives under the ktriage home: named from the home, so that
    a cluster node with its home elsewhere computes the driver's key; any other file by its own path."""
    monkeypatch.setenv("KTRIAGE_HOME", str(tmp_path / "home"))
    snapshot = ktriage_home() / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    shutil.copy(TESTS / "kernels_for_tests.py", snapshot / "k.py")
    assert source_location(red_spec(snapshot / "k.py")) == f"{HOME_VAR}/snapshots/0123abcd/k.py"
    shutil.copy(TESTS / "kernels_for_tests.py", tmp_path / "k.py")
    assert source_location(red_spec(tmp_path / "k.py")) == str(tmp_path / "k.py")


def test_two_specs_by_values_with_one_launch_keep_their_own_names_and_labels(toolchain, tmp_path: Path) -> None:
    """The JIT's decision for a launch is memoized per compiler; the name and meta of the spec it is
    handed back for are that spec's own (the memo once returned the first spec with its labels)."""
    tc = toolchain("triton==3.4.0")
    ((spec,),) = (load_spec_file(EXAMPLES / "scaled_rows.toml"),)
    first = spec.replace(name="first", meta={**spec.meta, "input_label": "x=1"})
    second = spec.replace(name="second", meta={**spec.meta, "input_label": "x=2"})
    with Compiler(jobs=1, cache_dir=tmp_path / "artifacts") as compiler:
        art_1, art_2 = compiler.compile(first, tc), compiler.compile(second, tc)
        assert compiler.frontend_compiles == 1  # one launch: one JIT decision, one compile
    assert isinstance(art_1, Artifact) and isinstance(art_2, Artifact)
    assert (art_1.spec.name, art_1.spec.meta["input_label"]) == ("first", "x=1")
    assert (art_2.spec.name, art_2.spec.meta["input_label"]) == ("second", "x=2")
