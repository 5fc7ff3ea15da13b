"""An explain sweep on a real Ray cluster gives what the local process pool gives (liger.layer_norm --bwd,
several TritonBench inputs x triton 3.3.1 and 3.4.0, real toolchains)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ktriage.catalog import expand_op
from ktriage.compile.compiler import Compiler
from ktriage.compile.remote import ClusterCompiler
from ktriage.execute.ray_backend import RayExecutor
from ktriage.explain.engine import Explainer
from ktriage.explain.findings import collect_findings
from ktriage.report.explain import to_json

pytestmark = pytest.mark.slow
TOOLCHAINS = ("triton==3.3.1", "triton==3.4.0")
INPUTS = ["0", "3", "7"]


def _report(compiler: Compiler, specs, tcs, progress: list[object]) -> dict:
    result = Explainer(compiler).run(specs, tcs, on_compiled=progress.append)
    data = to_json(result, collect_findings(result))
    data.pop("created")
    return json.loads(json.dumps(data).replace(str(compiler.cache), "<cache>"))


def test_explain_sweep_on_the_cluster_equals_the_local_one(ray_cluster, toolchain, tmp_path: Path) -> None:
    tcs = [toolchain(t) for t in TOOLCHAINS]
    specs = expand_op("liger.layer_norm", mode="bwd", inputs=INPUTS)
    assert len(specs) == len(INPUTS)
    local_done: list[object] = []
    with Compiler(jobs=2, cache_dir=tmp_path / "local") as compiler:
        local = _report(compiler, specs, tcs, local_done)
    ray_done: list[object] = []
    with (
        RayExecutor(ray_cluster.address) as ex,
        ClusterCompiler(jobs=2, cache_dir=tmp_path / "ray", executor=ex) as compiler,
    ):
        remote = _report(compiler, specs, tcs, ray_done)
    assert remote == local
    assert local["complete"] and len(local["kernels"]) == len(INPUTS)
    # the same progress: one callback per (spec, toolchain) cell
    assert len(ray_done) == len(local_done) == len(specs) * len(tcs)
    # the artifacts came back from the nodes into the driver's own cache, one entry per cell
    assert len([p for p in (tmp_path / "ray" / "frontend").iterdir() if not p.name.startswith(".")]) == len(
        specs
    ) * len(tcs)


def test_the_same_spec_is_sent_once_and_a_cached_one_not_at_all(ray_cluster, toolchain, tmp_path: Path) -> None:
    from ktriage.compile import remote

    tc = toolchain(TOOLCHAINS[1])
    spec = expand_op("liger.layer_norm", mode="bwd", inputs=["0"])[0]
    sent: list[int] = []

    class Counting(RayExecutor):
        def run(self, jobs, *, on_done=None):  # type: ignore[no-untyped-def]
            sent.append(len(jobs))
            return super().run(jobs, on_done=on_done)

    with Counting(ray_cluster.address) as ex, ClusterCompiler(cache_dir=tmp_path / "c", executor=ex) as compiler:
        first = remote.compile_many_remote(compiler, ex, [spec, spec], [tc, tc])
        again = remote.compile_many_remote(compiler, ex, [spec], [tc])
    assert sent == [1, 0]  # four identical cells: one job; then a driver cache hit: none
    assert all(type(o).__name__ == "Artifact" for o in first + again)


def test_explain_verb_takes_cluster_and_prints_what_the_local_run_prints(ray_cluster, toolchain) -> None:
    import subprocess
    import sys

    from ray_test_cluster import REPO

    for t in TOOLCHAINS:
        toolchain(t)
    base = [
        sys.executable,
        "-m",
        "ktriage",
        "explain",
        "liger.layer_norm",
        "--bwd",
        "-i",
        "3",
        "-t",
        TOOLCHAINS[0],
        "-t",
        TOOLCHAINS[1],
        "-f",
        "json",
    ]
    env = {**__import__("os").environ, "PYTHONPATH": str(REPO)}
    outs = []
    for extra in ([], ["--cluster", ray_cluster.address]):
        proc = subprocess.run(base + extra, capture_output=True, text=True, env=env, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        data = json.loads(proc.stdout)
        data.pop("created")
        outs.append(data)
    assert outs[0] == outs[1]


def test_a_job_the_cluster_lost_is_a_failed_cell_and_the_sweep_goes_on(toolchain, tmp_path: Path) -> None:
    """A FAKE executor that loses every job (as Ray does after max_retries): no exception, failed cells."""
    from ktriage.compile.compiler import CompileFailure
    from ktriage.compile.remote import compile_many_remote
    from ktriage.execute.base import JobResult

    class FakeLosingExecutor:
        name, remote = "fake-losing", True

        def slots(self, kind):  # type: ignore[no-untyped-def]
            return 1

        def run(self, jobs, *, on_done=None):  # type: ignore[no-untyped-def]
            out = [JobResult(j, False, error="lost on the cluster after 3 retries", lost=True) for j in jobs]
            for i, r in enumerate(out):
                if on_done is not None:
                    on_done(i, r)
            return out

        def close(self) -> None:
            pass

    tc = toolchain(TOOLCHAINS[1])
    specs = expand_op("liger.layer_norm", mode="bwd", inputs=["0", "3"])
    done: list[object] = []
    with Compiler(cache_dir=tmp_path / "c") as compiler:
        out = compile_many_remote(compiler, FakeLosingExecutor(), specs, [tc], on_done=done.append)
    assert len(out) == len(done) == 2
    assert all(isinstance(o, CompileFailure) and o.kind == "cluster" and "lost" in o.message for o in out)


def test_a_node_that_cannot_build_the_toolchain_finds_itself_unfit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The compile job on a node whose home lacks the toolchain and whose uv reaches no index (a real
    ensure_toolchain failure: uv offline, an empty uv cache). It failed the cell with the toolchain's own
    fix, "pick an existing version, e.g. triton==3.4.0", for a toolchain the driver had just built; it
    raises NodeUnfit now (the executor sends the job to another node), naming the toolchain and the fix."""
    from ktriage.compile.remote import frontend_job
    from ktriage.execute.base import NodeUnfit

    spec = expand_op("liger.layer_norm", mode="bwd", inputs=["0"])[0]
    monkeypatch.setenv("KTRIAGE_HOME", str(tmp_path / "bare-node-home"))
    monkeypatch.setenv("UV_OFFLINE", "1")
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    with pytest.raises(NodeUnfit) as unfit:
        frontend_job(spec, TOOLCHAINS[1], str(tmp_path / "artifacts"))
    assert unfit.value.problem.startswith(f"cannot build the toolchain {TOOLCHAINS[1]} here: ")
    assert "\n" not in unfit.value.problem
    assert unfit.value.fix is not None and f"ktriage toolchain add '{TOOLCHAINS[1]}'" in unfit.value.fix


