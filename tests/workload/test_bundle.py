"""Bundles: compile here (real Triton 3.3.1 / 3.4.0 toolchains, real ptxas and cuobjdump), load with
the standard library alone, replay from the manifest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ktriage.errors import KtriageError
from ktriage.workload.bundles.build import build_bundle
from ktriage.workload.bundles.format import BundleArtifact, BundleFailure, load_bundle
from ktriage.workload.bundles.launch import make_launcher

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ln_bundle(toolchain, shared_compiler, tmp_path_factory) -> Path:
    tcs = [toolchain("triton==3.3.1"), toolchain("triton==3.4.0")]
    out = tmp_path_factory.mktemp("bundle") / "layer_norm-bwd"
    return build_bundle(
        "layer_norm", "bwd", ["6", "7"], tcs, out, target="sm_90", sm_count=132, compiler=shared_compiler
    )


def test_bundle_holds_every_kernel_for_every_toolchain(ln_bundle: Path, toolchain) -> None:
    b = load_bundle(ln_bundle)
    assert (b.op, b.mode, b.precision, b.sm_count, b.backends) == (
        "layer_norm",
        "bwd",
        "fp32",
        132,
        ("liger_layer_norm",),
    )
    assert [c.facts["N"] for c in b.input_cases()] == [4096, 4608]
    ids = {toolchain("triton==3.3.1").id, toolchain("triton==3.4.0").id}
    assert set(b.toolchains) == ids and b.toolchains[toolchain("triton==3.4.0").id]["triton_version"] == "3.4.0"
    assert len(b.specs) == 2 and len(b.artifacts) == 4
    for (key, tc_id), art in b.artifacts.items():
        assert isinstance(art, BundleArtifact), art
        assert art.cubin_bytes()[:4] == b"\x7fELF" and art.kernel_name == "_layer_norm_backward_kernel"
        assert art.launch["num_warps"] == 4 and art.launch["shared"] >= 0 and art.launch["num_ctas"] == 1
        assert [p["name"] for p in art.abi if not p["hidden"]] == [
            n for n, t in b.specs[key].signature.items() if t != "constexpr"
        ]
        assert [p["name"] for p in art.abi if p["hidden"]] == ["global_scratch"]  # 3.3 and 3.4 append one
        assert art.resources and art.resources["registers"] > 0
        assert art.triton_version == b.toolchains[tc_id]["triton_version"]
    # The regression of the report: Triton 3.4.0 spills on N=4608 (input 7)
    key7 = b.kernel_key("liger_layer_norm", 7, "bwd")
    art7 = b.artifact(key7, toolchain("triton==3.4.0").id)
    assert isinstance(art7, BundleArtifact) and art7.resources["spill_store_bytes"] > 0
    # identical cubins are stored once; the folder stays small
    files = list((ln_bundle / "cubins").iterdir())
    assert len(files) == len({a.cubin_sha256 for a in b.artifacts.values()})
    assert sum(f.stat().st_size for f in files) < 2_000_000


def test_each_artifact_carries_its_lines_source_text_for_the_gpu_host(ln_bundle: Path) -> None:
    """The GPU host that profiles a bundle cannot read the kernel's file nor the compiling Triton's
    ``standard.py``: each artifact carries the text of the lines its cubin's line table names, as compiled
    (``ktriage profile`` shows and matches lines by it)."""
    from ktriage.analyze.lines import display_path

    b = load_bundle(ln_bundle)
    for art in b.artifacts.values():
        assert isinstance(art, BundleArtifact)
        files = {display_path(path): path for path in art.source_text}
        assert set(files) >= {"liger_kernel/ops/layer_norm.py", "triton/language/standard.py"}, files
        for path, lines in art.source_text.items():
            text = Path(path).read_text().splitlines()  # readable here, where it was compiled
            assert lines and all(text[n - 1].strip().startswith(t) for n, t in lines.items())
        kernel = art.source_text[files["liger_kernel/ops/layer_norm.py"]]
        assert any("tl.load" in t for t in kernel.values())  # the kernel's loads, by line number


def test_load_bundle_needs_neither_torch_nor_triton(ln_bundle: Path) -> None:
    code = (
        "import sys; from ktriage.workload.bundles.format import load_bundle; b = load_bundle(sys.argv[1]); "
        "assert 'torch' not in sys.modules and 'triton' not in sys.modules, sorted(sys.modules); print(len(b.artifacts))"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run(
        [sys.executable, "-c", code, str(ln_bundle)], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == "4"


def test_replay_from_the_bundle_launches_by_bundle_key(ln_bundle: Path, toolchain) -> None:
    torch = pytest.importorskip("torch")
    from ktriage.workload.ops.backends import make_input
    from ktriage.workload.ops.replay import artifact_backend

    b = load_bundle(ln_bundle)
    tc_id = toolchain("triton==3.4.0").id
    loaded: list[str] = []

    class FakeLoadedKernel:  # stands for ktriage.measure.launch's loaded cubin
        def __init__(self, art: BundleArtifact) -> None:
            loaded.append(art.cubin_path.name)
            self.launches: list[tuple] = []

        def launch(self, grid, args) -> None:
            self.launches.append((grid, list(args)))

    launch = make_launcher(b, tc_id, FakeLoadedKernel)
    case = b.input_cases()[1]
    inp = make_input("layer_norm", case, device="cpu")
    replay = artifact_backend("liger_layer_norm", launch=launch, specs=b.spec_source(), sm_count=132)
    timed = replay.prepare(inp, "bwd")
    timed()
    assert len(loaded) == 1  # loaded once, launched twice
    assert replay.kernels["bwd"].ref.key == b.kernel_key("liger_layer_norm", 7, "bwd")
    assert isinstance(torch.zeros(1), torch.Tensor)


def test_compile_failures_are_recorded_and_do_not_stop_the_bundle(toolchain, tmp_path: Path) -> None:
    from ktriage.compile.compiler import CompileFailure

    class FakeFailingCompiler:  # pure logic: the bundle must record failures per (spec, toolchain)
        def compile_many(self, specs, toolchains, on_done=None):
            return [CompileFailure(s, t, "frontend", "error", f"boom {s.name}") for s in specs for t in toolchains]

    tc = toolchain("triton==3.4.0")
    out = build_bundle("embedding", "bwd", ["0"], [tc], tmp_path / "b", compiler=FakeFailingCompiler())  # type: ignore[arg-type]
    b = load_bundle(out)
    (key, tc_id), fail = next(iter(b.artifacts.items()))
    assert isinstance(fail, BundleFailure) and fail.stage == "frontend" and "boom" in fail.message
    launch = make_launcher(b, tc_id, lambda art: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(KtriageError, match="did not compile"):
        launch(key, (1,), [])


def test_tampered_or_foreign_bundles_are_refused(ln_bundle: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(ln_bundle, copy)
    victim = next((copy / "cubins").iterdir())
    data = victim.read_bytes()
    victim.write_bytes(data[:100] + bytes([data[100] ^ 0xFF]) + data[101:])
    with pytest.raises(KtriageError, match="missing or changed"):
        load_bundle(copy)
    manifest = json.loads((ln_bundle / "manifest.json").read_text())
    manifest["format_version"] = 99
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(KtriageError, match="format_version 99"):
        load_bundle(copy)
    with pytest.raises(KtriageError, match="nothing does not exist") as err:
        load_bundle(tmp_path / "nothing")
    assert f"no bundle at {tmp_path / 'nothing'}" in err.value.problem and "--compile-only" in (err.value.fix or "")
    (tmp_path / "empty").mkdir()
    with pytest.raises(KtriageError, match="empty has no manifest.json"):
        load_bundle(tmp_path / "empty")


def test_variant_adds_kernels_to_a_toolchain_and_marks_the_rest_absent(
    ln_bundle: Path, toolchain, shared_compiler, tmp_path: Path
) -> None:
    """A variant (a tune config, a source fix) is another toolchain id in the bundle: its kernels are
    the ones given, the others are recorded as absent (reported, never replaced by the library's)."""
    import shutil

    from ktriage.compile.compiler import Artifact
    from ktriage.workload.bundles.merge import add_variant

    work = tmp_path / "b"
    shutil.copytree(ln_bundle, work)
    b = load_bundle(work)
    tc = toolchain("triton==3.4.0")
    key7 = b.kernel_key("liger_layer_norm", 7, "bwd")
    art = shared_compiler.compile(b.specs[key7].replace(num_warps=8), tc)
    assert isinstance(art, Artifact)
    add_variant(work, tc.id, f"{tc.id}+w8", "warps=8", {key7: art})
    b2 = load_bundle(work)
    got = b2.artifact(key7, f"{tc.id}+w8")
    assert isinstance(got, BundleArtifact) and got.launch["num_warps"] == 8
    assert got.resources and got.resources["spill_store_bytes"] == 0  # 8 warps removes 3.4.0's spills at N=4608
    other = b2.artifact(b2.kernel_key("liger_layer_norm", 6, "bwd"), f"{tc.id}+w8")
    assert isinstance(other, BundleFailure) and other.kind == "absent"
    assert b2.toolchains[f"{tc.id}+w8"]["variant_of"] == tc.id
    with pytest.raises(KtriageError, match="no toolchain"):
        add_variant(work, "nope", "nope+x", "x", {})


def test_merge_bundles_unites_inputs_and_toolchains(toolchain, shared_compiler, tmp_path: Path) -> None:
    from ktriage.workload.bundles.merge import merge_bundles

    t331, t340 = toolchain("triton==3.3.1"), toolchain("triton==3.4.0")
    a = build_bundle("layer_norm", "bwd", ["6"], [t331], tmp_path / "a", sm_count=132, compiler=shared_compiler)
    b = build_bundle("layer_norm", "bwd", ["7"], [t331, t340], tmp_path / "b", sm_count=132, compiler=shared_compiler)
    merged = load_bundle(merge_bundles([a, b], tmp_path / "m"))
    assert [c.id for c in merged.input_cases()] == [6, 7] and set(merged.toolchains) == {t331.id, t340.id}
    assert isinstance(merged.artifact(merged.kernel_key("liger_layer_norm", 7, "bwd"), t340.id), BundleArtifact)
    missing = merged.artifact(merged.kernel_key("liger_layer_norm", 6, "bwd"), t340.id)
    assert isinstance(missing, BundleFailure) and missing.kind == "absent"
    c = build_bundle("embedding", "bwd", ["0"], [t331], tmp_path / "c", sm_count=132, compiler=shared_compiler)
    with pytest.raises(KtriageError, match="op="):
        merge_bundles([a, c], tmp_path / "m2")


def test_runner_loader_hands_bundle_artifacts_to_the_cuda_launcher(ln_bundle: Path, toolchain, monkeypatch) -> None:
    """The GPU side of a bundle (ktriage.measure.loader): each artifact's cubin, kernel name,
    metadata and ABI go to measure.launch.LoadedKernel unchanged (faked: no GPU here)."""
    import ktriage.measure.launch as launch
    from ktriage.compile.abi import AbiParam
    from ktriage.measure.loader import runner_loader

    calls: list[tuple] = []

    class FakeLoadedKernel:
        def __init__(self, cubin, kernel_name, metadata, abi, *, device=0) -> None:
            calls.append((cubin, kernel_name, metadata, abi, device))

        def launch(self, grid, args) -> None: ...

    monkeypatch.setattr(launch, "LoadedKernel", FakeLoadedKernel)
    b = load_bundle(ln_bundle)
    tc_id = toolchain("triton==3.4.0").id
    key = b.kernel_key("liger_layer_norm", 7, "bwd")
    art = b.artifact(key, tc_id)
    assert isinstance(art, BundleArtifact)
    runner_loader(device=1)(art)
    ((cubin, name, metadata, abi, device),) = calls
    assert cubin == art.cubin_bytes() and name == art.kernel_name and metadata == art.metadata and device == 1
    assert abi == [AbiParam(**p) for p in art.abi] and abi[-1].hidden


def test_merge_refuses_one_variant_id_that_names_two_configs(toolchain, shared_compiler, tmp_path: Path) -> None:
    """Tune bundles of two inputs merged into one: each part's ``+tune1`` was its own rank 1, and the
    merged manifest kept the first part's record, so a results file said 8 warps for another input's
    16-warps kernel. The parts now number configs together; an id with two configs is refused."""
    from ktriage.compile.compiler import Artifact
    from ktriage.workload.bundles.merge import add_variant, merge_bundles

    tc = toolchain("triton==3.4.0")
    parts = []
    for input_id, warps in (("6", 8), ("7", 16)):
        part = build_bundle("layer_norm", "bwd", [input_id], [tc], tmp_path / input_id, compiler=shared_compiler)
        (key,) = load_bundle(part).specs
        art = shared_compiler.compile(load_bundle(part).specs[key].replace(num_warps=warps), tc)
        assert isinstance(art, Artifact)
        add_variant(part, tc.id, f"{tc.id}+tune1", f"warps={warps}", {key: art})
        parts.append(part)
    with pytest.raises(KtriageError, match="one toolchain id would stand for two kernels") as err:
        merge_bundles(parts, tmp_path / "m")
    assert "'warps=16'" in err.value.problem and "'warps=8'" in err.value.problem


def _cubins_left_and_used(folder: Path) -> tuple[set[str], set[str]]:
    """The files in the bundle's cubins/ and the cubins its manifest references (the loader checks each)."""
    loaded = load_bundle(folder)
    used = {a.cubin_path.name for a in loaded.artifacts.values() if isinstance(a, BundleArtifact)}
    return {p.name for p in (folder / "cubins").iterdir()}, used


def test_a_variant_added_again_leaves_no_cubin_of_the_one_it_replaced(
    ln_bundle: Path, toolchain, shared_compiler, tmp_path: Path
) -> None:
    """Adding a variant again under its id (``tune`` again, another fix) left the replaced kernel's cubin in
    cubins/, referenced by nothing, and the copy to the GPU host carried it. Every writer of a bundle now
    leaves it pruned as ``bench --compile-only`` does; a file in cubins/ that is no builder's cubin stays."""
    import shutil

    from ktriage.compile.compiler import Artifact
    from ktriage.workload.bundles.merge import add_variant

    work = tmp_path / "b"
    shutil.copytree(ln_bundle, work)
    (work / "cubins" / "notes.txt").write_text("the user's own")
    tc = toolchain("triton==3.4.0")
    b = load_bundle(work)
    key7 = b.kernel_key("liger_layer_norm", 7, "bwd")
    arts = [shared_compiler.compile(b.specs[key7].replace(num_warps=w), tc) for w in (8, 16)]
    assert all(isinstance(a, Artifact) for a in arts)
    add_variant(work, tc.id, f"{tc.id}+v", "warps=8", {key7: arts[0]})
    first = load_bundle(work).artifact(key7, f"{tc.id}+v")
    assert isinstance(first, BundleArtifact)
    add_variant(work, tc.id, f"{tc.id}+v", "warps=16", {key7: arts[1]})
    left, used = _cubins_left_and_used(work)
    assert first.cubin_path.name not in used  # the 8-warps kernel is no longer the variant's
    assert left == used | {"notes.txt"}, sorted(left - used)


def test_a_merge_into_the_folder_of_an_earlier_merge_leaves_only_its_own_cubins(
    toolchain, shared_compiler, tmp_path: Path
) -> None:
    """``tune`` merges its per-input bundles into one folder; merging again there (other inputs, other
    configs) left the earlier merge's cubins that the new manifest does not reference."""
    from ktriage.workload.bundles.merge import merge_bundles

    t331, t340 = toolchain("triton==3.3.1"), toolchain("triton==3.4.0")
    a = build_bundle("layer_norm", "bwd", ["6"], [t331], tmp_path / "a", sm_count=132, compiler=shared_compiler)
    b = build_bundle("layer_norm", "bwd", ["7"], [t331, t340], tmp_path / "b", sm_count=132, compiler=shared_compiler)
    merge_bundles([a, b], tmp_path / "m")
    old, _ = _cubins_left_and_used(tmp_path / "m")
    merge_bundles([a], tmp_path / "m")
    left, used = _cubins_left_and_used(tmp_path / "m")
    assert left == used, sorted(left - used)
    assert old - used  # b's kernels were there, and are gone


def test_a_bundle_built_over_another_ops_bundle_leaves_only_its_own_cubins(
    toolchain, shared_compiler, tmp_path: Path
) -> None:
    """A bundle replaces a ktriage bundle of another op in its folder (the CLI's ``--bundle DIR`` allows
    it for op bundles): the replaced bundle's cubins went with the folder to the GPU host. A folder that
    held no bundle keeps what its cubins/ had, even a file named like a cubin."""
    tc = toolchain("triton==3.4.0")
    folder = tmp_path / "bundle"
    (folder / "cubins").mkdir(parents=True)
    stray = "0123456789abcdef0123.cubin"
    (folder / "cubins" / stray).write_bytes(b"not ktriage's")
    build_bundle("layer_norm", "bwd", ["6"], [tc], folder, sm_count=132, compiler=shared_compiler)
    left, used = _cubins_left_and_used(folder)
    assert left == used | {stray}  # no bundle there before: nothing removed
    build_bundle("embedding", "bwd", ["0"], [tc], folder, sm_count=132, compiler=shared_compiler)
    again, now = _cubins_left_and_used(folder)
    assert again == now and not (used & now), sorted(again - now)