def test_a_node_is_sent_the_triton_build_alone_and_the_ptxas_stage_stays_here(toolchain, tmp_path: Path) -> None:
    """A toolchain with its own ptxas (options, a release, a local path): the frontend job carried the whole
    spec, so a node fetched a ptxas release it never used, and one that could not (or lacked the local
    ptxas path) was unfit for cells it could compile. The job names the Triton build alone; the cell is
    assembled here with the toolchain's ptxas. The executor is a FAKE cluster: this machine's pool, marked
    remote, recording each job (the compiles are real)."""
    from ktriage.compile.compiler import CompileFailure
    from ktriage.compile.remote import compile_many_remote
    from ktriage.execute.base import LocalExecutor

    class FakeRecordingCluster(LocalExecutor):
        remote = True

        def __init__(self) -> None:
            super().__init__(1)
            self.sent: list[tuple[object, ...]] = []

        def run(self, jobs, *, on_done=None):  # type: ignore[no-untyped-def]
            self.sent += [j.args for j in jobs]
            return super().run(jobs, on_done=on_done)

    tc = toolchain("triton==3.4.0,ptxas-options=-O1")
    specs = expand_op("liger.layer_norm", mode="bwd", inputs=["0"])
    cluster = FakeRecordingCluster()
    with Compiler(cache_dir=tmp_path / "c") as compiler:
        (out,) = compile_many_remote(compiler, cluster, specs, [tc])
    assert not isinstance(out, CompileFailure), out
    assert [args[1] for args in cluster.sent] == ["triton==3.4.0"]
    assert not out.cubin.native and "-O1" in out.cubin.command  # assembled here, with the toolchain's options
